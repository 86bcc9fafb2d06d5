"""nomad_host_volume_info's main() with a fake Nomad client: the list, then a read of each volume it keeps."""

import pytest

from ansible_collections.nomad_zfs.csi.plugins.modules import nomad_host_volume_info
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.fake_nomad import FakeNomad

ALLOC = {
    'ID': 'alloc-1',
    'JobID': 'db',
    'Namespace': 'team-a',
    'TaskGroup': 'g',
    'NodeID': 'n1',
    'ClientStatus': 'running',
}
PGDATA = {'ID': 'v1', 'Name': 'pgdata', 'NodeID': 'n1', 'PluginID': 'zfs-dataset', 'State': 'ready'}


@pytest.fixture
def nomad(monkeypatch):
    fake = FakeNomad().install(monkeypatch)
    stubs = [PGDATA, dict(PGDATA, ID='v2', Name='pgdata-old', NodeID='n2')]
    fake.handlers[('get', 'volumes')] = lambda body, params: [
        s for s in stubs if s['Name'].startswith(params.get('prefix', ''))
    ]
    fake.objects['volume/host/v1'] = dict(PGDATA, Allocations=[ALLOC])
    fake.objects['volume/host/v2'] = dict(PGDATA, ID='v2', Name='pgdata-old', NodeID='n2')
    return fake


def test_a_name_is_exact_and_comes_with_its_allocations(run_main, nomad):
    found = run_main(nomad_host_volume_info, {'name': 'pgdata', 'namespace': 'team-a'})
    [volume] = found['volumes']
    assert found['changed'] is False and volume['id'] == 'v1' and volume['node_id'] == 'n1'
    assert volume['allocations'] == [
        {
            'id': 'alloc-1',
            'job_id': 'db',
            'namespace': 'team-a',
            'task_group': 'g',
            'node_id': 'n1',
            'client_status': 'running',
        }
    ]
    assert nomad.calls[0] == ('get', 'volumes', {'type': 'host', 'prefix': 'pgdata'})


def test_all_of_a_namespace_or_of_a_node(run_main, nomad):
    assert [v['id'] for v in run_main(nomad_host_volume_info, {})['volumes']] == ['v1', 'v2']
    on_n2 = run_main(nomad_host_volume_info, {'node_id': 'n2'})['volumes']
    assert [(v['id'], v['allocations']) for v in on_n2] == [('v2', [])]
