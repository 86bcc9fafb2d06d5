# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""The Nomad side of a host volume's move or failover, decided without calling Nomad: which volume and nodes take
part, what keeps the volume from moving, and, for a failover, whether the lost node can still write to it.

Every refusal names the way out and ends the run before any change.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import time

from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_fence import fence
from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_move_journal import (
    FAILOVER_STEPS,
    STEPS,
    done_steps,
    journal_path,
    mismatch,
    record,
    refuse,
    resume,
    with_step,
)
from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_node import MARK, MOVED
from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_plan import allocations, shown
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_nodes import summary
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._replication_status import (
    MOVE_SNAPSHOT,
    is_move_final,
    recovery_point,
)


def _chosen(p, volumes, nodes):
    """The volume, its node and the target, or the refusal of an unknown or ambiguous one."""
    if not volumes:
        refuse(
            'Nomad has no host volume %s in namespace %s; name a volume of `nomad volume status -type host '
            '-namespace %s`.' % (p['name'], p['namespace'], p['namespace'])
        )
    if len(volumes) > 1:
        refuse(
            '%s is on several nodes; a move takes one volume, and the target must not hold one of that name.'
            % p['name']
        )
    vol = volumes[0]
    by_id = dict((n['ID'], n) for n in nodes)
    target = [n for n in nodes if n.get('Name') == p['to']]
    if not target:
        refuse('Nomad has no node %s; name one of %s.' % (p['to'], ', '.join(sorted(n.get('Name', '') for n in nodes))))
    return vol, by_id.get(vol.get('NodeID')), target[0]


def _target_refusal(p, vol, source, target):
    t = summary(target)
    if source and source['ID'] == target['ID']:
        return '%s is already on %s.' % (p['name'], p['to'])
    if vol.get('PluginID') not in t['host_volume_plugins']:
        return (
            'Node %s does not report host volume plugin %s (plugins.host_volume.%s.version); run the '
            'host_volume_plugin role for it, with host_volume_plugin_replica_parent.'
            % (p['to'], vol.get('PluginID'), vol.get('PluginID'))
        )
    if not (t['status'] == 'ready' and t['eligible'] and not t['drain']):
        return 'Node %s is %s, %s%s; the jobs could not run there. Make it ready and eligible first.' % (
            p['to'],
            t['status'],
            'eligible' if t['eligible'] else 'ineligible',
            ', draining' if t['drain'] else '',
        )
    return None


def _source_refusal(p, vol, source):
    status = source.get('Status') if source else 'gone'
    name = source.get('Name') if source else vol.get('NodeID')
    if not p['failover'] and status != 'ready':
        return (
            "The volume's node %s is %s: a planned move needs it to send the last change. If it is lost, fail over "
            'instead (playbooks/failover_host_volume.yml).' % (name, status)
        )
    if p['failover'] and status == 'ready':
        return (
            "The volume's node %s is ready: move the volume with playbooks/move_host_volume.yml, which sends the last "
            'change and loses nothing. A failover is for a node that is down.' % name
        )
    in_use = allocations(vol)
    if in_use and not (p['stop_jobs'] or p['failover']):
        return (
            '%s is in use by %s (allocations %s); set stop_jobs=true to stop them for the move and run them again '
            'on %s.'
            % (
                p['name'],
                ', '.join(sorted(set(a['job_id'] for a in in_use))),
                ', '.join(a['id'][:8] for a in in_use),
                p['to'],
            )
        )
    return None


def _before_the_move(snapshots):
    """The snapshots taken before a move began: a move's own final snapshot is sent by the move."""
    return [snap for snap in snapshots if not is_move_final(snap['name'])]


def _holds_newest_data(snapshots, replica_snapshots):
    """Whether the replica holds the data of the newest snapshot taken before the move: it has that snapshot, or each
    one after its own newest wrote nothing (the pull leaves such a replica alone), so the move's increment is small.
    written counts from the snapshot just before, a move's final one too."""
    newest = _before_the_move(snapshots)[-1]
    if newest['guid'] in [s['guid'] for s in replica_snapshots]:
        return True
    upto = snapshots[: snapshots.index(newest) + 1]
    return recovery_point({'snapshots': upto}, replica_snapshots[-1] if replica_snapshots else None)[1]


def _back_pulls(source_read, target_parent):
    """The source's pulls of the target's parent into its replica parent: where replication turns around."""
    return [
        dict(
            instance=pull['instance'],
            replica=pull['replica']['name'],
            namespace_replica_exists=pull['namespace_replica_exists'],
        )
        for pull in (source_read or {}).get('pulls') or []
        if pull['parent'] == target_parent
    ]


