#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nomad_host_volume_follow_plan
short_description: Decide, from Nomad, which host volumes a drained or lost node's jobs take with them, and where
version_added: 0.2.0
description:
  - Reads the node O(node), every node, the host volumes and the blocked evaluations in all namespaces, the node's
    allocations and the journals of moves under way, and says which of the node's O(plugin_id) volumes follow their
    jobs off it. It changes nothing, and waits only as O(wait_for_fence) asks. The C(follow) entry point of the
    C(nomad_zfs.csi.host_volume_move) role moves (or fails over) each.
  - A drain or a loss asks it (RV(kind)). A node that Nomad marked C(down) is lost, and its volumes fail over. A node
    that drains, or whose drain completed while it stays ineligible, has volumes to move. Any other node has none
    (RV(following) is false, RV(why) says why).
  - A volume follows when a job uses it there. That is, a group mounts it (a host volume C(source) in the volume's
    namespace), and either has an allocation on the node that still runs, that this drain migrated away or that was
    lost with the node, or has allocations that Nomad could not place yet (a blocked evaluation, as of a
    replacement that waits for its volume). Other volumes stay, each with why in RV(stays); so does a volume whose
    jobs also use another volume on the node, since a move takes one volume of a job at a time.
  - A lost node's volume fails over only once the node surely writes no more to it, as
    M(nomad_zfs.csi.nomad_host_volume_move_plan) decides without the operator's word. The node advertises its fence
    watchdog, or every group that mounts the volume there has C(disconnect { stop_on_client_after }). Each volume
    says in how many seconds that holds (C(fenced_in)); one that never will by itself stays, with why.
  - For each volume it names the other nodes to try, in order of name (RV(moves)). Those are ready, eligible, not
    draining, report O(plugin_id), and hold no volume of that name. Whether one holds a current replica is the move's
    to decide, on both nodes' datasets, and it refuses before any change where it does not.
  - A move (or, from a lost node, a failover) from this node under way (its journal, the Nomad Variable
    C(nomad-zfs-csi/moves/<name>), names the node) goes on first, to the node its journal names, so that a follow
    interrupted anywhere finishes when run again. Of the journal, only the volume's name, the target and the
    volume's ID are taken, and the move checks the rest against what it reads; a journal with a bad name, no
    target, or another volume's ID than Nomad has of that name stays, with why.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes.info_module
  - nomad_zfs.csi.nomad
