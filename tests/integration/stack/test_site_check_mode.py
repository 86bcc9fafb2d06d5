"""site.yml under --check --diff on the converged stack passes, reports changed=0 on both hosts and writes nothing to
Nomad or ZFS. Given a recognisable CSI secret, at -vvv, neither that run nor a real write through nomad_csi_volume's
bulk form lets it into the play output, into what the modules on this host sent to syslog, or into Nomad's log."""

import importlib.util
import os

import pytest
from stack_layout import REPO

from zfsvm_client import changed, without_backups

CANARY = 'nzc-canary-6d41c07e'
DEMO = {'id': 'demo', 'namespace': 'demo', 'capacity_min': '1G', 'capacity_max': '1G'}  # the inventory's volume
_spec = importlib.util.spec_from_file_location('syslog_sink', REPO / 'tests' / 'unit' / 'syslog_sink.py')
syslog_sink = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(syslog_sink)


@pytest.fixture
def syslog():
    """What the modules run on this host send to syslog during the test."""
    try:
        sink = syslog_sink.SyslogSink().open()
    except syslog_sink.Unavailable as e:
        if os.environ.get('CI'):
            pytest.fail(str(e))
        pytest.skip(str(e))
    try:
        yield sink
    finally:
        sink.close()


# Each list of objects that site.yml manages: its API path, the key and the index of an object's last write.
MANAGED = [
    ('/v1/jobs?namespace=*', 'ID', 'JobModifyIndex'),
    ('/v1/volumes?type=csi&namespace=*', 'ID', 'ModifyIndex'),
    ('/v1/volumes?type=host&namespace=*', 'ID', 'ModifyIndex'),
    ('/v1/namespaces', 'Name', 'ModifyIndex'),
    ('/v1/acl/policies', 'Name', 'ModifyIndex'),
    ('/v1/acl/tokens', 'AccessorID', 'ModifyIndex'),
    ('/v1/vars?namespace=*', 'Path', 'ModifyIndex'),
]


def nomad_state(stack):
    return [sorted((o[key], o[index]) for o in stack.get(path) or []) for path, key, index in MANAGED]


def pool_history(vm):
    """What was done to the pools, but for what the backups' timers did."""
    return without_backups(vm.sh('zpool history tank backup').stdout)


def nomad_log(vm):
    return vm.sh('journalctl -u nzc-nomad --no-pager -o cat').stdout


def test_check_mode_on_the_converged_stack_changes_nothing_and_shows_no_secret(stack, vm, syslog):
    nomad_before, history_before = nomad_state(stack), pool_history(vm)
    volumes = [dict(DEMO, secrets={'foo': CANARY})]  # secrets are write-only, so the volume still matches
    # Under mitogen's strategy, as every other run here: a secret could reach the task results the callback prints
    # at -vvv and the modules' syslog, the same under either strategy. Ansible's own linear strategy adds -vvv lines
    # of connection commands, which carry no module argument (its AnsiballZ payload is a file, never printed), and
    # cost 95 s more in the guest. The backups play handles no secret; Molecule's csi_plugin scenario runs it in
    # check mode (make test-extended).
    run = stack.site('--check', '--diff', '-vvv', '--skip-tags', 'backups', extra={'csi_plugin_volumes': volumes})
    assert changed(run) == {'nomad-dev': 0, 'zfsvm': 0}, run.stdout[-5000:]
    assert nomad_state(stack) == nomad_before
    assert pool_history(vm) == history_before
    logged = syslog.messages()
    # The sink heard this host's modules (the volume task itself is no_log, so its module logs nothing at all).
    assert any('Invoked with' in m for m in logged), logged[-3:]
    assert CANARY not in run.stdout + run.stderr
    assert [m for m in logged if CANARY in m] == []


def test_site_again_on_the_converged_stack_changes_nothing(stack):
    """The second run changed=0 in make test, on the newest controller line (Stack.site): Molecule's idempotence
    step is in the extended tier. The backups play
    is left out as in the check above: the tests before this one leave volumes (test_democratic_csi.py's t-absent
    among them) that its first pull would take."""
    run = stack.site('--skip-tags', 'backups')
    assert changed(run) == {'nomad-dev': 0, 'zfsvm': 0}, run.stdout[-5000:]


def test_a_secret_written_through_the_bulk_form_shows_nowhere(stack, vm, syslog):
    item = {'id': 't-secret', 'capacity_min': '64M', 'capacity_max': '64M', 'secrets': {'foo': CANARY}}
    made = stack.module('nomad_csi_volume', {'plugin_id': 'zfs', 'volumes': [item]}, verbosity=3)
    gone = stack.module('nomad_csi_volume', {'plugin_id': 'zfs', 'volumes': [dict(item, state='deleted')]}, verbosity=3)
    assert made['changed'] and made['volumes'][0]['volume']['external_id'] == 't-secret', made.output[-3000:]
    assert gone['changed'], gone.output[-3000:]
    assert made['invocation']['module_args']['volumes'][0]['secrets'] == {'foo': 'VALUE_SPECIFIED_IN_NO_LOG_PARAMETER'}
    assert CANARY not in made.output + gone.output
    logged = syslog.messages()
    assert sum('Invoked with' in m for m in logged) >= 2 and [m for m in logged if CANARY in m] == []
    assert CANARY not in nomad_log(vm)
