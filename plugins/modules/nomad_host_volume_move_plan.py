#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nomad_host_volume_move_plan
short_description: Decide, from Nomad, whether a dynamic host volume can move or fail over to another node
version_added: 0.2.0
description:
  - Reads the host volume O(name), the nodes and, for a failover, the allocations on the volume's node, and says which
    volume and nodes take part and which jobs a move stops; or fails, naming the way out, where the volume cannot
    move. It changes nothing. The M(nomad_zfs.csi.nomad_host_volume) and M(nomad_zfs.csi.nomad_job) calls of the
    C(nomad_zfs.csi.host_volume_move) role follow it.
  - A planned move keeps a journal, the Nomad Variable C(nomad-zfs-csi/moves/<name>) in O(namespace). It holds the
    volume as it was, the jobs it stopped, its datasets and the steps done. When one is under way this module reads
    it and returns the steps left (RV(steps)), from the journal and what Nomad holds now; with O(abort), the steps
    that put everything back on the source, which it refuses once the volume has left the source in Nomad.
  - A failover keeps one too (its steps C(delete) and C(create), and how the lost node was fenced). Run again, the
    fence is checked again on the node as read (a C(ready) one is refused); the operator's word O(fenced) is taken
    from the journal only once Nomad no longer has the volume. It is not given up, and a move and a failover of one
    volume never cross.
  - Whoever may write the journal's variable may forge it, so it says only which of this volume's steps are done.
    The volume, its node, the target, the fence and the datasets are read again, and RV(data) is named from
    O(source_read) and O(target_read) as for a new move. What Nomad no longer shows is taken from the journal and
    checked against what still shows it, that is the volume (the one Nomad has or, once deleted, the mark on the
    source's dataset), its node, the steps done (as Nomad shows them) and the datasets' names. The jobs a move stopped
    are only run again, in O(namespace), as Nomad stored them. A journal that does not match is refused, naming the
    item, its value and what was read; check by hand what the move did, then delete the variable.
  - A move run again after it finished finds the volume on O(to) and returns no step.
  - It refuses an unknown or ambiguous volume or node; a target that is not ready and eligible, or lacks the volume's
    plugin; for a move, a source node that is not ready, and a volume in use unless O(stop_jobs).
  - For a failover (O(failover)) it refuses a ready node (move instead) and a C(disconnected) one, whose allocations
    Nomad may reconnect. A C(down) node may still run its tasks, since a client agent that crashed or is cut off from
    the servers leaves them running, so it is accepted only when fenced, in one of three ways.
    The operator says it is (O(fenced)), having powered it off or cut it off from its disks and network.
    Or the node advertises its fence watchdog in its metadata (C(nomad_zfs_csi.fence_after), which the
    C(nomad_zfs.csi.host_volume_plugin) role sets with C(host_volume_plugin_fence_after)) and has been down for its
    C(fence_after), plus the watchdog's time to notice and to fence (105 s where C(fence_after) is 20 s or more,
    counted the way it works), plus O(fence_margin).
    Or every allocation on it that mounts the volume belongs to a group with C(disconnect { stop_on_client_after })
    and the node has been down for twice the longest such duration plus O(fence_margin) seconds, after which a
    client agent that still runs has stopped them.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes.info_module
  - nomad_zfs.csi.nomad
