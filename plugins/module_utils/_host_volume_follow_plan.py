# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""What a drain of a node asks of its host volumes, decided from what Nomad says without calling it: which volumes
follow their jobs off the node, and which nodes to try for each, in order.

Whether a node can take a volume (it holds a current replica) is the move's to decide: the host_volume_move role and
its planner (_host_volume_move_plan) read both nodes and refuse before any change. This planner names candidates only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import time

from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_nodes import summary
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError

NANOSECONDS = 1000000000


def _seconds(rfc3339):
    """Unix seconds of Nomad's LastDrain times, which it writes to the second (2026-12-02T04:03:24Z)."""
    try:
        return calendar.timegm(time.strptime((rfc3339 or '')[:19], '%Y-%m-%dT%H:%M:%S'))
    except ValueError:
        return None


def drain_of(node):
    """The drain the node is in, (started, None); or (None, why nothing follows). A drain that completed leaves the
    node ineligible, and its volumes still follow: the playbook may run after Nomad finished."""
    last = node.get('LastDrain') or {}
    if node.get('DrainStrategy'):
        return _seconds(last.get('StartedAt')) or 0, None
    if last.get('Status') == 'complete' and node.get('SchedulingEligibility') == 'ineligible':
        return _seconds(last.get('StartedAt')) or 0, None
    if last.get('Status') == 'canceled':
        return None, 'its last drain was cancelled'
    if last.get('Status') == 'complete':
        return None, 'its last drain completed and it is eligible again'
    return None, 'it is not draining'


def _mounted(alloc):
    """The host volumes (source names) that an allocation's group mounts."""
    groups = [g for g in (alloc.get('Job') or {}).get('TaskGroups') or [] if g.get('Name') == alloc.get('TaskGroup')]
    volumes = (groups[0].get('Volumes') or {}) if groups else {}
    return [v.get('Source') for v in volumes.values() if v.get('Type') == 'host' and v.get('Source')]


def _users(allocations, started):
    """{(namespace, volume name): sorted job IDs} of the node's allocations that still run, or that this drain
    migrated away (stopped since it started): the jobs that want the volume wherever they are placed next."""
    users = {}
    for alloc in allocations:
        runs = alloc.get('DesiredStatus') == 'run' and alloc.get('ClientStatus') in ('pending', 'running')
        migrated = bool((alloc.get('DesiredTransition') or {}).get('Migrate')) and (
            (alloc.get('ModifyTime') or 0) >= started * NANOSECONDS
        )
        if runs or migrated:
            for name in _mounted(alloc):
                jobs = users.setdefault((alloc.get('Namespace') or 'default', name), set())
                jobs.add(alloc.get('JobID'))
    return dict((key, sorted(jobs)) for key, jobs in users.items())


def _candidates(node, nodes, plugin_id, name):
    """The other nodes a volume could go to, by name: ready, eligible, not draining, with the plugin, and without a
    volume of that name (Nomad keeps one per name on a node)."""
    found = []
    for other in nodes:
        s = summary(other)
        if s['id'] == node['ID'] or s['status'] != 'ready' or not s['eligible'] or s['drain']:
            continue
        if plugin_id in s['host_volume_plugins'] and name not in s['host_volumes']:
            found.append(s['name'])
    return sorted(found)


def plan_follow(p, nodes, volumes, allocations, journals):
    """p: node (name), plugin_id. nodes: every node read whole; volumes: the host volumes Nomad lists in all
    namespaces; allocations: the node's; journals: the moves and failovers under way, each with namespace, name (the
    volume's) and items.

    Returns node (summary), following (whether a drain asks anything), why (when not), moves (each with name,
    namespace, jobs, candidates and resumed) and stays (each with name, namespace and why)."""
    named = [n for n in nodes if n.get('Name') == p['node'] or n.get('ID') == p['node']]
    if len(named) != 1:
        raise PlanError(
            'Nomad has %s node %s; name one of `nomad node status` (node).'
            % ('no' if not named else 'more than one', p['node'])
        )
    node = named[0]
    started, why = drain_of(node)
    result = dict(node=summary(node), following=why is None, why=why, moves=[], stays=[])
    if why:
        result['why'] = 'Node %s is not draining: %s. Nothing follows.' % (node.get('Name'), why)
        return result

    # A move the follow (or an operator) began from this node goes on to where its journal says, first.
    resumed = set()
    for journal in sorted(journals, key=lambda j: (j['namespace'], j['name'])):
        items = journal['items']
        if items.get('source_node_id') == node['ID'] and items.get('kind') != 'failover':
            resumed.add((journal['namespace'], journal['name']))
            result['moves'].append(
                dict(name=journal['name'], namespace=journal['namespace'], jobs=[], candidates=[items.get('to')],
                     resumed=True)
            )  # fmt: skip

    users = _users(allocations, started)
    mine = [
        v
        for v in volumes
        if v.get('NodeID') == node['ID'] and v.get('PluginID') == p['plugin_id']
        and (v.get('Namespace'), v.get('Name')) not in resumed
    ]  # fmt: skip
    for vol in sorted(mine, key=lambda v: (v.get('Namespace'), v.get('Name'))):
        key = (vol.get('Namespace'), vol.get('Name'))
        jobs = users.get(key)
        if not jobs:
            result['stays'].append(
                dict(name=key[1], namespace=key[0], why='no job of this drain uses it; move it by hand if wanted')
            )
            continue
        candidates = _candidates(node, nodes, p['plugin_id'], key[1])
        if not candidates:
            result['stays'].append(
                dict(
                    name=key[1],
                    namespace=key[0],
                    why='no other node is ready, eligible and has plugin %s without a volume of that name; %s wait'
                    % (p['plugin_id'], ', '.join(jobs)),
                )
            )
            continue
        result['moves'].append(dict(name=key[1], namespace=key[0], jobs=jobs, candidates=candidates, resumed=False))
    return result
