#!/bin/sh
# sh runs the lines up to exec, and Python the whole file, to which those lines are one string: python3 -IS, so
# nothing from the environment or a user's site directory reaches what runs as root.
""":"
exec /usr/bin/python3 -IS "$0" "$@"
"""

# Installed by the nomad_zfs.csi storage_host role as /usr/local/libexec/nomad-zfs-csi/zfs-root; changes here
# are overwritten. GNU General Public License v3.0+ (see the collection's LICENSE or
# https://www.gnu.org/licenses/gpl-3.0.txt)
#
# What root does for the CSI service user, through the role's sudo rule: mount, share and unmount the datasets
# of its delegated parent, and, at boot before zfs-mount.service, make the parents' deeper datasets unmountable.
#
# The service user owns the root directory of every dataset it creates, so it can put a symbolic link there and
# create a child dataset at the link's path: root mounting that child would follow the link and cover any
# directory on the host. The drivers need only <parent>/<volume>, whose mountpoint is a directory of the
# parent's root-owned mountpoint, so that is the only shape root mounts or shares, and only when the mountpoint
# is inherited, every directory above it is root's and unwritable by others, and none of them is a link.
#
#   zfs-root mount <parent>/<volume>       zfs mount, after those checks
#   zfs-root share <parent>/<volume>       zfs share of a mounted one, with plain NFS options only
#   zfs-root sharenfs <parent>/<volume> OPTIONS
#                                          zfs set -u sharenfs=OPTIONS, plain NFS options only, then zfs share of a
#                                          mounted one; the user holds no sharenfs delegation, so the value root
#                                          checked is the value root uses and the one zfs share -a reads at boot
#   zfs-root unshare <parent>/<volume>     zfs unshare, then zfs set -u sharenfs=off
#   (-u: without it, zfs set of sharenfs mounts every unmounted child that inherits it, at its mountpoint, through
#   whatever link the user put in the volume there)
#   zfs-root receive <parent>/<volume>     zfs receive -u of the stream on stdin into a new dataset, when it is a
#   zfs-root receive <snapshots parent>/<volume>/<snapshot>
#                                          plain full stream of one snapshot (democratic-csi's detached volumes
#                                          and snapshots): the user holds no receive delegation, with which
#                                          `zfs receive -o origin=` or a forged incremental stream made a clone of
#                                          any snapshot of the pool, which it then read
#   zfs-root bound <parent>/<volume>       zfs set quota= volume_quota_percent of its refquota: refquota, which the
#                                          driver sets to the capacity, leaves snapshots out; the quota counts them
#                                          (the user holds no quota delegation); never below what it uses
#   zfs-root unmount <parent>/<any depth>  zfs unmount (it moves nothing anywhere)
#   zfs-root guard                         canmount=noauto below <parent>/<volume>, and sharenfs=off where its
#                                          options would be refused, so zfs mount -a and zfs share -a at boot
#                                          do nothing the checks above would not; and each volume's quota, as
#                                          bound sets it, for volumes made before the role set the percent
#
# The parents come from root-owned files the role writes, one for each service user of the host (parent= and
# snapshots_parent= lines): for mount, share and unmount the one of the user sudo ran this for, for the guard all
# of them. Refusals come before any zfs process runs, on stderr and in syslog.

import os
import re
import stat
import struct
import subprocess
import sys
import syslog