def _source_refusal_of_data(p, vol, source, dataset, described):
    """What keeps a move's source dataset from moving: missing, not the volume's (its mark), not a filesystem, or
    marked as moved elsewhere."""
    if not dataset.get('exists'):
        return 'Node %s has no dataset %s.' % (source['name'], described)
    if dataset.get('mark') != vol['id']:
        return "%s is not volume %s's dataset (its %s is %s)." % (described, vol['id'], MARK, dataset.get('mark'))
    if dataset.get('type') != 'filesystem':
        return '%s is a %s; only a filesystem moves.' % (described, dataset.get('type'))
    if dataset.get('moved_to') not in (None, p['to']):
        return '%s is marked as moved to %s; clear the mark (zfs inherit %s) only if that move was given up.' % (
            described,
            dataset['moved_to'],
            MOVED,
        )
    return None


def _the_replica(p, source, source_read, target_read, described):
    """The one replica on the target that the volume comes up from, or the refusal of none, several, or a dataset
    of the volume already there."""
    held = target_read.get('dataset') or {}
    if held.get('exists'):
        moved = 'moved to %s' % held['moved_to'] if held.get('moved_to') else 'not marked as moved'
        # The copy a failover left on a node that came back, or a source a move left where replication does not
        # turn around: the adoption would land on it.
        refuse(
            'Node %s still has a dataset %s (%s of volume %s, %s): the volume cannot come back over it. Make it the '
            'standby first (playbooks/rejoin_host_volume.yml -e volume=%s -e namespace=%s -e node=%s keeps it '
            'aside), or rename it aside by hand.'
            % (p['to'], held['name'], held.get('type'), held.get('mark'), moved, p['name'], p['namespace'], p['to'])
        )
    if not target_read['replica_parent']:
        refuse(
            "Node %s's plugin has no replica parent to adopt from; run the host_volume_plugin role for it with "
            'host_volume_plugin_replica_parent (its zfs_replication_replica_parent).' % p['to']
        )
    # A move takes the replica pulled from the source's parent; a failover, whichever pull keeps one.
    pulls = [
        pull
        for pull in target_read['pulls']
        if pull['replica']['exists'] and (not source_read or pull['parent'] == source_read['parent'])
    ]
    replicas = [dict(pull['replica'], pull=pull['instance'], host=pull['host'], source_parent=pull['parent'],
                     adopt=pull['adopt']) for pull in pulls]  # fmt: skip
    if not replicas:
        refuse(
            'Node %s has no replica of %s under %s; have the zfs_replication role there pull %s (zfs_replication_pulls '
            'with replica_parent), and let the pull run once.'
            % (
                p['to'],
                described,
                target_read['replica_parent'],
                '%s from %s' % (source_read['parent'], source['name']) if source_read else "the lost node's parent",
            )
        )
    if len(replicas) > 1:
        refuse(
            'Node %s has several replicas of %s (%s); keep the one its pull keeps current.'
            % (p['to'], described, ', '.join(r['name'] for r in replicas))
        )
    return replicas[0]


def _final(source_parent, where, started):
    """The move's final snapshot, named for when the move was planned (its journal's started)."""
    return '%s/%s@%s%s' % (
        source_parent,
        where,
        MOVE_SNAPSHOT,
        time.strftime('%Y-%m-%d_%H:%M:%S', time.gmtime(started)),
    )


def _named(p, source_parent, target_read, source_read, started, replica=None):
    """The datasets a move or failover acts on, all named from the nodes' reads."""
    where = '%s/%s' % (p['namespace'], p['name'])
    back = _back_pulls(source_read, target_read['parent'])
    data = dict(
        dataset='%s/%s' % (source_parent, where),
        final=_final(source_parent, where, started),
        source_parent=source_parent,
        target_parent=target_read['parent'],
        # Replication turns around through the one pull of the target's parent into the source's replica parent.
        back_pull=back[0] if len(back) == 1 else None,
        back_pulls=len(back),
        dataset_exists=bool(((source_read or {}).get('dataset') or {}).get('exists')),
        source_replica_parent=(source_read or {}).get('replica_parent', ''),
    )
    if replica:
        data.update(
            replica=replica['name'],
            replica_snapshots=replica['snapshots'],
            pull=replica['pull'],
            replica_host=replica['host'],
            adopt=replica['adopt'],
        )
    return data


