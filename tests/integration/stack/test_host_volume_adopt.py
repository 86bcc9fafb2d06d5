"""The zfs-dataset plugin's half of moving a host volume to another node, on real Nomad and OpenZFS: Nomad's delete
keeps a dataset marked as moved, and a volume created with adopt_replica takes the replica, with its data and
snapshots, instead of an empty dataset.

The stack has one client, so the replica is made from this node's own volume, as a pull leaves it: `zfs send |
zfs receive -u` into an inert replica parent in the same pool. The moved-from dataset then steps aside, as if it
were on the other node, before the adopting create.
"""

import re

import pytest
from stack_layout import HOST_VOLUME_CONF, HOST_VOLUMES, STACK, host_volume_conf

from test_host_volume_plugin import MARK, props
from zfsvm_client import changed

# The extended tier (docs/testing.md, Tiers): make test leaves it out.
pytestmark = pytest.mark.extended

PLAYBOOK = STACK / 'host_volume_plugin_only.yml'
REPLICAS = 'tank/it-replicas'
FROM = '127.0.0.1/' + HOST_VOLUMES  # <host>/<parent>: the zfs_replication role's pull target under REPLICAS
DATASET = HOST_VOLUMES + '/default/t-move'
REPLICA = '%s/%s/default/t-move' % (REPLICAS, FROM)
ASIDE = 'tank/it-moved-from'
# What the zfs_replication role writes for that pull; the plugin adopts only from such a target.
PULL_CONF = '/etc/nomad-zfs-csi/pulls/it-adopt.conf'
SNAPSHOT = '@autosnap_2026-11-25_10:00:00_hourly'
MOVED = 'nomad-zfs-csi:moved-to'


def exists(vm, name):
    return vm.zfs('list', name, check=False).returncode == 0


def journal_since(vm, since):
    return vm.sh('journalctl -t zfs-dataset --since @%s --no-pager -o cat' % since).stdout


@pytest.fixture
def adopting(stack, vm):
    """The role run with a replica parent in tank; afterwards the stack's own configuration again, and no test
    dataset or volume."""
    token = {'host_volume_plugin_nomad_token': stack.secret('host-volume-operator')}
    vm.zfs('destroy', '-r', REPLICAS, check=False)
    vm.zfs('create', '-o', 'mountpoint=none', '-o', 'readonly=on', '-o', 'setuid=off', '-o', 'exec=off', REPLICAS)
    vm.sh('mkdir -p /etc/nomad-zfs-csi/pulls && echo TARGET=%s/%s > %s' % (REPLICAS, FROM, PULL_CONF))
    try:
        ran = stack.playbook(PLAYBOOK, extra=dict(token, host_volume_plugin_replica_parent=REPLICAS))
        assert changed(ran)['zfsvm'] > 0, ran.stdout[-3000:]
        yield
    finally:
        stack.module('nomad_host_volume', {'name': 't-move', 'state': 'deleted'})
        for name in (ASIDE, REPLICAS):
            vm.zfs('destroy', '-r', name, check=False)
        vm.sh('rm -f ' + PULL_CONF)
        restored = stack.playbook(PLAYBOOK, extra=token)
    assert changed(restored)['zfsvm'] > 0, restored.stdout[-3000:]
    assert vm.sh('cat ' + HOST_VOLUME_CONF).stdout == host_volume_conf()


def volume(stack, **parameters):
    args = {'name': 't-move', 'capacity_max': '64M', 'parameters': parameters}
    return stack.module('nomad_host_volume', args)


