# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""One node's side of a host volume's move, from its files and one zfs list: the zfs-dataset plugin's parents,
the volume's dataset with its marks and snapshots, the replicas its pulls keep, and the pull that would take the
volume back. Pure: zfs_host_volume_info reads, this parses.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# The zfs-dataset plugin's marks (roles/host_volume_plugin/files/zfs-dataset.py): the volume a dataset belongs to,
# and the node its data moved to; and the fence watchdog's (files/zfs-fence): when it fenced the volume.
MARK = 'nomad-zfs-csi:host-volume-id'
MOVED = 'nomad-zfs-csi:moved-to'
FENCED = 'nomad-zfs-csi:fenced-at'
# What the zfs_replication role's schedules read on each dataset: sanoid's snapshots and syncoid's pulls.
SNAPSHOTS = 'com.sun:auto-snapshot'
SYNC = 'syncoid:sync'
# What `zfs list -o` reads of each dataset and snapshot, in this order.
COLUMNS = ('name', 'type', 'guid', 'creation', 'createtxg', 'written', 'readonly', MARK, MOVED)


def parse_conf(text):
    """The plugin's <id>.conf, `key=value` lines: its parent and replica parent ('' when it has none)."""
    values = dict(line.split('=', 1) for line in text.splitlines() if '=' in line)
    return dict(parent=values.get('parent', '').strip(), replica_parent=values.get('replica_parent', '').strip())


def parse_pull(instance, text):
    """A zfs_replication pull's configuration: SOURCE=<user>@<host>:<parent>, TARGET=<dataset>."""
    values = dict(line.split('=', 1) for line in text.splitlines() if '=' in line)
    source = values.get('SOURCE', '')
    host, _sep, parent = source.partition('@')[2].partition(':')
    return dict(instance=instance, host=host, parent=parent, target=values.get('TARGET', ''))


def pull_instance(target):
    """The systemd instance of the pull into target: zfs-replication-pull@<instance>.service."""
    return target.replace('/', '_')


def parse_listing(text, columns=COLUMNS):
    """`zfs list -H -p -o <columns>` output as {name: {column: value}}; '-' is None."""
    found = {}
    for line in text.splitlines():
        fields = line.split('\t')
        if len(fields) == len(columns):
            found[fields[0]] = dict((c, None if v == '-' else v) for c, v in zip(columns[1:], fields[1:]))
    return found


def _snapshots(listing, dataset):
    """The dataset's own snapshots, oldest first (by transaction group: creation has whole seconds only), each with
    what it wrote since the one before it."""
    snaps = [
        dict(
            name=name,
            guid=props['guid'],
            creation=int(props['creation'] or 0),
            txg=int(props['createtxg'] or 0),
            written=int(props['written']) if (props['written'] or '').isdigit() else None,
        )
        for name, props in listing.items()
        if name.startswith(dataset + '@')
    ]
    return sorted(snaps, key=lambda s: (s['txg'], s['name']))


def _dataset(listing, name):
    props = listing.get(name)
    if props is None:
        return dict(name=name, exists=False, snapshots=[])
    return dict(
        name=name,
        exists=True,
        type=props['type'],
        readonly=props['readonly'] == 'on',
        mark=props[MARK],
        moved_to=props[MOVED],
        snapshots=_snapshots(listing, name),
    )


def candidates(conf, pulls, namespace, name):
    """The datasets to list: the volume's, and where each pull into the replica parent keeps (or would keep) its
    replica and the replica of its namespace's dataset."""
    names = ['%s/%s/%s' % (conf['parent'], namespace, name)] if conf['parent'] else []
    for pull in kept_pulls(conf, pulls):
        names += ['%s/%s' % (pull['target'], namespace), '%s/%s/%s' % (pull['target'], namespace, name)]
    return names


def kept_pulls(conf, pulls):
    """The pulls into the replica parent the plugin adopts from; a replica elsewhere cannot be adopted."""
    root = conf['replica_parent']
    return [p for p in pulls if root and p['target'].startswith(root + '/') and p['host'] and p['parent']]


def node_view(conf, pulls, listing, namespace, name):
    """What a move needs to know of this node: the plugin's parents, the volume's dataset, and each pull into the
    replica parent with the replica of the volume it keeps there, if any."""
    kept = []
    for pull in kept_pulls(conf, pulls):
        replica = '%s/%s/%s' % (pull['target'], namespace, name)
        kept.append(
            dict(
                pull,
                replica=_dataset(listing, replica),
                namespace_replica_exists='%s/%s' % (pull['target'], namespace) in listing,
                # What the plugin's adopt_replica names: the pull target below the replica parent.
                adopt=pull['target'][len(conf['replica_parent']) + 1 :],
            )
        )
    dataset = _dataset(listing, '%s/%s/%s' % (conf['parent'], namespace, name)) if conf['parent'] else None
    return dict(conf, dataset=dataset, pulls=kept)
