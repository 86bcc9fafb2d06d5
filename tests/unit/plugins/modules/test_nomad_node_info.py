"""nomad_node_info's main() with a fake Nomad client: each node's plugins from its fingerprinted attributes."""

from ansible_collections.nomad_zfs.csi.plugins.modules import nomad_node_info
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.fake_nomad import FakeNomad

# The fields of GET /v1/node/:id that the module reads, as Nomad v1.11.3 answers for a node with the plugin.
NODE_B = {
    'ID': 'n2',
    'Name': 'nzc-b',
    'Status': 'ready',
    'SchedulingEligibility': 'eligible',
    'DrainStrategy': None,
    'NodePool': 'default',
    'Datacenter': 'dc1',
    'HTTPAddr': '127.0.0.1:5656',
    'Attributes': {
        'plugins.host_volume.mkdir.version': '0.0.1',
        'plugins.host_volume.zfs-dataset.version': '0.2.0',
        'plugins.host_volume.zfs-dataset.unrelated': 'x',
        'kernel.name': 'linux',
    },
    'HostVolumes': {'t-sticky': {'Name': 't-sticky', 'Path': '/nodeb/nomad/volumes/default/t-sticky', 'ID': 'v9'}},
}


def test_a_node_by_name_with_its_plugins_and_volumes(run_main, monkeypatch):
    nomad = FakeNomad(**{'nodes': [{'ID': 'n1', 'Name': 'nzc'}, {'ID': 'n2', 'Name': 'nzc-b'}], 'node/n2': NODE_B})
    nomad.install(monkeypatch)
    [node] = run_main(nomad_node_info, {'name': 'nzc-b'})['nodes']
    assert node == {
        'id': 'n2',
        'name': 'nzc-b',
        'status': 'ready',
        'status_updated_at': 0,
        'eligible': True,
        'drain': False,
        'node_pool': 'default',
        'datacenter': 'dc1',
        'http_addr': '127.0.0.1:5656',
        'host_volume_plugins': {'mkdir': '0.0.1', 'zfs-dataset': '0.2.0'},
        'host_volumes': {'t-sticky': 'v9'},
    }
    assert [c[1] for c in nomad.calls] == ['nodes', 'node/n2']
    assert run_main(nomad_node_info, {'name': 'gone'})['nodes'] == []