ZFS = '/usr/sbin/zfs'
CONF_DIR = '/etc/nomad-zfs-csi/storage'
# A Debian user name (adduser's default NAME_REGEX, and _ as useradd allows): nothing that climbs out of CONF_DIR.
USER = re.compile(r'[a-z_][a-z0-9_-]{0,31}')
COMPONENT = r'[A-Za-z0-9_:][A-Za-z0-9_.:-]*'
# NFS export options as democratic-csi and operators write them (rw=@10.0.0.0/8,no_root_squash,sec=sys):
# nothing that could end an entry in the exports file or start another.
SHARE_OPTIONS = re.compile(r'[A-Za-z0-9_.,=:/@*+-]{1,1024}')
# Read together: none is the user's to write. sharenfs is root's too now (zfs-root sharenfs), but a dataset made
# while the user held sharenfs may keep a value with any newline and tab, so each is read alone, as a whole (a value
# can forge whole lines of a listing; ZFS then writes it into the exports file).
READ = ('type', 'mountpoint', 'mounted', 'refquota', 'quota', 'used')
VERBS = ('mount', 'share', 'sharenfs', 'unshare', 'unmount', 'receive', 'bound')
# The first record of a zfs send stream (OpenZFS include/sys/zfs_ioctl.h, dmu_replay_record_t with drr_begin):
# drr_type, drr_payloadlen, then drr_magic, drr_versioninfo, drr_creation_time, drr_type of the objset, drr_flags,
# drr_toguid, drr_fromguid, drr_toname. A stream in the other byte order shows a byte-swapped magic: refused.
BEGIN = struct.Struct('<IIQQQIIQQ256s')
DRR_BEGIN = 0
BACKUP_MAGIC = 0x2F5BACBAC
SUBSTREAM = 1  # DMU_GET_STREAM_HDRTYPE: one dataset's stream; 2 is a compound one (send -R or -p: properties)
FLAG_CLONE = 1  # DRR_FLAG_CLONE: receive makes a clone of the snapshot whose guid is drr_fromguid
# DMU_GET_FEATUREFLAGS (bits 2 to 31 of drr_versioninfo) that a plain zfs send [-c] [-L] [-e] of one snapshot sets:
# SA_SPILL, EMBED_DATA, LZ4, LARGE_BLOCKS, COMPRESSED, LARGE_DNODE, ZSTD, SWITCH_TO_LARGE_BLOCKS, LONGNAME,
# LARGE_MICROZAP. Not DEDUP, RESUMING, RAW, HOLDS, nor REDACTED, whose receive without its payload fails a VERIFY
# in the kernel's sync thread (dmu_recv_begin_sync), which stops the pool.
PLAIN_FEATURES = (1 << 2) | (1 << 16) | (1 << 17) | (1 << 19) | (1 << 22) | (1 << 23) | (1 << 25) | (7 << 27)
SNAPSHOT = re.compile(r'%s(/%s)*@%s' % (COMPONENT, COMPONENT, COMPONENT))


class Refused(Exception):
    """Something root will not do for the service user; the message says what and why."""


def conf_path(user):
    """The storage settings of the service user sudo ran this for (sudo sets SUDO_USER; the caller cannot)."""
    if not USER.fullmatch(user or ''):
        raise Refused('no service user to act for (SUDO_USER=%r): run this through the sudo rule' % (user,))
    return '%s/%s.conf' % (CONF_DIR, user)


def read_conf(text, path):
    """{key: dataset} of the parent= and snapshots_parent= lines."""
    conf = {}
    for line in text.splitlines():
        key, sep, value = line.partition('=')
        if sep and key == 'volume_quota_percent':
            if not re.fullmatch(r'[1-9][0-9]{2,5}', value):
                raise Refused('%s has a bad volume_quota_percent line: %r; run the storage_host role' % (path, value))
            conf[key] = int(value)
        elif sep and key in ('parent', 'snapshots_parent') and value:
            if not re.fullmatch('%s(/%s)*' % (COMPONENT, COMPONENT), value):
                raise Refused('%s has a bad %s line: %r; run the storage_host role' % (path, key, value))
            conf[key] = value
    if 'parent' not in conf:
        raise Refused('%s has no parent= line; run the storage_host role' % path)
    return conf


def check_name(verb, dataset, parent):
    """Refuse a dataset of another shape than the verb takes."""
    shape = '%s(/%s)+' if verb == 'unmount' else '%s/%s'
    if not re.fullmatch(shape % (re.escape(parent), COMPONENT), dataset):
        where = 'below' if verb == 'unmount' else 'exactly one level below'
        done = {'mount': 'mounted', 'unmount': 'unmounted', 'bound': 'given a quota'}.get(verb, 'shared or unshared')
        raise Refused('%s: only datasets %s %s are %s here' % (dataset, where, parent, done))