def test_a_moved_volume_is_kept_and_its_replica_adopted_with_its_data(stack, vm, adopting):
    assert vm.sh('cat ' + HOST_VOLUME_CONF).stdout == host_volume_conf(replica_parent=REPLICAS)
    first = volume(stack)
    assert first['rc'] == 0, first
    vm.sh('echo written-before-the-move > /%s/proof.txt' % DATASET)
    vm.zfs('snapshot', DATASET + SNAPSHOT)
    vm.zfs('create', '-p', REPLICA.rsplit('/', 1)[0])
    vm.sh('zfs send %s%s | zfs receive -u %s' % (DATASET, SNAPSHOT, REPLICA))

    # The move marks the source; Nomad's delete then keeps it, and the plugin says so.
    vm.zfs('set', 'readonly=on', '%s=nzc-b' % MOVED, DATASET)
    # Nomad runs the plugin's create for an update, as at every agent start: the moved copy is not offered again.
    update = stack.module('nomad_host_volume', {'name': 't-move', 'capacity_max': '128M'})
    assert update['rc'] != 0 and 'was moved to nzc-b' in update['msg'], update
    assert props(vm, DATASET, 'refquota')['refquota'] == str(64 << 20)
    since = vm.sh('date +%s').stdout.strip()
    deleted = stack.module('nomad_host_volume', {'name': 't-move', 'state': 'deleted'})
    assert deleted['rc'] == 0 and deleted['changed'], deleted
    assert stack.get('/v1/volumes?type=host&prefix=t-move') == []
    assert props(vm, DATASET, 'readonly', MARK) == {'readonly': 'on', MARK: first['volume']['id']}
    assert vm.sh('cat /%s/proof.txt' % DATASET).stdout == 'written-before-the-move\n'
    assert 'kept %s: its data moved to nzc-b' % DATASET in journal_since(vm, since)
    vm.zfs('rename', DATASET, ASIDE)  # on the other node, in a real move

    # Refused, with nothing made: no pull lands in another parent's replicas.
    wrong = volume(stack, adopt_replica='127.0.0.1/tank/nomad/elsewhere')
    assert (
        wrong['rc'] != 0
        and '%s/127.0.0.1/tank/nomad/elsewhere is not the target of a zfs_replication pull' % REPLICAS in wrong['msg']
    ), wrong
    assert not exists(vm, DATASET) and exists(vm, REPLICA)
    assert stack.get('/v1/volumes?type=host&prefix=t-move') == []

    since = vm.sh('date +%s').stdout.strip()
    adopted = volume(stack, adopt_replica=FROM)
    assert adopted['rc'] == 0 and adopted['volume']['host_path'] == '/' + DATASET, adopted
    assert not exists(vm, REPLICA) and exists(vm, DATASET + SNAPSHOT)
    assert props(vm, DATASET, 'readonly', 'mounted', 'refquota', MARK) == {
        'readonly': 'off',
        'mounted': 'yes',
        'refquota': str(64 << 20),
        MARK: adopted['volume']['id'],
    }
    assert 'adopted %s as %s' % (REPLICA, DATASET) in journal_since(vm, since)
    assert stack.workload('t-move', 'read', volume_type='host') == 'written-before-the-move'
    assert volume(stack, adopt_replica=FROM)['changed'] is False

    # Not moved: Nomad's delete destroys it, and the schedule's snapshot with it, as before.
    assert stack.module('nomad_host_volume', {'name': 't-move', 'state': 'deleted'})['rc'] == 0
    assert not exists(vm, DATASET)


def test_a_replica_parent_in_another_pool_stops_the_role_before_any_change(stack, vm):
    conf = vm.sh('cat ' + HOST_VOLUME_CONF).stdout
    token = {'host_volume_plugin_nomad_token': stack.secret('host-volume-operator')}
    ran = stack.playbook(PLAYBOOK, extra=dict(token, host_volume_plugin_replica_parent='backup/replica'))
    assert ran.returncode != 0
    assert 'host_volume_plugin_replica_parent "backup/replica" must be a dataset in the pool of' in ran.stdout
    assert 'zfs renames only within a pool' in ran.stdout, ran.stdout[-3000:]
    assert re.search(r'^zfsvm\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=1', ran.stdout, re.M), ran.stdout[-1000:]
    assert vm.sh('cat ' + HOST_VOLUME_CONF).stdout == conf