def plan_data(p, vol, source, target, source_read, target_read, now=0):
    """The datasets the move takes part with, from both nodes' zfs_host_volume_info reads (none of the lost node's
    in a failover), or the refusal of what keeps the data from moving."""
    dataset = (source_read or {}).get('dataset') or {}
    described = dataset.get('name') or 'volume %s/%s' % (p['namespace'], p['name'])
    refusal = None if p['failover'] else _source_refusal_of_data(p, vol, source, dataset, described)
    if refusal:
        refuse(refusal)
    replica = _the_replica(p, source, source_read, target_read, described)
    snapshots = dataset.get('snapshots') or []
    before = _before_the_move(snapshots)
    if not p['failover'] and before and not _holds_newest_data(snapshots, replica['snapshots']):
        newest = before[-1]
        refuse(
            "The replica %s is older than the source's newest snapshot %s: finish that send first (systemctl start "
            'zfs-replication-pull@%s.service on the host of %s), then move.'
            % (replica['name'], newest['name'], replica['pull'], p['to'])
        )
    source_parent = source_read['parent'] if source_read else replica['source_parent']
    return _named(p, source_parent, target_read, source_read, now, replica)


def _after_each(items, steps):
    """The journal's items once each of steps is done, in order."""
    after = {}
    for step in steps:
        items = with_step(items, step)
        after[step] = items
    return after


def _journaled(result, p, now):
    """The journal a new move writes before its first change, and what it holds after each step."""
    items = record(p, result, now)
    return dict(
        result, journal_path=journal_path(p['name']), journal=items, journal_after=_after_each(items, result['steps'])
    )


# The volume's fields a resumed move acts on (the delete's node; the create's plugin, capacity, capabilities and
# parameters), which its journal must hold as Nomad does while Nomad still has the volume.
VOLUME_FIELDS = ('id', 'name', 'namespace', 'node_id', 'plugin_id', 'capacity_min', 'capacity_max', 'capabilities',
                 'parameters')  # fmt: skip
# The journal's names of the datasets, each named afresh from the nodes' reads on a resumed run.
DATA_FIELDS = ('dataset', 'final', 'source_parent', 'target_parent', 'replica', 'pull', 'replica_host', 'adopt')


def _as_json(value):
    """value as the journal holds it: through JSON, so that a tuple read compares equal to the list written."""
    return json.loads(json.dumps(value, sort_keys=True))


def _resumed_volume(p, journal, r, volumes, target, by_id):
    """The volume of a move or failover under way and its node: as Nomad shows them while it still has the volume,
    the journal's (the only record left) once Nomad deleted it. Either way each must match what Nomad shows: the
    volume of this name on the journal's node or, once created there, on the target, and the journal's steps."""
    vol, node_id, done = r['volume'], r['source_node_id'], journal.get('done') or 'nothing'

    def node_name(node):
        return (by_id.get(node) or {}).get('Name') or node

    if [field for field in VOLUME_FIELDS if field not in r['volume']] or not isinstance(vol.get('id'), str):
        read = 'this collection writes the volume there with %s' % ', '.join(VOLUME_FIELDS)
        mismatch(p, 'volume', journal.get('volume'), read)
    if node_id == target['ID']:
        mismatch(p, 'source_node_id', node_id, 'that is node %s, the target' % p['to'])
    for other in volumes:
        if other.get('ID') != vol['id'] and other.get('NodeID') != target['ID']:
            where = node_name(other.get('NodeID'))
            mismatch(
                p, 'volume.id', vol['id'], 'Nomad has volume %s %s on node %s' % (p['name'], other.get('ID'), where)
            )
    read = [v for v in volumes if v.get('ID') == vol['id']]
    if read:
        if read[0].get('NodeID') != node_id:
            where = node_name(read[0].get('NodeID'))
            mismatch(p, 'source_node_id', node_id, 'Nomad has volume %s on node %s' % (vol['id'], where))
        if 'delete' in r['journal_done']:
            mismatch(p, 'done', done, 'Nomad still has volume %s on node %s' % (vol['id'], node_name(node_id)))
        vol = _as_json(shown(read[0]))
    # Where Nomad has the volume, the journal's must be it; where not, it must at least be this one of that node.
    expected = vol if read else dict(vol, name=p['name'], namespace=p['namespace'], node_id=node_id)
    for field in VOLUME_FIELDS:
        if r['volume'][field] != expected[field]:
            read_value = ('Nomad has %s' if read else 'this volume of that node has %s') % json.dumps(expected[field])
            mismatch(p, 'volume.%s' % field, json.dumps(r['volume'][field]), read_value)
    if 'create' in r['journal_done'] and not [v for v in volumes if v.get('NodeID') == target['ID']]:
        mismatch(p, 'done', done, 'Nomad has no volume %s on node %s' % (p['name'], p['to']))
    source = by_id.get(node_id)
    if source and journal.get('source_node') != source.get('Name'):
        mismatch(p, 'source_node', journal.get('source_node'), 'node %s is %s' % (node_id, source.get('Name')))
    return vol, source, bool(read)


