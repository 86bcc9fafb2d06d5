"""zfs-local-dataset and zfs-local-zvol: democratic-csi as a root monolith on the Nomad client itself (the VM,
whose pool holds the data), each deployed from the pack beside the zfs-generic-nfs plugin under its own plugin id
and parent. The zvol driver formats each volume (ext4) and mounts it."""

import pytest
from stack_layout import LOCAL_PARENTS, REPO, WORKLOAD

from zfsvm_client import wait_until

# The extended tier (docs/testing.md, Tiers): make test leaves it out.
pytestmark = pytest.mark.extended

GIB = 1024**3
NODE_KEY = 'org.democratic-csi.topology/node'
# driver: (plugin id, parent, the property that holds the capacity)
DRIVERS = {
    'zfs-local-dataset': ('zfs-local', LOCAL_PARENTS[0], 'refquota'),
    'zfs-local-zvol': ('zfs-local-zvol', LOCAL_PARENTS[1], 'volsize'),
}


@pytest.fixture(scope='module', params=sorted(DRIVERS))
def local_plugin(request, stack):
    """The pack's own path: `nomad-pack run` with the local stack's variables file, as docs/local-stack.md gives it."""
    plugin, parent, capacity_property = DRIVERS[request.param]
    varfile = REPO / 'packs' / 'zfs_csi' / '.ci' / ('vars-%s-local-stack.hcl' % request.param)
    with stack.pack_plugin(varfile, plugin, [plugin + '-node']):
        yield plugin, parent, capacity_property


def test_a_volume_is_placed_on_its_node_only_and_a_second_allocation_reads_the_file(stack, vm, local_plugin):
    """A volume created with its node as required topology carries it and its capacity; a workload writes and a
    second allocation reads the file back. The same storage registered for a node that does not exist is never
    placed, and a changed topology is refused unchanged. (One test: a volume, its workloads and its deletion cost
    about a minute of the emulated CPU each.)"""
    plugin, parent, capacity_property = local_plugin
    vid, away = 't-topo-' + plugin, 't-away-' + plugin
    [node] = stack.get('/v1/plugin/csi/' + plugin)['Nodes'].values()
    here = node['NodeInfo']['AccessibleTopology']['Segments']
    assert set(here) == {NODE_KEY}, here
    try:
        made = stack.volume(vid, plugin_id=plugin, topology={'required': [here]})
        assert made['rc'] == 0 and made['volume']['topologies'] == [here], made
        out = vm.zfs('get', '-Hp', '-o', 'value', capacity_property, parent + '/' + vid).stdout
        assert out.strip() == str(GIB)
        assert stack.volume(vid, plugin_id=plugin, topology={'required': [here]})['changed'] is False
        moved = stack.volume(vid, plugin_id=plugin, topology={'required': [{NODE_KEY: 'elsewhere'}]})
        assert moved['rc'] != 0 and 'topology applies when a volume is created or registered' in moved['msg']
        # Nomad lists a null beside the plugin's answer; the module leaves it out.
        assert [t for t in stack.get('/v1/volume/csi/' + vid)['Topologies'] if t] == [{'Segments': here}]
        written = stack.workload(vid, 'write')
        assert written.startswith('written-by-')
        assert stack.workload(vid, 'read') == written

        registered = stack.module(
            'nomad_csi_volume',
            {
                'id': away,
                'plugin_id': plugin,
                'mode': 'register',
                'external_id': vid,
                'topology': {'required': [{NODE_KEY: 'elsewhere'}]},
            },
        )
        assert registered['rc'] == 0 and registered['volume']['topologies'] == [{NODE_KEY: 'elsewhere'}], registered
        stack.nomad('job', 'run', '-detach', '-var', 'action=read', '-var', 'volume=' + away, str(WORKLOAD))
        failed = wait_until(
            lambda: [
                e['FailedTGAllocs'] for e in stack.get('/v1/job/demo-workload/evaluations') if e.get('FailedTGAllocs')
            ],
            why='no placement failure for a volume on another node',
        )
        assert 'did not meet topology requirement' in str(failed), failed
        assert stack.get('/v1/job/demo-workload/allocations') == []
    finally:
        stack.nomad('job', 'stop', '-purge', 'demo-workload', check=False)
        stack.module('nomad_csi_volume', {'id': away, 'state': 'absent'})
        gone = stack.volume(vid, plugin_id=plugin, state='deleted')
    assert gone['rc'] == 0 and gone['changed'], gone
    assert vm.zfs('list', parent + '/' + vid, check=False).returncode != 0
