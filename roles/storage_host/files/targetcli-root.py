#!/bin/sh
# sh runs the lines up to exec, and Python the whole file, to which those lines are one string: python3 -IS, so
# nothing from the environment or a user's site directory reaches what runs as root.
""":"
exec /usr/bin/python3 -IS "$0" "$@"
"""

# Installed by the nomad_zfs.csi storage_host role as /usr/local/libexec/nomad-zfs-csi/sudo-bin/targetcli; changes
# here are overwritten. GNU General Public License v3.0+ (see the collection's LICENSE or
# https://www.gnu.org/licenses/gpl-3.0.txt)
#
# targetcli for the CSI service user of the zfs-generic-iscsi driver. democratic-csi pipes a whole targetcli
# script into `sudo targetcli`; root's targetcli would export any block device of the host to anyone. The role's
# sudo rule gives the user a secure_path in which `targetcli` is this program, and lets it run nothing else.
#
# It reads the script on stdin and accepts only what democratic-csi v1.9.4 writes (controller-zfs-generic,
# shareStrategy targetCli), for one volume at a time:
#   cd /iscsi                                create|delete <basename>:<name>
#   cd /iscsi/<basename>:<name>/tpg1         set attribute|auth <key>=<value>
#   cd /backstores/block                     create <name> /dev/zvol/<parent>/<volume>, delete <name>
#   cd /backstores/block/<name>              set attribute <key>=<value>
#   cd /iscsi/<basename>:<name>/tpg1/luns    create /backstores/block/<name>
# where <volume> is a zvol exactly one level below the user's parent and <name> its name in lower case, as
# democratic-csi names its targets and backstores. What it deletes must be the user's: a backstore of a zvol
# below the parent, a target whose LUNs are all such backstores (read from the kernel's configfs). Then root's
# targetcli runs the script as rebuilt from what was parsed, never the text as sent. Anything else refuses the
# whole script before targetcli runs, on stderr and in syslog; a refusal never quotes a value of set auth
# (CHAP secrets).
#
# The parent and the target base name come from the user's root-owned file the role writes
# (/etc/nomad-zfs-csi/storage/<user>.conf: parent= and iscsi_basename= lines).

import os
import re
import subprocess
import sys
import syslog

ZFS = '/usr/sbin/zfs'
TARGETCLI = '/usr/bin/targetcli'
CONF_DIR = '/etc/nomad-zfs-csi/storage'
CONFIGFS = '/sys/kernel/config/target'
USER = re.compile(r'[a-z_][a-z0-9_-]{0,31}')
COMPONENT = r'[A-Za-z0-9_:][A-Za-z0-9_.:-]*'
# An IQN (RFC 3720): iqn.<yyyy-mm>.<reversed domain>[:<anything of these>].
BASENAME = re.compile(r'iqn\.[0-9]{4}-[0-9]{2}\.[a-z0-9][a-z0-9.-]*(:[a-z0-9.:-]+)?')
NAME = r'[a-z0-9_:][a-z0-9_.:-]*'
# The attributes democratic-csi's examples and users set, each a number or a word; auth takes CHAP names and
# secrets, which must survive democratic-csi's own quoting (sh -c '... echo "<script>" ...').
TPG_ATTRIBUTES = {
    'authentication',
    'cache_dynamic_acls',
    'default_cmdsn_depth',
    'demo_mode_write_protect',
    'generate_node_acls',
    'login_timeout',
    'netif_timeout',
    'prod_mode_write_protect',
}
TPG_AUTH = {'userid', 'password', 'mutual_userid', 'mutual_password'}
BLOCK_ATTRIBUTES = {
    'block_size',
    'emulate_3pc',
    'emulate_caw',
    'emulate_tpu',
    'emulate_tpws',
    'is_nonrot',
    'max_unmap_block_desc_count',
    'max_unmap_lba_count',
    'unmap_granularity',
}
VALUE = re.compile(r'[A-Za-z0-9_.@:+/-]{1,255}')


class Refused(Exception):
    """A script root will not run for the service user; the message says which line and why."""


def conf_path(user):
    """The storage settings of the service user sudo ran this for (sudo sets SUDO_USER; the caller cannot)."""
    if not USER.fullmatch(user or ''):
        raise Refused('no service user to act for (SUDO_USER=%r): run this through the sudo rule' % (user,))
    return '%s/%s.conf' % (CONF_DIR, user)


def read_conf(text, path):
    """{'parent': dataset, 'iscsi_basename': iqn}."""
    conf = dict(line.partition('=')[::2] for line in text.splitlines() if '=' in line)
    if not re.fullmatch('%s(/%s)*' % (COMPONENT, COMPONENT), conf.get('parent', '')):
        raise Refused('%s has no usable parent= line; run the storage_host role' % path)
    if not BASENAME.fullmatch(conf.get('iscsi_basename', '')):
        raise Refused('%s has no usable iscsi_basename= line; run the storage_host role' % path)
    return {'parent': conf['parent'], 'iscsi_basename': conf['iscsi_basename']}


