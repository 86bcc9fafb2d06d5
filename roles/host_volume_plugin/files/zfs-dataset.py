#!/bin/sh
# Installed by the nomad_zfs.csi host_volume_plugin role as <host_volume_plugin_dir>/zfs-dataset;
# changes here are overwritten. GNU General Public License v3.0+ (see the collection's LICENSE
# or https://www.gnu.org/licenses/gpl-3.0.txt)
#
# sh runs the lines up to exec, and Python the whole file, to which those lines are one string.
# Nomad gives the fingerprint one second and does not retry it; a Python start alone took longer
# on a loaded host, so sh answers it. Everything else runs in python3 -IS.
""":"
[ "$1" = fingerprint ] && { echo '{"version": "0.3.0"}'; exit 0; }
exec /usr/bin/python3 -IS "$0" "$@"
"""

# A Nomad dynamic host volume plugin: each volume is a quota'd ZFS dataset.
#
# Nomad runs this as root with `fingerprint`, `create` or `delete` as its argument
# and the request in DHV_* variables, and nothing else in the environment (no
# PATH), so every program is called by absolute path and with an argv list.
#
# - create makes <parent>/<namespace>/<name> with refquota from the capacity and the
#   allowlisted parameters, and with the configured share of the capacity as its quota,
#   which counts its snapshots too (refquota does not: a workload that rewrote its data
#   around the scheduled snapshots made an 8 MiB volume hold 22 MiB); marks it with the volume's ID, and prints its
#   mountpoint and size. Nomad repeats create for every volume at each agent
#   start and to update one, so a repeat changes only what differs.
# - delete destroys only a dataset carrying this volume's mark, never
#   recursively, and its snapshots only when the volume's parameters say so
#   (the collection's own always go with it: sanoid's autosnap_* and a move's
#   final nomad-zfs-csi-move_*). A dataset
#   marked as moved to another node is kept, and the plugin says so in syslog;
#   create refuses it, so it never comes back live here.
# - create with parameter adopt_replica = "<path under the replica parent>" takes
#   the replica <replica parent>/<path>/<namespace>/<name>, which the
#   zfs_replication role pulled from another node, instead of an empty dataset:
#   renamed into place with its snapshots, writable and mounted. Only a replica
#   of the same namespace and name, only in a pull target of the zfs_replication
#   role (its TARGET= under the replica parent), only one with no dataset below
#   it (a primary could send a child whose mountpoint passes through a symbolic
#   link in the volume), and only when the volume asks.
# - A capacity larger than the pool can ever hold is refused, with the pool's size.
# - Every refusal happens before the first zfs process that writes, and is printed as
#   {"error": "..."}, which Nomad shows to whoever asked.
#
# The parents come from a root-owned file the role writes beside this one, named
# as this file with .conf added (one per plugin file, so that two plugin IDs, or
# two agents on one host, can each have their own parent; Nomad runs only
# executable files from its plugin directory):
#   parent=tank/nomad/volumes
#   replica_parent=tank/nomad/replica     (optional: where replicas to adopt are)
#   volume_quota_percent=200              (optional: each volume's quota, snapshots included, in % of its capacity)

import glob
import json
import os
import re
import stat
import subprocess
import sys
import syslog

ZFS = '/usr/sbin/zfs'
# Appended to the path Nomad runs the plugin by.
CONF_SUFFIX = '.conf'
MARK = 'nomad-zfs-csi:host-volume-id'
# The zfs_replication role's pull configurations (its zfs_replication_pull_dir): adoption takes only their targets.
PULLS = '/etc/nomad-zfs-csi/pulls/*.conf'
# Set on a volume's dataset when its data moved to another node: delete keeps it.
MOVED = 'nomad-zfs-csi:moved-to'
# The prefixes of the collection's own snapshots: sanoid's on the zfs_replication role's schedule, and the final
# snapshot of a move (role host_volume_move), which an adopted replica brings with it.
SCHEDULED = ('autosnap_', 'nomad-zfs-csi-move_')

