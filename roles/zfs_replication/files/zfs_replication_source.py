# Installed by the nomad_zfs.csi zfs_replication role as /usr/local/libexec/nomad-zfs-csi/zfs_replication_source.py,
# compiled there by root, and run by the launcher beside it, zfs-replication-source, as
# `/usr/bin/python3 -IS <launcher>`; changes here are overwritten. GNU General Public License v3.0+
# (see the collection's LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
#
# The forced command (authorized_keys command="...",restrict) of the standby's replication key on a
# primary. syncoid on the standby pulls with --no-privilege-elevation and --no-sync-snap, and asks over
# SSH for a handful of commands; this runs only those, with no shell, and only on datasets under the
# parents in /etc/nomad-zfs-csi/replication-source.conf (parent=... lines, root's):
# - `exit` and `echo -n`, syncoid's connection test: nothing to run;
# - `command -v <tool>`: answered "missing", so syncoid sends plain zfs streams;
# - `zpool get ... feature@extensible_dataset <pool>`: whether a stream can resume;
# - `zfs list` and `zfs get`: names, snapshots, bookmarks and properties;
# - `zfs send`, with -nvP for its size, -i/-I for increments and -t to resume;
# - `zfs bookmark`: what keeps increments possible after sanoid prunes the snapshot.
# zfs allow gives the user send, hold and bookmark on the parents and nothing else (hold because zfs send -I holds
# the snapshots it sends until it ends), so even an allowed command writes nothing but bookmarks. zfs hold and
# zfs release themselves are refused: syncoid holds only with --use-hold, which the pulls do not pass, and a
# hold on every scheduled snapshot would make every destroy of them fail (sanoid's pruning, the volume's
# delete) until the pool is full. Everything else is refused before anything
# runs, on stderr and in syslog.

# It starts once for every command syncoid sends, about five a volume, so it imports nothing but os and sys
# (and syslog to refuse), runs without site, and is read as the bytecode root compiled, not compiled at each
# start: on an emulated CPU that took a start from 340 to 100 ms. Its splitter, name checks and getopt are tested
# against shlex's, re's and getopt's.
import os
import sys

ZFS = '/usr/sbin/zfs'
ZPOOL = '/usr/sbin/zpool'
CONF = '/etc/nomad-zfs-csi/replication-source.conf'
ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
# A component of a dataset, snapshot or bookmark name: [A-Za-z0-9_.:-]+, and never . or ..
COMPONENT_CHARS = frozenset(ALNUM + '_.:-')
# Property names for zfs get: [a-z0-9_.:@-]+(,[a-z0-9_.:@-]+)*
PROPERTY_CHARS = frozenset('abcdefghijklmnopqrstuvwxyz0123456789_.:@-')
TOKEN_CHARS = frozenset(ALNUM + '-')
# The options of each zfs subcommand that takes some, in getopt's notation; plan() checks the operands.
ZFS_OPTIONS = {'list': 'rHpd:o:t:s:S:', 'get': 'rHpd:o:t:s:', 'send': 'nvPLecwhpbi:I:t:'}


class Refused(Exception):
    """A command this user may not run; the message says which and why."""


def read_parents(text):
    parents = [line[len('parent=') :] for line in text.splitlines() if line.startswith('parent=')]
    for parent in parents:
        if _name(parent) != (parent, ''):
            raise Refused('%s has a bad parent line: %r; run the zfs_replication role' % (CONF, parent))
    if not parents:
        raise Refused('%s has no parent= line; run the zfs_replication role' % CONF)
    return parents


def _component(text):
    return bool(text) and COMPONENT_CHARS.issuperset(text) and text not in ('.', '..')


def _chars(text, allowed):
    return bool(text) and allowed.issuperset(text)


def _name(name):
    """(dataset, suffix) of a dataset name with an optional @snapshot or #bookmark suffix, or None."""
    marks = [at for at in (name.find('@'), name.find('#')) if at >= 0]
    at = min(marks) if marks else len(name)
    dataset, suffix = name[:at], name[at:]
    if not all(_component(part) for part in dataset.split('/')) or (suffix and not _component(suffix[1:])):
        return None
    return dataset, suffix


def under(name, parents, kinds=''):
    """name, when it is a dataset under a parent (or a parent), or one's snapshot or bookmark of a kind
    in kinds ('@', '#')."""
    parsed = _name(name)
    if parsed is None:
        raise Refused('%r is not a dataset name' % name)
    dataset, suffix = parsed
    if suffix and suffix[0] not in kinds:
        raise Refused('%r: a %s is not taken here' % (name, 'snapshot' if suffix[0] == '@' else 'bookmark'))
    if not any(dataset == p or dataset.startswith(p + '/') for p in parents):
        raise Refused('%s is outside the replicated parents (%s)' % (dataset, ', '.join(parents)))
    return name


