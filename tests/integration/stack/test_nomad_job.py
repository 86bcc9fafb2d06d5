"""nomad_job against the stack's Nomad: plan-gated registration, waiting, check and diff mode, removal."""

import subprocess

from stack_layout import CACHE_BIN, REPO

LOCAL_STACK_VARS = REPO / 'packs' / 'zfs_csi' / '.ci' / 'vars-zfs-generic-nfs-local-stack.hcl'

SLEEPER = """job "sleeper" {
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
"""


def test_the_pack_rendered_by_hand_is_what_the_role_deployed(stack, run_local, tmp_path):
    """`nomad-pack render` of the local stack's vars file, given to nomad_job, plans no change."""
    rendered = subprocess.run(
        [
            str(CACHE_BIN / 'nomad-pack'),
            'render',
            str(REPO / 'packs' / 'zfs_csi'),
            '-f',
            str(LOCAL_STACK_VARS),
            '-o',
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )
    assert rendered.returncode == 0, rendered.stderr
    for job in ('controller', 'node'):
        again = run_local('nomad_job', {'src': str(tmp_path / 'zfs_csi' / (job + '.nomad'))})
        assert not again.failed and again['changed'] is False and again['plan_diff_type'] == 'None', again
    # Earlier tests stop and start the node job, whose old allocations stay listed as complete until Nomad's GC.
    wanted = [a['ClientStatus'] for a in stack.get('/v1/job/zfs-node/allocations') if a['DesiredStatus'] == 'run']
    assert wanted and set(wanted) == {'running'}, wanted


def test_check_mode_and_diff_then_apply_then_idempotent(run_local, stack):
    first = run_local('nomad_job', {'content': SLEEPER % '600'})
    assert first['changed'] and first['version'] == 0 and first['allocations'][0]['client_status'] == 'running'

    checked = run_local('nomad_job', {'content': SLEEPER % '700'}, check=True, diff=True)
    assert checked['changed'] and checked['plan_diff_type'] == 'Edited'
    assert "~ args[0]: '600' => '700'" in checked.output, checked.output
    assert stack.get('/v1/job/sleeper')['Version'] == 0  # check mode registered nothing

    applied = run_local('nomad_job', {'content': SLEEPER % '700'})
    assert applied['changed'] and applied['version'] == 1
    assert run_local('nomad_job', {'content': SLEEPER % '700'})['changed'] is False

    # A stopped job with the same text is a change: the plan shows Stop true => false.
    assert run_local('nomad_job', {'content': SLEEPER % '700', 'state': 'absent'})['changed']
    stopped_version = stack.get('/v1/job/sleeper')['Version']  # stopping is a version of its own
    restarted = run_local('nomad_job', {'content': SLEEPER % '700'})
    assert restarted['changed'] and restarted['plan_diff_type'] == 'Edited', restarted
    assert restarted['version'] == stopped_version + 1 == stack.get('/v1/job/sleeper')['Version']
    assert stack.get('/v1/job/sleeper')['Stop'] is False

    stopped = run_local('nomad_job', {'content': SLEEPER % '700', 'state': 'absent', 'purge': True})
    assert stopped['changed'] and stopped['version'] == -1
    assert run_local('nomad_job', {'content': SLEEPER % '700', 'state': 'absent'})['changed'] is False


def test_a_job_that_cannot_start_fails_with_its_events(run_local, stack):
    broken = SLEEPER.replace('/bin/sleep', '/nonexistent/binary').replace('"sleeper"', '"broken"')
    # On the busy emulated VM, building an exec task's directory took over 20 s before the driver failed (2026-12-02).
    result = run_local('nomad_job', {'content': broken % '1', 'wait_timeout': 60})
    stack.nomad('job', 'stop', '-purge', 'broken', check=False)
    assert result.failed and 'job broken version 0 is not running after 60s' in result['msg'], result
    assert 'nonexistent' in result['msg'] or 'Driver Failure' in result['msg'], result['msg']


def test_bad_job_text_is_refused_with_the_parser_message(run_local):
    result = run_local('nomad_job', {'content': 'job "x" {\n  group "g" {\n'})
    assert result.failed and result['msg'].startswith('Nomad could not parse the job'), result


VARIABLE_SLEEPER = """variable "seconds" {
  type = string
}
""" + SLEEPER.replace('"sleeper"', '"var-sleeper"').replace('["%s"]', '[var.seconds]')


def test_hcl2_variables_from_a_file_and_the_task(stack, run_local, tmp_path):
    varfile = tmp_path / 'seconds.hcl'
    varfile.write_text('seconds = "900"\n')
    try:
        made = run_local('nomad_job', {'content': VARIABLE_SLEEPER, 'variable_files': [str(varfile)]})
        assert made['changed'] and stack.get('/v1/job/var-sleeper')['TaskGroups'][0]['Tasks'][0]['Config']['args'] == [
            '900'
        ], made
        same = run_local('nomad_job', {'content': VARIABLE_SLEEPER, 'variables': {'seconds': '900'}})
        assert same['changed'] is False, same
        unset = run_local('nomad_job', {'content': VARIABLE_SLEEPER})
        assert unset.failed and 'Unset variable "seconds"' in unset['msg'], unset
        twice = run_local(
            'nomad_job', {'content': VARIABLE_SLEEPER, 'variable_files': [str(varfile)], 'variables': {'seconds': '1'}}
        )
        assert twice.failed and 'The argument "seconds" was already set' in twice['msg'], twice
    finally:
        stack.nomad('job', 'stop', '-purge', 'var-sleeper', check=False)
