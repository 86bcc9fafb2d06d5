# Installed by the nomad_zfs.csi zfs_replication role as /usr/local/libexec/nomad-zfs-csi/zfs-replication-source
# and run as `/usr/bin/python3 -I <that file>`; changes here are overwritten. GNU General Public License v3.0+
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

import getopt
import os
import re
import shlex
import sys
import syslog

ZFS = '/usr/sbin/zfs'
ZPOOL = '/usr/sbin/zpool'
CONF = '/etc/nomad-zfs-csi/replication-source.conf'
COMPONENT = r'[A-Za-z0-9_.:-]+'
NAME = re.compile(r'(?P<dataset>%s(?:/%s)*)(?P<suffix>[@#]%s)?' % (COMPONENT, COMPONENT, COMPONENT))
PROPERTIES = re.compile(r'[a-z0-9_.:@-]+(,[a-z0-9_.:@-]+)*')
# The options of each zfs subcommand that takes some, as getopt takes them; plan() checks the operands.
ZFS_OPTIONS = {'list': 'rHpd:o:t:s:S:', 'get': 'rHpd:o:t:s:', 'send': 'nvPLecwhpbi:I:t:'}


class Refused(Exception):
    """A command this user may not run; the message says which and why."""


def read_parents(text):
    parents = [line[len('parent=') :] for line in text.splitlines() if line.startswith('parent=')]
    for parent in parents:
        if not NAME.fullmatch(parent) or '@' in parent or '#' in parent or _dots(parent):
            raise Refused('%s has a bad parent line: %r; run the zfs_replication role' % (CONF, parent))
    if not parents:
        raise Refused('%s has no parent= line; run the zfs_replication role' % CONF)
    return parents


def _dots(name):
    return any(part in ('.', '..') for part in re.split('[/@#]', name))


def under(name, parents, kinds=''):
    """name, when it is a dataset under a parent (or a parent), or one's snapshot or bookmark of a kind
    in kinds ('@', '#')."""
    match = NAME.fullmatch(name)
    if not match or _dots(name):
        raise Refused('%r is not a dataset name' % name)
    suffix = match.group('suffix')
    if suffix and suffix[0] not in kinds:
        raise Refused('%r: a %s is not taken here' % (name, 'snapshot' if suffix[0] == '@' else 'bookmark'))
    dataset = match.group('dataset')
    if not any(dataset == p or dataset.startswith(p + '/') for p in parents):
        raise Refused('%s is outside the replicated parents (%s)' % (dataset, ', '.join(parents)))
    return name


def _options(words, spec):
    try:
        return getopt.getopt(words, spec)
    except getopt.GetoptError as e:
        raise Refused(str(e)) from None


def plan(command, parents):
    """The argv to exec for syncoid's command line, or None for one answered without running anything
    (exit status in the second item)."""
    try:
        words = shlex.split(command or '')
    except ValueError as e:
        raise Refused('cannot split the command: %s' % e) from None
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
            if not operands or not PROPERTIES.fullmatch(operands[0]):
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
            elif flag in ('-i', '-I') and not re.fullmatch(r'[@#]%s' % COMPONENT, value):
                raise Refused('%s %r is not a snapshot or bookmark' % (flag, value))
            elif flag == '-t' and not re.fullmatch(r'[A-Za-z0-9-]+', value):
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
        message = 'zfs-replication-source: refused %r: %s' % (command, e)
        syslog.openlog('zfs-replication-source', 0, syslog.LOG_AUTH)
        syslog.syslog(syslog.LOG_WARNING, message)
        sys.stderr.write(message + '\n')
        return 1
    if argv is None:
        return status
    os.execv(argv[0], argv)


if __name__ == '__main__':
    sys.exit(main())
