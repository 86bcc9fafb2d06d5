"""What nomad_csi_plugin_info reports, healthy or not; main() runs with a fake Nomad client."""

import pytest

from ansible_collections.nomad_zfs.csi.plugins.modules import nomad_csi_plugin_info
from ansible_collections.nomad_zfs.csi.plugins.modules.nomad_csi_plugin_info import last_error_line, newest_per_group
from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.fake_nomad import FakeNomad

# The end of democratic-csi v1.9.4's stdout (controller, zfs-generic-nfs) when the storage host
# refuses its SSH key, as Nomad v1.11.3 served it: colour codes, stack frames and JSON context.
WRONG_KEY_LOG = (FIXTURES / 'democratic_csi_wrong_key_1.9.4.log').read_text()


def test_the_reason_is_the_last_line_that_says_what_happened():
    assert last_error_line(WRONG_KEY_LOG) == 'Error: All configured authentication methods failed'


def test_no_error_line_gives_none():
    assert last_error_line('info: new request\n    at Socket.emit (node:events:524:28) {"error": 1}\n') is None
    assert last_error_line(None) is None


def test_only_the_newest_allocation_of_each_group_is_explained():
    allocs = [
        dict(ID='a', JobID='zfs-controller', TaskGroup='controller', CreateIndex=10),
        dict(ID='b', JobID='zfs-controller', TaskGroup='controller', CreateIndex=30),
        dict(ID='c', JobID='zfs-node', TaskGroup='node', CreateIndex=20),
    ]
    assert [a['ID'] for a in newest_per_group(allocs)] == ['b', 'c']


PLUGIN = {
    'ID': 'zfs',
    'Provider': 'org.democratic-csi.zfs-generic-nfs',
    'ControllerRequired': True,
    'ControllersHealthy': 1,
    'ControllersExpected': 1,
    'NodesHealthy': 1,
    'NodesExpected': 1,
}


@pytest.fixture
def nomad(monkeypatch):
    return FakeNomad(**{'volumes': [{'ID': 'demo'}]}).install(monkeypatch)


def test_a_healthy_plugin_with_its_volumes(run_main, nomad):
    nomad.objects['plugin/csi/zfs'] = PLUGIN
    result = run_main(nomad_csi_plugin_info, {'plugin_id': 'zfs', 'wait_timeout': 1})
    assert result['healthy'] and result['volumes'] == ['demo'] and result['plugin']['controllers_healthy'] == 1


def test_an_unhealthy_plugin_fails_after_the_wait_with_the_reason_its_task_logged(run_main, nomad):
    nomad.objects['plugin/csi/zfs'] = dict(
        PLUGIN,
        ControllersHealthy=0,
        Allocations=[
            {'ID': 'c0ffee00-1', 'TaskGroup': 'controller', 'ClientStatus': 'running', 'TaskStates': {'plugin': {}}}
        ],
    )
    nomad.handlers[('get', 'client/fs/logs/c0ffee00-1')] = lambda body, params: WRONG_KEY_LOG
    failed = run_main(nomad_csi_plugin_info, {'plugin_id': 'zfs', 'wait_timeout': 1})
    assert failed['failed'] and 'controllers 0/1, nodes 1/1 healthy' in failed['msg']
    assert (
        'controller allocation c0ffee00 is running; task plugin last logged: Error: All configured '
        'authentication methods failed'
    ) in failed['msg']


def test_an_unknown_plugin_is_not_an_error_without_a_wait(run_main, nomad):
    result = run_main(nomad_csi_plugin_info, {'plugin_id': 'zfs'})
    result.pop('invocation', None)
    assert result == {'changed': False, 'exists': False, 'healthy': False}
