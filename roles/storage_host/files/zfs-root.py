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
#   zfs-root unmount <parent>/<any depth>  zfs unmount (it moves nothing anywhere)
#   zfs-root guard                         canmount=noauto below <parent>/<volume>, and sharenfs=off where its
#                                          options would be refused, so zfs mount -a and zfs share -a at boot
#                                          do nothing the checks above would not
#
# The parents come from root-owned files the role writes, one for each service user of the host (parent= and
# snapshots_parent= lines): for mount, share and unmount the one of the user sudo ran this for, for the guard all
# of them. Refusals come before any zfs process runs, on stderr and in syslog.

import os
import re
import stat
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
# Read together: none is the user's to write. sharenfs is, and zfs stores it with any newline and tab, so each is
# read alone, as a whole (a value can forge whole lines of a listing; ZFS then writes it into the exports file).
READ = ('type', 'mountpoint', 'mounted')


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
        if sep and key in ('parent', 'snapshots_parent') and value:
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
        done = {'mount': 'mounted', 'share': 'shared', 'unmount': 'unmounted'}.get(verb, verb)
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
    if options != 'off' and not SHARE_OPTIONS.fullmatch(options):
        raise Refused(
            '%s has sharenfs %r; root shares only letters, digits and _ . , = : / @ * + - (NFS export options)'
            % (dataset, options)
        )


def plan(verb, dataset, conf, read, read_sharenfs=None, lstat=os.lstat):
    """The zfs argv root runs for the service user, after every check; read(datasets) gives their properties,
    read_sharenfs(dataset) the one value."""
    parent = conf['parent']
    check_name(verb, dataset, parent)
    if verb == 'unmount':
        return [ZFS, 'unmount', dataset]
    found = read([dataset, parent])
    if dataset not in found:
        raise Refused('%s does not exist' % dataset)
    check_mountpoint(dataset, found[dataset], found[parent], lstat)
    if verb == 'share':
        check_share(dataset, found[dataset], read_sharenfs(dataset))
    return [ZFS, verb, dataset]


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
            for command in plan_guard(confs, listing, read_shared(parents)):
                _zfs(command)
                log(syslog.LOG_NOTICE, 'guard: ' + ' '.join(command[1:]))
            return 0
        if len(argv) != 3 or argv[1] not in ('mount', 'share', 'unmount'):
            raise Refused('usage: zfs-root mount|share|unmount DATASET, or zfs-root guard')
        conf = read_file(conf_path(os.environ.get('SUDO_USER')))
        command = plan(argv[1], argv[2], conf, read_props, read_sharenfs)
    except (OSError, Refused) as e:
        log(syslog.LOG_WARNING, 'refused %s: %s' % (' '.join(argv[1:]), e))
        return 1
    os.execv(command[0], command)


if __name__ == '__main__':
    sys.exit(main(sys.argv))
