# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""What a drain or the loss of a node asks of its host volumes, decided from what Nomad says without calling it:
which volumes follow their jobs off the node (moved from a drained node, failed over from a lost one once it is
fenced), and which nodes to try for each, in order.

Whether a node can take a volume (it holds a current replica) is the move's to decide: the host_volume_move role and
its planner (_host_volume_move_plan) read both nodes and refuse before any change. This planner names candidates only.
Whether a lost node writes no more is _host_volume_fence's to decide, for the follow as for the failover.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import json
import re

from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_fence import ENDED_ON_CLIENT, fence_wait
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_nodes import summary
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError

NANOSECONDS = 1000000000
# Nomad writes LastDrain's times in the server's time zone, to the second: 2026-12-02T04:03:24Z or ...T05:03:24+01:00.
RFC3339 = re.compile(r'^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.\d+)?(Z|([+-])(\d\d):(\d\d))$')
# A volume's name, as the move's journal path ends in it: nothing that could name another variable.
VOLUME_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]*$')


def _seconds(text):
    """Unix seconds of an RFC 3339 time, or None."""
    m = RFC3339.match(text or '')
    if not m:
        return None
    seconds = calendar.timegm(tuple(int(g) for g in m.groups()[:6]) + (0, 0, 0))
    if m.group(7) != 'Z':
        offset = int(m.group(9)) * 3600 + int(m.group(10)) * 60
        seconds -= offset if m.group(8) == '+' else -offset
    return seconds


def drain_of(node):
    """The drain the node is in, (started, None); or (None, why nothing follows). A drain that completed leaves the
    node ineligible, and its volumes still follow: Nomad may finish a drain before the follow reads it."""
    last = node.get('LastDrain') or {}
    if node.get('DrainStrategy') or (
        last.get('Status') == 'complete' and node.get('SchedulingEligibility') == 'ineligible'
    ):
        return _seconds(last.get('StartedAt')) or 0, None
    if last.get('Status') == 'canceled':
        return None, 'its last drain was cancelled'
    if last.get('Status') == 'complete':
        return None, 'its last drain completed and it is eligible again'
    return None, 'it has not been drained'


def _mounted(job, group_name):
    """The host volumes (source names) that a job's group mounts."""
    groups = [g for g in (job or {}).get('TaskGroups') or [] if g.get('Name') == group_name]
    volumes = (groups[0].get('Volumes') or {}) if groups else {}
    return [v.get('Source') for v in volumes.values() if v.get('Type') == 'host' and v.get('Source')]


def _users(allocations, waiting_jobs, started, lost=False):
    """{(namespace, volume name): sorted job IDs}: the jobs that want the volume wherever they are placed next. Those
    of the node's allocations that still run, or that this drain migrated away (stopped since it started), or, of a
    lost node, that were lost with it (or still run there, as far as Nomad knows); and the jobs with allocations
    Nomad could not place yet (a replacement waits for its volume)."""
    users = {}

    def add(namespace, name, job_id):
        users.setdefault((namespace or 'default', name), set()).add(job_id)

    for alloc in allocations:
        since = (alloc.get('ModifyTime') or 0) >= started * NANOSECONDS
        if lost:
            # An allocation lost in an earlier loss of the node was replaced then: only this loss's count.
            wanted = alloc.get('ClientStatus') not in ENDED_ON_CLIENT and (alloc.get('ClientStatus') != 'lost' or since)
        else:
            runs = alloc.get('DesiredStatus') == 'run' and alloc.get('ClientStatus') in ('pending', 'running')
            wanted = runs or (bool((alloc.get('DesiredTransition') or {}).get('Migrate')) and since)
        if wanted:
            for name in _mounted(alloc.get('Job'), alloc.get('TaskGroup')):
                add(alloc.get('Namespace'), name, alloc.get('JobID'))
    for job in waiting_jobs:
        for group in job.get('TaskGroups') or []:
            for name in _mounted(job, group.get('Name')):
                add(job.get('Namespace'), name, job.get('ID'))
    return dict((key, sorted(jobs)) for key, jobs in users.items())


