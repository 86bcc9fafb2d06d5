"""nomad_csi_volume_info's main() with a fake Nomad client: one list call, one read per volume only for claims."""

import pytest

from ansible_collections.nomad_zfs.csi.plugins.modules import nomad_csi_volume_info
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.fake_nomad import FakeNomad

# Shaped as GET /v1/volumes?type=csi and GET /v1/volume/csi/:id answer on Nomad v1.11.3 (fields trimmed).
STUBS = [
    {
        'ID': 'pgdata',
        'Name': 'pgdata',
        'Namespace': 'default',
        'PluginID': 'zfs',
        'ExternalID': 'pgdata',
        'Provider': 'org.democratic-csi.zfs-generic-nfs',
        'Schedulable': True,
        'AccessMode': 'single-node-writer',
        'AttachmentMode': 'file-system',
        'CurrentReaders': 0,
        'CurrentWriters': 1,
    },
    {
        'ID': 'cache',
        'Name': 'cache',
        'Namespace': 'default',
        'PluginID': 'zfs',
        'ExternalID': 'cache',
        'Provider': 'org.democratic-csi.zfs-generic-nfs',
        'Schedulable': True,
        'AccessMode': '',
        'AttachmentMode': '',
        'CurrentReaders': 0,
        'CurrentWriters': 0,
    },
]
PGDATA = dict(
    STUBS[0],
    Capacity=1073741824,
    RequestedCapacityMin=1073741824,
    RequestedCapacityMax=2147483648,
    RequestedCapabilities=[{'AccessMode': 'single-node-writer', 'AttachmentMode': 'file-system'}],
    WriteAllocs={'5d2c-alloc': None},
    ReadAllocs={},
    Allocations=[
        {'ID': '5d2c-alloc', 'NodeName': 'zfsvm', 'JobID': 'db', 'TaskGroup': 'g'},
        {'ID': 'old-alloc', 'NodeName': 'zfsvm', 'JobID': 'db', 'TaskGroup': 'g'},
    ],
)


@pytest.fixture
def nomad(monkeypatch):
    fake = FakeNomad(**{'volume/csi/pgdata': PGDATA, 'volume/csi/cache': dict(STUBS[1], Capacity=0)})
    fake.handlers[('get', 'volumes')] = lambda body, params: [
        s
        for s in STUBS
        if s['ID'].startswith(params.get('prefix', '')) and params.get('plugin_id', s['PluginID']) == s['PluginID']
    ]
    return fake.install(monkeypatch)


def test_the_list_is_one_call(run_main, nomad):
    result = run_main(nomad_csi_volume_info, {'plugin_id': 'zfs'})
    assert [v['id'] for v in result['volumes']] == ['cache', 'pgdata']
    assert result['volumes'][1]['writers'] == 1 and 'claims' not in result['volumes'][1]
    assert nomad.calls == [('get', 'volumes', {'type': 'csi', 'plugin_id': 'zfs'})]


def test_claims_cost_one_read_per_volume_and_name_the_claiming_allocation(run_main, nomad):
    result = run_main(nomad_csi_volume_info, {'id': 'pgdata', 'claims': True})
    [pgdata] = result['volumes']
    assert pgdata['capacity'] == 1073741824 and pgdata['capacity_max'] == 2147483648
    assert pgdata['claims'] == [
        {'allocation': '5d2c-alloc', 'node': 'zfsvm', 'job': 'db', 'task_group': 'g', 'access': 'write'}
    ]
    assert [c[1] for c in nomad.calls] == ['volumes', 'volume/csi/pgdata']


def test_an_id_matches_exactly_not_as_a_prefix(run_main, nomad):
    assert run_main(nomad_csi_volume_info, {'id': 'pg'})['volumes'] == []


def test_id_and_prefix_exclude_each_other(run_main, nomad):
    failed = run_main(nomad_csi_volume_info, {'id': 'pgdata', 'prefix': 'pg'})
    assert failed['failed'] and 'mutually exclusive' in failed['msg'] and nomad.calls == []
