"""nomad_host_volume with node_free_bytes on the package's two nodes: the figures are zfs_info's `available` of each
node's host volume parent, read on the node as the module's example does, and a new volume goes to the node whose
parent can hold it. One that no node can hold is refused, naming each node's room, and nothing is made."""

import pytest

from conftest import HOST_VOLUMES
from node_b import HOST_VOLUMES as B_VOLUMES

# The extended tier (docs/testing.md, Tiers): make test leaves it out.
pytestmark = pytest.mark.extended

MIB = 1 << 20


def available(run_module, parent):
    info = run_module('zfs_info', {'name': parent, 'depth': 0, 'types': ['filesystem'], 'properties': ['available']})
    assert info.rc == 0, info
    return info['datasets'][0]['properties']['available']['value']


def test_a_new_volume_goes_to_the_node_whose_parent_can_hold_it(stack, vm, run_module, two_nodes):
    a_node, b_node = two_nodes
    # A's pool is larger than B's (512 MiB): a quota on A's parent leaves it 64 MiB, less than B's room.
    quota = vm.zfs('get', '-Hp', '-o', 'value', 'quota', HOST_VOLUMES).stdout.strip()
    used = int(vm.zfs('get', '-Hp', '-o', 'value', 'used', HOST_VOLUMES).stdout)
    vm.zfs('set', 'quota=%d' % (used + 64 * MIB), HOST_VOLUMES)
    try:
        room = {a_node['Name']: available(run_module, HOST_VOLUMES), b_node['Name']: available(run_module, B_VOLUMES)}
        assert room[a_node['Name']] < 128 * MIB < room[b_node['Name']], room
        made = stack.module('nomad_host_volume', {'name': 't-place', 'capacity_max': '128M', 'node_free_bytes': room})
        assert made['rc'] == 0, made
        assert made['volume']['node_id'] == b_node['ID'] and made['volume']['state'] == 'ready', made
        assert vm.zfs('list', B_VOLUMES + '/default/t-place', check=False).returncode == 0
        assert vm.zfs('list', HOST_VOLUMES + '/default/t-place', check=False).returncode != 0

        too_big = stack.module(
            'nomad_host_volume', {'name': 't-place-big', 'capacity_max': '2G', 'node_free_bytes': room}
        )
        assert too_big['rc'] != 0
        for name, free in room.items():
            assert '%s has %.1f MiB free, less than 2048.0 MiB' % (name, free / MIB) in too_big['msg'], too_big['msg']
        assert stack.get('/v1/volumes?type=host&prefix=t-place-big') == []
        for parent in (HOST_VOLUMES, B_VOLUMES):
            assert vm.zfs('list', parent + '/default/t-place-big', check=False).returncode != 0
    finally:
        vm.zfs('set', 'quota=%s' % (quota if quota != '0' else 'none'), HOST_VOLUMES)
        gone = stack.module('nomad_host_volume', {'name': 't-place', 'node_id': b_node['ID'], 'state': 'deleted'})
        assert gone['rc'] == 0, gone