# The evaluations Nomad keeps of jobs with allocations it could not place yet (GET /v1/evaluations).
BLOCKED = 'Status == "blocked"'


def waiting(evaluations):
    """The jobs of blocked evaluations, (namespace, ID) each, once."""
    return sorted(
        set((e.get('Namespace') or 'default', e['JobID']) for e in evaluations if e.get('Status') == 'blocked')
    )


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


def _resumed(node, journals, volumes, kind):
    """The moves (or failovers, as kind says) from this node under way, by their journals, and why any other journal
    of this node is left alone. The journal is whatever its writer made it: only its name, its target and its
    volume's ID are taken, and the move checks everything else against what it reads."""
    moves, stays = [], []
    for journal in sorted(journals, key=lambda j: (j['namespace'], j['name'])):
        items = journal['items']
        if items.get('source_node_id') != node['ID']:
            continue
        key = (journal['namespace'], journal['name'])
        if (items.get('kind') == 'failover') != (kind == 'failover'):
            # The other kind: a move from a node lost since, or a failover from a node back since.
            why = OTHER_KIND[kind] % (key[0], key[1])
            stays.append(dict(name=key[1], namespace=key[0], jobs=[], why=why, reason='other_kind_under_way'))
            continue
        try:
            volume_id = json.loads(items.get('volume') or '{}').get('id')
        except (ValueError, AttributeError):
            volume_id = None
        in_nomad = [v for v in volumes if (v.get('Namespace'), v.get('Name')) == key]
        to = items.get('to')
        why = None
        if not VOLUME_NAME.match(key[1]):
            why = 'its journal nomad-zfs-csi/moves/%s names no volume' % key[1]
        elif not isinstance(to, str) or not to:
            why = 'its journal names no node to move it to'
        elif in_nomad and [v.get('ID') for v in in_nomad] != [volume_id]:
            why = 'its journal is of another volume (%s) than Nomad has' % volume_id
        if why:
            stays.append(
                dict(
                    name=key[1],
                    namespace=key[0],
                    jobs=[],
                    why=why + '; check it, then move it by hand',
                    reason='journal_refused',
                )
            )
        else:
            moves.append(dict(name=key[1], namespace=key[0], jobs=[], candidates=[to], resumed=True, fenced_in=0))
    return moves, stays


# Why a journal of the other kind from the node stays, by the follow's kind.
OTHER_KIND = {
    'failover': 'a planned move of it from this node is under way (its journal), and the node is lost: fail it over '
    'by hand (playbooks/failover_host_volume.yml -e namespace=%s -e volume=%s)',
    'move': 'a failover of it from this node is under way (its journal): finish it by hand '
    '(playbooks/failover_host_volume.yml -e namespace=%s -e volume=%s)',
}


def wait_within(plan, limit):
    """The seconds to wait before the failovers of a lost node's plan: the longest fenced_in that is at most limit,
    so that one volume fenced only later (a group's long stop_on_client_after) does not hold up the others."""
    return max([m['fenced_in'] for m in plan['moves'] if m['fenced_in'] <= limit] or [0])


def the_node(nodes, name):
    """The one node of that name or ID, or the refusal that names the field."""
    # By ID first: a client names itself, and could take another node's ID as its name.
    named = [n for n in nodes if n.get('ID') == name] or [n for n in nodes if n.get('Name') == name]
    if len(named) != 1:
        raise PlanError(
            'Nomad has %s node %s; name one of `nomad node status` (node).'
            % ('no' if not named else 'more than one', name)
        )
    return named[0]


