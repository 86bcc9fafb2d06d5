"""nomad_job's main() with a fake Nomad client: Nomad's plan decides, check mode registers nothing."""

import pytest

from ansible_collections.nomad_zfs.csi.plugins.modules import nomad_job
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.fake_nomad import FakeNomad

JOB = {'ID': 'sleeper', 'Type': 'service', 'TaskGroups': [{'Name': 'g', 'Count': 1}]}
HCL = 'job "sleeper" {}\n'


@pytest.fixture
def nomad(monkeypatch):
    fake = FakeNomad().install(monkeypatch)
    fake.handlers[('put', 'jobs/parse')] = lambda body, params: dict(JOB)
    fake.plan_type = 'Added'
    fake.handlers[('put', 'job/sleeper/plan')] = lambda body, params: {'Diff': {'Type': fake.plan_type}}
    return fake


def test_check_mode_is_the_plan_and_registers_nothing(run_main, nomad):
    checked = run_main(nomad_job, {'content': HCL}, check=True)
    assert checked['changed'] and checked['plan_diff_type'] == 'Added' and checked['version'] == -1
    assert [c[1] for c in nomad.writes()] == ['jobs/parse', 'job/sleeper/plan']


def test_registers_when_the_plan_differs_and_not_otherwise(run_main, nomad):
    made = run_main(nomad_job, {'content': HCL, 'wait': False})
    assert made['changed'] and made['version'] == 0 and nomad.writes()[-1][1] == 'jobs'
    assert nomad.writes()[-1][2]['Job']['Namespace'] == 'default'
    nomad.plan_type, nomad.objects['job/sleeper'] = 'None', {'ID': 'sleeper', 'Version': 3}
    same = run_main(nomad_job, {'content': HCL, 'wait': False})
    assert same['changed'] is False and same['version'] == 3 and nomad.writes()[-1][1] == 'job/sleeper/plan'


def test_waits_until_the_new_version_runs(run_main, nomad):
    nomad.objects['job/sleeper/allocations'] = [
        {'ID': 'a1b2c3d4-0000', 'JobVersion': 0, 'DesiredStatus': 'run', 'ClientStatus': 'running', 'NodeName': 'n1'}
    ]
    made = run_main(nomad_job, {'content': HCL})
    assert made['allocations'] == [{'id': 'a1b2c3d4-0000', 'node': 'n1', 'client_status': 'running', 'healthy': True}]


def test_a_job_that_does_not_start_fails_with_its_events(run_main, nomad):
    nomad.objects['job/sleeper/allocations'] = [
        {
            'ID': 'a1b2c3d4-0000',
            'JobVersion': 0,
            'DesiredStatus': 'run',
            'ClientStatus': 'pending',
            'TaskStates': {'t': {'Events': [{'Type': 'Driver Failure', 'DisplayMessage': 'no such file'}]}},
        }
    ]
    failed = run_main(nomad_job, {'content': HCL, 'wait_timeout': 0})
    assert failed['failed'] and failed['job_id'] == 'sleeper'
    assert (
        'job sleeper version 0 is not running after 0s: a1b2c3d4 pending (t: Driver Failure no such file)'
        in failed['msg']
    )


def test_absent_stops_and_purges(run_main, nomad):
    nomad.objects['job/sleeper'] = {'ID': 'sleeper', 'Version': 2, 'Stop': False}
    stopped = run_main(nomad_job, {'content': HCL, 'state': 'absent', 'purge': True})
    assert stopped['changed'] and stopped['version'] == -1
    assert nomad.writes()[-1] == ('delete', 'job/sleeper', {'purge': 'true'})
    assert run_main(nomad_job, {'content': HCL, 'state': 'absent'})['changed'] is False


