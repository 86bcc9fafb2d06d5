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
# below the parent, a target whose LUNs are all such backstores (read from the kernel's configfs). Then it applies
# what was parsed through rtslib, the library root's targetcli is built on, in this process, and saves the
# configuration as targetcli does; never the text as sent, and without targetcli's shell, whose start took about 2 s
# of the emulated test VM's one CPU for each volume. Anything else refuses the whole script before anything changes,
# on stderr and in syslog; no message quotes a value of set auth (CHAP secrets).
#
# The parent and the target base name come from the user's root-owned file the role writes
# (/etc/nomad-zfs-csi/storage/<user>.conf: parent= and iscsi_basename= lines).

import contextlib
import fcntl
import glob
import gzip
import os
import re
import struct
import subprocess
import sys
import syslog
import time

ZFS = '/usr/sbin/zfs'
DIST_PACKAGES = '/usr/lib/python3/dist-packages'
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
    """{'parent': dataset, 'iscsi_basename': iqn, 'chap': whether every target must ask for CHAP}."""
    conf = dict(line.partition('=')[::2] for line in text.splitlines() if '=' in line)
    if not re.fullmatch('%s(/%s)*' % (COMPONENT, COMPONENT), conf.get('parent', '')):
        raise Refused('%s has no usable parent= line; run the storage_host role' % path)
    if not BASENAME.fullmatch(conf.get('iscsi_basename', '')):
        raise Refused('%s has no usable iscsi_basename= line; run the storage_host role' % path)
    # Required unless the role says otherwise (storage_host_iscsi_chap): a missing line refuses to undo CHAP.
    chap = conf.get('iscsi_chap', 'required') != 'optional'
    return {'parent': conf['parent'], 'iscsi_basename': conf['iscsi_basename'], 'chap': chap}


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
    """The steps root applies, [(step, target or backstore name, argument)], after checking each operation against
    ZFS (zvol_type(dataset) is its type or None) and the kernel's target configuration (live: {'blocks': {name:
    udev_path}, 'targets': {iqn: [LUN backstore names]}})."""
    parent, basename = conf['parent'], conf['iscsi_basename']
    ours = '/dev/zvol/%s/' % parent
    created = set()
    steps = []
    for verb, name, arg in ops:
        iqn = '%s:%s' % (basename, name)
        if verb == 'create_block':
            kind = zvol_type('%s/%s' % (parent, arg))
            if kind != 'volume':
                raise Refused(
                    '%s/%s is %s, not a zvol; only zvols of %s are exported' % (parent, arg, kind or 'missing', parent)
                )
            created.add(name)
            steps.append((verb, name, ours + arg))
        elif verb == 'delete_block':
            path = live['blocks'].get(name)
            if path is not None and not is_ours(path, ours):
                raise Refused("backstore %s is %s, not a zvol of %s: not this user's to delete" % (name, path, parent))
            steps.append((verb, name, None))
        elif verb == 'block_attribute':
            steps.append((verb, name, arg))
        elif verb == 'delete_target':
            foreign = [lun for lun in live['targets'].get(iqn, []) if not is_ours(live['blocks'].get(lun, ''), ours)]
            if foreign:
                raise Refused(
                    "target %s exports %s, which are not zvols of %s: not this user's to delete"
                    % (iqn, ', '.join(foreign), parent)
                )
            steps.append((verb, iqn, None))
        elif verb == 'create_lun':
            if name not in created and not is_ours(live['blocks'].get(name, ''), ours):
                raise Refused("backstore %s is not a zvol of %s: not this user's to export" % (name, parent))
            steps.append((verb, iqn, name))
        elif verb == 'create_target':
            # The TPG asks for CHAP from its first moment: a script that set generate_node_acls and never
            # authentication would leave it open to every initiator.
            steps.append((verb, iqn, 1 if conf.get('chap') else 0))
        else:  # tpg_attribute, tpg_auth
            if verb == 'tpg_attribute' and arg[0] == 'authentication' and conf.get('chap') and arg[1] != '1':
                raise Refused(
                    'target %s: authentication=%s: every target of this host asks for CHAP (storage_host_iscsi_chap)'
                    % (iqn, arg[1])
                )
            steps.append((verb, iqn, arg))
    return steps


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


class Failed(Exception):
    """rtslib could not apply a step; the message names it, never a CHAP secret."""