def plan_follow(p, nodes, volumes, allocations, waiting_jobs, journals, now=0):
    """p: node (name or ID), plugin_id, fence_margin. nodes: every node read whole; volumes: the host volumes Nomad
    lists in all namespaces; allocations: the node's; waiting_jobs: the jobs (read whole) with allocations not placed
    yet; journals: the moves and failovers under way, each with namespace, name (the volume's) and items; now: this
    host's time, for how long a lost node has been down.

    Returns node (summary), following (whether a drain or a loss asks anything), kind (move, from a drained node;
    failover, from a lost one), why (when nothing follows), moves (each with name, namespace, jobs, candidates,
    resumed and fenced_in, the seconds until a lost node surely writes no more to it), fenced_in (the longest) and
    stays (each with name, namespace, jobs that wait for it, why, and reason: a word for why that a rule or an alert
    matches, one of unused, shared_jobs, not_fenced, no_node, other_kind_under_way and journal_refused)."""
    node = the_node(nodes, p['node'])
    # A lost node's volumes fail over, drained or not: it can send nothing.
    kind = 'failover' if node.get('Status') == 'down' else 'move'
    started, why = (int(node.get('StatusUpdatedAt') or 0), None) if kind == 'failover' else drain_of(node)
    result = dict(node=summary(node), following=why is None, kind=kind, why=None, moves=[], stays=[], fenced_in=0)
    if why:
        result['why'] = 'Node %s is not down, nor draining: %s. Nothing follows.' % (node.get('Name'), why)
        return result

    # A move (or failover) the follow or an operator began from this node goes on first, to where its journal says.
    result['moves'], result['stays'] = _resumed(node, journals, volumes, kind)
    taken = set((m['namespace'], m['name']) for m in result['moves'] + result['stays'])
    users = _users(allocations, waiting_jobs, started, lost=kind == 'failover')
    mine = [
        v
        for v in volumes
        if v.get('NodeID') == node['ID'] and v.get('PluginID') == p['plugin_id']
        and (v.get('Namespace'), v.get('Name')) not in taken
    ]  # fmt: skip
    shared = _shared(mine, users)
    for vol in sorted(mine, key=lambda v: (v.get('Namespace'), v.get('Name'))):
        key = (vol.get('Namespace'), vol.get('Name'))
        jobs = users.get(key, [])
        stay = dict(name=key[1], namespace=key[0], jobs=jobs)
        fenced_in, why = 0, None
        if kind == 'failover' and jobs:
            fenced_in, _fence, why = fence_wait(
                dict(name=key[1], plugin_id=p['plugin_id'], fence_margin=p['fence_margin']), node, allocations, now
            )
        candidates = _candidates(node, nodes, p['plugin_id'], key[1]) if jobs and key not in shared else []
        if not jobs:
            result['stays'].append(
                dict(stay, why='no job %s uses it; move it by hand if wanted' % LOST_OR_DRAINED[kind], reason='unused')
            )
        elif key in shared:
            result['stays'].append(
                dict(
                    stay,
                    why='%s also use %s on this node, and a move takes one volume of a job at a time; move them by '
                    'hand to one node' % (', '.join(jobs), ', '.join(shared[key])),
                    reason='shared_jobs',
                )
            )
        elif fenced_in is None:
            result['stays'].append(dict(stay, why=why, reason='not_fenced'))
        elif not candidates:
            result['stays'].append(
                dict(
                    stay,
                    why='no other node is ready, eligible and has plugin %s without a volume of that name'
                    % p['plugin_id'],
                    reason='no_node',
                )
            )
        else:
            result['moves'].append(
                dict(
                    name=key[1], namespace=key[0], jobs=jobs, candidates=candidates, resumed=False, fenced_in=fenced_in
                )
            )
    result['fenced_in'] = max([m['fenced_in'] for m in result['moves']] or [0])
    return result


# Whose jobs a volume follows, as a stay says it.
LOST_OR_DRAINED = {'move': 'of this drain', 'failover': 'lost with the node'}


def _shared(mine, users):
    """{volume key: the other volumes here that its jobs use}, for volumes whose jobs use more than one of them: the
    move stops and runs a job around one volume, and the job could not run until the others moved too."""
    keys = [(v.get('Namespace'), v.get('Name')) for v in mine]
    shared = {}
    for key in keys:
        others = [k[1] for k in keys if k != key and k[0] == key[0] and set(users.get(k, [])) & set(users.get(key, []))]
        if others:
            shared[key] = sorted(others)
    return shared