def _resumed_fence(p, journal, r, source, in_nomad, node_allocations, now):
    """How the lost node is known to write no more, checked again on the node as read now. The operator's word
    (fenced) is taken from the journal only once Nomad no longer has the volume: what is left then, the create from
    the replica, is what the journal's writer may do itself (host-volume-create with adopt_replica)."""
    status = source.get('Status') if source else 'gone'
    if status not in ('down', 'gone', 'disconnected'):
        name = source.get('Name')
        mismatch(p, 'fence', journal.get('fence'), 'node %s is %s: it is not lost' % (name, status))
    word = p['fenced'] or (not in_nomad and r['fence'].get('how') == 'fenced')
    lost = source or {'Name': journal.get('source_node'), 'Status': 'gone'}
    return fence(dict(p, fenced=word), lost, node_allocations, now)


def _resumed_data(p, vol, r, source, source_read, target_read):
    """The datasets of a move or failover under way, named afresh from both nodes' reads as for a new one (the
    replica only while the create is left: the adoption takes it away), and the journal's names checked against
    them. A move's source dataset, until the turnaround renames it, must be the volume's (its mark)."""
    where = '%s/%s' % (p['namespace'], p['name'])
    described = 'volume %s' % where
    if not p['failover']:
        if not (source_read or {}).get('parent'):
            refuse("Node %s's plugin names no parent; give source_read, its zfs_host_volume_info." % source['name'])
        dataset = source_read.get('dataset') or {}
        described = dataset['name']
        if dataset.get('exists') and dataset.get('mark') != vol['id']:
            read = '%s on %s is marked as volume %s' % (described, source['name'], dataset.get('mark'))
            mismatch(p, 'volume.id', vol['id'], read)
        refusal = _source_refusal_of_data(p, vol, source, dataset, described)
        # After the delete only a turnaround that began renames it away.
        if refusal and (dataset.get('exists') or 'delete' not in r['done']):
            refuse(refusal)
    replica = _the_replica(p, source, source_read, target_read, described) if 'create' in r['steps'] else None
    source_parent = replica['source_parent'] if p['failover'] else source_read['parent']
    data = _named(p, source_parent, target_read, source_read, r['started'], replica)
    for field in DATA_FIELDS:
        if field in data and r['data'].get(field) != data[field]:
            mismatch(p, 'data.%s' % field, r['data'].get(field), 'the nodes as read now make it %s' % data[field])
    if not (p['failover'] or p.get('abort')) and 'send' in r['done'] and 'delete' in r['steps']:
        # The delete destroys a source the send did not mark: a send said done must show on both nodes.
        final, done = data['final'].split('@', 1)[1], ','.join(r['journal_done'])
        if not (dataset.get('moved_to') == p['to'] and dataset.get('readonly')):
            read = '%s on %s is not read-only and marked as moved to %s' % (described, source['name'], p['to'])
            mismatch(p, 'done', done, read)
        if final not in [snap['name'].split('@', 1)[1] for snap in replica['snapshots']]:
            read = 'the replica %s on %s has no snapshot %s' % (replica['name'], p['to'], final)
            mismatch(p, 'done', done, read)
    return data