def check_mountpoint(dataset, props, parent_props, lstat=os.lstat):
    """Refuse to mount or share a dataset whose mountpoint is not <parent's mountpoint>/<name>, inherited, below
    directories that only root can change."""
    if props.get('type', ('', ''))[0] != 'filesystem':
        raise Refused('%s is not a filesystem' % dataset)
    value, source = props['mountpoint']
    base = parent_props['mountpoint'][0]
    if not base.startswith('/') or os.path.normpath(base) != base:
        raise Refused('the parent of %s has no usable mountpoint (%s)' % (dataset, base))
    expected = base.rstrip('/') + '/' + dataset.rsplit('/', 1)[1]
    if value != expected or not (source == 'default' or source.startswith('inherited from')):
        raise Refused(
            '%s has mountpoint %s (%s); only the one it inherits, %s, is mounted by root'
            % (dataset, value, source, expected)
        )
    path = ''
    for part in expected.split('/')[1:-1]:
        path += '/' + part
        info = lstat(path)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
            raise Refused(
                '%s would be mounted below %s, which is %s; root mounts only below root-owned directories that '
                'nobody else can write' % (dataset, path, _describe(info))
            )
    try:
        leaf = lstat(expected)
    except FileNotFoundError:
        return expected
    if not stat.S_ISDIR(leaf.st_mode):
        raise Refused('%s is not a directory (%s); root will not mount %s there' % (expected, _describe(leaf), dataset))
    return expected


def _describe(info):
    if stat.S_ISLNK(info.st_mode):
        return 'a symbolic link'
    if not stat.S_ISDIR(info.st_mode):
        return 'not a directory'
    return 'owned by uid %d, mode %o' % (info.st_uid, stat.S_IMODE(info.st_mode))


def check_share(dataset, props, options):
    if props['mounted'][0] != 'yes':
        raise Refused('%s is not mounted, so there is nothing to share' % dataset)
    check_options(dataset, options)


def check_options(dataset, options):
    if options != 'off' and not SHARE_OPTIONS.fullmatch(options or ''):
        raise Refused(
            '%s: sharenfs %r; root shares only letters, digits and _ . , = : / @ * + - (NFS export options)'
            % (dataset, options)
        )


def check_stream(header):
    """Refuse any stream but a plain full one of one snapshot: no origin (a forged drr_fromguid or clone flag names
    another's snapshot, which receive takes whatever the user may see), no properties (root's receive would set
    mountpoint, setuid or sharenfs), no payload (a raw or resumed send's)."""
    if len(header) != BEGIN.size:
        raise Refused('the stream on stdin is not a zfs send stream (%d bytes)' % len(header))
    drr_type, payload, magic, version, _created, _objset, flags, _toguid, fromguid, toname = BEGIN.unpack(header)
    if drr_type != DRR_BEGIN or magic != BACKUP_MAGIC:
        raise Refused('the stream on stdin is not a zfs send stream of this byte order')
    if version & 3 != SUBSTREAM:
        raise Refused('the stream holds several datasets or properties (zfs send -R or -p); send one snapshot')
    if (version >> 2) & ~PLAIN_FEATURES:
        raise Refused(
            'the stream has features %#x beyond a plain send (raw, resumed, redacted, deduplicated or with holds); '
            'send one snapshot, plain' % ((version >> 2) & ~PLAIN_FEATURES)
        )
    name = toname.split(b'\0', 1)
    if len(name) != 2 or not SNAPSHOT.fullmatch(name[0].decode('ascii', 'replace')):
        raise Refused('the stream names no snapshot it was sent from')
    if fromguid or flags & FLAG_CLONE:
        raise Refused(
            'the stream is incremental or a clone of another snapshot (guid %d); root receives only a '
            'full stream of one snapshot (zfs send <snapshot>)' % fromguid
        )
    if payload:
        raise Refused('the stream has a payload (a raw or resumed send); send one snapshot, plain')


def check_receive_target(dataset, conf):
    """<parent>/<volume> (a volume from a snapshot) or <snapshots parent>/<volume>/<snapshot> (a detached one)."""
    shapes = [re.escape(conf['parent']) + '/' + COMPONENT]
    if 'snapshots_parent' in conf:
        shapes.append(re.escape(conf['snapshots_parent']) + ('/' + COMPONENT) * 2)
    if not any(re.fullmatch(shape, dataset) for shape in shapes):
        raise Refused(
            '%s: root receives only into <parent>/<volume> or <snapshots parent>/<volume>/<snapshot> (%s)'
            % (dataset, ', '.join(conf[k] for k in ('parent', 'snapshots_parent') if k in conf))
        )