# Names become one dataset component each: no '/', '@', '..', spaces or leading '-'.
# Every check is a full match: '$' would let a trailing newline through to zfs.
NAME_RE = re.compile(r'[A-Za-z0-9_:][A-Za-z0-9_.:-]{0,99}')

_COMPRESSION_RE = re.compile(r'on|off|lz4|lzjb|zle|gzip(-[1-9])?|zstd(-([1-9]|1[0-9]))?|zstd-fast(-[0-9]{1,4})?')
_SIZE_SUFFIX = {'': 1, 'K': 1 << 10, 'M': 1 << 20}


def _bytes(value):
    """'128K' as 131072, the way `zfs get -p` prints it; None when it is not a size."""
    match = re.fullmatch(r'([0-9]{1,8})([KkMm]?)', value)
    return int(match.group(1)) * _SIZE_SUFFIX[match.group(2).upper()] if match else None


def _recordsize_ok(value):
    size = _bytes(value)
    return size is not None and 512 <= size <= 16 << 20 and size & (size - 1) == 0


# The dataset properties a volume specification may set, each with its check.
PROPERTIES = {
    'compression': (_COMPRESSION_RE.fullmatch, 'on, off, lz4, zle, gzip[-1..9] or zstd[-1..19]'),
    'recordsize': (_recordsize_ok, 'a power of two from 512 to 16M, such as 128K'),
    'atime': (('on', 'off').__contains__, 'on or off'),
    'com.sun:auto-snapshot': (('true', 'false').__contains__, 'true or false'),
}


def _relative_ok(value):
    return all(NAME_RE.fullmatch(part) for part in value.split('/'))  # NAME_RE refuses '', '.', '..' and '@'


def _id_ok(value):
    return re.fullmatch(r'[0-9]{1,10}', value) is not None and int(value) < 1 << 31


# The volume's root directory: its mode and owner, as Nomad's own mkdir plugin takes them. A task of a tenant runs as
# an unprivileged user, and writes into a root-owned 0755 directory only with capabilities it should not hold.
OWNERSHIP = {
    'mode': (re.compile(r'0?[0-7]{3}').fullmatch, 'an octal mode such as 0770'),
    'uid': (_id_ok, 'a numeric user ID such as 1000'),
    'gid': (_id_ok, 'a numeric group ID such as 1000'),
}

# Parameters that steer the plugin and are not properties.
CONTROLS = {
    'delete_snapshots': (('true', 'false').__contains__, 'true or false'),
    'adopt_replica': (
        _relative_ok,
        "the path under the replica parent of the source node's volumes, such as 10.0.0.1/tank/nomad/volumes",
    ),
    **OWNERSHIP,
}
# Properties that follow a parameter. A volume without scheduled snapshots has nothing a standby can pull, and
# syncoid fails a standby's whole recursive pull on it unless its syncoid:sync is false.
FOLLOWERS = {'com.sun:auto-snapshot': 'syncoid:sync'}
# Read in one zfs get: the mark, the size, where it is mounted, and every property we set.
# And the pool's used and available, whose sum is the most any volume in it can ever hold.
READ = ('type', MARK, MOVED, 'refquota', 'quota', 'mountpoint', 'mounted', 'used', 'available') + tuple(PROPERTIES)
READ += tuple(FOLLOWERS.values())
# What adoption reads of a replica, with each property's source: the replica parent's inert properties must not
# follow a replica that a local setting kept them on.
INERT = ('readonly', 'mountpoint', 'canmount', 'exec', 'setuid', 'devices')
REPLICA_READ = ('type', 'receive_resume_token', 'used') + INERT


class PluginError(Exception):
    """A refusal or failure, said to Nomad as {"error": ...}."""


