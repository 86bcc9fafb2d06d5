# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""A replica's status against its primary, from two ``zfs list -Hp -o name,guid,creation`` listings.

Pure: parse and compare, no zfs and no SSH, so that every case is a unit test.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

LIST_ARGS = ['list', '-Hp', '-r', '-t', 'filesystem,volume,snapshot,bookmark', '-o', 'name,guid,creation']


def parse_listing(stdout):
    """``zfs list -Hp -o name,guid,creation`` into {dataset: {'snapshots': [...], 'bookmarks': [...]}}, each
    point {'name', 'guid', 'created'} oldest first (creation, then name)."""
    datasets = {}
    for line in stdout.splitlines():
        fields = line.split('\t')
        if len(fields) != 3:
            continue
        name, guid, created = fields
        for mark, kind in (('@', 'snapshots'), ('#', 'bookmarks')):
            if mark in name:
                dataset = name.split(mark, 1)[0]
                point = {'name': name, 'guid': guid, 'created': int(created)}
                datasets.setdefault(dataset, {'snapshots': [], 'bookmarks': []})[kind].append(point)
                break
        else:
            datasets.setdefault(name, {'snapshots': [], 'bookmarks': []})
    for points in datasets.values():
        for kind in ('snapshots', 'bookmarks'):
            points[kind].sort(key=lambda p: (p['created'], p['name']))
    return datasets


def _newest(points):
    return dict(points[-1]) if points else None


def volume_status(source, replica, now):
    """One volume: the newest snapshot on each side, the newest replica snapshot that the primary still has as
    a snapshot or bookmark (where the next increment starts), and the lag: how old the newest data on the
    replica is (the recovery point), in seconds."""
    replica_snapshots = replica['snapshots'] if replica else []
    on_source = set(p['guid'] for p in source['snapshots'] + source['bookmarks'])
    common = [p for p in replica_snapshots if p['guid'] in on_source]
    newest_replica = _newest(replica_snapshots)
    return {
        'newest_source': _newest(source['snapshots']),
        'newest_replica': newest_replica,
        'newest_common': _newest(common),
        'lag_seconds': max(0, now - newest_replica['created']) if newest_replica else None,
        'behind': len([p for p in source['snapshots'] if not common or p['created'] > common[-1]['created']]),
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
                'newest_replica': newest,
                'newest_common': None,
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