options:
  node:
    description: The drained node, by name or ID.
    type: str
    required: true
  plugin_id:
    description: The dynamic host volume plugin whose volumes follow (the C(host_volume_plugin) role's).
    type: str
    default: zfs-dataset
  fence_margin:
    description:
      - For a lost node, the seconds added to the time after which it surely fenced itself, as the failover's
        C(fence_margin) (the C(host_volume_move) role's C(host_volume_move_fence_margin)).
    type: int
    default: 30
  wait_for_fence:
    description:
      - For a lost node, wait until its volumes that are fenced within this many seconds (their C(fenced_in)) are,
        and read everything again, so that the failovers that follow are not refused for being early. A volume
        fenced only later does not hold up the others; its failover is refused, saying when to run again. 0 never
        waits; nor does check mode.
    type: int
    default: 0
notes:
  - Needs C(node:read), and in each namespace of a volume C(host-volume-read), C(read-job) and C(variables read) of
    C(nomad-zfs-csi/moves/*); the mover's token that the C(nomad_access) role makes has them in the tenants'
    namespaces. Nomad lists the volumes of every namespace where the token has C(host-volume-read), and leaves out
    the allocations and jobs of those where it lacks C(read-job), whose volumes then stay (no job uses them).
    O(namespace) plays no part.
"""

EXAMPLES = r"""
- name: Which volumes follow the jobs off storage-2?
  nomad_zfs.csi.nomad_host_volume_follow_plan:
    node: storage-2
  register: follow

- name: Which volumes of storage-2, lost, fail over, once it surely fenced itself (waiting up to 5 minutes)
  nomad_zfs.csi.nomad_host_volume_follow_plan:
    node: storage-2
    wait_for_fence: 300
  register: follow
"""

RETURN = r"""
node:
  description: The node, as M(nomad_zfs.csi.nomad_node_info) returns one.
  returned: success
  type: dict
following:
  description: Whether the node is down, or drains (or drained and stays ineligible), so that its volumes follow.
  returned: success
  type: bool
kind:
  description: C(failover) for a node that Nomad marked down, C(move) otherwise.
  returned: success
  type: str
  sample: failover
fenced_in:
  description:
    - For a lost node, the most seconds that any volume of RV(moves) waits until the node surely writes no more to
      it; 0 where none waits.
  returned: success
  type: int
waited:
  description: The seconds O(wait_for_fence) waited before the plan was read again; 0 where it did not.
  returned: success
  type: int
why:
  description: Why nothing follows, when RV(following) is false; null otherwise.
  returned: success
  type: str
  sample: "Node storage-2 is not down, nor draining: its last drain was cancelled. Nothing follows."
moves:
  description:
    - The volumes to move (or fail over), one under way first. Each with C(name), C(namespace), C(jobs) (the jobs
      that use it there), C(candidates) (the nodes to try, in order), C(resumed) (a journal's move, whose one
      candidate is the node it moves to) and C(fenced_in) (for a lost node, the seconds until it surely writes no
      more to the volume; 0 otherwise).
  returned: success
  type: list
  elements: dict
  sample: [{"name": "pgdata", "namespace": "team-a", "jobs": ["pgdata-db"], "candidates": ["storage-1"],
            "resumed": false, "fenced_in": 0}]
stays:
  description:
    - The node's volumes that do not move, each with C(name), C(namespace), C(jobs) (those that want it, which then
      wait), C(why) and C(reason), a word for why that an alert or a rule matches.
    - "C(reason) is one of C(unused) (no job wants it), C(shared_jobs) (its jobs use another volume of the node too),
      C(not_fenced) (the lost node may still write to it), C(no_node) (no other node could take it),
      C(other_kind_under_way) (a move or failover of the other kind is under way) and C(journal_refused) (its
      journal does not hold up against Nomad)."
  returned: success
  type: list
  elements: dict
  sample: [{"name": "scratch", "namespace": "team-a", "jobs": [],
            "why": "no job of this drain uses it; move it by hand if wanted", "reason": "unused"}]
metrics:
  description:
    - What the follow decided, in the Prometheus text format, for the node exporter's textfile collector. The
      gauge C(nomad_zfs_csi_follow_volumes_following) counts RV(moves); C(nomad_zfs_csi_follow_volume_stays) is 1
      for each of RV(stays) but those no job wants, labelled with its C(reason). Both carry the node's C(node),
      C(node_id) and the C(kind).
    - Empty where RV(following) is false.
  returned: success
  type: str
metrics_file:
  description:
    - The name of the node's file for RV(metrics) in the textfile collector's directory, named by its ID; null where
      the ID is no UUID (a client that registers chooses its ID, and it could name another path).
  returned: success
  type: str
  sample: nomad_zfs_csi_follow_5f8b0c1e-3d2a-4c61-9a57-0b6e2f1d7c44.prom
"""

import time

from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_follow_metrics import file_name, render
from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_follow_plan import (
    BLOCKED,
    plan_follow,
    the_node,
    wait_within,
    waiting,
)
from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_move_journal import journal_path
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_module import NomadModule
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_nodes import every_node

EVERY_NAMESPACE = {'namespace': '*'}
JOURNALS = journal_path('')


def read(module):
    client, p = module.client, module.params
    nodes = every_node(client)
    node = the_node(nodes, p['node'])
    volumes = client.get('volumes', params=dict(EVERY_NAMESPACE, type='host')) or []
    allocations = client.get('node/%s/allocations' % node['ID'])
    waiting_jobs = [
        job
        for job in (
            client.get('job/' + job_id, params={'namespace': namespace}, missing_ok=True)
            for namespace, job_id in waiting(
                client.get('evaluations', params=dict(EVERY_NAMESPACE, filter=BLOCKED)) or []
            )
        )
        if job
    ]
    journals = []
    for stub in client.get('vars', params=dict(EVERY_NAMESPACE, prefix=JOURNALS)) or []:
        var = client.get('var/' + stub['Path'], params={'namespace': stub['Namespace']}, missing_ok=True)
        if var:
            journals.append(
                dict(namespace=stub['Namespace'], name=stub['Path'][len(JOURNALS) :], items=var.get('Items') or {})
            )
    return plan_follow(p, nodes, volumes, allocations or [], waiting_jobs, journals, time.time())


def follow(module):
    """The plan; for a lost node that surely writes no more within wait_for_fence seconds, the plan read again once
    it does (not in check mode, which only says when)."""
    result = read(module)
    wait = wait_within(result, module.params['wait_for_fence'])
    if wait > 0 and not module.check_mode:
        # The second beyond: the planner counts in whole seconds.
        time.sleep(wait + 1)
        result = dict(read(module), waited=wait + 1)
    return dict(
        dict(changed=False, waited=0), metrics=render(result), metrics_file=file_name(result['node']['id']), **result
    )


def main():
    module = NomadModule(
        argument_spec=dict(
            node=dict(type='str', required=True),
            plugin_id=dict(type='str', default='zfs-dataset'),
            fence_margin=dict(type='int', default=30),
            wait_for_fence=dict(type='int', default=0),
        ),
        supports_check_mode=True,
    )
    for field in ('fence_margin', 'wait_for_fence'):
        if module.params[field] < 0:
            module.fail_json(
                msg='%s is %d; give 0 or more seconds. Nothing was changed.' % (field, module.params[field])
            )
    module.exit_json(**module.run(lambda: follow(module)))


if __name__ == '__main__':
    main()