def _conf_dataset(text, key):
    for line in text.splitlines():
        if line.startswith(key + '=') and len(line) > len(key) + 1:
            value = line[len(key) + 1 :]
            if any(not NAME_RE.fullmatch(part) or part.startswith(':') for part in value.split('/')):
                raise PluginError(
                    'the configuration names an invalid %s %r; run the host_volume_plugin role' % (key, value)
                )
            return value
    return None


def read_parent(text):
    """The parent dataset from the config file's text."""
    parent = _conf_dataset(text, 'parent')
    if parent is None:
        raise PluginError('the configuration has no parent= line; run the host_volume_plugin role')
    return parent


def read_replica_parent(text):
    """The replica parent from the config file's text, or None where adoption is not set up."""
    return _conf_dataset(text, 'replica_parent')


def read_volume_quota_percent(text):
    """The volume_quota_percent= line's whole number (100 or more), or None where there is none."""
    for line in text.splitlines():
        if line.startswith('volume_quota_percent='):
            value = line[len('volume_quota_percent=') :]
            if not re.fullmatch(r'[1-9][0-9]{2,5}', value):
                raise PluginError(
                    'the configuration has volume_quota_percent=%r, not a whole number from 100; run the '
                    'host_volume_plugin role' % value
                )
            return int(value)
    return None


def read_volume_ownership(text):
    """The volume_mode=, volume_uid= and volume_gid= lines: the mode and owner of every volume's root directory that
    a volume's own parameters do not give."""
    found = {}
    for key in OWNERSHIP:
        for line in text.splitlines():
            if line.startswith('volume_%s=' % key):
                value = line[len('volume_%s=' % key) :]
                check, expected = OWNERSHIP[key]
                if not check(value):
                    raise PluginError(
                        'the configuration has volume_%s=%r, not %s; run the host_volume_plugin role'
                        % (key, value, expected)
                    )
                found[key] = value
    return found


def own_root_dir(path, ownership):
    """Give the volume's root directory the mode and owner asked for, through a descriptor of that directory itself
    (never a link), changing only what differs."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        now = os.fstat(fd)
        uid, gid = int(ownership.get('uid', now.st_uid)), int(ownership.get('gid', now.st_gid))
        if (now.st_uid, now.st_gid) != (uid, gid):
            os.fchown(fd, uid, gid)
        if 'mode' in ownership and stat.S_IMODE(now.st_mode) != int(ownership['mode'], 8):
            os.fchmod(fd, int(ownership['mode'], 8))
    finally:
        os.close(fd)


def _name(env, variable, what):
    value = env.get(variable, '')
    if not isinstance(value, str) or not NAME_RE.fullmatch(value) or '..' in value:
        raise PluginError(
            '%s %r cannot name a dataset: use 1 to 100 letters, digits, _ : . or -, '
            'not starting with . or -, and no .., /, @ or spaces' % (what, value)
        )
    return value


def parse_request(env, parent, quota_percent=None):
    """Check the request in Nomad's DHV_* variables; raise PluginError before any zfs runs. quota_percent: the
    configuration's volume_quota_percent."""
    namespace = _name(env, 'DHV_NAMESPACE', 'namespace')
    name = _name(env, 'DHV_VOLUME_NAME', 'volume name')
    volume_id = env.get('DHV_VOLUME_ID', '')
    if not re.fullmatch(r'[0-9a-f-]{36}', volume_id):
        raise PluginError('DHV_VOLUME_ID %r is not a Nomad volume ID' % volume_id)
    try:
        parameters = json.loads(env.get('DHV_PARAMETERS') or '{}') or {}
    except ValueError as err:
        raise PluginError('DHV_PARAMETERS is not JSON: %s' % err) from None
    properties, controls = {}, {}
    for key in sorted(parameters):
        value = parameters[key]
        table, into = (PROPERTIES, properties) if key in PROPERTIES else (CONTROLS, controls)
        if key not in table:
            raise PluginError(
                'parameter %r is not allowed; use only %s' % (key, ', '.join(sorted(PROPERTIES) + sorted(CONTROLS)))
            )
        check, expected = table[key]
        if not isinstance(value, str) or not check(value):
            raise PluginError('parameter %s=%r is invalid; use %s' % (key, value, expected))
        # Compared with `zfs get -p`, which prints sizes in bytes.
        into[key] = str(_bytes(value)) if key == 'recordsize' else value
        if key in FOLLOWERS:
            properties[FOLLOWERS[key]] = value
    capacity = 0
    for variable in ('DHV_CAPACITY_MAX_BYTES', 'DHV_CAPACITY_MIN_BYTES'):
        value = env.get(variable) or '0'
        if not re.fullmatch(r'[0-9]{1,20}', value):
            raise PluginError('%s %r is not a number of bytes' % (variable, value))
        capacity = capacity or int(value)
    return {
        'dataset': '%s/%s/%s' % (parent, namespace, name),
        'id': volume_id,
        'capacity': capacity,
        'quota': capacity * quota_percent // 100 if quota_percent else None,
        'properties': properties,
        'delete_snapshots': controls.get('delete_snapshots') == 'true',
        'adopt_replica': controls.get('adopt_replica'),
        'relative': '%s/%s' % (namespace, name),
        'ownership': dict((key, controls[key]) for key in OWNERSHIP if key in controls),
    }