options:
  name:
    description: The host volume, in O(namespace).
    type: str
    required: true
  to:
    description: The name of the node the volume moves to.
    type: str
    required: true
  failover:
    description: The volume's node is lost; the volume comes up on O(to) from its replica, without the last change.
    type: bool
    default: false
  stop_jobs:
    description: A move may stop the jobs that use the volume (they are returned as RV(jobs)).
    type: bool
    default: false
  fenced:
    description:
      - For a failover, the operator's word that the lost node can no longer write to the volume (powered off, or
        cut off from its disks and network). Its allocations may otherwise still be writing to the node's copy.
    type: bool
    default: false
  fence_margin:
    description:
      - Seconds added to twice the longest C(stop_on_client_after), or to the fence watchdog's time to fence, before
        a down node counts as fenced by it, for its tasks' C(kill_timeout) and the clock skew between this host and
        the Nomad servers.
    type: int
    default: 30
  abort:
    description:
      - Give up the planned move under way, with the steps that unmark the source and run its jobs again. Refused once
        the volume has left the source in Nomad, and where no move is under way.
    type: bool
    default: false
  rejoin:
    description:
      - O(to) is a node the volume left by a failover, now back. Its copy becomes the standby of the volume's node
        (RV(steps) is C(turnaround), RV(source) that node, RV(target) the volume's node), through its one pull of that
        node's parent into its replica parent. With O(target_read), RV(data) names the snapshot both have, from
        which the pull goes on. Refused while that node is not ready.
    type: bool
    default: false
  agent_addrs:
    description:
      - For each node (by name), the URL at which the node's own host reaches its agent, returned as the node's
        C(agent_addr) in RV(source) and RV(target). The C(nomad_zfs.csi.host_volume_move) role asks each node's agent
        there, from that node's host, for its host volume plugin directory.
      - A node left out gets O(nomad_addr)'s scheme with the address it advertises (C(HTTPAddr)). Give one where the
        agents' certificates do not name that address (C(nomad tls cert create) names C(localhost) and
        C(127.0.0.1)), for example C(https://localhost:4646).
    type: dict
    default: {}
  source_read:
    description:
      - What M(nomad_zfs.csi.zfs_host_volume_info) read on the volume's node; none for a failover, which reads
        nothing on the lost node.
    type: dict
  target_read:
    description:
      - What M(nomad_zfs.csi.zfs_host_volume_info) read on O(to). With it the datasets are checked too, and RV(data)
        names them. It refuses a source dataset that is missing, not the volume's (its mark), not a filesystem, or
        marked as moved elsewhere. It refuses a target without a replica parent, without a replica of the volume kept
        by a pull (from the source's parent, for a move), or with several. For a move it refuses a replica older than
        the source's newest snapshot.
    type: dict
notes:
  - Needs C(variables read) on C(nomad-zfs-csi/moves/*) in O(namespace) for a move; the role that runs the steps
    writes and destroys that variable.
  - Needs C(host-volume-read) in O(namespace), C(node:read), and C(read-job) for a failover (the allocations on a
    node).
  - The time since the node went down is measured from its status change, on the servers' clock, to this host's clock.
"""

EXAMPLES = r"""
- name: May pgdata fail over to storage-2?
  nomad_zfs.csi.nomad_host_volume_move_plan:
    name: pgdata
    namespace: team-a
    to: storage-2
    failover: true
  register: pgdata_failover
"""

RETURN = r"""
volume:
  description: The volume, as M(nomad_zfs.csi.nomad_host_volume_info) returns one.
  returned: success
  type: dict
source:
  description: The volume's node, as M(nomad_zfs.csi.nomad_node_info) returns one; C(status) is C(gone) when Nomad no
    longer knows it. C(agent_addr) is where its host reaches its agent (O(agent_addrs)).
  returned: success
  type: dict
target:
  description: The node O(to), as M(nomad_zfs.csi.nomad_node_info) returns one, with C(agent_addr) as RV(source) has.
  returned: success
  type: dict
jobs:
  description: The jobs a move stops and runs again; none for a failover.
  returned: success
  type: list
  elements: str
  sample: [pgdata-db]
stopped:
  description:
    - For a move under way whose stop is recorded, the job modify index at which its stop left each of RV(jobs)
      (V(-1) for one that was stopped already); the start runs a job again only as that stop left it
      (O(nomad_zfs.csi.nomad_job#module:stopped_index)). Null for a new move, and where the journal holds none.
  returned: success
  type: dict
  sample: {"pgdata-db": 8841}
data:
  description:
    - With O(target_read), the datasets of the move. C(dataset) is the volume's on the source, C(source_parent) and
      C(target_parent) the plugins' parents, and C(source_replica_parent) the source plugin's replica parent.
    - C(replica), C(replica_snapshots), C(pull) (its systemd instance), C(replica_host) and C(adopt) describe the
      replica on the target, kept by the pull, and what C(adopt_replica) names.
    - C(back_pull) is the source's one pull of the target's parent (C(instance), C(replica),
      C(namespace_replica_exists)) where replication turns around, or null; C(back_pulls) counts them.
  returned: success and O(target_read)
  type: dict
  sample: {"dataset": "tank/nomad/volumes/team-a/pgdata", "source_parent": "tank/nomad/volumes",
           "target_parent": "tank/nomad/volumes", "replica": "tank/replica/storage-1/tank/nomad/volumes/team-a/pgdata",
           "pull": "tank_replica_storage-1_tank_nomad_volumes", "replica_host": "storage-1",
           "adopt": "storage-1/tank/nomad/volumes", "replica_snapshots": [], "back_pull": null, "back_pulls": 0,
           "source_replica_parent": "tank/replica"}
steps:
  description:
    - What is left to do, in order. For a move, of C(stop), C(send), C(delete), C(create), C(start) and
      C(turnaround); with O(abort), C(unmark) and C(start); none when the volume is on O(to) already. For a
      failover, C(failover).
  returned: success
  type: list
  elements: str
  sample: [delete, create, start, turnaround]
resumed:
  description: Whether a journal of a move under way was found, whose steps RV(steps) finish (or undo).
  returned: success
  type: bool
journal_path:
  description: The Nomad Variable of the move's journal.
  returned: success and a move with O(target_read)
  type: str
  sample: nomad-zfs-csi/moves/pgdata
journal:
  description: The journal's items to write before the first step (a new move), or as read (one under way).
  returned: success and a move with O(target_read)
  type: dict
journal_after:
  description: For each step of RV(steps), the journal's items once it is done.
  returned: success and a move with O(target_read)
  type: dict
fence:
  description:
    - For a failover, how the lost node is known to write no more. C(how) is C(fenced), C(watchdog) or
      C(stop_on_client_after); C(claims) lists the allocations on it that mount the volume, each with its group's
      C(stop_on_client_after) in seconds; C(down_seconds) and C(needed_seconds) say how long it has been down and
      how long it had to be; C(fence_after) is the watchdog's, where it fenced.
  returned: success and O(failover)
  type: dict
  sample: {"how": "stop_on_client_after", "down_seconds": 95, "needed_seconds": 90,
           "claims": [{"id": "9c1e...", "job_id": "pgdata-db", "task_group": "db", "client_status": "lost",
                       "stop_on_client_after": 30}]}
"""

import time

from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_move_journal import journal_path
from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_move_plan import (
    check_agent_addrs,
    plan_move,
    with_agent_addrs,
)
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_module import NomadModule
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_nodes import every_node


def read(module):
    client, p = module.client, module.params
    check_agent_addrs(p['agent_addrs'])
    stubs = [
        s
        for s in client.get('volumes', params={'type': 'host', 'prefix': p['name']}) or []
        if s.get('Name') == p['name']
    ]
    volumes = [v for v in (client.get('volume/host/' + s['ID'], missing_ok=True) for s in stubs) if v]
    nodes = every_node(client)
    journal = None if p['rejoin'] else client.get('var/' + journal_path(p['name']), missing_ok=True)
    items = (journal or {}).get('Items')
    allocations = []
    if p['failover'] and not p['rejoin']:
        # The fence is checked on the lost node: the volume's, or the one a failover under way names (which the
        # planner checks against the volume while Nomad has it). Only a node Nomad lists is asked for.
        node_id = items.get('source_node_id') if items else (volumes[0].get('NodeID') if len(volumes) == 1 else None)
        if node_id in [n['ID'] for n in nodes]:
            allocations = client.get('node/%s/allocations' % node_id, missing_ok=True) or []
    result = plan_move(p, volumes, nodes, allocations, time.time(), items)
    return dict(changed=False, **with_agent_addrs(result, p['agent_addrs'], p['nomad_addr']))


def main():
    module = NomadModule(
        argument_spec=dict(
            name=dict(type='str', required=True),
            to=dict(type='str', required=True),
            failover=dict(type='bool', default=False),
            stop_jobs=dict(type='bool', default=False),
            fenced=dict(type='bool', default=False),
            fence_margin=dict(type='int', default=30),
            abort=dict(type='bool', default=False),
            rejoin=dict(type='bool', default=False),
            agent_addrs=dict(type='dict', default={}),
            source_read=dict(type='dict'),
            target_read=dict(type='dict'),
        ),
        supports_check_mode=True,
    )
    module.exit_json(**module.run(lambda: read(module)))


if __name__ == '__main__':
    main()
