# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""What the follow of a drained or lost node decided, in the Prometheus text format, for the node exporter's textfile
collector on the host that runs the follow: how many of the node's volumes follow their jobs, and each one that stays
with a word for why (the plan's reason; its why says it in full in the follow's output and event).

Pure, from the follow's plan (_host_volume_follow_plan), so that every case is a unit test. One file per node, named
by its ID: the follow of a node writes its own and leaves the others' alone; the follow of a node that is neither
down nor draining any more removes its file (render returns '').
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_metrics import family

PREFIX = 'nomad_zfs_csi_follow_'
# Nomad makes a node's ID a UUID, but takes any text from a client that registers: only a UUID names a file.
UUID = re.compile(r'^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z')


def file_name(node_id):
    """The node's metrics file in the textfile directory, or None where its ID is no UUID (it could name a path)."""
    return '%s%s.prom' % (PREFIX, node_id) if UUID.match(node_id or '') else None


def render(plan):
    """The text of the node's file; '' where nothing follows. A volume that no job wants (reason unused) is left
    out: it stays by design, and an alert on a stay should mean a job waits or a journal needs the operator."""
    if not plan['following']:
        return ''
    node = [('node', plan['node']['name'] or ''), ('node_id', plan['node']['id']), ('kind', plan['kind'])]
    lines = []
    family(
        lines,
        PREFIX + 'volumes_following',
        "Host volumes of the node's jobs that its follow moves (kind move: a drain) or fails over (kind failover: "
        'a loss) to another node.',
        'gauge',
        [(node, len(plan['moves']))],
    )
    family(
        lines,
        PREFIX + 'volume_stays',
        "A host volume that the node's follow leaves there, with why (reason); the follow's output says it in full. "
        '1 for each; a volume that no job wants is not listed.',
        'gauge',
        [
            (node + [('namespace', s['namespace']), ('volume', s['name']), ('reason', s['reason'])], 1)
            for s in plan['stays']
            if s['reason'] != 'unused'
        ],
    )
    return '\n'.join(lines) + '\n'