def parse(text, conf):
    """The script's operations, [(verb, name, arg)], in order; refuses the first line of another shape."""
    target = re.escape(conf['iscsi_basename']) + ':(' + NAME + ')'
    zvol = '/dev/zvol/' + re.escape(conf['parent']) + '/(' + COMPONENT + ')'
    places = [
        ('iscsi', '/iscsi'),
        ('tpg', '/iscsi/' + target + '/tpg1'),
        ('luns', '/iscsi/' + target + '/tpg1/luns'),
        ('block', '/backstores/block'),
        ('block_object', '/backstores/block/(' + NAME + ')'),
    ]
    commands = {
        'iscsi': [('create_target', 'create ' + target), ('delete_target', 'delete ' + target)],
        'tpg': [('tpg_attribute', r'set attribute (\w+)=(\S+)'), ('tpg_auth', r'set auth (\w+)=(\S+)')],
        'block': [('create_block', 'create (' + NAME + ') ' + zvol), ('delete_block', 'delete (' + NAME + ')')],
        'block_object': [('block_attribute', r'set attribute (\w+)=(\S+)')],
        'luns': [('create_lun', 'create /backstores/block/(' + NAME + ')')],
    }
    ops, here, here_name = [], None, None
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        where = 'line %d' % number
        if line.startswith('cd '):
            found = [(place, re.fullmatch(pattern, line[3:])) for place, pattern in places]
            found = [(place, match) for place, match in found if match]
            if not found:
                raise Refused(
                    "%s: cd %s: only /iscsi/%s:<volume>/... and /backstores/block/... are this user's"
                    % (where, line[3:], conf['iscsi_basename'])
                )
            here, match = found[0]
            here_name = match.group(1) if match.groups() else None
            continue
        op = next(
            ((verb, m) for verb, pattern in commands.get(here, []) for m in [re.fullmatch(pattern, line)] if m), None
        )
        if op is None:
            # The first word only: a set auth line holds a secret.
            raise Refused(
                '%s: %r is not a command this user may run %s; it may run only %s'
                % (where, line.split(' ')[0], 'in ' + here if here else 'before a cd', shapes(here, conf))
            )
        verb, match = op
        ops.append(check(verb, here_name, match.groups(), where))
    return ops


def shapes(here, conf):
    """What may follow a cd to here, for the refusal."""
    return {
        None: 'cd to /iscsi or /backstores/block',
        'iscsi': 'create or delete %s:<name>' % conf['iscsi_basename'],
        'tpg': 'set attribute <%s>=<value>, set auth <%s>=<value>'
        % ('|'.join(sorted(TPG_ATTRIBUTES)), '|'.join(sorted(TPG_AUTH))),
        'block': 'create <name> /dev/zvol/%s/<zvol>, delete <name>' % conf['parent'],
        'block_object': 'set attribute <%s>=<value>' % '|'.join(sorted(BLOCK_ATTRIBUTES)),
        'luns': "create /backstores/block/<the target's name>",
    }[here]


def check(verb, here_name, groups, where):
    if verb in ('tpg_attribute', 'tpg_auth', 'block_attribute'):
        key, value = groups
        allowed = {'tpg_attribute': TPG_ATTRIBUTES, 'tpg_auth': TPG_AUTH, 'block_attribute': BLOCK_ATTRIBUTES}[verb]
        if key not in allowed:
            raise Refused('%s: %s is not one of %s' % (where, key, ', '.join(sorted(allowed))))
        if not VALUE.fullmatch(value):
            shown = 'its value' if verb == 'tpg_auth' else repr(value)
            raise Refused('%s: %s=%s has other characters than letters, digits and _ . @ : + / -' % (where, key, shown))
        return (verb, here_name, (key, value))
    if verb == 'create_block':
        name, volume = groups
        if name != volume.lower():
            raise Refused(
                '%s: backstore %s for zvol %s: democratic-csi names it after the zvol, %s'
                % (where, name, volume, volume.lower())
            )
        return (verb, name, volume)
    if verb == 'create_lun' and groups[0] != here_name:
        raise Refused('%s: target %s gets a LUN of backstore %s: only its own' % (where, here_name, groups[0]))
    return (verb, groups[0], None)