def parse_get(text):
    """`zfs get -H -p -o name,property,value` output as {dataset: {property: value}}."""
    datasets = {}
    for line in text.splitlines():
        fields = line.split('\t', 2)
        if len(fields) == 3:
            datasets.setdefault(fields[0], {})[fields[1]] = fields[2]
    return datasets


def parse_list(text, dataset):
    """`zfs list -H -o name,<MARK>,<MOVED> -d 1` of a dataset: its marks (None when it does not exist), and its
    snapshots' names."""
    marks, snapshots = None, []
    for line in text.splitlines():
        name, mark, moved = (line.split('\t', 2) + ['', ''])[:3]
        if name == dataset:
            marks = {MARK: mark, MOVED: moved}
        elif name.startswith(dataset + '@'):
            snapshots.append(name)
    return marks, snapshots


def parse_sources(text):
    """`zfs get -H -p -o property,value,source` of one dataset as {property: (value, source)}."""
    fields = [line.split('\t', 2) for line in text.splitlines()]
    return {f[0]: (f[1], f[2]) for f in fields if len(f) == 3}


def set_aside_as(request, text):
    """A dataset other than the volume's own that holds this volume's mark, from `zfs list -H -o name,<MARK> -r` of
    the namespace's dataset and the replica parent: the copy zfs_host_volume_standby set aside (it wrote after the
    volume was failed over to another node), or made this node's replica of it; None when there is none."""
    for line in text.splitlines():
        name, _sep, mark = line.partition('\t')
        if mark == request['id'] and name != request['dataset']:
            return name
    return None


def _moved_to(current):
    """The node a dataset's data moved to, or None."""
    moved = (current or {}).get(MOVED, '-')
    return None if moved in ('-', '') else moved


def _refuse_foreign(request, current):
    mark = current.get(MARK, '-')
    if mark != request['id']:
        owner = 'no nomad-zfs-csi mark' if mark == '-' else 'the mark of volume %s' % mark
        raise PluginError(
            'dataset %s exists with %s, so it is not volume %s; '
            'choose another volume name or remove that dataset by hand' % (request['dataset'], owner, request['id'])
        )


def _require_capacity(request):
    if request['capacity'] <= 0:
        raise PluginError(
            "set capacity_min or capacity_max in the volume specification; this plugin makes quota'd datasets"
        )


def _require_fits(request, pool, pool_props):
    """Refuse a capacity larger than the pool (its root's used plus available), a quota that limits nothing."""
    size = int(pool_props.get('used', 0)) + int(pool_props.get('available', 0))
    if request['capacity'] > size:
        raise PluginError(
            'capacity %d bytes is more than pool %s can ever hold (%d bytes); ask for at most that'
            % (request['capacity'], pool, size)
        )