def test_the_failure_that_stopped_a_task_is_named_though_later_events_follow(run_main, nomad):
    """The event types Nomad v1.11.3 gave in CI for a raw_exec task with a missing binary, 20 s in (the driver
    failure's message shortened): the cause, then two events that only say the task stopped."""
    events = [
        {'Type': 'Received', 'DisplayMessage': 'Task received by client'},
        {'Type': 'Driver Failure', 'DisplayMessage': 'failed to launch command with executor: /nonexistent/binary'},
        {'Type': 'Not Restarting', 'DisplayMessage': 'Error was unrecoverable'},
        {'Type': 'Alloc Unhealthy', 'DisplayMessage': 'Unhealthy because of failed task'},
    ]
    nomad.objects['job/sleeper/allocations'] = [
        {
            'ID': 'a1b2c3d4-0000',
            'JobVersion': 0,
            'DesiredStatus': 'run',
            'ClientStatus': 'failed',
            'TaskStates': {'t': {'Events': events}},
        }
    ]
    failed = run_main(nomad_job, {'content': HCL, 'wait_timeout': 0})
    assert (
        'a1b2c3d4 failed (t: Driver Failure failed to launch command with executor: /nonexistent/binary; '
        't: Not Restarting Error was unrecoverable; t: Alloc Unhealthy Unhealthy because of failed task)'
    ) in failed['msg']


def test_variables_and_files_go_to_the_parser_as_one_var_file(run_main, nomad, tmp_path):
    varfile = tmp_path / 'prod.hcl'
    varfile.write_text('region = "eu"\n')
    seen = {}
    nomad.handlers[('put', 'jobs/parse')] = lambda body, params: seen.update(body) or dict(JOB)
    run_main(
        nomad_job,
        {'content': HCL, 'variable_files': [str(varfile)], 'variables': {'seconds': '600', 'n': 2, 'm': {'k': '${x}'}}},
        check=True,
    )
    # HCL's template sequences in a value stay as given: doubled.
    assert seen['Variables'] == 'region = "eu"\nm = {"k": "$${x}"}\nn = 2\nseconds = "600"\n'
    assert seen['JobHCL'] == HCL


def test_a_missing_variables_file_is_named_before_any_call(run_main, nomad, tmp_path):
    failed = run_main(nomad_job, {'content': HCL, 'variable_files': [str(tmp_path / 'nope.hcl')]})
    assert failed['failed'] and failed['msg'].startswith('variable_files: cannot read %s' % (tmp_path / 'nope.hcl'))
    assert nomad.calls == []


@pytest.mark.parametrize('kind', ['batch', 'sysbatch'])
def test_a_batch_job_is_waited_for_until_it_completes(run_main, nomad, kind):
    nomad.handlers[('put', 'jobs/parse')] = lambda body, params: dict(JOB, Type=kind)
    states = iter(['pending', 'running', 'complete'])
    nomad.handlers[('get', 'job/sleeper/allocations')] = lambda body, params: [
        {'ID': 'b1', 'JobVersion': 0, 'DesiredStatus': 'run', 'ClientStatus': next(states), 'NodeName': 'n1'}
    ]
    done = run_main(nomad_job, {'content': HCL, 'wait_timeout': 10})
    assert done['changed'] and done['allocations'] == [
        {'id': 'b1', 'node': 'n1', 'client_status': 'complete', 'healthy': True}
    ]


def test_a_batch_job_that_fails_names_its_allocations_reason(run_main, nomad):
    nomad.handlers[('put', 'jobs/parse')] = lambda body, params: dict(JOB, Type='batch')
    events = [{'Type': 'Terminated', 'DisplayMessage': 'Exit Code: 3'}, {'Type': 'Not Restarting'}]
    nomad.objects['job/sleeper/allocations'] = [
        {
            'ID': 'b2c3d4e5-0000',
            'JobVersion': 0,
            'DesiredStatus': 'run',
            'ClientStatus': 'failed',
            'TaskStates': {'t': {'Events': events}},
        }
    ]
    failed = run_main(nomad_job, {'content': HCL, 'wait_timeout': 10})
    assert failed['failed'] and 'job sleeper version 0 did not complete: b2c3d4e5 failed' in failed['msg']
    assert 't: Terminated Exit Code: 3' in failed['msg']


