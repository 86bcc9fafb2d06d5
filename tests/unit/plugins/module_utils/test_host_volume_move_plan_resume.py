"""The planner of a move or failover under way, driven directly: its journal (a Nomad Variable that the mover's
token, or whoever else may write it, can forge) says only which of this volume's steps are done. The volume, its
node, the fence and every dataset name are read again, and each journal item that does not match what is read is
refused, naming the item, its value, what was read and the way out."""

import json

import pytest

from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_move_journal import with_step
from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_move_plan import plan_move
from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_node import node_view, parse_listing
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.test_nomad_host_volume_move_plan import (
    CAPTURED,
    MARKED,
    NOW,
    REPLICA,
    VOLUME,
    allocation,
    node,
    source_read,
    target_read,
)

DATASET = 'tank/nomad/volumes/team-a/pgdata'
# When the captured move began: the source holds its final snapshot, read-only and marked as moved to storage-2.
STARTED = 1795687200
FINAL = 'nomad-zfs-csi-move_2026-11-26_10:00:00'
ON_SOURCE = [dict(VOLUME, ID=MARKED, Allocations=[])]
ON_TARGET = [dict(VOLUME, ID='v2', NodeID='n2', Allocations=[])]
NODES = [node('n1', 'storage-1'), node('n2', 'storage-2'), node('n3', 'storage-3')]
DOWN = [node('n1', 'storage-1', 'down'), NODES[1], NODES[2]]


def params(**args):
    return dict(
        dict(
            name='pgdata',
            namespace='team-a',
            to='storage-2',
            failover=False,
            stop_jobs=True,
            fenced=False,
            fence_margin=30,
            abort=False,
            rejoin=False,
            source_read=source_read(),
            target_read=target_read(),
        ),
        **args,
    )


def sent():
    """storage-2's read once the send pulled the final snapshot into the replica."""
    line = [REPLICA + '@' + FINAL, 'snapshot', '9087217580750558761', '1795773725', '25', '0', '-', '-', '-']
    listing = parse_listing(CAPTURED + '\t'.join(line) + '\n')
    listing = dict((name, props) for name, props in listing.items() if not name.startswith('tank/cap/volumes/'))
    pull = {'instance': 'tank_cap_replica_storage-1_tank_nomad_volumes', 'host': 'storage-1',
            'parent': 'tank/nomad/volumes', 'target': 'tank/cap/replica/storage-1/tank/nomad/volumes'}  # fmt: skip
    conf = {'parent': 'tank/cap/volumes', 'replica_parent': 'tank/cap/replica'}
    return node_view(conf, [pull], listing, 'team-a', 'pgdata')


# The source before the send: writable, not marked as moved.
UNSENT = CAPTURED.replace('\ton\t' + MARKED, '\toff\t' + MARKED).replace(MARKED + '\tstorage-2', MARKED + '\t-')


def begun(*done, **forged):
    """The journal of the captured move, once done are done, with forged items."""
    items = plan_move(params(), ON_SOURCE, NODES, now=STARTED)['journal']
    for step in done:
        items = with_step(items, step)
    return dict(items, **forged)


def failover_begun(*done, **forged):
    p = params(failover=True, fenced=True, source_read=None)
    items = plan_move(p, ON_SOURCE, DOWN, [allocation('a1', 'lost')], NOW)['journal']
    for step in done:
        items = with_step(items, step)
    return dict(items, **forged)


def with_data(items, **fields):
    return json.dumps(dict(json.loads(items['data']), **fields), sort_keys=True)


def with_volume(items, **fields):
    return json.dumps(dict(json.loads(items['volume']), **fields), sort_keys=True)