def read_pull_targets(texts):
    """The TARGET= datasets of the zfs_replication role's pull configurations."""
    return [line[len('TARGET=') :] for text in texts for line in text.splitlines() if line.startswith('TARGET=')]


def replica_to_adopt(request, conf_text, parent, pull_targets=()):
    """The replica a create asks to adopt, or None when it asks for none; refusals come before any zfs runs."""
    if not request['adopt_replica']:
        return None
    replica_parent = read_replica_parent(conf_text)
    if replica_parent is None:
        raise PluginError(
            'parameter adopt_replica: this node has no replica parent to adopt from; set '
            'host_volume_plugin_replica_parent in the host_volume_plugin role'
        )
    if replica_parent.split('/')[0] != parent.split('/')[0]:
        raise PluginError(
            'parameter adopt_replica: the replica parent %s is in another pool than %s, and a dataset cannot be '
            'renamed across pools; keep replicas to adopt in the pool of the parent' % (replica_parent, parent)
        )
    target = '%s/%s' % (replica_parent, request['adopt_replica'])
    if target not in pull_targets:
        # Else a path that ends short of the target would reach another namespace's replica, or all of them.
        raise PluginError(
            'parameter adopt_replica: %s is not the target of a zfs_replication pull on this node (%s); give the '
            'pull target under %s, such as <host>/<parent>'
            % (target, ', '.join(sorted(pull_targets)) or 'none configured', replica_parent)
        )
    _require_capacity(request)
    return '%s/%s' % (target, request['relative'])


def _wanted(request, current=None):
    """The properties a volume's dataset gets: the allowlisted ones, refquota, and the quota. An existing volume's
    quota is not set below what it uses already (zfs refuses that, and Nomad's create at each agent start would fail
    with it): it stays as it is, and the plugin says so, until snapshots are pruned or the capacity grows."""
    wanted = dict(request['properties'], refquota=str(request['capacity']))
    quota = request['quota']
    if quota is not None and current is not None and quota < int(current.get('used') or 0):
        if current.get('quota') != str(quota):
            say(
                '%s uses %s bytes, more than its quota of %d bytes (capacity and snapshots): its quota stays %s '
                'until snapshots are pruned or the capacity grows'
                % (request['dataset'], current.get('used'), quota, current.get('quota'))
            )
    elif quota is not None:
        wanted['quota'] = str(quota)
    return wanted


def plan_create(request, current):
    """The zfs commands that make the dataset match the request; none when it already does."""
    _require_capacity(request)
    wanted = _wanted(request, current)
    if current is None:
        options = []
        for key, value in sorted(dict(wanted, **{MARK: request['id']}).items()):
            options += ['-o', '%s=%s' % (key, value)]
        # -p makes the namespace's dataset; the parent's existence is checked first.
        return [[ZFS, 'create', '-p'] + options + [request['dataset']]]
    _refuse_foreign(request, current)
    if _moved_to(current):
        # Also Nomad's own create at agent start: a volume whose data moved never comes back live on this node.
        raise PluginError(
            '%s was moved to %s (%s): its data lives there now; create the volume on that node, or clear the mark '
            '(zfs inherit %s) to use this copy' % (request['dataset'], _moved_to(current), MOVED, MOVED)
        )
    if current.get('type') != 'filesystem':
        raise PluginError('%s is a %s, not a filesystem' % (request['dataset'], current.get('type')))
    changes = ['%s=%s' % (key, value) for key, value in sorted(wanted.items()) if current.get(key) != value]
    commands = [[ZFS, 'set'] + changes + [request['dataset']]] if changes else []
    if current.get('mounted') == 'no':
        commands.append([ZFS, 'mount', request['dataset']])
    return commands