def _plan_resumed(p, journal, volumes, nodes, node_allocations, now):
    """A move or failover its journal says is under way: the steps left, from the journal and what Nomad holds now.

    The journal is a claim of whoever may write the variable: it says which of this volume's steps are done. The
    volume, its node, the target, the fence and the datasets are read again; where Nomad no longer shows one (the
    volume once deleted, its node), the journal's is checked against what is still read. A mismatch is refused."""
    by_name, by_id = dict((n.get('Name'), n) for n in nodes), dict((n['ID'], n) for n in nodes)
    target = by_name.get(p['to'])
    r = dict(resume(p, journal, volumes, target), journal_done=done_steps(journal))
    if target is None:
        refuse('Nomad has no node %s; name one of %s.' % (p['to'], ', '.join(sorted(by_name))))
    vol, source, in_nomad = _resumed_volume(p, journal, r, volumes, target, by_id)
    refusal = _target_refusal(p, {'PluginID': vol.get('plugin_id')}, None, target)
    if (
        not refusal
        and (source or {}).get('Status') != 'ready'
        and set(r['steps']) & set(('send', 'unmark', 'turnaround'))
    ):
        refusal = (
            "The volume's node %s is %s: the move needs it for its next steps (%s). Start it again, then run the move "
            'again.' % (journal.get('source_node'), (source or {}).get('Status', 'gone'), ', '.join(r['steps']))
        )
    if refusal:
        refuse(refusal)
    source_view = (
        summary(source) if source else dict(id=r['source_node_id'], name=journal.get('source_node'), status='gone')
    )
    extra = {}
    if p['failover'] and r['steps']:
        extra['fence'] = _resumed_fence(
            dict(p, plugin_id=vol.get('plugin_id')), journal, r, source, in_nomad, node_allocations, now
        )
    if p.get('target_read') and r['steps']:
        extra['data'] = _resumed_data(p, vol, r, source_view, p.get('source_read'), p['target_read'])
    result = dict(
        extra,
        volume=dict(vol, allocations=[]),
        source=source_view,
        target=summary(target),
        jobs=r['jobs'],
        stopped=r['stopped'],
        steps=r['steps'],
        done=r['done'],
        resumed=True,
        aborted=bool(p.get('abort')),
        started=r['started'],
    )
    # The journal as Nomad shows it now: a change made before a run stopped is recorded with the next step. An abort
    # records nothing.
    items = dict(journal, done=','.join(r['done']))
    after = {} if p.get('abort') else _after_each(items, result['steps'])
    return dict(result, journal_path=journal_path(p['name']), journal=journal, journal_after=after)


def rejoin_data(p, target, source_read, target_read):
    """Where the returned node's copy goes and the snapshot it goes on from: the newest snapshot of the volume on
    its node that the copy (or the replica an earlier run made of it) has too."""
    back = _back_pulls(source_read, target_read['parent'])
    if len(back) != 1:
        refuse(
            'Node %s has %s pulls of %s (from %s) into its replica parent; give it one (zfs_replication_pulls with '
            "replica_parent), then run again: its copy becomes that pull's replica."
            % (p['to'], len(back), target_read['parent'], target['name'])
        )
    copy = source_read.get('dataset') or {}
    [replica] = [pull['replica'] for pull in source_read['pulls'] if pull['instance'] == back[0]['instance']]
    kept = set(s['guid'] for s in (copy.get('snapshots') or []) + (replica.get('snapshots') or []))
    common = [s for s in (target_read.get('dataset') or {}).get('snapshots') or [] if s['guid'] in kept]
    if not common:
        refuse(
            '%s on %s and the copy on %s have no snapshot in common: the copy cannot go on incrementally. Rename it '
            'aside by hand; its pull then sends the volume whole.' % (p['name'], target['name'], p['to'])
        )
    where = '%s/%s' % (p['namespace'], p['name'])
    return dict(
        dataset='%s/%s' % (source_read['parent'], where),
        dataset_exists=bool(copy.get('exists')),
        target_parent=target_read['parent'],
        final='%s/%s@%s' % (target_read['parent'], where, common[-1]['name'].split('@', 1)[1]),
        common_guid=common[-1]['guid'],
        back_pull=back[0],
        back_pulls=1,
        source_replica_parent=source_read['replica_parent'],
    )


def _plan_rejoin(p, volumes, nodes):
    """A node the volume left by a failover, back: its copy becomes the standby of the volume's node. It is the
    source of the turnaround, which a planned move ends with; the volume's node is the target."""
    if len(volumes) != 1:
        found = (len(volumes), p['name'], p['namespace'])
        refuse('Nomad has %d host volumes %s in namespace %s; name one that is on one node.' % found)
    vol = volumes[0]
    by_id, by_name = dict((n['ID'], n) for n in nodes), dict((n.get('Name'), n) for n in nodes)
    back, holder = by_name.get(p['to']), by_id.get(vol.get('NodeID'))
    if back is None:
        refuse('Nomad has no node %s; name one of %s.' % (p['to'], ', '.join(sorted(by_name))))
    if holder is None or holder['ID'] == back['ID']:
        on = (holder or {}).get('Name', vol.get('NodeID'))
        refuse('%s is on node %s: it did not leave %s, which has nothing to rejoin.' % (p['name'], on, p['to']))
    if back.get('Status') != 'ready':
        refuse(
            'Node %s is %s: start its agent again (its copy stays, and no job is placed on it), then run again.'
            % (p['to'], back.get('Status'))
        )
    result = dict(
        volume=dict(shown(vol), allocations=allocations(vol)),
        source=summary(back),
        target=summary(holder),
        jobs=[],
        stopped=None,
        steps=['turnaround'],
        resumed=False,
    )
    if p.get('target_read'):
        result['data'] = rejoin_data(p, result['target'], p.get('source_read') or {}, p['target_read'])
    return result