def plan(ops, conf, zvol_type, live):
    """The script root's targetcli runs, after checking each operation against ZFS (zvol_type(dataset) is its type
    or None) and the kernel's target configuration (live: {'blocks': {name: udev_path}, 'targets': {iqn: [LUN
    backstore names]}})."""
    parent, basename = conf['parent'], conf['iscsi_basename']
    ours = '/dev/zvol/%s/' % parent
    created = set()
    lines = []
    for verb, name, arg in ops:
        iqn = '%s:%s' % (basename, name)
        if verb == 'create_block':
            kind = zvol_type('%s/%s' % (parent, arg))
            if kind != 'volume':
                raise Refused(
                    '%s/%s is %s, not a zvol; only zvols of %s are exported' % (parent, arg, kind or 'missing', parent)
                )
            created.add(name)
            lines += ['cd /backstores/block', 'create %s /dev/zvol/%s/%s' % (name, parent, arg)]
        elif verb == 'delete_block':
            path = live['blocks'].get(name)
            if path is not None and not is_ours(path, ours):
                raise Refused("backstore %s is %s, not a zvol of %s: not this user's to delete" % (name, path, parent))
            lines += ['cd /backstores/block', 'delete ' + name]
        elif verb == 'block_attribute':
            lines += ['cd /backstores/block/' + name, 'set attribute %s=%s' % arg]
        elif verb == 'create_target':
            lines += ['cd /iscsi', 'create ' + iqn]
        elif verb == 'delete_target':
            foreign = [lun for lun in live['targets'].get(iqn, []) if not is_ours(live['blocks'].get(lun, ''), ours)]
            if foreign:
                raise Refused(
                    "target %s exports %s, which are not zvols of %s: not this user's to delete"
                    % (iqn, ', '.join(foreign), parent)
                )
            lines += ['cd /iscsi', 'delete ' + iqn]
        elif verb in ('tpg_attribute', 'tpg_auth'):
            lines += ['cd /iscsi/%s/tpg1' % iqn, 'set %s %s=%s' % ((verb[4:],) + arg)]
        elif verb == 'create_lun':
            if name not in created and not is_ours(live['blocks'].get(name, ''), ours):
                raise Refused("backstore %s is not a zvol of %s: not this user's to export" % (name, parent))
            lines += ['cd /iscsi/%s/tpg1/luns' % iqn, 'create /backstores/block/' + name]
    return '\n'.join(lines) + '\n'


def is_ours(path, prefix):
    return path.startswith(prefix) and re.fullmatch(COMPONENT, path[len(prefix) :]) is not None


def read_zvol_type(dataset):
    proc = subprocess.run(
        [ZFS, 'get', '-H', '-o', 'value', 'type', dataset],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        universal_newlines=True,
        check=False,
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


def read_live(root=CONFIGFS):
    """The kernel's block backstores {name: udev_path} and iSCSI targets {iqn: [backstore names of its LUNs]},
    from configfs (empty when the target modules are not loaded yet)."""
    blocks, targets = {}, {}
    core = os.path.join(root, 'core')
    for hba in _listdir(core):
        if hba.startswith('iblock_'):
            for name in _listdir(os.path.join(core, hba)):
                udev = os.path.join(core, hba, name, 'udev_path')
                if os.path.isfile(udev):
                    with open(udev) as f:
                        blocks[name] = f.read().strip()
    iscsi = os.path.join(root, 'iscsi')
    for iqn in _listdir(iscsi):
        if not iqn.startswith('iqn.'):
            continue
        luns = targets.setdefault(iqn, [])
        for tpg in _listdir(os.path.join(iscsi, iqn)):
            lun_dir = os.path.join(iscsi, iqn, tpg, 'lun')
            for lun in _listdir(lun_dir):
                for entry in _listdir(os.path.join(lun_dir, lun)):
                    link = os.path.join(lun_dir, lun, entry)
                    if os.path.islink(link):
                        luns.append(os.path.basename(os.readlink(link)))
    return {'blocks': blocks, 'targets': targets}


def _listdir(path):
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


# targetcli echoes each value it sets, the CHAP secrets too, after its prompt; democratic-csi logs what it answers.
SECRET_ECHO = re.compile(r"(Parameter (?:mutual_)?password is now ')[^\n]*('\.)$", re.M)


def redact(output):
    """targetcli's output without the CHAP secrets it echoes."""
    return SECRET_ECHO.sub(r'\1<redacted>\2', output)


def log(level, message):
    syslog.openlog('nomad-zfs-csi-targetcli', 0, syslog.LOG_AUTH)
    syslog.syslog(level, message)
    sys.stderr.write('nomad-zfs-csi: %s\n' % message)


def main(argv):
    user = os.environ.get('SUDO_USER')
    try:
        if len(argv) != 1:
            raise Refused('takes a targetcli script on stdin and no arguments')
        path = conf_path(user)
        with open(path) as f:
            conf = read_conf(f.read(), path)
        script = plan(parse(sys.stdin.read(), conf), conf, read_zvol_type, read_live())
    except (OSError, UnicodeDecodeError, Refused) as e:
        log(syslog.LOG_WARNING, 'refused a targetcli script of %s: %s' % (user, e))
        return 1
    env = {'PATH': '/usr/sbin:/usr/bin:/sbin:/bin', 'HOME': '/root', 'LANG': 'C.UTF-8', 'TERM': 'dumb'}
    ran = subprocess.run(
        [TARGETCLI], input=script, stdout=subprocess.PIPE, universal_newlines=True, env=env, check=False
    )
    sys.stdout.write(redact(ran.stdout))
    return ran.returncode


if __name__ == '__main__':
    sys.exit(main(sys.argv))
