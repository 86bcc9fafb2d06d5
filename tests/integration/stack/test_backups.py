"""site.yml backs up the stack's volumes (inventories/local/group_vars/zfs_replication.yml): sanoid snapshots every
volume under the CSI and host volume parents, and the VM, its own standby, pulls them into pool backup on its timers,
as the zfs_replication role's user. A host volume opted out of snapshots is opted out of the pulls by the host
volume plugin and left out by the pull, so it does not fail them. The node exporter serves what each pull left
(zfs_metrics), and the collection's replica alerts fire on those very series."""

import json
import shlex

import pytest
from stack_layout import HOST_VOLUMES, PARENT
from test_zfs_metrics import collected, input_series, promtool_test

# The extended tier (docs/testing.md, Tiers): make test leaves it out.
pytestmark = pytest.mark.extended

USER = 'zfs-replica'
REPLICAS = 'backup/replica/127.0.0.1/'
PULLS = {
    PARENT: 'zfs-replication-pull@backup_replica_127.0.0.1_tank_nomad_csi',
    HOST_VOLUMES: 'zfs-replication-pull@backup_replica_127.0.0.1_tank_nomad_volumes',
}
STATUS = '/var/lib/nomad-zfs-csi/replication/%s.json'  # what each pull leaves, the replication user's


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
        replica_metrics(vm, csi, volume['recovery_point']['created'])
    finally:
        for name in host_volumes:
            stack.module('nomad_host_volume', {'name': name, 'state': 'deleted'})
        vm.sh('systemctl start %s' % ' '.join(timers))