def test_absent_waits_until_no_allocation_runs(run_main, nomad, monkeypatch):
    nomad.objects['job/sleeper'] = {'ID': 'sleeper', 'Version': 2, 'Stop': False}
    running = {'ID': 'a1b2c3d4-0000', 'ClientStatus': 'running', 'NodeName': 'n1'}
    answers = iter([[running], [dict(running, ClientStatus='complete')]])
    nomad.handlers[('get', 'job/sleeper/allocations')] = lambda body, params: next(answers)
    monkeypatch.setattr('time.sleep', lambda seconds: None)
    stopped = run_main(nomad_job, {'job_id': 'sleeper', 'state': 'absent'})
    assert stopped['changed'] and nomad.writes() == [('delete', 'job/sleeper', {'purge': 'false'})]
    assert [c[1] for c in nomad.calls].count('job/sleeper/allocations') == 2


def test_absent_names_the_allocations_that_still_run(run_main, nomad):
    nomad.objects['job/sleeper'] = {'ID': 'sleeper', 'Version': 2, 'Stop': True}
    nomad.objects['job/sleeper/allocations'] = [{'ID': 'a1b2c3d4-0000', 'ClientStatus': 'running', 'NodeName': 'n1'}]
    failed = run_main(nomad_job, {'job_id': 'sleeper', 'state': 'absent', 'wait_timeout': 0})
    assert 'after 0s these allocations still run: a1b2c3d4 on n1 (running)' in failed['msg']
    assert not failed.get('changed') and nomad.writes() == []


def test_job_id_starts_the_stored_job_again_without_nomads_plan(run_main, nomad):
    """Nomad v1.11.3's plan endpoint refuses a workload identity's token, with which the follow controller runs the
    jobs a move stopped: a stored job changes only where it is stopped, which needs no plan."""
    nomad.objects['job/sleeper'] = dict(JOB, Version=4, Stop=True, Status='dead')
    checked = run_main(nomad_job, {'job_id': 'sleeper', 'wait': False}, check=True, diff=True)
    assert checked['changed'] and checked['diff'] == {
        'before': 'job sleeper: stopped\n',
        'after': 'job sleeper: running\n',
    }
    assert nomad.writes() == []
    started = run_main(nomad_job, {'job_id': 'sleeper', 'wait': False})
    assert started['changed'] and started['version'] == 4
    [register] = nomad.writes()
    assert register[1] == 'jobs' and register[2]['Job']['Stop'] is False and register[2]['Job']['Version'] == 4
    nomad.objects['job/sleeper'] = dict(JOB, Version=5, Stop=False, Status='running')
    assert run_main(nomad_job, {'job_id': 'sleeper', 'wait': False})['changed'] is False
    assert all(call[1] != 'job/sleeper/plan' for call in nomad.calls)


def test_job_id_of_no_job_fails_when_present_and_is_a_no_op_when_absent(run_main, nomad):
    failed = run_main(nomad_job, {'job_id': 'nope'})
    assert 'job_id: Nomad has no job nope in namespace default to start; give src or content' in failed['msg']
    gone = run_main(nomad_job, {'job_id': 'nope', 'state': 'absent'})
    assert gone['changed'] is False and nomad.writes() == []


@pytest.mark.parametrize(
    'job',
    [
        dict(JOB, Type='batch', Periodic={'Enabled': True, 'Spec': '*/5 * * * *', 'SpecType': 'cron'}),
        dict(JOB, Type='batch', ParameterizedJob={'Payload': 'optional'}),
        dict(JOB, TaskGroups=[{'Name': 'g', 'Count': 0}]),
    ],
    ids=['periodic', 'parameterized', 'scaled-to-0'],
)
def test_a_job_that_places_nothing_is_registered_without_waiting(run_main, nomad, job):
    nomad.handlers[('put', 'jobs/parse')] = lambda body, params: dict(job)
    nomad.objects['job/sleeper/allocations'] = []
    made = run_main(nomad_job, {'content': HCL, 'wait_timeout': 5})
    assert made['changed'] and made['allocations'] == [] and nomad.writes()[-1][1] == 'jobs'


