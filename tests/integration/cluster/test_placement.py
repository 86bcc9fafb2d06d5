"""nomad_host_volume with node_free_bytes on the example's two clients: the figures are zfs_info's `available` of
each client's host volume parent, read on that client as the module's example does, and a new volume goes to the
node whose parent can hold it. One that no node can hold is refused, naming each node's room, and nothing is
made."""

import pytest

from nomad_agents import node_name
from separate_hosts import CLIENT_1, CLIENT_2
from topology import host_volumes

# The extended tier (docs/testing.md, Tiers): make test leaves it out.
pytestmark = pytest.mark.extended

MIB = 1 << 20
NAME, TOO_BIG = 't-place', 't-place-big'


def available(cluster, client):
    args = {'name': host_volumes(client), 'depth': 0, 'types': ['filesystem'], 'properties': ['available']}
    info = cluster.module_on(client, 'zfs_info', args)
    assert info.rc == 0, info.output
    return info['datasets'][0]['properties']['available']['value']


def test_a_new_volume_goes_to_the_node_whose_parent_can_hold_it(converged):
    client_1 = converged.hosts[CLIENT_1]
    nodes = converged.node_ids()
    # Both parents share the VM's pool: a quota on client-1's leaves it 64 MiB, less than client-2's room.
    parent = host_volumes(CLIENT_1)
    # One zfs get for both, in the order asked.
    quota, used = client_1.zfs('get', '-Hp', '-o', 'value', 'quota,used', parent).stdout.split()
    client_1.zfs('set', 'quota=%d' % (int(used) + 64 * MIB), parent)
    try:
        # By node name, as Nomad names the clients' nodes.
        room = {node_name(client): available(converged, client) for client in (CLIENT_1, CLIENT_2)}
        assert room[node_name(CLIENT_1)] < 128 * MIB < room[node_name(CLIENT_2)], room
        made = converged.module('nomad_host_volume', name=NAME, capacity_max='128M', node_free_bytes=room)
        assert made.rc == 0, made.output
        assert made['volume']['node_id'] == nodes[CLIENT_2] and made['volume']['state'] == 'ready', made
        assert converged.hosts[CLIENT_2].zfs('list', host_volumes(CLIENT_2) + '/default/' + NAME).returncode == 0
        assert client_1.zfs('list', parent + '/default/' + NAME, check=False).returncode != 0

        # More than either parent's room: both are in the VM's pool, which client-2's parent shares whole.
        big = max(room.values()) // MIB + 64
        too_big = converged.module('nomad_host_volume', name=TOO_BIG, capacity_max='%dM' % big, node_free_bytes=room)
        assert too_big.rc != 0, too_big.output
        for name, free in room.items():
            said = '%s has %.1f MiB free, less than %.1f MiB' % (name, free / MIB, big)
            assert said in too_big['msg'], too_big['msg']
        assert converged.api('GET', '/v1/volumes?type=host&prefix=' + TOO_BIG) == []
        for client in (CLIENT_1, CLIENT_2):
            listed = converged.hosts[client].zfs('list', host_volumes(client) + '/default/' + TOO_BIG, check=False)
            assert listed.returncode != 0
    finally:
        client_1.zfs('set', 'quota=%s' % (quota if quota != '0' else 'none'), parent)
        gone = converged.module('nomad_host_volume', name=NAME, node_id=nodes[CLIENT_2], state='deleted')
        assert gone.rc == 0, gone.output
