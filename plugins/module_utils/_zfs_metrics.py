# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""The volumes' and pools' figures in the Prometheus text format, for the node exporter's textfile collector.

Pure: from one ``zfs list`` of every parent and one ``zpool list``, so that every case is a unit test. The
zfs_metrics role installs this file beside its collector (roles/zfs_metrics/files/zfs-metrics), which runs the two
listings and writes what render() returns.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# Values zfs makes, and names, which hold no tab or newline: no user property, whose value its owner chooses (the csi
# user sets democratic-csi's), so that no value can add a line of its own to the listing.
COLUMNS = 'name,type,used,referenced,available,refquota,quota,volsize,creation'
# One zfs process for every parent, snapshots included: the count and the newest of each volume.
LIST_ARGS = ['list', '-Hp', '-r', '-t', 'filesystem,volume,snapshot', '-o', COLUMNS]
POOL_ARGS = ['list', '-Hp', '-o', 'name,size,allocated,free,health']
# How deep a volume sits under its parent: democratic-csi's <parent>/<volume> (named after the CSI request's name, that
# is the volume's in Nomad), the zfs-dataset host volume plugin's <parent>/<namespace>/<volume>.
KINDS = {'csi': 1, 'host': 2}
POOL_STATES = ('online', 'degraded', 'faulted', 'offline', 'unavail', 'removed', 'suspended')

VOLUME_METRICS = (
    ('quota_bytes', 'The most the volume may hold: refquota (or quota) of a filesystem, volsize of a zvol.'),
    ('used_bytes', 'Space the volume and its snapshots take (zfs used).'),
    ('referenced_bytes', 'Data the volume refers to now (zfs referenced).'),
    ('available_bytes', 'Space the volume may still take (zfs available).'),
    ('snapshots', 'How many snapshots the volume has.'),
    ('newest_snapshot_timestamp_seconds', 'When its newest snapshot was taken, in seconds since the epoch.'),
)
POOL_METRICS = (
    ('size_bytes', "The pool's size (zpool size)."),
    ('allocated_bytes', 'Space allocated in the pool (zpool allocated).'),
    ('free_bytes', 'Space free in the pool (zpool free).'),
    ('state', "The pool's health, one series per state: 1 for the one it is in."),
)


def label_value(value):
    """A label's value as the text format quotes it: backslash, double quote and newline escaped."""
    return value.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')


def labels(pairs):
    return '{%s}' % ','.join('%s="%s"' % (name, label_value(value)) for name, value in pairs)


def _number(text):
    return int(text) if text.isdigit() else None


def parse_datasets(stdout):
    """The listing into {dataset: {...}} with its snapshots counted and the newest one's creation."""
    datasets, snapshots = {}, {}
    for line in stdout.splitlines():
        fields = line.split('\t')
        if len(fields) != len(COLUMNS.split(',')):
            continue
        name, kind, used, referenced, available, refquota, quota, volsize, creation = fields
        if kind == 'snapshot':
            dataset = name.split('@', 1)[0]
            count, newest = snapshots.get(dataset, (0, None))
            created = _number(creation)
            snapshots[dataset] = (count + 1, created if newest is None or (created or 0) > newest else newest)
            continue
        limit = _number(volsize) if kind == 'volume' else (_number(refquota) or _number(quota))
        datasets[name] = {
            'type': kind,
            'quota_bytes': limit or None,
            'used_bytes': _number(used),
            'referenced_bytes': _number(referenced),
            'available_bytes': _number(available),
        }
    for name, dataset in datasets.items():
        count, newest = snapshots.get(name, (0, None))
        dataset['snapshots'], dataset['newest_snapshot_timestamp_seconds'] = count, newest
    return datasets


def volumes(datasets, parents):
    """Each volume under parents, [(kind, parent)], as (labels, dataset): the datasets at the kind's depth."""
    found = []
    for kind, parent in parents:
        depth = KINDS[kind]
        for name in sorted(datasets):
            below = name[len(parent) + 1 :].split('/') if name.startswith(parent + '/') else []
            if len(below) != depth:
                continue
            dataset = datasets[name]
            namespace = below[0] if kind == 'host' else ''
            found.append(
                ([('dataset', name), ('kind', kind), ('namespace', namespace), ('volume', below[-1])], dataset)
            )
    return found


def parse_pools(stdout):
    pools = []
    for line in stdout.splitlines():
        fields = line.split('\t')
        if len(fields) == 5:
            name, size, allocated, free, health = fields
            pools.append((name, _number(size), _number(allocated), _number(free), health.lower()))
    return pools


def _family(lines, name, help_text, kind, samples):
    lines.append('# HELP %s %s' % (name, help_text))
    lines.append('# TYPE %s %s' % (name, kind))
    lines.extend('%s%s %s' % (name, labels(pairs), value) for pairs, value in samples if value is not None)


def render(dataset_listing, pool_listing, parents):
    """The text format of every volume under parents, [(kind, parent)], whether each parent exists, and every
    pool. A figure zfs did not give (a volume with no quota, no snapshot) has no sample."""
    datasets = parse_datasets(dataset_listing)
    found = volumes(datasets, parents)
    lines = []
    _family(
        lines,
        'nomad_zfs_parent_exists',
        'Whether the parent handed to Nomad exists (1) or not (0).',
        'gauge',
        [([('kind', kind), ('parent', parent)], int(parent in datasets)) for kind, parent in parents],
    )
    for metric, help_text in VOLUME_METRICS:
        samples = [(pairs, dataset[metric]) for pairs, dataset in found]
        _family(lines, 'nomad_zfs_volume_' + metric, help_text, 'gauge', samples)
    pools = parse_pools(pool_listing)
    for index, (metric, help_text) in enumerate(POOL_METRICS[:-1]):
        _family(
            lines, 'nomad_zfs_pool_' + metric, help_text, 'gauge', [([('pool', p[0])], p[index + 1]) for p in pools]
        )
    states = [([('pool', p[0]), ('state', state)], int(p[4] == state)) for p in pools for state in POOL_STATES]
    _family(lines, 'nomad_zfs_pool_state', POOL_METRICS[-1][1], 'gauge', states)
    return '\n'.join(lines) + '\n'
