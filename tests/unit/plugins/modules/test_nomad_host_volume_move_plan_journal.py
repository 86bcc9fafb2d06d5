"""nomad_host_volume_move_plan's main() with a fake Nomad client that holds a forged move journal (the Nomad
Variable nomad-zfs-csi/moves/<name>, which the mover's token may write): the journal says only which of this
volume's steps are done, so a forged one is refused, naming the item, and nothing is planned from it."""

import json

import pytest

from ansible_collections.nomad_zfs.csi.plugins.modules import nomad_host_volume_move_plan
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules import test_nomad_host_volume_move_plan as base
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.test_nomad_host_volume_move_plan import (
    CAPTURED,
    MARKED,
    REPLICA,
    allocation,
    lost,
    node,
    plan,
    refused,
    source_read,
    target_read,
)

# The fake Nomad of the module's own tests, with the volume of the captured dataset (its mark).
nomad = base.nomad
marked = base.marked

JOURNAL = 'var/nomad-zfs-csi/moves/pgdata'
WAY_OUT = 'then delete the journal (nomad var purge -namespace team-a nomad-zfs-csi/moves/pgdata) and run again.'


def reads(source=None):
    """Both nodes' reads, the source's as given."""
    return {'source_read': source or source_read(), 'target_read': target_read()}


def begun(run_main, fake, step=None, **forged):
    """A move planned on both nodes' reads, its journal left in Nomad after step (before its first with None), with
    forged items; the move's first plan."""
    fake.objects.pop(JOURNAL, None)
    first = plan(run_main, stop_jobs=True, **reads())
    items = first['journal_after'][step] if step else first['journal']
    fake.objects[JOURNAL] = {'Items': dict(items, **forged)}
    return first


def forged_data(first, **fields):
    return json.dumps(dict(json.loads(first['journal']['data']), **fields), sort_keys=True)


def deleted(fake):
    """Nomad deleted the volume on the source, as the move's delete does."""
    fake.objects['volumes'] = []


@pytest.mark.parametrize('parent', ['tank/nomad/csi', 'tank/nomad/volumes'])
@pytest.mark.parametrize('step', [None, 'stop', 'send'])
def test_a_forged_journal_naming_the_parent_dataset_plans_nothing(run_main, marked, step, parent):
    first = begun(run_main, marked, step)
    marked.objects[JOURNAL]['Items']['data'] = forged_data(first, dataset=parent, final=parent + '@x')
    if step == 'send':
        deleted(marked)
    args = dict({'name': 'pgdata', 'namespace': 'team-a', 'to': 'storage-2', 'stop_jobs': True}, **reads())
    for check in (False, True):
        result = run_main(nomad_host_volume_move_plan, args, check=check)
        refused(
            result,
            'its data.dataset is %s, but the nodes as read now make it tank/nomad/volumes/team-a/pgdata' % parent,
            WAY_OUT,
        )
        assert 'steps' not in result
    assert marked.writes() == []


def test_a_forged_journal_naming_another_volumes_dataset_is_refused(run_main, marked):
    first = begun(run_main, marked, 'stop')
    marked.objects[JOURNAL]['Items']['data'] = forged_data(first, dataset='tank/nomad/volumes/team-b/pgdata')
    refused(plan(run_main, stop_jobs=True, **reads()), 'its data.dataset is tank/nomad/volumes/team-b/pgdata')
    # Its volume another one of that name: Nomad has this one, or the source dataset's mark says so.
    volume = json.dumps(dict(json.loads(first['journal']['volume']), id='v9'), sort_keys=True)
    marked.objects[JOURNAL]['Items'] = dict(first['journal_after']['send'], volume=volume)
    refused(plan(run_main, stop_jobs=True), 'its volume.id is v9, but Nomad has volume pgdata %s' % MARKED)
    deleted(marked)
    refused(
        plan(run_main, stop_jobs=True, **reads()),
        'its volume.id is v9, but tank/nomad/volumes/team-a/pgdata on storage-1 is marked as volume %s' % MARKED,
    )
    assert marked.writes() == []


FENCED = json.dumps({'claims': [], 'how': 'fenced'}, sort_keys=True)