def apply(steps, rts):
    """Applies the steps through rtslib, the library root's targetcli is built on, as targetcli does with its default
    preferences (a new target gets TPG 1, enabled, and a portal on 0.0.0.0:3260), but for authentication, which plan
    gives (on where the host requires CHAP, for a target there already too); a new backstore exports its name as the
    SCSI model. It converges: what exists already is kept and what is gone already is no error, so democratic-csi's
    retry of a CreateVolume or DeleteVolume that stopped half-way finishes it. One line of output for each step, never
    the value of an auth step."""
    iscsi = rts.FabricModule('iscsi')
    done = []
    for step, name, arg in steps:
        if step == 'create_target':
            target = rts.Target(iscsi, name, mode='any')
            if 1 in [tpg.tag for tpg in target.tpgs]:
                if arg:  # a target made before CHAP was required asks for it from now on
                    tpg1(rts, iscsi, name).set_attribute('authentication', 1)
                done.append('Target %s is there.' % name)
                continue
            tpg = rts.TPG(target, 1, mode='create')
            tpg.enable = True
            tpg.set_attribute('authentication', arg)
            rts.NetworkPortal(tpg, '0.0.0.0', 3260, mode='create')
            done.append('Created target %s: TPG 1, a portal on 0.0.0.0:3260.' % name)
        elif step in ('tpg_attribute', 'tpg_auth'):
            tpg = tpg1(rts, iscsi, name)
            key, value = arg
            if step == 'tpg_attribute':
                tpg.set_attribute(key, value)
                done.append('Set attribute %s=%s on %s.' % (key, value, name))
            else:
                setattr(tpg, 'chap_' + key, value)
                done.append('Set auth %s on %s.' % (key, name))
        elif step == 'create_block':
            block = block_named(rts, name)
            if block is None:
                block = rts.BlockStorageObject(name, dev=arg, readonly=read_only(arg))
                block.set_attribute('emulate_model_alias', 1)
                done.append('Created block backstore %s of %s.' % (name, arg))
            elif block.udev_path != arg:
                raise Failed('backstore %s exists already, of %s and not of %s' % (name, block.udev_path, arg))
            else:
                done.append('Block backstore %s is there.' % name)
        elif step == 'block_attribute':
            existing(rts, name).set_attribute(*arg)
            done.append('Set attribute %s=%s on backstore %s.' % (arg + (name,)))
        elif step == 'create_lun':
            tpg = tpg1(rts, iscsi, name)
            block = existing(rts, arg)
            if not [lun for lun in tpg.luns if lun.storage_object.path == block.path]:
                rts.LUN(tpg, storage_object=block)
            done.append('Target %s exports backstore %s.' % (name, arg))
        elif step == 'delete_target':
            try:
                rts.Target(iscsi, name, mode='lookup').delete()
                done.append('Deleted target %s.' % name)
            except rts.RTSLibNotInCFS:
                done.append('No target %s.' % name)
        elif step == 'delete_block':
            block = block_named(rts, name)
            if block is not None:
                block.delete()
            done.append(('Deleted block backstore %s.' if block else 'No block backstore %s.') % name)
    return done


def tpg1(rts, iscsi, iqn):
    try:
        return rts.TPG(rts.Target(iscsi, iqn, mode='lookup'), 1, mode='lookup')
    except rts.RTSLibNotInCFS:
        raise Failed('no target %s with a TPG 1: the script makes it first' % iqn) from None


def existing(rts, name):
    block = block_named(rts, name)
    if block is None:
        raise Failed('no block backstore %s: the script makes it first' % name)
    return block


def block_named(rts, name):
    """The block backstore of that name, or None."""
    try:
        return rts.BlockStorageObject(name)
    except rts.RTSLibNotInCFS:
        return None


def read_only(device):
    """Whether the device is read-only (a zvol with readonly=on), as targetcli asks the kernel (BLKROGET)."""
    fd = os.open(device, os.O_RDONLY)
    try:
        return struct.unpack('I', fcntl.ioctl(fd, 0x125E, bytes(4)))[0] != 0
    finally:
        os.close(fd)


@contextlib.contextmanager
def locked(directory):
    """One call at a time (democratic-csi makes volumes side by side): each checks the kernel's configuration, then
    changes it and saves all of it, and two saves at once could keep the older. The lock is on the saved file's
    directory, which is root's."""
    os.makedirs(directory, 0o700, exist_ok=True)
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def save(rts, save_file, keep=10):
    """The kernel's configuration saved for the restore at boot (rtslib-fb-targetctl), as targetcli saves on exit:
    first the previous file gzipped into backup/ when the newest backup differs from it, the newest ten kept."""
    backups_dir = os.path.join(os.path.dirname(save_file), 'backup')
    os.makedirs(backups_dir, 0o700, exist_ok=True)
    if os.path.exists(save_file):
        with open(save_file, 'rb') as f:
            previous = f.read()
        backups = sorted(glob.glob(backups_dir + '/saveconfig-*json*'))
        if not backups or read_backup(backups[-1]) != previous:
            path = '%s/saveconfig-%s-json.gz' % (backups_dir, time.strftime('%Y%m%d-%H:%M:%S'))
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with gzip.open(os.fdopen(fd, 'wb'), 'wb') as f:
                f.write(previous)
            backups = sorted(set(backups + [path]))
        for old in backups[:-keep]:
            os.remove(old)
    rts.RTSRoot().save_to_file(save_file)


def read_backup(path):
    with (gzip.open if path.endswith('.gz') else open)(path, 'rb') as f:
        return f.read()


def rtslib():
    """rtslib-fb from Debian's python3-rtslib-fb (python3 -S leaves dist-packages off the path)."""
    sys.path.append(DIST_PACKAGES)
    import rtslib_fb
    import rtslib_fb.root

    return rtslib_fb


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
        ops = parse(sys.stdin.read(), conf)
        rts = rtslib()
        save_file = rts.root.default_save_file
        with locked(os.path.dirname(save_file)):
            return applied(plan(ops, conf, read_zvol_type, read_live()), rts, save_file, user)
    except Refused as e:
        log(syslog.LOG_WARNING, 'refused a targetcli script of %s: %s' % (user, e))
    except (OSError, UnicodeDecodeError, ImportError) as e:  # ImportError: no python3-rtslib-fb
        log(syslog.LOG_ERR, 'could not run a targetcli script of %s: %s' % (user, e))
    return 1


def applied(steps, rts, save_file, user):
    """The exit code; the configuration is saved whatever happened, since the kernel holds what was applied."""
    try:
        done = apply(steps, rts)
    except Exception as e:  # Failed, and rtslib's RTSLibError and OSError
        secrets = [arg[1] for step, _name, arg in steps if step == 'tpg_auth']
        log(syslog.LOG_ERR, 'a targetcli script of %s failed: %s' % (user, redacted(str(e), secrets)))
        return 1
    finally:
        save(rts, save_file)
    sys.stdout.write(''.join(line + '\n' for line in done))
    return 0


def redacted(message, secrets):
    for secret in secrets:
        message = message.replace(secret, '<redacted>')
    return message


if __name__ == '__main__':
    sys.exit(main(sys.argv))
