"""nomad_job against the real dev agent: plan-gated registration, waiting, check and diff mode, removal."""

SLEEPER = '''job "sleeper" {
  datacenters = ["*"]
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["%s"]
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
'''


def test_plugin_jobs_are_running_and_a_rerun_changes_nothing(plugin, run_local, rendered_jobs, agent):
    for job in ('controller', 'node'):
        again = run_local('nomad_job', {'src': str(rendered_jobs[job])})
        assert not again.failed and again['changed'] is False and again['plan_diff_type'] == 'None', again
    assert {a['ClientStatus'] for a in agent.get('/v1/job/zfs-node/allocations')} == {'running'}


def test_check_mode_and_diff_then_apply_then_idempotent(run_local, agent):
    first = run_local('nomad_job', {'content': SLEEPER % '600'})
    assert first['changed'] and first['version'] == 0 and first['allocations'][0]['client_status'] == 'running'

    checked = run_local('nomad_job', {'content': SLEEPER % '700'}, check=True, diff=True)
    assert checked['changed'] and checked['plan_diff_type'] == 'Edited'
    assert "~ args[0]: '600' => '700'" in checked.output, checked.output
    assert agent.get('/v1/job/sleeper')['Version'] == 0  # check mode registered nothing

    applied = run_local('nomad_job', {'content': SLEEPER % '700'})
    assert applied['changed'] and applied['version'] == 1
    assert run_local('nomad_job', {'content': SLEEPER % '700'})['changed'] is False

    # A stopped job with the same text is a change: the plan shows Stop true => false.
    assert run_local('nomad_job', {'content': SLEEPER % '700', 'state': 'absent'})['changed']
    stopped_version = agent.get('/v1/job/sleeper')['Version']  # stopping is a version of its own
    restarted = run_local('nomad_job', {'content': SLEEPER % '700'})
    assert restarted['changed'] and restarted['plan_diff_type'] == 'Edited', restarted
    assert restarted['version'] == stopped_version + 1 == agent.get('/v1/job/sleeper')['Version']
    assert agent.get('/v1/job/sleeper')['Stop'] is False

    stopped = run_local('nomad_job', {'content': SLEEPER % '700', 'state': 'absent', 'purge': True})
    assert stopped['changed'] and stopped['version'] == -1
    assert run_local('nomad_job', {'content': SLEEPER % '700', 'state': 'absent'})['changed'] is False


def test_a_job_that_cannot_start_fails_with_its_events(run_local, agent):
    broken = SLEEPER.replace('/bin/sleep', '/nonexistent/binary').replace('"sleeper"', '"broken"')
    result = run_local('nomad_job', {'content': broken % '1', 'wait_timeout': 20})
    agent.nomad('job', 'stop', '-purge', 'broken', check=False)
    assert result.failed and 'job broken version 0 is not running after 20s' in result['msg'], result
    assert 'nonexistent' in result['msg'] or 'Driver Failure' in result['msg'], result['msg']


def test_bad_job_text_is_refused_with_the_parser_message(run_local):
    result = run_local('nomad_job', {'content': 'job "x" {\n  group "g" {\n'})
    assert result.failed and result['msg'].startswith('Nomad could not parse the job'), result
