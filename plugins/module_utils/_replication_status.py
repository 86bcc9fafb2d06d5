# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""A replica's status against its primary, from two ``zfs list -Hp -o name,guid,createtxg,creation,written``
listings.

Pure: parse and compare, no zfs and no SSH, so that every case is a unit test; but for load_status and write_file,
which read and write the status file a pull leaves (pull_status) for the zfs_metrics collector.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import stat
import tempfile

COLUMNS = 'name,guid,createtxg,creation,written'
LIST_ARGS = ['list', '-Hp', '-r', '-t', 'filesystem,volume,snapshot,bookmark', '-o', COLUMNS]
# The name of a move's final snapshot starts so (roles/host_volume_move). A pull always sends one: the move adopts
# the replica at that very snapshot, found by its guid.
MOVE_SNAPSHOT = 'nomad-zfs-csi-move_'
# Names a --exclude of syncoid's holds, so that no argument nears the kernel's 128 KiB limit on one.
EXCLUDE_CHUNK = 100
# A pull's status is a few hundred bytes a volume: more is not one.
STATUS_LIMIT = 4 * 1024**2
# A status nests three deep ({"volumes": [{...}]}). Deeper is refused before json parses it, which recurses once a
# level (100,000 levels end in a RecursionError), and so that nothing read nests deeper for what walks it after.
STATUS_DEPTH = 8
# What counts the nesting, bytes.translate's: every byte but a bracket deleted (no UTF-8 character holds an ASCII byte
# but itself), a brace taken as a square bracket (json refuses a pair that does not match).
SQUARE = bytes(bytearray(ord('[') if b == ord('{') else ord(']') if b == ord('}') else b for b in range(256)))
NOT_BRACKETS = bytes(bytearray(b for b in range(256) if chr(b) not in '[]{}'))
# A whole number as zfs prints it: ASCII digits only (str.isdigit() takes '²' too, which int() refuses).
WHOLE = re.compile(r'[0-9]+\Z')
# What a dataset name may hold (OpenZFS's own rule); a primary's listing naming anything else is left to syncoid.
NAME_CHARS = frozenset('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-/')


def is_move_final(snapshot_name):
    """Whether dataset@snapshot is a move's final snapshot."""
    return '@' + MOVE_SNAPSHOT in snapshot_name


def listing_ssh_argv(ssh, key, port, options, login, parent):
    """The primary's listing of parent through a standby's key, whose forced command runs this `zfs list` with no
    shell: options are ssh's -o settings, login is user@host."""
    argv = [ssh, '-i', key, '-p', str(port)]
    for option in options:
        argv += ['-o', option]
    return argv + [login, 'zfs'] + LIST_ARGS + [parent]


def _fields(line):
    """A listing's line as (name, guid, txg, created, written), or None for one zfs does not print: five fields, the
    guid, transaction group and creation whole numbers, written one too or None (a bookmark has none)."""
    fields = line.split('\t')
    if len(fields) != 5 or not all(WHOLE.match(field) for field in fields[1:4]):
        return None
    name, guid, txg, created, written = fields
    return name, guid, int(txg), int(created), int(written) if WHOLE.match(written) else None


def unparsed(stdout):
    """The first line of a listing that zfs would not print (_fields), or None. The primary's comes through SSH."""
    return next((line for line in stdout.splitlines() if _fields(line) is None), None)


def parse_listing(stdout):
    """The listing into {dataset: {'snapshots': [...], 'bookmarks': [...]}}, each point {'name', 'guid', 'txg',
    'created', 'written'} oldest first by transaction group (creation has whole seconds only, and sanoid takes
    several kinds in one). written is what a snapshot holds that the snapshot before it does not; None for a
    bookmark. A line zfs would not print is left out (unparsed finds it)."""
    datasets = {}
    for line in stdout.splitlines():
        fields = _fields(line)
        if fields is None:
            continue
        name, guid, txg, created, written = fields
        for mark, kind in (('@', 'snapshots'), ('#', 'bookmarks')):
            if mark in name:
                dataset = name.split(mark, 1)[0]
                point = {'name': name, 'guid': guid, 'txg': txg, 'created': created, 'written': written}
                datasets.setdefault(dataset, {'snapshots': [], 'bookmarks': []})[kind].append(point)
                break
        else:
            datasets.setdefault(name, {'snapshots': [], 'bookmarks': []})
    for points in datasets.values():
        for kind in ('snapshots', 'bookmarks'):
            points[kind].sort(key=lambda p: (p['txg'], p['name']))
    return datasets


def _public(point):
    return {'name': point['name'], 'guid': point['guid'], 'created': point['created']} if point else None


def _newest(points):
    return points[-1] if points else None