def replica_metrics(vm, csi, recovery_point):
    """What the last pulls left, as the exporter serves it; then a pull that fails, status files the replication user
    forged (some the collector refuses), and the collection's alerts on the series scraped."""
    pull = (('host', '127.0.0.1'), ('parent', PARENT), ('target', REPLICAS + PARENT))
    replica = (('dataset', csi), ('host', '127.0.0.1'), ('replica', REPLICAS + csi))
    got = collected(vm)
    assert got[('nomad_zfs_replica_recovery_point_timestamp_seconds', replica)] == recovery_point
    # The last pull brought t-bk-same and t-bk-now: what they hold beyond the snapshot before each.
    brought = vm.zfs(
        'get', '-Hp', '-o', 'value', 'written', REPLICAS + csi + '@t-bk-same', REPLICAS + csi + '@t-bk-now'
    )
    assert got[('nomad_zfs_replica_last_increment_bytes', replica)] == sum(int(n) for n in brought.stdout.split()) > 0
    ended = got[('nomad_zfs_replica_last_pull_timestamp_seconds', pull)]
    assert got[('nomad_zfs_replica_last_success_timestamp_seconds', pull)] == ended
    for parent in PULLS:
        labels = (('host', '127.0.0.1'), ('parent', parent), ('target', REPLICAS + parent))
        assert got[('nomad_zfs_replica_pull_configured', labels)] == 1
        assert got[('nomad_zfs_replica_last_pull_failed', labels)] == 0

    # The primary's host key is gone: the pull fails, and says so; the recovery points stay, read from the replicas.
    known_hosts = '/etc/nomad-zfs-csi/replication-known_hosts'
    vm.sh('mv %s %s.away' % (known_hosts, known_hosts))
    try:
        assert vm.sh('systemctl start %s.service' % PULLS[PARENT], check=False, timeout=600).returncode != 0
    finally:
        vm.sh('mv %s.away %s' % (known_hosts, known_hosts))
    got = collected(vm)
    now = int(vm.sh('date +%s').stdout)
    assert got[('nomad_zfs_replica_last_pull_failed', pull)] == 1
    assert got[('nomad_zfs_replica_last_success_timestamp_seconds', pull)] == ended
    assert got[('nomad_zfs_replica_last_pull_timestamp_seconds', pull)] >= ended
    assert got[('nomad_zfs_replica_recovery_point_timestamp_seconds', replica)] == recovery_point

    forged_status_adds_nothing(vm)

    # The pulls stopped (the test stopped their timers): the alerts on the series scraped, with the clock of the check
    # moved to when they were scraped.
    def keep(name, labels):
        return name == 'nomad_zfs_replica_last_pull_failed' or (
            name.endswith('recovery_point_timestamp_seconds') and labels == replica
        )

    lag = 3 * 3600 + 20 * 60 + now - int(recovery_point)
    behind = '%dh %dm %ds' % (lag // 3600, lag % 3600 // 60, lag % 60)  # humanizeDuration
    lagging = 'The replica %s on zfsvm:9100 holds the data of %s on 127.0.0.1 as it was %s ago' % (
        REPLICAS + csi,
        csi,
        behind,
    )
    failing = 'The pull of %s from 127.0.0.1 into %s on zfsvm:9100 fails' % (PARENT, REPLICAS + PARENT)
    expected = {'instance': 'zfsvm:9100', 'severity': 'warning'}
    alerts = [
        {'eval_time': '3h', 'alertname': 'NomadZfsReplicaLagging', 'exp_alerts': []},
        {'eval_time': '3h20m', 'alertname': 'NomadZfsReplicaLagging', 'exp_alerts': [
            {'exp_labels': dict(replica, **expected), 'exp_annotations': {'summary': lagging}}]},
        {'eval_time': '29m', 'alertname': 'NomadZfsReplicaPullFailing', 'exp_alerts': []},
        {'eval_time': '31m', 'alertname': 'NomadZfsReplicaPullFailing', 'exp_alerts': [
            {'exp_labels': dict(pull, **expected), 'exp_annotations': {'summary': failing}}]},
    ]  # fmt: skip
    series = input_series(got, keep, 220, clock=now)
    promtool_test(vm.workdir, [{'interval': '1m', 'input_series': series, 'alert_rule_test': alerts}])


def as_user(vm, command):
    """A shell command as the replication user, whose only SSH key is a standby's, bound to its forced command."""
    vm.sh('runuser -u %s -- sh -c %s' % (USER, shlex.quote(command)))


def forged_status_adds_nothing(vm):
    """The replication user owns the status files: one naming a line of its own (its pool faulted) and a volume outside
    its pull's parent, then a FIFO, which would block a reader, then one nested 100,000 deep (json's RecursionError)
    and one holding a lone surrogate (no .prom file can hold it). None adds a line of its own, a volume outside the
    parent, or stops the collector; the last three are refused, and the pull says so."""
    path = STATUS % PULLS[HOST_VOLUMES].split('@')[1]
    kept = vm.sh('cat %s' % path).stdout
    line = 'x"} 1\nnomad_zfs_pool_state{pool="tank",state="faulted'
    volumes = [
        {'name': HOST_VOLUMES + '/' + line, 'recovery_point': 1},
        {'name': PARENT + '/demo', 'recovery_point': 1},
    ]
    nested = 'import sys; sys.stdout.write(\'{"volumes": \' + "[" * 100000 + "]" * 100000 + "}")'
    # json.dumps writes the lone surrogate as its escape, which json.loads reads back as one.
    surrogate = json.dumps({'volumes': [{'name': HOST_VOLUMES + '/\ud800', 'recovery_point': 1}]})
    scraped = []
    try:
        as_user(vm, "cat > %s.f <<'EOF'\n%s\nEOF\nmv -f %s.f %s" % (path, json.dumps({'volumes': volumes}), path, path))
        scraped.append(collected(vm))
        as_user(vm, 'rm -f %s && mkfifo %s' % (path, path))
        scraped.append(collected(vm))
        as_user(vm, 'python3 -c %s > %s.f && mv -f %s.f %s' % (shlex.quote(nested), path, path, path))
        scraped.append(collected(vm))
        as_user(vm, "cat > %s.f <<'EOF'\n%s\nEOF\nmv -f %s.f %s" % (path, surrogate, path, path))
        scraped.append(collected(vm))
    finally:
        as_user(vm, "rm -f %s && cat > %s <<'EOF'\n%s\nEOF" % (path, path, kept.rstrip('\n')))
    # collected() ran the collector to its end each time: every other metric is there, and the pull whose file was
    # refused says so.
    refused = (('host', '127.0.0.1'), ('parent', HOST_VOLUMES), ('target', REPLICAS + HOST_VOLUMES))
    other = (('host', '127.0.0.1'), ('parent', PARENT), ('target', REPLICAS + PARENT))
    assert [got[('nomad_zfs_replica_status_unreadable', refused)] for got in scraped] == [0, 1, 1, 1]
    for got in scraped:
        assert got[('node_textfile_scrape_error', ())] == 0
        assert got[('nomad_zfs_replica_status_unreadable', other)] == 0
        assert got[('nomad_zfs_pool_state', (('pool', 'tank'), ('state', 'online')))] == 1
        assert got[('nomad_zfs_pool_state', (('pool', 'tank'), ('state', 'faulted')))] == 0
        assert ('nomad_zfs_pool_size_bytes', (('pool', 'tank'),)) in got
        assert any(name == 'nomad_zfs_volume_used_bytes' for name, _labels in got)
        replicas = [
            dict(labels) for _name, labels in got if ('host', '127.0.0.1') in labels and 'replica' in dict(labels)
        ]
        mine = [r['dataset'] for r in replicas if r['replica'].startswith(REPLICAS + HOST_VOLUMES + '/')]
        assert all(name.startswith(HOST_VOLUMES + '/') for name in mine), mine
    # The forged name under the parent is one label's value, escaped; a refused file gives its pull no figure, the
    # other's stay.
    forged = [
        dict(labels)['dataset'] for name, labels in scraped[0] if name.endswith('recovery_point_timestamp_seconds')
    ]
    assert HOST_VOLUMES + '/' + line.replace('"', '\\"').replace('\n', '\\n') in forged, forged
    for got in scraped[1:]:
        assert not any(REPLICAS + HOST_VOLUMES + '/' in str(labels) for _name, labels in got)
        assert any(name == 'nomad_zfs_replica_recovery_point_timestamp_seconds' for name, _labels in got)