def test_a_wait_that_times_out_after_the_register_says_changed(run_main, nomad):
    nomad.objects['job/sleeper/allocations'] = []
    failed = run_main(nomad_job, {'content': HCL, 'wait_timeout': 0})
    assert failed['failed'] and 'placed 0 of 1 allocations' in failed['msg']
    assert failed['changed'] is True and failed['written'] == ['PUT jobs']


def test_stopped_index_runs_the_job_only_as_its_stop_left_it(run_main, nomad):
    """A move records the job modify index its stop left each job at. A job stopped or changed since by anyone else
    (a register stopped, a revert, a purge and register again: each a new index), or stopped before the move's stop,
    or purged, is left alone: the mover does not submit it with the mover's rights. The register enforces the index
    it read."""
    nomad.objects['job/sleeper'] = dict(JOB, Version=5, Stop=False, JobModifyIndex=800)
    nomad.handlers[('delete', 'job/sleeper')] = lambda body, params: {'EvalID': 'e', 'JobModifyIndex': 812}
    stopping = run_main(nomad_job, {'job_id': 'sleeper', 'state': 'absent', 'wait': False})
    assert stopping['changed'] and stopping['job_modify_index'] == 812
    nomad.objects['job/sleeper'] = dict(JOB, Version=6, Stop=True, JobModifyIndex=812)
    again = run_main(nomad_job, {'job_id': 'sleeper', 'state': 'absent', 'wait': False})
    assert again['changed'] is False and again['job_modify_index'] == -1
    nomad.calls.clear()
    started = run_main(nomad_job, {'job_id': 'sleeper', 'stopped_index': 812, 'wait': False})
    [register] = nomad.writes()
    assert started['changed'] and 'left_alone' not in started
    assert (register[2]['EnforceIndex'], register[2]['JobModifyIndex'], register[2]['Job']['Stop']) == (
        True,
        812,
        False,
    )
    nomad.calls.clear()
    # The owner's change, registered stopped, lands at another index, even at the version the stop made.
    nomad.objects['job/sleeper'] = dict(JOB, Version=6, Stop=True, JobModifyIndex=901)
    changed = run_main(nomad_job, {'job_id': 'sleeper', 'stopped_index': 812}, diff=True)
    assert changed['changed'] is False and nomad.writes() == []
    assert changed['left_alone'] == (
        'job sleeper is stopped at job modify index 901, not at 812 where its stop left it: it was changed since, '
        'and is left for its owner to run (nomad job start)'
    )
    assert changed['diff'] == {'before': 'job sleeper: stopped\n', 'after': 'job sleeper: stopped\n'}
    stopped_before = run_main(nomad_job, {'job_id': 'sleeper', 'stopped_index': -1})
    assert (
        stopped_before['changed'] is False and 'was stopped already, not by this stop' in stopped_before['left_alone']
    )
    # Run by its owner since: running, nothing to do.
    nomad.objects['job/sleeper'] = dict(JOB, Version=7, Stop=False, JobModifyIndex=950)
    running = run_main(nomad_job, {'job_id': 'sleeper', 'stopped_index': 812, 'wait': False})
    assert running['changed'] is False and 'left_alone' not in running
    del nomad.objects['job/sleeper']
    purged = run_main(nomad_job, {'job_id': 'sleeper', 'stopped_index': 812})
    assert purged['changed'] is False and purged['version'] == -1 and nomad.writes() == []
    assert purged['left_alone'] == 'job sleeper is no longer registered: it was purged since the stop'
    refused = run_main(nomad_job, {'content': HCL, 'stopped_index': 812})
    assert refused['failed'] and 'stopped_index' in refused['msg'] and 'job_id' in refused['msg']
