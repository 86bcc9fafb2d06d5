"""A planned move's journal: each state it can be left in, by a run stopped anywhere, leads to the steps that
finish the move, or, with abort, to those that undo it, and only while the source still has everything."""

import json

import pytest

from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_move_journal import (
    STEPS,
    record,
    resume,
    with_step,
)
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError

VOLUME = {'id': 'v1', 'node_id': 'n1', 'plugin_id': 'zfs-dataset', 'parameters': {}, 'capabilities': []}
PLAN = {
    'source': {'id': 'n1', 'name': 'storage-1'},
    'volume': VOLUME,
    'jobs': ['pgdata-db'],
    'data': {'dataset': 'tank/nomad/volumes/team-a/pgdata', 'final': 'tank/nomad/volumes/team-a/pgdata@x'},
}
P = {'name': 'pgdata', 'to': 'storage-2'}
TARGET = {'ID': 'n2', 'Name': 'storage-2'}
ON_SOURCE = [{'ID': 'v1', 'NodeID': 'n1'}]
ON_TARGET = [{'ID': 'v2', 'NodeID': 'n2'}]


def journal(*done):
    items = record(P, PLAN, 1795699200)
    for step in done:
        items = with_step(items, step)
    return items


def test_a_new_journal_holds_what_the_move_needs_again_as_strings():
    items = journal()
    assert all(isinstance(v, str) for v in items.values())
    assert (items['to'], items['source_node'], items['done'], items['started']) == (
        'storage-2',
        'storage-1',
        '',
        '1795699200',
    )
    assert json.loads(items['jobs']) == ['pgdata-db'] and json.loads(items['volume']) == VOLUME
    assert with_step(with_step(items, 'stop'), 'stop')['done'] == 'stop'


def test_the_journal_keeps_where_the_stop_left_each_job_and_refuses_a_forged_record():
    stopped = dict(journal('stop'), stopped='{"pgdata-db": 8841}')
    assert resume(P, stopped, ON_SOURCE, TARGET)['stopped'] == {'pgdata-db': 8841}
    # Not recorded yet (or a release before it): the jobs run again as Nomad stores them.
    assert resume(P, journal('stop'), ON_SOURCE, TARGET)['stopped'] is None
    forgeries = ('{"other-job": 4}', '{}', '{"pgdata-db": -2}', '{"pgdata-db": "4"}', '{"pgdata-db": true}', '[4]')
    for forged in forgeries:
        with pytest.raises(PlanError, match='stopped'):
            resume(P, dict(journal('stop'), stopped=forged), ON_SOURCE, TARGET)
    # A job ID is one segment of the paths that stop and run it.
    with pytest.raises(PlanError, match='none with a /'):
        resume(P, dict(journal('stop'), jobs='["db/../../job/other"]'), ON_SOURCE, TARGET)


@pytest.mark.parametrize(
    'done, volumes, left',
    [
        ((), ON_SOURCE, list(STEPS)),
        (('stop',), ON_SOURCE, ['send', 'delete', 'create', 'start', 'turnaround']),
        (('stop', 'send'), ON_SOURCE, ['delete', 'create', 'start', 'turnaround']),
        # Stopped after Nomad deleted the volume, before the journal said so.
        (('stop', 'send'), [], ['create', 'start', 'turnaround']),
        # Stopped after the create, before the journal said so: the jobs are the next step.
        (('stop', 'send'), ON_TARGET, ['start', 'turnaround']),
        (('stop', 'send', 'delete', 'create', 'start'), ON_TARGET, ['turnaround']),
    ],
    ids=['before-stop', 'after-stop', 'after-send', 'deleted-unrecorded', 'created-unrecorded', 'before-turnaround'],
)
def test_run_again_a_move_goes_on_from_where_it_stopped(done, volumes, left):
    resumed = resume(P, journal(*done), volumes, TARGET)
    assert resumed['steps'] == left
    assert resumed['jobs'] == ['pgdata-db'] and resumed['volume'] == VOLUME and resumed['started'] == 1795699200


@pytest.mark.parametrize('done', [(), ('stop',), ('stop', 'send')])
def test_abort_before_the_volume_left_the_source_puts_everything_back(done):
    assert resume(dict(P, abort=True), journal(*done), ON_SOURCE, TARGET)['steps'] == ['unmark', 'start']


@pytest.mark.parametrize('done, volumes', [(('stop', 'send', 'delete'), ON_SOURCE), (('stop', 'send'), []),
                                           (('stop', 'send'), ON_TARGET)])  # fmt: skip
def test_abort_once_the_volume_left_the_source_is_refused(done, volumes):
    with pytest.raises(PlanError, match='can no longer be given up: the volume left storage-1 in Nomad'):
        resume(dict(P, abort=True), journal(*done), volumes, TARGET)


def test_a_move_under_way_to_another_node_is_named_with_both_ways_out():
    with pytest.raises(PlanError, match=r'A move of pgdata to storage-2 is under way \(done: stop\); run '
                                        r'playbooks/move_host_volume.yml again with -e to=storage-2 to finish it, or '
                                        r'give it up with -e abort=true'):  # fmt: skip
        resume(dict(P, to='storage-3'), journal('stop'), ON_SOURCE, TARGET)


FENCE = {'how': 'fenced'}


def failover_journal(*done):
    items = record(dict(P, failover=True), dict(PLAN, fence=FENCE), 1795699200)
    for step in done:
        items = with_step(items, step)
    return items


@pytest.mark.parametrize(
    'done, volumes, left',
    [
        ((), ON_SOURCE, ['delete', 'create']),
        # Stopped after Nomad forgot the lost node's volume, before the journal said so: the create is left.
        ((), [], ['create']),
        (('delete',), [], ['create']),
        # Stopped after the create, before the journal closed: nothing is left but closing it.
        (('delete',), ON_TARGET, []),
    ],
    ids=['before-delete', 'deleted-unrecorded', 'after-delete', 'created-unrecorded'],
)
def test_run_again_a_failover_goes_on_from_where_it_stopped(done, volumes, left):
    resumed = resume(dict(P, failover=True), failover_journal(*done), volumes, TARGET)
    assert resumed['steps'] == left and resumed['fence'] == FENCE and resumed['volume'] == VOLUME


def test_a_failover_under_way_is_finished_not_given_up_nor_crossed_by_a_move():
    items = failover_journal()
    assert items['kind'] == 'failover' and json.loads(items['fence']) == FENCE
    with pytest.raises(PlanError, match='A failover is not given up. If Nomad still has pgdata on storage-1'):
        resume(dict(P, failover=True, abort=True), items, ON_SOURCE, TARGET)
    with pytest.raises(PlanError, match='A failover of pgdata to storage-2 is under way .* run '
                                        'playbooks/failover_host_volume.yml again with -e to=storage-2'):  # fmt: skip
        resume(P, items, ON_SOURCE, TARGET)
    with pytest.raises(PlanError, match='A move of pgdata to storage-2 is under way'):
        resume(dict(P, failover=True), journal('stop'), ON_SOURCE, TARGET)
