# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""The volumes' and pools' figures in the Prometheus text format, for the node exporter's textfile collector.

Pure: from one ``zfs list`` of every parent and one ``zpool list``, and on a standby the pulls' status files
(_replication_status.pull_status), so that every case is a unit test. The zfs_metrics role installs this file beside
its collector (roles/zfs_metrics/files/zfs-metrics), which runs the two listings, reads the status files and writes
what render() returns.
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
# A pull on a standby, labelled from its configuration (root's): the primary's host, its parent, the target here.
PULL_METRICS = (
    ('pull_configured', 'A pull configured on this standby: 1, with its primary host, parent and target.', None),
    (
        'status_unreadable',
        "Whether the pull's status file is there but was refused (1: no figure of it) or not (0).",
        None,
    ),
    ('last_pull_timestamp_seconds', 'When the last pull ended, in seconds since the epoch.', 'finished'),
    ('last_pull_failed', 'Whether the last pull failed (1) or not (0).', 'failed'),
    ('last_success_timestamp_seconds', 'When the last pull that did not fail ended.', 'last_success'),
)
# Each of a pull's volumes, labelled with the primary's host, the dataset there and its replica here.
REPLICA_METRICS = (
    (
        'recovery_point_timestamp_seconds',
        'When the newest data the replica holds was snapshotted on the primary (its recovery point): time() minus it '
        'is the lag that zfs_replication_info reports.',
        'recovery_point',
    ),
    ('last_increment_bytes', 'What the last pull received for the volume (written of the snapshots it brought).',
     'last_increment_bytes'),
)  # fmt: skip
# The most a figure may be: zfs's are 64-bit. A longer number would make a sample the exporter cannot parse as a float
# (past 1.8e308), and it would drop the whole file.
FIGURE_LIMIT = 2**64


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


def family(lines, name, help_text, kind, samples):
    lines.append('# HELP %s %s' % (name, help_text))
    lines.append('# TYPE %s %s' % (name, kind))
    lines.extend('%s%s %s' % (name, labels(pairs), value) for pairs, value in samples if value is not None)


def _figure(value):
    """A figure from a status file, which the replication user writes: a whole number (a bool as 0 or 1), or None."""
    if isinstance(value, bool):
        return int(value)
    return value if isinstance(value, int) and 0 <= value < FIGURE_LIMIT else None


def replica_samples(pulls):
    """The samples of each pull, [(configuration, status, why)], by metric name. The configuration, {'host', 'parent',
    'target'}, is root's; the status (None before the first pull, or when its file was refused: why says so) is the
    replication user's, so only its figures are taken, and only volumes under the pull's parent, each once, with its
    replica named from the configuration."""
    samples = dict((name, []) for name, _h, _k in PULL_METRICS + REPLICA_METRICS)
    for pull, status, why in pulls:
        pairs = [('host', pull['host']), ('parent', pull['parent']), ('target', pull['target'])]
        samples['pull_configured'].append((pairs, 1))
        samples['status_unreadable'].append((pairs, int(bool(why))))
        status = status or {}
        for name, _help_text, key in PULL_METRICS[2:]:
            samples[name].append((pairs, _figure(status.get(key))))
        volumes = status.get('volumes') if isinstance(status.get('volumes'), list) else []
        seen = set()
        for volume in volumes:
            name = volume.get('name') if isinstance(volume, dict) else None
            if not isinstance(name, str) or not name.startswith(pull['parent'] + '/') or name in seen:
                continue
            seen.add(name)
            pairs = [
                ('host', pull['host']),
                ('dataset', name),
                ('replica', pull['target'] + name[len(pull['parent']) :]),
            ]
            for metric, _help_text, key in REPLICA_METRICS:
                samples[metric].append((pairs, _figure(volume.get(key))))
    return samples


def render(dataset_listing, pool_listing, parents, pulls=()):
    """The text format of every volume under parents, [(kind, parent)], whether each parent exists, every pool, and
    each pull's figures (replica_samples). A figure zfs or the pull did not give (a volume with no quota, no
    snapshot, a pull that never succeeded) has no sample."""
    datasets = parse_datasets(dataset_listing)
    found = volumes(datasets, parents)
    lines = []
    family(
        lines,
        'nomad_zfs_parent_exists',
        'Whether the parent handed to Nomad exists (1) or not (0).',
        'gauge',
        [([('kind', kind), ('parent', parent)], int(parent in datasets)) for kind, parent in parents],
    )
    for metric, help_text in VOLUME_METRICS:
        samples = [(pairs, dataset[metric]) for pairs, dataset in found]
        family(lines, 'nomad_zfs_volume_' + metric, help_text, 'gauge', samples)
    pools = parse_pools(pool_listing)
    for index, (metric, help_text) in enumerate(POOL_METRICS[:-1]):
        family(lines, 'nomad_zfs_pool_' + metric, help_text, 'gauge', [([('pool', p[0])], p[index + 1]) for p in pools])
    states = [([('pool', p[0]), ('state', state)], int(p[4] == state)) for p in pools for state in POOL_STATES]
    family(lines, 'nomad_zfs_pool_state', POOL_METRICS[-1][1], 'gauge', states)
    if pulls:
        samples = replica_samples(pulls)
        for metric, help_text, _key in PULL_METRICS + REPLICA_METRICS:
            family(lines, 'nomad_zfs_replica_' + metric, help_text, 'gauge', samples[metric])
    return '\n'.join(lines) + '\n'
