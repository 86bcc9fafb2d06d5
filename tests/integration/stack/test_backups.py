"""site.yml backs up the stack's volumes (inventories/local/group_vars/zfs_replication.yml): sanoid snapshots every
volume under the CSI and host volume parents, and the VM, its own standby, pulls them into pool backup on its timers,
as the zfs_replication role's user. A host volume opted out of snapshots is opted out of the pulls by the host
volume plugin and left out by the pull, so it does not fail them."""

from conftest import HOST_VOLUMES, PARENT

USER = 'zfs-replica'
REPLICAS = 'backup/replica/127.0.0.1/'
PULLS = {
    PARENT: 'zfs-replication-pull@backup_replica_127.0.0.1_tank_nomad_csi',
    HOST_VOLUMES: 'zfs-replication-pull@backup_replica_127.0.0.1_tank_nomad_volumes',
}


def snapshots(vm, dataset):
    """The dataset's snapshots, each as (name after the @, guid)."""
    out = vm.zfs('list', '-Hp', '-d', '1', '-t', 'snapshot', '-o', 'name,guid', dataset).stdout
    return {(line.split('@', 1)[1].split('\t')[0], line.split('\t')[1]) for line in out.splitlines()}


def pull(vm, parent):
    """What the pull's timer starts, run now; the service's journal of this run."""
    since = vm.sh('date +%s').stdout.strip()
    ran = vm.sh('systemctl start %s.service' % PULLS[parent], check=False, timeout=600)
    journal = vm.sh('journalctl -u %s.service --since @%s --no-pager' % (PULLS[parent], since)).stdout
    assert ran.returncode == 0, journal
    return journal


def volume_of(status, dataset):
    [volume] = [v for v in status['volumes'] if v['name'] == dataset]
    return volume


def lag_of(run_module, parent, dataset):
    """zfs_replication_info run in the VM, as the standby runs it: one volume's lag, and the whole report."""
    status = run_module('zfs_replication_info', {'host': '127.0.0.1', 'parent': parent, 'target': REPLICAS + parent})
    return volume_of(status, dataset)['lag_seconds'], status


def recovery_point(vm, run_module, parent, dataset, snapshot):
    """The report, once its lag for dataset was checked to count from snapshot's creation (the clock read
    around the module's run)."""
    created = int(vm.zfs('get', '-Hp', '-o', 'value', 'creation', snapshot).stdout)
    before = int(vm.sh('date +%s').stdout)
    lag, status = lag_of(run_module, parent, dataset)
    after = int(vm.sh('date +%s').stdout)
    assert before - created <= lag <= after - created, (lag, before, after, created)
    return volume_of(status, dataset)


def test_site_pulls_every_volume_to_pool_backup_but_the_opted_out_one(stack, vm, run_module):
    # The storage_host role keeps the replication user's grants beside the CSI user's on the parent it makes exact.
    allowed = vm.zfs('allow', PARENT).stdout
    assert 'user %s bookmark,hold,send' % USER in allowed and 'user csi ' in allowed, allowed
    timers = ['sanoid.timer'] + [unit + '.timer' for unit in PULLS.values()]
    assert vm.sh('systemctl is-enabled %s' % ' '.join(timers)).stdout.split() == ['enabled'] * 3
    assert vm.sh('systemctl is-active %s' % ' '.join(timers)).stdout.split() == ['active'] * 3

    csi, kept, opted_out = PARENT + '/t-bk', HOST_VOLUMES + '/default/t-bk-hv', HOST_VOLUMES + '/default/t-bk-off'
    host_volumes = {'t-bk-hv': {}, 't-bk-off': {'com.sun:auto-snapshot': 'false'}}
    # The test runs sanoid and the pulls itself; their timers go back on at the end, as site.yml left them.
    vm.sh('systemctl stop %s' % ' '.join(timers))
    try:
        assert stack.volume('t-bk')['rc'] == 0
        vm.sh('echo backed-up > /%s/proof.txt' % csi)
        for name, parameters in host_volumes.items():
            made = stack.module('nomad_host_volume', {'name': name, 'capacity_max': '64M', 'parameters': parameters})
            assert made['rc'] == 0, made
        opt_out = vm.zfs('get', '-H', '-o', 'value', 'com.sun:auto-snapshot,syncoid:sync', opted_out).stdout.split()
        assert opt_out == ['false', 'false']

        # What sanoid's timer runs: the first snapshots of each volume, but the opted-out one's.
        vm.sh('systemctl start sanoid.service', timeout=600)
        for dataset in (csi, kept):
            assert any(name.startswith('autosnap_') for name, _guid in snapshots(vm, dataset)), dataset
        assert snapshots(vm, opted_out) == set()

        for parent in PULLS:
            journal = pull(vm, parent)
        # The pull leaves the opted-out volume out of syncoid: it has no snapshot (syncoid:sync=false would have
        # syncoid skip it too).
        sent = journal.split('in sync or without snapshots): ', 1)[1].split('\n', 1)[0].split()
        assert kept in sent and opted_out not in sent, journal
        assert vm.sh('systemctl show -p User --value %s.service' % PULLS[HOST_VOLUMES]).stdout.strip() == USER
        for dataset in (csi, kept):
            assert snapshots(vm, REPLICAS + dataset) == snapshots(vm, dataset)
        assert vm.zfs('list', REPLICAS + opted_out, check=False).returncode != 0
        assert vm.zfs('get', '-H', '-o', 'value', 'mounted', REPLICAS + csi).stdout.strip() == 'no'

        # The recovery point grows while nothing is pulled.
        first, status = lag_of(run_module, PARENT, csi)
        assert first is not None and first < 900 and status['not_replicated'] == [], status
        vm.sh('sleep 2')
        second = lag_of(run_module, PARENT, csi)[0]
        assert second > first
        # A snapshot that wrote nothing: the replica holds its data before any pull, and is as old as it.
        vm.zfs('snapshot', csi + '@t-bk-same')
        volume = recovery_point(vm, run_module, PARENT, csi, csi + '@t-bk-same')
        assert volume['in_sync'] and volume['behind'] == 1, volume
        # One that wrote something: behind until a pull sends it, with the one before it.
        vm.sh('echo more >> /%s/proof.txt' % csi)
        vm.zfs('snapshot', csi + '@t-bk-now')
        assert not volume_of(lag_of(run_module, PARENT, csi)[1], csi)['in_sync']
        pull(vm, PARENT)
        volume = recovery_point(vm, run_module, PARENT, csi, csi + '@t-bk-now')
        assert (volume['newest_common']['name'].split('@')[1], volume['behind'], volume['in_sync']) == (
            't-bk-now',
            0,
            True,
        ), volume
        assert snapshots(vm, REPLICAS + csi) == snapshots(vm, csi)
    finally:
        for name in host_volumes:
            stack.module('nomad_host_volume', {'name': name, 'state': 'deleted'})
        vm.sh('systemctl start %s' % ' '.join(timers))