def plan_adopt(request, replica, replica_props, namespace_exists, descendants=()):
    """The zfs commands that make the replica this volume's dataset: renamed into place with its snapshots (never
    mounted on the way), the replica parent's inert settings dropped, marked, quota'd and mounted."""
    if replica_props is None:
        raise PluginError(
            'parameter adopt_replica: there is no replica %s to adopt; check the path (the zfs_replication pull '
            'target of the source node, under the replica parent) and that a pull ran' % replica
        )
    if replica_props['type'][0] != 'filesystem':
        raise PluginError('parameter adopt_replica: %s is a %s, not a filesystem' % (replica, replica_props['type'][0]))
    if replica_props['receive_resume_token'][0] not in ('-', ''):
        raise PluginError(
            'parameter adopt_replica: a pull into %s was interrupted; run that pull again to finish it, then create '
            'the volume' % replica
        )
    if descendants:
        raise PluginError(
            'parameter adopt_replica: %s has datasets below it (%s), which no volume of this plugin has; their '
            'mountpoints could pass through links in the volume, so it is not adopted; destroy them on this node '
            'first (zfs destroy, never -r on the replica)' % (replica, ', '.join(descendants))
        )
    dataset = request['dataset']
    commands = [] if namespace_exists else [[ZFS, 'create', '-p', dataset.rsplit('/', 1)[0]]]
    commands.append([ZFS, 'rename', '-u', replica, dataset])
    local = [p for p in INERT if replica_props[p][1] == 'local' or replica_props[p][1].startswith('received')]
    commands += [[ZFS, 'inherit', p, dataset] for p in local]  # one property per zfs inherit
    wanted = dict(_wanted(request, {'used': replica_props['used'][0]}), **{MARK: request['id']})
    commands.append([ZFS, 'set'] + ['%s=%s' % kv for kv in sorted(wanted.items())] + [dataset])
    commands.append([ZFS, 'mount', dataset])
    return commands


def kept_as_moved(request, current):
    """Why delete keeps the volume's dataset (its data moved to another node), or None."""
    if not _moved_to(current):
        return None
    _refuse_foreign(request, current)
    return (
        'kept %s: its data moved to %s (%s), so deleting volume %s here destroys nothing; destroy the dataset by '
        'hand once it is no longer needed' % (request['dataset'], _moved_to(current), MOVED, request['id'])
    )


def plan_delete(request, current, snapshots):
    """The zfs commands that remove the volume's dataset; none when it is gone or moved."""
    if current is None or kept_as_moved(request, current):
        return []
    _refuse_foreign(request, current)
    # The collection's own go with the volume; anyone else's need the volume's word.
    kept = [snapshot for snapshot in snapshots if not snapshot.split('@', 1)[1].startswith(SCHEDULED)]
    if kept and not request['delete_snapshots']:
        raise PluginError(
            '%s has %d snapshot(s) (%s); destroy them first, or set parameter delete_snapshots = "true" '
            'in the volume specification to take them with it' % (request['dataset'], len(kept), ', '.join(kept))
        )
    # One by one and never -r or -R: a snapshot with clones stops the delete, and so does a child.
    return [[ZFS, 'destroy', snapshot] for snapshot in snapshots] + [[ZFS, 'destroy', request['dataset']]]


def created(request, current):
    """Nomad's answer to create: where the volume is and how big."""
    if current.get('mounted') != 'yes' or not current.get('mountpoint', '').startswith('/'):
        raise PluginError(
            '%s is not mounted (mountpoint %s); give the parent a mountpoint'
            % (request['dataset'], current.get('mountpoint'))
        )
    return {'path': current['mountpoint'], 'bytes': int(current['refquota'])}