def recovery_point(source, newest_replica):
    """The newest primary snapshot whose data the replica holds, and whether that is the primary's newest.

    The replica's newest snapshot, when the primary still has it as a snapshot; then each later one that wrote
    nothing (written 0: no block the one before it lacks) holds the same data. A bookmark carries no written
    figures, so from one only the replica's own snapshot counts."""
    if newest_replica is None:
        return None, False
    by_guid = dict((p['guid'], p) for p in source['snapshots'])
    point = by_guid.get(newest_replica['guid'])
    if point is None:
        return newest_replica, False
    later = [p for p in source['snapshots'] if p['txg'] > point['txg']]
    for snapshot in later:
        if snapshot['written'] != 0:
            return point, False
        point = snapshot
    return point, True


def volume_status(source, replica, now):
    """One volume: the newest snapshot on each side, the newest replica snapshot that the primary still has as
    a snapshot or bookmark (where the next increment starts), whether the replica holds the primary's newest
    data (in_sync), and the lag: how old the newest data on the replica is (the recovery point), in seconds."""
    replica_snapshots = replica['snapshots'] if replica else []
    # Transaction groups count per pool: a replica's point is compared through the primary's point of its guid.
    on_source = dict((p['guid'], p) for p in source['snapshots'] + source['bookmarks'])
    common = [p for p in replica_snapshots if p['guid'] in on_source]
    base = on_source[common[-1]['guid']] if common else None
    newest_replica = _newest(replica_snapshots)
    point, in_sync = recovery_point(source, newest_replica)
    return {
        'newest_source': _public(_newest(source['snapshots'])),
        'newest_replica': _public(newest_replica),
        'newest_common': _public(_newest(common)),
        'in_sync': in_sync,
        'recovery_point': _public(point),
        'lag_seconds': max(0, now - point['created']) if point else None,
        'behind': len([p for p in source['snapshots'] if base is None or p['txg'] > base['txg']]),
    }


def report(source_listing, replica_listing, parent, target, now):
    """Every dataset under parent on the primary (not parent itself, as syncoid's --skip-parent), with its
    replica under target; and the worst lag over the volumes that have snapshots to replicate."""
    source, replica = parse_listing(source_listing), parse_listing(replica_listing)
    volumes = []
    for name in sorted(n for n in source if n.startswith(parent + '/')):
        replica_name = target + name[len(parent) :]
        entry = {'name': name, 'replica': replica_name, 'replica_exists': replica_name in replica}
        entry.update(volume_status(source[name], replica.get(replica_name), now))
        volumes.append(entry)
    counted = [v for v in volumes if v['newest_source']]
    lags = [v['lag_seconds'] for v in counted]
    return {
        'volumes': volumes,
        'lag_seconds': None if None in lags else max(lags or [0]),
        'not_replicated': [v['name'] for v in counted if v['newest_common'] is None],
        'without_snapshots': [v['name'] for v in volumes if not v['newest_source']],
    }


def replica_report(replica_listing, parent, target, now):
    """What the standby alone knows once its primary is gone: every replica under target (not target itself), named
    as its dataset under parent, with its newest snapshot and lag. The primary's side is unknown: null, and
    behind with it."""
    replica = parse_listing(replica_listing)
    volumes = []
    for replica_name in sorted(n for n in replica if n.startswith(target + '/')):
        newest = _newest(replica[replica_name]['snapshots'])
        volumes.append(
            {
                'name': parent + replica_name[len(target) :],
                'replica': replica_name,
                'replica_exists': True,
                'newest_source': None,
                'newest_replica': _public(newest),
                'newest_common': None,
                'in_sync': None,
                'recovery_point': _public(newest),
                'lag_seconds': max(0, now - newest['created']) if newest else None,
                'behind': None,
            }
        )
    lags = [v['lag_seconds'] for v in volumes]
    return {
        'volumes': volumes,
        'lag_seconds': None if None in lags else max(lags or [0]),
        'not_replicated': [],
        'without_snapshots': [v['name'] for v in volumes if not v['newest_replica']],
    }


def increment_bytes(before_listing, after_listing):
    """What a pull received, {replica dataset: bytes}: the written figures of the snapshots in the replica's listing
    after it that were not in the one before (by guid), summed. written is what a snapshot holds that the one before
    it does not, as allocated on the replica's pool."""
    before, after = parse_listing(before_listing), parse_listing(after_listing)
    grown = {}
    for name, points in after.items():
        known = set(p['guid'] for p in (before.get(name) or {}).get('snapshots', []))
        grown[name] = sum(p['written'] or 0 for p in points['snapshots'] if p['guid'] not in known)
    return grown