@pytest.mark.parametrize(
    'done, volumes, source, left',
    [
        ((), ON_SOURCE, source_read(UNSENT), ['stop', 'send', 'delete', 'create', 'start', 'turnaround']),
        (('stop', 'send'), ON_SOURCE, source_read(), ['delete', 'create', 'start', 'turnaround']),
        # Deleted in Nomad: the volume is the journal's, and the source dataset's mark says it is this one.
        (('stop', 'send'), [], source_read(), ['create', 'start', 'turnaround']),
        # A turnaround that began renamed the source dataset away: nothing is left to check it against.
        (('stop', 'send', 'delete', 'create', 'start'), ON_TARGET, source_read(listing=''), ['turnaround']),
    ],
    ids=['before-stop', 'after-send', 'deleted', 'turning-around'],
)
def test_a_journal_that_matches_what_is_read_goes_on_with_the_datasets_named_afresh(done, volumes, source, left):
    p = params(source_read=source, target_read=sent())
    resumed = plan_move(p, volumes, NODES, now=NOW, journal=begun(*done))
    assert resumed['resumed'] and resumed['steps'] == left
    assert (resumed['data']['dataset'], resumed['data']['final']) == (DATASET, DATASET + '@' + FINAL)
    # The replica is named only while the create is left: the adoption takes it away.
    assert resumed['data'].get('replica') == (REPLICA if 'create' in left else None)


def test_a_failover_journal_goes_on_fenced_as_the_node_is_read_now():
    # Before the delete the fence must hold as for a new failover: the operator says it again (the same command).
    p = params(failover=True, source_read=None)
    with pytest.raises(PlanError, match='Node storage-1 is down, but its allocations a1'):
        plan_move(p, ON_SOURCE, DOWN, [allocation('a1', 'lost')], NOW, failover_begun())
    again = plan_move(dict(p, fenced=True), ON_SOURCE, DOWN, [allocation('a1', 'lost')], NOW, failover_begun())
    assert again['steps'] == ['delete', 'create'] and again['fence']['how'] == 'fenced'
    # Once Nomad forgot the volume, the journal keeps the operator's word.
    after = plan_move(p, [], DOWN, [allocation('a1', 'lost')], NOW, failover_begun('delete'))
    assert after['steps'] == ['create'] and after['fence']['how'] == 'fenced' and after['data']['replica'] == REPLICA


FENCED = json.dumps({'claims': [], 'how': 'fenced'}, sort_keys=True)
OTHER = CAPTURED.replace(MARKED, 'a-volume-of-storage-3')