class Zfs:
    """Runs zfs with argv lists; a failure becomes a PluginError with zfs's own words.

    Reads take one process each: one zfs get for the volume and its parent, one
    zfs list for the volume's mark and its snapshots.
    """

    def __init__(self, run=subprocess.run):
        self._run = run

    def __call__(self, argv, missing_ok=False):
        proc = self._run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
        errors = [line for line in proc.stderr.splitlines() if line.strip()]
        # zfs reports each missing dataset on stderr, prints the others, and exits 1.
        if proc.returncode != 0 and not (missing_ok and errors and all(_missing(line) for line in errors)):
            raise PluginError('zfs %s failed: %s' % (argv[1], proc.stderr.strip()))
        return proc.stdout

    def read(self, *datasets):
        """{dataset: its READ properties} for those of the datasets that exist."""
        argv = [ZFS, 'get', '-H', '-p', '-o', 'name,property,value', ','.join(READ)] + list(datasets)
        return parse_get(self(argv, missing_ok=True))

    def listing(self, dataset):
        """The dataset's marks (None when it does not exist) and its snapshots."""
        argv = [ZFS, 'list', '-H', '-o', 'name,%s,%s' % (MARK, MOVED), '-t', 'filesystem,volume,snapshot', '-d', '1']
        return parse_list(self(argv + [dataset], missing_ok=True), dataset)

    def marks_below(self, *datasets):
        """`zfs list -H -o name,<MARK> -r` of the datasets' filesystems (none of one that does not exist)."""
        argv = [ZFS, 'list', '-H', '-o', 'name,' + MARK, '-t', 'filesystem', '-r'] + list(datasets)
        return self(argv, missing_ok=True)

    def descendants(self, dataset):
        """The filesystems and volumes below the dataset."""
        argv = [ZFS, 'list', '-H', '-o', 'name', '-r', '-t', 'filesystem,volume', dataset]
        return [name for name in self(argv, missing_ok=True).splitlines() if name.startswith(dataset + '/')]

    def read_sources(self, dataset, properties):
        """{property: (value, source)} of the dataset, or None when it does not exist."""
        argv = [ZFS, 'get', '-H', '-p', '-o', 'property,value,source', ','.join(properties), dataset]
        return parse_sources(self(argv, missing_ok=True)) or None


def _proc_mountinfo():
    for path in glob.glob('/proc/[0-9]*/mountinfo'):
        try:
            with open(path) as f:
                yield path.split('/')[2], f.read()
        except OSError:  # the process ended
            continue


def holders(dataset, mountinfo):
    """The processes whose mount namespace still mounts the dataset: a task's, or the client's, not yet gone."""
    found = []
    for pid, text in mountinfo():
        for line in text.splitlines():
            fields = line.split(' - ', 1)[1].split() if ' - ' in line else []
            if fields[:2] == ['zfs', dataset]:
                found.append(pid)
                break
    return sorted(found, key=int)


def free(dataset, zfs, mountinfo):
    """Unmount the dataset, and make sure that no mount namespace holds it, before anything of it is destroyed:
    zfs destroys snapshots one by one and the dataset last, and a busy dataset would survive without them (and its
    standby without the snapshot it shares with it)."""
    mountinfo = mountinfo or _proc_mountinfo
    if str(os.getpid()) in holders(dataset, mountinfo):
        zfs([ZFS, 'unmount', dataset])
    held = holders(dataset, mountinfo)
    if held:
        zfs([ZFS, 'mount', dataset], missing_ok=True)
        raise PluginError(
            '%s is busy: the mount namespace of process(es) %s still mounts it (an allocation, or the client, not yet '
            'gone), so nothing of it was destroyed; delete the volume again once they are gone'
            % (dataset, ', '.join(held[:5]))
        )


def _missing(line):
    return line.endswith('dataset does not exist')