def _whole(value):
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def pull_status(listings, parent, target, finished, exit_code, previous):
    """What a pull leaves for the zfs_metrics collector: when it ended, whether it failed, when one last succeeded,
    and each volume's recovery point (as zfs_replication_info reports it) and the bytes it received.

    listings are (source, before, after), each a listing or None where it could not be made: without the primary's,
    the recovery points are the replicas' newest snapshots (zfs_replication_info's primary_lost); without the
    replica's after the pull, the volumes are the previous status's, so that their lag keeps growing. previous is
    the status before (its owner wrote it: anything that is not a whole number is dropped)."""
    source, before, after = listings
    if after is None:
        known = previous.get('volumes') if isinstance(previous.get('volumes'), list) else []
        volumes = [
            {'name': v.get('name'), 'replica': v.get('replica'), 'recovery_point': v.get('recovery_point'),
             'last_increment_bytes': None}
            for v in known if isinstance(v, dict)
        ]  # fmt: skip
    else:
        if source is None:
            status = replica_report(after, parent, target, finished)
        else:
            status = report(source, after, parent, target, finished)
        grown = increment_bytes(before, after) if before is not None else {}
        volumes = [
            {
                'name': v['name'],
                'replica': v['replica'],
                'recovery_point': (v['recovery_point'] or {}).get('created'),
                'last_increment_bytes': grown.get(v['replica'], 0) if before is not None else None,
            }
            for v in status['volumes']
        ]
    failed = exit_code != 0
    return {
        'parent': parent,
        'target': target,
        'finished': finished,
        'exit_code': exit_code,
        'failed': failed,
        'last_success': _whole(previous.get('last_success')) if failed else finished,
        'volumes': volumes,
    }


def load_status(path):
    """A pull's status file as (status, None), or (None, why): a regular file, not read through a link (its directory
    is the replication user's), nor a FIFO that would block, nor past STATUS_LIMIT; UTF-8 text throughout, nesting no
    deeper than STATUS_DEPTH, a JSON object. No file is (None, None). It never raises: the file is the replication
    user's, and the zfs_metrics collector that reads it must still write every other metric."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, None
    except OSError as e:
        return None, str(e)
    try:
        with os.fdopen(handle, 'rb') as status:
            if not stat.S_ISREG(os.fstat(status.fileno()).st_mode):
                return None, '%s is not a regular file' % path
            data = status.read(STATUS_LIMIT + 1)
        if len(data) > STATUS_LIMIT:
            return None, '%s is larger than %d bytes' % (path, STATUS_LIMIT)
        # How deep it nests, before json.loads recurses into it: each pass takes away the innermost pairs, at C speed
        # whatever the file holds. Brackets in strings count too: a status holds none there (a dataset's name cannot).
        brackets = data.translate(SQUARE, NOT_BRACKETS)
        for _level in range(STATUS_DEPTH):
            brackets = brackets.replace(b'[]', b'')
        if brackets:
            return None, '%s nests deeper than %d, or its brackets do not pair' % (path, STATUS_DEPTH)
        text = data.decode('utf-8')  # strict: a surrogate's bytes are refused too
        loaded = json.loads(text)
        # json.loads makes a lone surrogate of an escape ("\ud800"), which no UTF-8 output can hold: the collector's
        # write of the whole .prom file would fail on it.
        json.dumps(loaded, ensure_ascii=False).encode('utf-8')
    except Exception as e:  # whatever else the file holds (a number of 100,000 digits) ends here
        return None, '%s is unreadable: %s' % (path, e)
    return (loaded, None) if isinstance(loaded, dict) else (None, '%s is not a JSON object' % path)


def write_file(path, text):
    """text into path, mode 0644: written beside it and renamed over it, so that no reader sees half a file. The pull
    writes its status so, and the zfs_metrics collector its metrics."""
    directory, name = os.path.split(path)
    handle, temporary = tempfile.mkstemp(prefix='.' + name + '.', dir=directory)
    try:
        with os.fdopen(handle, 'w') as out:
            out.write(text)
        os.chmod(temporary, 0o644)
        os.rename(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def pull_plan(source_listing, replica_listing, parent, target):
    """What a pull of parent into target leaves out of syncoid, and what it sends: (left_out, to_send), dataset
    names under parent. Left out is a dataset with no snapshot to send, or whose replica holds its newest data
    already (in_sync: syncoid would send only snapshots that wrote nothing), unless its newest snapshot is a move's
    final one. Everything else goes to syncoid, which decides how, as it does without this plan; so does a name
    with characters no dataset's name has, which a primary's listing should never hold."""
    source, replica = parse_listing(source_listing), parse_listing(replica_listing)
    left_out, to_send = [], []
    for name in sorted(n for n in source if n.startswith(parent + '/')):
        snapshots = source[name]['snapshots']
        replica_snapshots = (replica.get(target + name[len(parent) :]) or {}).get('snapshots') or []
        final = bool(snapshots) and is_move_final(snapshots[-1]['name'])
        current = bool(snapshots) and recovery_point(source[name], _newest(replica_snapshots))[1]
        plain = NAME_CHARS.issuperset(name)
        (left_out if plain and (not snapshots or (current and not final)) else to_send).append(name)
    return left_out, to_send


def syncoid_excludes(names):
    """syncoid's --exclude options that leave out exactly these datasets (it matches each regex in Perl against
    every dataset name): whole names, with a dataset name's only special character, the dot, escaped."""
    names = sorted(names)
    return [
        '--exclude=^(?:%s)$' % '|'.join(n.replace('.', '\\.') for n in names[i : i + EXCLUDE_CHUNK])
        for i in range(0, len(names), EXCLUDE_CHUNK)
    ]