def plan(verb, dataset, conf, read, read_sharenfs=None, lstat=os.lstat, options=None):
    """The zfs argvs root runs for the service user, in order, after every check; read(datasets) gives their
    properties, read_sharenfs(dataset) the one value; options is sharenfs's value, or receive's stream header."""
    parent = conf['parent']
    if verb == 'receive':
        check_receive_target(dataset, conf)
        check_stream(options)
        if read([dataset]):
            raise Refused('destination %s exists; root receives only a new dataset' % dataset)
        return [[ZFS, 'receive', '-u', dataset]]
    check_name(verb, dataset, parent)
    if verb == 'unmount':
        return [[ZFS, 'unmount', dataset]]
    if verb == 'bound':
        return plan_bound(dataset, conf, read([dataset]).get(dataset))
    if verb == 'sharenfs':
        check_options(dataset, options)
    found = read([dataset, parent])
    if dataset not in found:
        # democratic-csi takes this phrase, as zfs words it, for a volume already gone.
        raise Refused('%s: dataset does not exist' % dataset)
    mounted = found[dataset].get('mounted', ('no', '-'))[0] == 'yes'
    if verb == 'unshare' or options == 'off':
        # zfs unshare refuses a dataset whose sharenfs is off already ("legacy share"), so it comes first.
        return ([[ZFS, 'unshare', dataset]] if mounted else []) + [[ZFS, 'set', '-u', 'sharenfs=off', dataset]]
    check_mountpoint(dataset, found[dataset], found[parent], lstat)
    if verb == 'sharenfs':
        return [[ZFS, 'set', '-u', 'sharenfs=' + options, dataset]] + ([[ZFS, 'share', dataset]] if mounted else [])
    if verb == 'share':
        check_share(dataset, found[dataset], read_sharenfs(dataset))
    return [[ZFS, verb, dataset]]


def plan_bound(dataset, conf, props):
    """zfs set quota= of a volume: volume_quota_percent of its refquota, so that its snapshots count against it too;
    none where the role set no percent, the volume has no refquota or is no filesystem, or the quota is set already.
    Never below what the volume uses already: zfs refuses that, and democratic-csi's create or expand would fail."""
    if 'volume_quota_percent' not in conf or not props or props.get('type', ('', ''))[0] != 'filesystem':
        return []
    refquota = int(props.get('refquota', ('0', ''))[0] or 0)
    if not refquota:
        return []
    quota = refquota * conf['volume_quota_percent'] // 100
    if props.get('quota', ('0', ''))[0] == str(quota):
        return []
    used = int(props.get('used', ('0', ''))[0] or 0)
    if quota < used:
        log(
            syslog.LOG_NOTICE,
            '%s uses %d bytes, more than its quota of %d: its quota stays until snapshots are '
            'pruned or the capacity grows' % (dataset, used, quota),
        )
        return []
    return [[ZFS, 'set', 'quota=%d' % quota, dataset]]


def run(commands):
    """Each command in turn, stopping at the first that fails; an unshare of what is not shared is no failure."""
    for command in commands:
        proc = subprocess.run(command, stderr=subprocess.PIPE, universal_newlines=True, check=False)
        if proc.returncode != 0 and not (command[1] == 'unshare' and 'not currently shared' in proc.stderr):
            sys.stderr.write(proc.stderr)
            return proc.returncode
    return 0


def parents_of(confs):
    return [conf[key] for conf in confs for key in ('parent', 'snapshots_parent') if key in conf]


def plan_guard(confs, listing, shared):
    """The zfs set commands that leave nothing below the parents of every service user for zfs mount -a and
    zfs share -a but what root would mount and share for them; listing is `zfs list -H -o name,canmount -r -t
    filesystem` of the parents, shared {dataset: its own sharenfs} of those that set one."""
    commands = []
    parents = parents_of(confs)
    for line in listing.splitlines():
        name, canmount = (line.split('\t') + [''])[:2]
        parent = next((p for p in parents if name.startswith(p + '/')), None)
        if parent is not None and name.count('/') > parent.count('/') + 1 and canmount == 'on':
            commands.append([ZFS, 'set', 'canmount=noauto', name])
    for name, options in sorted(shared.items()):
        if options != 'off' and not SHARE_OPTIONS.fullmatch(options):
            commands.append([ZFS, 'set', 'sharenfs=off', name])
    return commands


def plan_bounds(confs, listing, read):
    """zfs set quota= of every volume of the parents whose settings have volume_quota_percent, as bound does after a
    change: volumes made before the role set the percent, or while it was lower, get theirs at the next boot or run
    of the role. listing as plan_guard's; read as plan's."""
    commands = []
    for conf in confs:
        parent = conf.get('parent')
        if not parent or 'volume_quota_percent' not in conf:
            continue
        names = (line.split('\t')[0] for line in listing.splitlines())
        volumes = [name for name in names if name.startswith(parent + '/') and name.count('/') == parent.count('/') + 1]
        found = read(volumes) if volumes else {}
        for volume in volumes:
            commands += plan_bound(volume, conf, found.get(volume))
    return commands