def run(operation, env, conf_text, zfs, pull_targets=(), mountinfo=None, own=own_root_dir):
    """Do one operation; return what to print as JSON. mountinfo() gives every process's mountinfo text; own(path,
    ownership) gives a volume's root directory its mode and owner."""
    if operation not in ('create', 'delete'):
        raise PluginError(
            'unknown operation %r; Nomad sends create or delete here (sh answers fingerprint)' % operation
        )
    parent = read_parent(conf_text)
    request = parse_request(env, parent, read_volume_quota_percent(conf_text))
    # The configuration's mode and owner, where the volume gives none: checked, like all else, before zfs runs.
    request['ownership'] = dict(read_volume_ownership(conf_text), **request['ownership'])
    dataset = request['dataset']
    if operation == 'delete':
        current, snapshots = zfs.listing(dataset)
        kept = kept_as_moved(request, current)
        if kept:
            say(kept)
        commands = plan_delete(request, current, snapshots)
        if commands:
            free(dataset, zfs, mountinfo)
        try:
            for argv in commands:
                zfs(argv)
        except PluginError:
            zfs([ZFS, 'mount', dataset], missing_ok=True)
            raise
        return {}
    replica = replica_to_adopt(request, conf_text, parent, pull_targets)
    namespace_dataset, pool = dataset.rsplit('/', 1)[0], parent.split('/')[0]
    found = zfs.read(*([dataset, parent, pool] + ([namespace_dataset] if replica else [])))
    current = found.get(dataset)
    if current is None and parent not in found:
        raise PluginError('the parent %s does not exist; run the host_volume_plugin role' % parent)
    if pool in found and (current is None or current.get('refquota') != str(request['capacity'])):
        _require_fits(request, pool, found[pool])
    if current is None and replica:
        replica_props = zfs.read_sources(replica, REPLICA_READ)
        below = zfs.descendants(replica) if replica_props else []
        commands = plan_adopt(request, replica, replica_props, namespace_dataset in found, below)
        for argv in commands:
            zfs(argv)
        say('adopted %s as %s for volume %s' % (replica, dataset, request['id']))
        return owned(created(request, zfs.read(dataset).get(dataset, {})), request, own)
    if current is None:
        # Nomad creates again at each agent start every volume its client state holds, also one the servers deleted
        # while the node was lost: its copy, set aside or made the replica, is the sign, and no empty dataset takes
        # its place.
        replica_parent = read_replica_parent(conf_text)
        aside = set_aside_as(request, zfs.marks_below(namespace_dataset, *([replica_parent] if replica_parent else [])))
        if aside:
            raise PluginError(
                'volume %s was failed over to another node while this one was lost; its copy here is %s '
                '(zfs_host_volume_standby), and it is not made again' % (request['id'], aside)
            )
    commands = plan_create(request, current)
    for argv in commands:
        zfs(argv)
    return owned(created(request, zfs.read(dataset).get(dataset, {}) if commands else current), request, own)


def owned(answer, request, own):
    """The answer to create, once the volume's root directory has the mode and owner asked for."""
    if request['ownership']:
        try:
            own(answer['path'], request['ownership'])
        except OSError as err:
            raise PluginError(
                'cannot give %s mode and owner %s: %s' % (answer['path'], request['ownership'], err.strerror)
            ) from None
    return answer


def say(message):
    """A note for the node's operator: Nomad shows what a plugin prints only when it fails."""
    syslog.openlog('zfs-dataset', 0, syslog.LOG_DAEMON)
    syslog.syslog(syslog.LOG_NOTICE, message)
    sys.stderr.write('zfs-dataset: %s\n' % message)


def main(argv, env):
    operation = argv[1] if len(argv) > 1 else env.get('DHV_OPERATION', '')
    try:
        try:
            with open(argv[0] + CONF_SUFFIX) as conf:
                conf_text = conf.read()
        except OSError as err:
            raise PluginError(
                'cannot read %s (%s); run the host_volume_plugin role' % (argv[0] + CONF_SUFFIX, err.strerror)
            ) from None
        pulls = []
        for path in sorted(glob.glob(PULLS)):
            with open(path) as f:
                pulls.append(f.read())
        answer, code = run(operation, env, conf_text, Zfs(), read_pull_targets(pulls)), 0
    except PluginError as err:
        answer, code = {'error': 'zfs-dataset: %s' % err}, 1
    sys.stdout.write(json.dumps(answer) + '\n')
    return code


if __name__ == '__main__':
    sys.exit(main(sys.argv, dict(os.environ)))