def split(command):
    """The words of command as shlex.split (POSIX mode) makes them: blanks separate words; '...' keeps
    everything; "..." keeps everything but a backslash before " or \\; a backslash outside quotes keeps the next
    character."""
    words, word, in_word, quote, at = [], [], False, None, 0
    while at < len(command):
        char = command[at]
        at += 1
        if quote == "'":
            if char == "'":
                quote = None
            else:
                word.append(char)
        elif quote == '"':
            if char == '"':
                quote = None
            elif char == '\\' and at < len(command) and command[at] in '"\\':
                word.append(command[at])
                at += 1
            else:
                word.append(char)
        elif char in ' \t\r\n':
            if in_word:
                words.append(''.join(word))
                word, in_word = [], False
        else:
            in_word = True
            if char in '"\'':
                quote = char
            elif char == '\\':
                if at == len(command):
                    raise Refused('cannot split the command: No escaped character')
                word.append(command[at])
                at += 1
            else:
                word.append(char)
    if quote:
        raise Refused('cannot split the command: No closing quotation')
    if in_word:
        words.append(''.join(word))
    return words


def _options(words, spec):
    """POSIX getopt of short options, as Python's getopt.getopt: options up to the first operand or `--`, each
    letter in spec, one followed by `:` taking a value (the rest of its word, or the next word)."""
    opts, words = [], list(words)
    while words and words[0].startswith('-') and words[0] != '-':
        word, words = words[0], words[1:]
        if word == '--':
            break
        if word.startswith('--'):
            raise Refused('option %s not recognized' % word)
        letters = word[1:]
        while letters:
            flag, letters = letters[0], letters[1:]
            at = spec.find(flag) if flag != ':' else -1
            if at < 0:
                raise Refused('option -%s not recognized' % flag)
            if spec[at + 1 : at + 2] != ':':
                opts.append(('-' + flag, ''))
                continue
            if not letters:
                if not words:
                    raise Refused('option -%s requires argument' % flag)
                letters, words = words[0], words[1:]
            opts.append(('-' + flag, letters))
            letters = ''
    return opts, words


def plan(command, parents):
    """The argv to exec for syncoid's command line, or None for one answered without running anything
    (exit status in the second item)."""
    words = split(command or '')
    if words in (['exit'], ['echo', '-n']):
        return None, 0
    if len(words) == 3 and words[:2] == ['command', '-v']:
        return None, 1
    if words[:2] == ['zpool', 'get']:
        opts, operands = _options(words[2:], 'Hpo:')
        pools = {p.split('/')[0] for p in parents}
        if len(operands) != 2 or not operands[0].startswith('feature@') or operands[1] not in pools:
            raise Refused('only zpool get of a feature of %s' % ', '.join(sorted(pools)))
        return [ZPOOL, 'get'] + _flat(opts) + operands, None
    if len(words) < 2 or words[0] != 'zfs':
        raise Refused('only zfs list, get, send and bookmark')
    sub, rest = words[1], words[2:]
    if sub in ('list', 'get'):
        opts, operands = _options(rest, ZFS_OPTIONS[sub])
        if sub == 'get':
            if not operands or not all(_chars(p, PROPERTY_CHARS) for p in operands[0].split(',')):
                raise Refused('zfs get needs properties first')
            properties, operands = operands[:1], operands[1:]
        else:
            properties = []
        if not operands:
            raise Refused('zfs %s needs datasets under the replicated parents' % sub)
        return [ZFS, sub] + _flat(opts) + properties + [under(o, parents, '@#') for o in operands], None
    if sub == 'send':
        opts, operands = _options(rest, ZFS_OPTIONS['send'])
        for flag, value in opts:
            if flag in ('-i', '-I') and not value.startswith(('@', '#')):
                under(value, parents, '@#')
            elif flag in ('-i', '-I') and not _component(value[1:]):
                raise Refused('%s %r is not a snapshot or bookmark' % (flag, value))
            elif flag == '-t' and not _chars(value, TOKEN_CHARS):
                raise Refused('-t %r is not a resume token' % value)
        resuming = '-t' in dict(opts)
        if len(operands) != (0 if resuming else 1) or (operands and '@' not in operands[0]):
            raise Refused('zfs send takes one snapshot under the replicated parents, or -t and a token')
        return [ZFS, 'send'] + _flat(opts) + [under(o, parents, '@') for o in operands], None
    if sub == 'bookmark' and len(rest) == 2:
        return [ZFS, 'bookmark', under(rest[0], parents, '@#'), under(rest[1], parents, '#')], None
    raise Refused('only zfs list, get, send and bookmark, as syncoid runs them')


def _flat(opts):
    return [word for flag, value in opts for word in ((flag, value) if value else (flag,))]


def main():
    command = os.environ.get('SSH_ORIGINAL_COMMAND', '')
    try:
        with open(CONF) as f:
            parents = read_parents(f.read())
        argv, status = plan(command, parents)
    except (OSError, Refused) as e:
        import syslog

        message = 'zfs-replication-source: refused %r: %s' % (command, e)
        syslog.openlog('zfs-replication-source', 0, syslog.LOG_AUTH)
        syslog.syslog(syslog.LOG_WARNING, message)
        sys.stderr.write(message + '\n')
        return 1
    if argv is None:
        return status
    os.execv(argv[0], argv)
