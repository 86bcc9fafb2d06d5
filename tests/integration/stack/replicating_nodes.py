"""Nodes A (the stack's, pool tank) and B (nzc-b, pool nodeb, node_b.py), each the standby of the other: B pulls A's
host volumes into nodeb/replica, A pulls B's into tank/it-replicas, each replica parent in the pool of the node
that adopts from it, and each node's zfs-dataset plugin adopts from its own. The VM is both nodes' host. The
backups' timers are stopped: the tests and the benchmark run sanoid's part and the pulls themselves."""

import contextlib

from stack_layout import HOST_VOLUMES, PARENT, STACK

from node_b import HOST_VOLUMES as B_VOLUMES
from node_b import NAME as B_NAME
from node_b import node_b
from zfsvm_client import STOP_BACKUPS, changed, playbook_said

BACKUPS = STACK / 'zfs_replication_only.yml'
PLUGIN = STACK / 'host_volume_plugin_only.yml'
A_REPLICAS, B_REPLICAS = 'tank/it-replicas', 'nodeb/replica'
# Each pull's systemd instance: its target, <replica parent>/<host>/<parent>, with / as _.
B_PULL = ('%s/127.0.0.1/%s' % (B_REPLICAS, HOST_VOLUMES)).replace('/', '_')
A_PULL = ('%s/127.0.0.1/%s' % (A_REPLICAS, B_VOLUMES)).replace('/', '_')


def snapshot_now(vm, parent):
    """Every volume under parent snapshotted now, named as sanoid names its hourly snapshots (the pulls send those)."""
    vm.sh('zfs snapshot -r %s@autosnap_$(date -u +%%Y-%%m-%%d_%%H:%%M:%%S)_hourly' % parent)


@contextlib.contextmanager
def replicating_nodes(stack, pool_size='512M'):
    """Yields nodes A and B. Afterwards A's replicas are gone, B with its pool, and the backups and A's plugin are
    as site.yml left them."""
    vm = stack.vm
    host_key = vm.sh('cat /etc/ssh/ssh_host_ed25519_key.pub').stdout.strip()
    site_pulls = [{'host': '127.0.0.1', 'host_key': host_key, 'parent': p} for p in (PARENT, HOST_VOLUMES)]
    backups = {
        'zfs_replication_snapshots': [{'parent': PARENT}, {'parent': HOST_VOLUMES}, {'parent': B_VOLUMES}],
        'zfs_replication_pulls': site_pulls
        + [
            {'host': '127.0.0.1', 'host_key': host_key, 'parent': HOST_VOLUMES, 'replica_parent': B_REPLICAS},
            {'host': '127.0.0.1', 'host_key': host_key, 'parent': B_VOLUMES, 'replica_parent': A_REPLICAS},
        ],
    }
    token = {'host_volume_plugin_nomad_token': stack.secret('host-volume-operator')}
    # By name: a node B of an earlier run that was killed midway may still be registered (node_b() purges it).
    [a_node] = [n for n in stack.get('/v1/nodes') if n['Name'] != B_NAME]
    vm.zfs('destroy', '-r', A_REPLICAS, check=False)

    def replicating():
        vm.zfs('create', B_VOLUMES.rsplit('/', 1)[0])  # nodeb/nomad: the role makes the parent below it
        vm.zfs('create', B_VOLUMES)
        ran = stack.playbook(BACKUPS, extra=backups)
        assert ran.returncode == 0, playbook_said(ran)
        vm.sh(STOP_BACKUPS)

    with node_b(
        stack, before_plugin=replicating, pool_size=pool_size, host_volume_plugin_replica_parent=B_REPLICAS
    ) as b_node:
        try:
            ran = stack.playbook(PLUGIN, extra=dict(token, host_volume_plugin_replica_parent=A_REPLICAS))
            assert changed(ran)['zfsvm'] > 0, playbook_said(ran)
            yield a_node, b_node
        finally:
            # Nothing to put back on a VM that is thrown away next.
            if not vm.ending():
                vm.zfs('destroy', '-r', A_REPLICAS, check=False)
                restored = stack.playbook(BACKUPS)
                assert restored.returncode == 0, playbook_said(restored)
                ran = stack.playbook(PLUGIN, extra=token)
                assert ran.returncode == 0, playbook_said(ran)