@pytest.mark.parametrize('done', ['', 'delete'])
def test_a_forged_failover_journal_does_not_take_a_ready_nodes_volume_past_the_fence(run_main, marked, done):
    begun(run_main, marked, kind='failover', fence=FENCED, done=done)
    # Told of a failover under way, the operator runs it; the node is read again, and is ready.
    refused(plan(run_main, stop_jobs=True), 'A failover of pgdata to storage-2 is under way')
    for args in ({}, {'target_read': target_read()}):
        if done:
            refused(plan(run_main, failover=True, **args), 'its done is delete, but Nomad still has volume')
        else:
            refused(plan(run_main, failover=True, **args), 'its fence is %s, but node storage-1 is ready' % FENCED)
    # Even with the volume gone from Nomad (its writer may delete it), a ready node is not lost.
    deleted(marked)
    refused(plan(run_main, failover=True, target_read=target_read()), 'but node storage-1 is ready: it is not lost')
    assert marked.writes() == []


def test_a_failover_journal_fences_a_down_node_by_the_operators_word_only_once_nomad_forgot_it(run_main, marked):
    lost(marked, allocations=[allocation('a1', 'lost')])
    first = plan(run_main, failover=True, fenced=True, target_read=target_read())
    marked.objects[JOURNAL] = {'Items': first['journal']}
    # Nomad still has the volume: the delete is left, and the fence must hold now, as for a new failover.
    refused(plan(run_main, failover=True, target_read=target_read()), 'Node storage-1 is down, but its allocations a1')
    again = plan(run_main, failover=True, fenced=True, target_read=target_read())
    assert again['steps'] == ['delete', 'create'] and again['fence'] == first['fence']
    assert again['data']['replica'] == REPLICA


def test_a_forged_journal_naming_another_node_is_refused(run_main, marked):
    marked.objects['nodes'].append({'ID': 'n3'})
    marked.objects['node/n3'] = node('n3', 'storage-3')
    begun(run_main, marked, 'stop', source_node_id='n3', source_node='storage-3')
    refused(
        plan(run_main, stop_jobs=True), 'its source_node_id is n3, but Nomad has volume %s on node storage-1' % MARKED
    )
    begun(run_main, marked, 'stop', source_node='storage-3')
    refused(plan(run_main, stop_jobs=True), 'its source_node is storage-3, but node n1 is storage-1')
    begun(run_main, marked, 'stop', source_node_id='n2', source_node='storage-2')
    refused(plan(run_main, stop_jobs=True), 'its source_node_id is n2, but that is node storage-2, the target')
    # Once Nomad deleted the volume, the node the journal names must hold its dataset (the volume's mark).
    first = begun(run_main, marked, 'send', source_node_id='n3', source_node='storage-3')
    volume = json.dumps(dict(json.loads(first['journal']['volume']), node_id='n3'), sort_keys=True)
    marked.objects[JOURNAL]['Items']['volume'] = volume
    deleted(marked)
    other = source_read(CAPTURED.replace(MARKED, 'v-of-storage-3'))
    refused(plan(run_main, stop_jobs=True, **reads(other)), 'on storage-3 is marked as volume v-of-storage-3')
    assert marked.writes() == []


def test_a_journal_whose_steps_nomad_does_not_show_is_refused(run_main, marked):
    first = begun(run_main, marked, 'delete')
    refused(plan(run_main, stop_jobs=True), 'its done is stop,send,delete, but Nomad still has volume %s' % MARKED)
    marked.objects[JOURNAL]['Items'] = first['journal_after']['create']
    deleted(marked)
    refused(plan(run_main, stop_jobs=True), 'but Nomad has no volume pgdata on node storage-2')


def test_a_journal_that_matches_goes_on_and_may_be_given_up(run_main, marked):
    first = begun(run_main, marked, 'stop')
    again = plan(run_main, stop_jobs=True, **reads())
    assert again['resumed'] and again['steps'] == ['send', 'delete', 'create', 'start', 'turnaround']
    assert again['volume']['id'] == MARKED and again['jobs'] == first['jobs']
    names = ('dataset', 'final', 'replica', 'pull', 'adopt', 'source_parent', 'target_parent')
    assert [again['data'][k] for k in names] == [first['data'][k] for k in names]
    undo = plan(run_main, stop_jobs=True, abort=True, **reads())
    assert undo['steps'] == ['unmark', 'start'] and undo['data']['dataset'] == first['data']['dataset']