@pytest.mark.parametrize(
    'journal, volumes, nodes, p, words',
    [
        (begun('stop', data=with_data(begun(), dataset='tank/nomad/csi')), ON_SOURCE, NODES, {},
         'its data.dataset is tank/nomad/csi, but the nodes as read now make it ' + DATASET),
        (begun('stop', 'send', 'delete', data=with_data(begun(), dataset='tank/nomad/volumes/team-a/other')), [],
         NODES, {}, 'its data.dataset is tank/nomad/volumes/team-a/other, but the nodes as read now make it'),
        (begun(data=with_data(begun(), final='tank/nomad/volumes/team-a/pgdata@x')), ON_SOURCE, NODES, {},
         'its data.final is tank/nomad/volumes/team-a/pgdata@x'),
        (begun(data=with_data(begun(), adopt='storage-3/tank/nomad/volumes')), ON_SOURCE, NODES, {},
         'its data.adopt is storage-3/tank/nomad/volumes, but the nodes as read now make it storage-1/tank/nomad'),
        (begun(data=with_data(begun(), pull='getty@tty1')), ON_SOURCE, NODES, {}, 'its data.pull is getty@tty1'),
        (begun(volume=with_volume(begun(), id='v9')), ON_SOURCE, NODES, {},
         'its volume.id is v9, but Nomad has volume pgdata %s on node storage-1' % MARKED),
        (begun('stop', 'send', volume=with_volume(begun(), id='v9')), [], NODES, {},
         'its volume.id is v9, but %s on storage-1 is marked as volume %s' % (DATASET, MARKED)),
        (begun(volume=with_volume(begun(), plugin_id='mkdir')), ON_SOURCE, NODES, {},
         'its volume.plugin_id is "mkdir", but Nomad has "zfs-dataset"'),
        (begun(volume=with_volume(begun(), parameters={'adopt_replica': 'x'})), ON_SOURCE, NODES, {},
         'its volume.parameters is {"adopt_replica": "x"}, but Nomad has {}'),
        (begun(source_node_id='n3', source_node='storage-3'), ON_SOURCE, NODES, {},
         'its source_node_id is n3, but Nomad has volume %s on node storage-1' % MARKED),
        (begun(source_node_id='n2', source_node='storage-2'), ON_SOURCE, NODES, {},
         'its source_node_id is n2, but that is node storage-2, the target'),
        (begun(source_node='storage-3'), ON_SOURCE, NODES, {},
         'its source_node is storage-3, but node n1 is storage-1'),
        # Deleted in Nomad, another node named: the dataset there is another volume's.
        (begun('stop', 'send', source_node_id='n3', source_node='storage-3',
               volume=with_volume(begun(), node_id='n3')), [], NODES, {'source_read': source_read(OTHER)},
         'its volume.id is %s, but %s on storage-3 is marked as volume a-volume-of-storage-3' % (MARKED, DATASET)),
        # A send said done that did not mark the source: the delete would have the plugin destroy it.
        (begun('stop', 'send'), ON_SOURCE, NODES, {'source_read': source_read(UNSENT), 'target_read': sent()},
         'its done is stop,send, but %s on storage-1 is not read-only and marked as moved to storage-2' % DATASET),
        (begun('stop', 'send'), ON_SOURCE, NODES, {},
         'its done is stop,send, but the replica %s on storage-2 has no snapshot %s' % (REPLICA, FINAL)),
        (begun('stop', 'send', 'delete'), ON_SOURCE, NODES, {},
         'its done is stop,send,delete, but Nomad still has volume %s on node storage-1' % MARKED),
        (begun('stop', 'send', 'delete', 'create'), [], NODES, {},
         'its done is stop,send,delete,create, but Nomad has no volume pgdata on node storage-2'),
        (begun(kind='failover', fence=FENCED), ON_SOURCE, NODES, {'failover': True, 'source_read': None},
         'its fence is %s, but node storage-1 is ready: it is not lost' % FENCED),
        (begun(kind='failover', fence=FENCED, done='delete'), [], NODES, {'failover': True, 'source_read': None},
         'its fence is %s, but node storage-1 is ready: it is not lost' % FENCED),
        (begun(volume='{'), ON_SOURCE, NODES, {}, "its volume is '{', but this collection writes a JSON dict there"),
        (begun(jobs='[1]'), ON_SOURCE, NODES, {}, 'its jobs is [1], but this collection writes a list of job IDs'),
        (begun(started='1e9'), ON_SOURCE, NODES, {}, "its started is '1e9', but this collection writes the seconds"),
        (begun(volume='{"id": "%s"}' % MARKED), ON_SOURCE, NODES, {},
         'but this collection writes the volume there with id, name, namespace, node_id, plugin_id'),
    ],
    ids=['parent-dataset', 'other-volumes-dataset', 'final', 'adopt', 'pull', 'other-volume-id',
         'other-volume-id-deleted', 'plugin', 'parameters', 'other-node', 'target-as-source', 'node-name',
         'other-node-deleted', 'send-not-marked', 'send-not-pulled', 'delete-not-done', 'create-not-done',
         'fence-of-ready-node', 'fence-of-ready-node-deleted', 'unreadable-volume', 'jobs', 'started', 'volume-fields'],
)  # fmt: skip
def test_a_journal_that_does_not_match_what_is_read_is_refused_naming_the_item(journal, volumes, nodes, p, words):
    with pytest.raises(PlanError) as refused:
        plan_move(params(**p), volumes, nodes, now=NOW, journal=journal)
    message = str(refused.value)
    assert words in message, message
    if 'this collection writes' not in words:
        assert message.startswith('The journal nomad-zfs-csi/moves/pgdata does not match what is read: its ')
    assert message.endswith(
        'then delete the journal (nomad var purge -namespace team-a nomad-zfs-csi/moves/pgdata) and run again. '
        'Nothing was changed.'
    )