def with_agent_addrs(result, agent_addrs, nomad_addr):
    # type: (dict, dict, str) -> dict
    """Each node of the result with agent_addr: where its own host reaches its agent, for what only that agent
    answers (its plugin directory). agent_addrs[name] when given, else nomad_addr's scheme with the address the
    node advertises, which an agent's certificate may not name (nomad tls cert create names localhost)."""
    scheme = nomad_addr.split('://', 1)[0] if '://' in nomad_addr else 'http'
    for side in ('source', 'target'):
        node = result.get(side)
        if node and node.get('name'):
            given = agent_addrs.get(node['name'])
            node['agent_addr'] = given.rstrip('/') if given else '%s://%s' % (scheme, node.get('http_addr'))
    return result


def check_agent_addrs(agent_addrs):
    # type: (dict) -> None
    for name, addr in sorted(agent_addrs.items()):
        if not isinstance(addr, str) or not addr.startswith(('http://', 'https://')):
            raise PlanError(
                "agent_addrs.%s is %r; give the URL at which that node's host reaches its own agent, for example "
                'https://localhost:4646.' % (name, addr)
            )


def plan_move(p, volumes, nodes, node_allocations=(), now=0, journal=None):
    # type: (dict, list, list, list, float, dict | None) -> dict
    """Who takes part in the move (or failover) p asks for, from Nomad's reads: the volumes of that name (each
    read whole), the nodes (each read whole), for a failover the allocations on the volume's node, and for a move
    the items of its journal, when one is under way.
    """
    if p['fence_margin'] < 0:
        raise PlanError('fence_margin is %d; give 0 or more seconds.' % p['fence_margin'])
    if p.get('rejoin'):
        return _plan_rejoin(p, volumes, nodes)
    if journal:
        return _plan_resumed(p, journal, volumes, nodes, node_allocations, now)
    if p.get('abort'):
        refuse(
            'No move of %s is under way (Nomad has no variable %s); there is nothing to give up.'
            % (p['name'], journal_path(p['name']))
        )
    vol, source, target = _chosen(p, volumes, nodes)
    if not p['failover'] and source and source['ID'] == target['ID']:
        # Run again after it finished: nothing is left to do.
        return dict(
            volume=dict(shown(vol), allocations=allocations(vol)),
            source=summary(source),
            target=summary(target),
            jobs=[],
            stopped=None,
            steps=[],
            resumed=False,
        )
    refusal = _target_refusal(p, vol, source, target) or _source_refusal(p, vol, source)
    if refusal:
        refuse(refusal)
    claims = allocations(vol)
    # A job ID is one segment of the API paths that stop and run it: one with a / would name another path.
    slashed = sorted(set(a['job_id'] for a in claims if '/' in (a['job_id'] or '')))
    if slashed and not p['failover']:
        refuse(
            '%s is used by job %s, whose ID has a /: stop it by hand, then move the volume.' % (p['name'], slashed[0])
        )
    result = dict(
        volume=dict(shown(vol), allocations=claims),
        source=summary(source) if source else dict(id=vol.get('NodeID'), name='', status='gone'),
        target=summary(target),
        # A failover stops no job: Nomad places the lost node's allocations again once the volume is back.
        jobs=[] if p['failover'] else sorted(set(a['job_id'] for a in claims)),
        stopped=None,
        steps=['failover'] if p['failover'] else list(STEPS),
        resumed=False,
    )
    if p['failover']:
        lost = source or {'Name': vol.get('NodeID'), 'Status': 'gone'}
        result['fence'] = fence(dict(p, plugin_id=vol.get('PluginID')), lost, node_allocations, now)
    if p.get('target_read'):
        result['data'] = plan_data(
            p, result['volume'], result['source'], result['target'], p.get('source_read'), p['target_read'], now
        )
        if p['failover']:
            result['steps'] = list(FAILOVER_STEPS)
        result = _journaled(result, p, now)
    return result
