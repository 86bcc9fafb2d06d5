# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""The source side of a host volume's move: its dataset frozen for the final send and marked as moved, or put back
as the volume it was when the move is given up. Pure: the module reads with one zfs get.

Marked: read-only (nothing is written after the final snapshot), out of the scheduled snapshots, marked as moved
to the target (the plugin then keeps it when Nomad deletes the volume, and refuses to offer it again), and the final
snapshot taken once. Its place in the target's pulls is the caller's: kept until the replica holds the final
snapshot, since syncoid skips a dataset with syncoid:sync=false, and left only then, since the adoption takes the
replica away from those pulls.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_node import MOVED, SNAPSHOTS, SYNC
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError

# Read with one zfs get of the dataset and its final snapshot, with their sources.
READ = ('readonly', SNAPSHOTS, MOVED, SYNC, 'guid')
# What a move sets on the source, each dropped again (inherited) when the move is given up.
MARKS = ('readonly', SNAPSHOTS, MOVED, SYNC)


def plan(p, props):
    """The zfs commands (argv after `zfs`) that bring the dataset to p's state.

    p: dataset, state ('marked' or 'unmarked'), moved_to and final (the final snapshot's short name, or None) for
    marked, in_pulls (whether the target's pulls still take the dataset). props: the parse_get of the dataset and
    its final snapshot, {name: {property: (value, source)}}.
    """
    dataset = p['dataset']
    current = props.get(dataset)
    if current is None:
        raise PlanError("%s does not exist; name the volume's dataset on its node. Nothing was changed." % dataset)

    def local(prop):
        return current.get(prop, ('-', '-'))[1] == 'local'

    if p['state'] == 'unmarked':
        return [['inherit', prop, dataset] for prop in MARKS if local(prop)]
    wanted = {'readonly': 'on', SNAPSHOTS: 'false', MOVED: p['moved_to']}
    if not p['in_pulls']:
        wanted[SYNC] = 'false'
    changes = ['%s=%s' % (k, v) for k, v in sorted(wanted.items()) if current.get(k, ('-', '-'))[0] != v]
    commands = [['set'] + changes + [dataset]] if changes else []
    if p['in_pulls'] and local(SYNC):
        commands.append(['inherit', SYNC, dataset])
    if p.get('final') and '%s@%s' % (dataset, p['final']) not in props:
        commands.append(['snapshot', '%s@%s' % (dataset, p['final'])])
    return commands