def _zfs(argv):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    if proc.returncode != 0:
        raise Refused('%s failed: %s' % (' '.join(argv[:2]), proc.stderr.strip()))
    return proc.stdout


def read_sharenfs(dataset):
    """The dataset's sharenfs, whole: zfs prints the value and one newline."""
    value = _zfs([ZFS, 'get', '-H', '-o', 'value', 'sharenfs', dataset])
    return value[:-1] if value.endswith('\n') else value


def read_shared(parents):
    """{dataset: sharenfs} of the datasets below the parents that set their own (a name holds no newline, so that
    listing is safe; each value is then read alone)."""
    argv = [ZFS, 'get', '-H', '-r', '-s', 'local,received', '-t', 'filesystem', '-o', 'name', 'sharenfs'] + parents
    return {name: read_sharenfs(name) for name in _zfs(argv).splitlines() if name}


def read_props(datasets):
    """{dataset: {property: (value, source)}} of those that exist."""
    argv = [ZFS, 'get', '-H', '-p', '-o', 'name,property,value,source', ','.join(READ)] + datasets
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True, check=False)
    found = {}
    for line in proc.stdout.splitlines():
        fields = line.split('\t')
        if len(fields) == 4:
            found.setdefault(fields[0], {})[fields[1]] = (fields[2], fields[3])
    return found


def read_header(stream):
    header = b''
    while len(header) < BEGIN.size:
        chunk = stream.read(BEGIN.size - len(header))
        if not chunk:
            break
        header += chunk
    return header


def receive(command, header, stream):
    """zfs receive of the header the checks read, then the rest of the stream as it comes."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE)
    try:
        proc.stdin.write(header)
        while True:
            chunk = stream.read(1 << 20)
            if not chunk:
                break
            proc.stdin.write(chunk)
        proc.stdin.close()
    except BrokenPipeError:
        pass  # zfs receive stopped; its own message says why
    return proc.wait()


def read_file(path):
    with open(path) as f:
        return read_conf(f.read(), path)


def log(level, message):
    syslog.openlog('nomad-zfs-csi-zfs-root', 0, syslog.LOG_AUTH)
    syslog.syslog(level, message)
    sys.stderr.write('nomad-zfs-csi: %s\n' % message)


def main(argv):
    try:
        if argv[1:] == ['guard']:
            names = sorted(name for name in os.listdir(CONF_DIR) if name.endswith('.conf'))
            confs = [read_file(os.path.join(CONF_DIR, name)) for name in names]
            parents = parents_of(confs)
            if not parents:
                return 0
            listing = _zfs([ZFS, 'list', '-H', '-r', '-t', 'filesystem', '-o', 'name,canmount'] + parents)
            commands = plan_guard(confs, listing, read_shared(parents)) + plan_bounds(confs, listing, read_props)
            for command in commands:
                _zfs(command)
                log(syslog.LOG_NOTICE, 'guard: ' + ' '.join(command[1:]))
            return 0
        verb, args = (argv[1], argv[2:]) if len(argv) > 1 else ('', [])
        if len(args) != (2 if verb == 'sharenfs' else 1) or verb not in VERBS:
            raise Refused(
                'usage: zfs-root mount|share|unshare|unmount|receive|bound DATASET, zfs-root sharenfs DATASET OPTIONS, '
                'or zfs-root guard'
            )
        conf = read_file(conf_path(os.environ.get('SUDO_USER')))
        options = read_header(sys.stdin.buffer) if verb == 'receive' else (args[1] if args[1:] else None)
        commands = plan(verb, args[0], conf, read_props, read_sharenfs, options=options)
    except (OSError, Refused) as e:
        log(syslog.LOG_WARNING, 'refused %s: %s' % (' '.join(argv[1:]), e))
        return 1
    if verb == 'receive':
        log(syslog.LOG_NOTICE, 'receive -u %s' % args[0])
        return receive(commands[0], options, sys.stdin.buffer)
    if not commands:
        return 0
    if len(commands) == 1:
        os.execv(commands[0][0], commands[0])
    return run(commands)


if __name__ == '__main__':
    sys.exit(main(sys.argv))
