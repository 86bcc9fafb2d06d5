"""The standby end of pull replication: the zfs_replication role on a standby makes an inert replica parent,
delegates receive under it only, and pulls on its own systemd timer as the replication user, with the real
syncoid, from the primary end the same role serves. Two hosts of their own (separate_hosts.py): backup-1 pulls from
storage-1 by its name, with storage-1's host key pinned; storage-1's volumes are under tank/it-src, backup-1's
replicas in a file-backed pool `standby`, both the VM's pools, which the hosts share."""

import re

import pytest

from separate_hosts import STORAGE_1
from zfsvm_client import STOP_BACKUPS, changed, pull, wait_until

# The extended tier (docs/testing.md, Tiers): make test leaves it out.
pytestmark = pytest.mark.extended

USER = 'zfs-replica'
REPLICAS = 'standby/replica'
KEY = '/var/lib/%s/.ssh/id_ed25519' % USER
MIB = 1048576
# The real sanoid with the role's /etc/sanoid/sanoid.conf, its clock (perl's time()) a month ahead, so that every
# snapshot is old enough to prune; a cache and locks of its own.
SANOID_A_MONTH_ON = (
    "perl -e 'BEGIN { *CORE::GLOBAL::time = sub () { CORE::time() + 31 * 86400 } }"
    ' do "/usr/sbin/sanoid"; die $@ if $@\''
    ' -- --cache-dir=/run/it-sanoid --run-dir=/run/it-sanoid --verbose '
)
FILLED = 32 * MIB  # of the volume's 256 MiB refquota, before the 1 MiB that the increment carries
# What the role left on a host: its timers stopped and their units, the configurations and the keys gone.
CLEAN = """
for unit in $(systemctl list-units --all --plain --no-legend 'zfs-replication-pull@*' | cut -d' ' -f1); do
    systemctl disable --now "$unit"
done
systemctl disable --now sanoid.timer
rm -rf /etc/systemd/system/zfs-replication-pull@.* /etc/nomad-zfs-csi/pulls /etc/nomad-zfs-csi/replication-known_hosts \
    /etc/sanoid/sanoid.conf {key} {key}.pub /var/lib/{user}/.ssh/authorized_keys
systemctl daemon-reload
umount /mnt/it-replica
""".format(key=KEY, user=USER)


def bytes_received(host):
    """Bytes the running zfs receive has read so far: of the processes named zfs (not syncoid's shell, whose line
    names it too), the one whose arguments say receive."""
    out = host.sh(
        'for p in $(pgrep -x zfs); do grep -qa receive /proc/$p/cmdline && sed -n "s/^rchar: //p" /proc/$p/io; done '
        '2>/dev/null | sort -n | tail -n 1',
        check=False,
    )
    return int(out.stdout.strip() or 0)


def empty_pool(vm, storage_and_backup):
    """An empty pool `standby`, which nothing mounts (-m none), so that the VM can destroy it whatever backup-1
    mounted; afterwards no pool, and on both hosts no timer, no key and no policy, so that nothing runs during
    later tests."""
    hosts = storage_and_backup[:2]

    def clean():
        for host in hosts:
            host.sh(CLEAN, check=False)
        vm.sh('zpool destroy standby; rm -f /var/tmp/standby.img', check=False)

    clean()
    vm.sh('truncate -s 512M /var/tmp/standby.img && zpool create -m none standby /var/tmp/standby.img')
    yield 'standby'
    clean()


standby_pool = pytest.fixture(empty_pool, name='standby_pool')
# One pool for every refused pull: each refusal changes nothing, which each case checks.
refusing_standby_pool = pytest.fixture(empty_pool, name='refusing_standby_pool', scope='module')


@pytest.fixture
def primary(storage_and_backup, standby_pool):
    """On storage-1, tank/it-src/v1 (256 MiB refquota) with 32 MiB, a set-uid copy of id and one scheduled
    snapshot, and v2, opted out of snapshots and pulls."""
    storage = storage_and_backup[0]
    name = 'tank/it-src'
    storage.zfs('destroy', '-r', name, check=False)
    storage.zfs('create', '-p', '-o', 'refquota=256M', name + '/v1')
    # Opted out of snapshots (sanoid's check) and of pulls: syncoid 2.1.0 fails a recursive run with a dataset that
    # has no snapshot, unless its syncoid:sync is false.
    storage.zfs('create', '-o', 'com.sun:auto-snapshot=false', '-o', 'syncoid:sync=false', name + '/v2')
    storage.sh(
        'head -c %d /dev/urandom > /{0}/v1/f && install -m 4755 /usr/bin/id /{0}/v1/id-suid'.format(name) % FILLED
    )
    storage.zfs('snapshot', name + '/v1@autosnap_1_hourly')
    yield name
    storage.zfs('destroy', '-r', name, check=False)


def standby_vars(storage, source, **pull):
    """backup-1's pull of source from storage-1, by its name, with its host key pinned."""
    return {
        'zfs_replication_replica_parent': REPLICAS,
        'zfs_replication_pulls': [dict({'host': STORAGE_1, 'host_key': storage.host_key(), 'parent': source}, **pull)],
    }


def source_vars(backup, source):
    """storage-1 as the primary of source, serving backup-1's key from backup-1's address."""
    public = backup.sh('cat %s.pub' % KEY).stdout.strip()
    return {
        'zfs_replication_snapshots': [{'parent': source}],
        'zfs_replication_standby_keys': [{'key': public, 'from': backup.name}],
    }


def quiet(*hosts):
    """Stop the timers the role started (and a run of theirs): the test pulls itself, and sanoid's snapshots or a
    timer's pull landing midway would change what it asserts."""
    for host in hosts:
        host.sh(STOP_BACKUPS)


def guid(host, snapshot):
    return host.zfs('get', '-Hp', '-o', 'value', 'guid', snapshot).stdout.strip()


def exists(host, name):
    return host.zfs('list', name, check=False).returncode == 0


def stream_size(host, *send):
    """The bytes of `zfs send <send>`, by zfs's dry run."""
    out = host.sh('zfs send -nvP %s 2>&1' % ' '.join(send)).stdout
    return int([line.split()[1] for line in out.splitlines() if line.startswith('size')][0])


def hourly(host, dataset):
    """The dataset's hourly snapshots, oldest first."""
    out = host.zfs('list', '-H', '-d', '1', '-t', 'snapshot', '-s', 'createtxg', '-o', 'name', dataset).stdout
    return [name.split('@')[1] for name in out.split() if name.endswith('_hourly')]


def test_the_standby_pulls_on_its_timer_as_its_user_into_an_inert_parent(
    storage_and_backup, primary, play_primary, play_standby, run_on_standby
):
    storage, backup = storage_and_backup[:2]
    standby = standby_vars(storage, primary, keep={'hourly': 2})
    target = '%s/%s/%s' % (REPLICAS, STORAGE_1, primary)  # the default: <replica parent>/<host>/<parent>
    instance = target.replace('/', '_')
    timer = 'zfs-replication-pull@%s.timer' % instance

    checked = play_standby(standby, '--check', '--diff')
    assert checked.returncode == 0 and changed(checked)[backup.name] > 0, checked.stdout[-3000:]
    assert not exists(backup, REPLICAS) and backup.sh('test -e %s' % KEY, check=False).returncode != 0

    assert changed(play_standby(standby))[backup.name] > 0
    # backup-1's public key, served by storage-1 from backup-1's address.
    assert changed(play_primary(source_vars(backup, primary)))[storage.name] > 0
    # A second run's changed=0: site.yml's (test_csi_plugin_recovery.py).

    values = backup.zfs('get', '-H', '-o', 'value', 'mountpoint,readonly,setuid,devices,exec,volmode', REPLICAS).stdout
    assert values.split() == ['none', 'on', 'off', 'off', 'off', 'none']
    assert backup.zfs('allow', REPLICAS).stdout.split('\n', 1)[1].split() == [
        'Local+Descendent',
        'permissions:',
        'user',
        USER,
        'create,mount,receive',
    ]
    assert backup.sh('systemctl is-enabled %s; systemctl is-active %s' % (timer, timer)).stdout.split() == [
        'enabled',
        'active',
    ]
    assert backup.sh('stat -c %%U:%%a %s' % KEY).stdout.strip() == USER + ':600'
    quiet(storage, backup)

    # The first pull is full, the second incremental; both as the user, received unmounted.
    pull(backup, instance)
    assert guid(backup, target + '/v1@autosnap_1_hourly') == guid(storage, primary + '/v1@autosnap_1_hourly')
    assert backup.zfs('get', '-H', '-o', 'value', 'mounted', target + '/v1').stdout.strip() == 'no'
    storage.sh('head -c %d /dev/urandom > /%s/v1/g' % (MIB, primary))
    storage.zfs('snapshot', primary + '/v1@autosnap_2_hourly')
    journal = pull(backup, instance)
    assert 'incremental' in journal.lower(), journal
    assert guid(backup, target + '/v1@autosnap_2_hourly') == guid(storage, primary + '/v1@autosnap_2_hourly')
    # The increment carries the 1 MiB written, not the 32 MiB in the volume (zfs's own estimate of each stream).
    increment = stream_size(storage, '-i', '@autosnap_1_hourly', primary + '/v1@autosnap_2_hourly')
    assert MIB <= increment < 1.2 * MIB, increment
    assert stream_size(storage, primary + '/v1@autosnap_2_hourly') > FILLED
    # v2 has no snapshot: the pull leaves it out of syncoid, which would fail on it without its syncoid:sync=false.
    assert (
        not exists(backup, target + '/v2')
        and '1 of 2 datasets to send (1 in sync or without snapshots): %s/v1' % primary in journal
    ), journal

    # The recovery point, read through the same key: in step, then one snapshot behind.
    info = {'host': STORAGE_1, 'parent': primary, 'target': target}
    status = run_on_standby('zfs_replication_info', info, check=True)
    v1, v2 = status['volumes']
    assert v1['newest_common']['name'] == target + '/v1@autosnap_2_hourly' and v1['behind'] == 0, status
    assert 0 <= status['lag_seconds'] < 900 and status['without_snapshots'] == [primary + '/v2'], status
    storage.zfs('snapshot', primary + '/v1@autosnap_3_hourly')
    v1 = run_on_standby('zfs_replication_info', info)['volumes'][0]
    assert (v1['newest_source']['name'], v1['behind']) == (primary + '/v1@autosnap_3_hourly', 1)
    # Nothing was written before that snapshot: the replica holds its data already, so the pull runs no syncoid
    # (which would send that snapshot, with about five SSH sessions), and the replica keeps its newest snapshot.
    assert v1['in_sync'], v1
    journal = pull(backup, instance)
    assert '0 of 2 datasets to send (2 in sync or without snapshots): nothing to pull' in journal, journal
    assert not exists(backup, target + '/v1@autosnap_3_hourly')
    shown = backup.sh('systemctl show -p User -p NoNewPrivileges --value zfs-replication-pull@%s.service' % instance)
    assert shown.stdout.split() == [USER, 'yes'], shown.stdout

    # A pull killed midway resumes where it stopped (zfs receive -s and its token), not from zero.
    assert changed(play_standby(dict(standby, zfs_replication_pull_bwlimit='1M')))[backup.name] > 0
    quiet(storage, backup)
    storage.sh('head -c %d /dev/urandom > /%s/v1/h' % (24 * MIB, primary))
    storage.zfs('snapshot', primary + '/v1@autosnap_4_hourly')
    whole = stream_size(storage, '-i', '@autosnap_3_hourly', primary + '/v1@autosnap_4_hourly')
    backup.sh('systemctl start --no-block zfs-replication-pull@%s.service' % instance)
    # A third of the stream in, at the 1 MiB/s limit: counted from what the receive read, since a loaded host took
    # more than the 8 s once allowed before the first byte (the resume then had the whole stream left).
    wait_until(lambda: bytes_received(backup) >= whole // 3, timeout=300, why='a third of the stream received')
    backup.sh('systemctl kill -s KILL zfs-replication-pull@%s.service' % instance)
    token = backup.zfs('get', '-H', '-o', 'value', 'receive_resume_token', target + '/v1').stdout.strip()
    assert token not in ('', '-'), 'the killed receive left no resume token'
    assert changed(play_standby(standby))[backup.name] > 0  # no limit
    quiet(storage, backup)
    journal = pull(backup, instance)
    remaining = re.search(r'Resuming interrupted zfs send/receive .*\(~ ([0-9.]+) ([KMG]i?B) remaining\)', journal)
    assert remaining, journal
    left = float(remaining.group(1)) * {'K': 2**10, 'M': 2**20, 'G': 2**30}[remaining.group(2)[0]]
    assert left < 0.8 * whole, (left, whole, journal)
    assert guid(backup, target + '/v1@autosnap_4_hourly') == guid(storage, primary + '/v1@autosnap_4_hourly')

    # syncoid 2.1.0 bookmarks the newest snapshot of a whole pull, not of a resumed one (the role README's Limits).
    assert not exists(storage, primary + '/v1#autosnap_4_hourly')
    # sanoid on the primary pruned every snapshot the replica has: the bookmark the last pull left is where the next
    # increment starts, with no full send and no rollback.
    for n in (5, 6):
        storage.sh('head -c %d /dev/urandom > /%s/v1/i%d' % (MIB, primary, n))
        storage.zfs('snapshot', primary + '/v1@autosnap_%d_hourly' % n)
        if n == 6:
            storage.zfs('destroy', primary + '/v1@autosnap_1_hourly%autosnap_5_hourly')
        journal = pull(backup, instance)
    from_bookmark = r"Sending incremental %s/v1#'?autosnap_5_hourly'? \.\.\. autosnap_6_hourly" % primary
    assert re.search(from_bookmark, journal), journal
    assert guid(backup, target + '/v1@autosnap_6_hourly') == guid(storage, primary + '/v1@autosnap_6_hourly')

    # sanoid on the standby prunes the replica to the pull's keep (2 hourly), oldest first, and keeps the newest, from
    # which the next pull sends only the increment. The primary's 24 hourly are not reached: nothing pruned there.
    received = hourly(backup, target + '/v1')
    assert len(received) > 2 and received[-1] == 'autosnap_6_hourly', received
    pruned = backup.sh(SANOID_A_MONTH_ON + '--prune-snapshots', timeout=300)
    assert hourly(backup, target + '/v1') == received[-2:], pruned.stdout
    assert hourly(storage, primary + '/v1') == ['autosnap_6_hourly'], pruned.stdout
    storage.sh('head -c %d /dev/urandom > /%s/v1/i7' % (MIB, primary))
    storage.zfs('snapshot', primary + '/v1@autosnap_7_hourly')
    journal = pull(backup, instance)
    assert re.search(
        r"Sending incremental %s/v1@'?autosnap_6_hourly'? \.\.\. '?autosnap_7_hourly" % primary, journal
    ), journal
    assert guid(backup, target + '/v1@autosnap_7_hourly') == guid(storage, primary + '/v1@autosnap_7_hourly')

    # The same user and syncoid, told to write outside the replica parent, change nothing there.
    before = storage.zfs('list', '-H', '-r', '-t', 'all', '-o', 'name,guid', 'tank').stdout
    outside = backup.sh(
        'cd / && runuser -u %s -- syncoid --no-privilege-elevation --no-sync-snap --no-rollback --recvoptions=u '
        '--recursive --sshkey=%s --sshoption=UserKnownHostsFile=/etc/nomad-zfs-csi/replication-known_hosts '
        '%s@%s:%s tank/it-evil 2>&1' % (USER, KEY, USER, STORAGE_1, primary),
        check=False,
    )
    assert outside.returncode != 0, outside.stdout
    for command in (
        'zfs destroy -r %s' % REPLICAS,
        'zfs create tank/it-evil',
        'zfs set readonly=off ' + target,
    ):
        refused = backup.sh('cd / && runuser -u %s -- %s' % (USER, command), check=False)
        assert refused.returncode != 0, command
    assert storage.zfs('list', '-H', '-r', '-t', 'all', '-o', 'name,guid', 'tank').stdout == before
    assert exists(backup, target + '/v1@autosnap_7_hourly')

    # Mounted by root, the replica is read-only and its set-uid file runs as nothing.
    backup.sh('zfs set mountpoint=/mnt/it-replica %s/v1 && (zfs mount %s/v1 || true)' % (target, target))
    assert {'ro', 'nosuid', 'nodev', 'noexec'} <= set(
        backup.sh('findmnt -n -o OPTIONS /mnt/it-replica').stdout.split(',')
    )
    assert backup.sh('stat -c %A /mnt/it-replica/id-suid').stdout.strip() == '-rwsr-xr-x'  # received with its bit
    ran = backup.sh('runuser -u nobody -- /mnt/it-replica/id-suid -u', check=False)
    assert ran.returncode != 0 and 'Permission denied' in ran.stderr and ran.stdout == '', ran
    backup.sh('zfs umount %s/v1 && zfs inherit mountpoint %s/v1' % (target, target))

    # A pull no longer listed stops; its replica stays.
    assert changed(play_standby(dict(standby, zfs_replication_pulls=[])))[backup.name] > 0
    assert backup.sh('systemctl is-enabled %s' % timer, check=False).stdout.strip() != 'enabled'
    assert backup.sh('systemctl is-active %s' % timer, check=False).stdout.strip() == 'inactive'
    assert exists(backup, target + '/v1@autosnap_7_hourly')


def test_a_pull_may_land_under_a_replica_parent_of_its_own(storage_and_backup, primary, play_standby):
    """A standby with two pools keeps each primary's replicas where they would be adopted: each replica parent is
    made inert and delegated alike."""
    storage, backup = storage_and_backup[:2]
    variables = standby_vars(storage, primary)
    variables['zfs_replication_pulls'].append(
        dict(variables['zfs_replication_pulls'][0], replica_parent=REPLICAS + '-b')
    )
    assert changed(play_standby(variables))[backup.name] > 0
    quiet(backup)
    for replica_parent in (REPLICAS, REPLICAS + '-b'):
        values = backup.zfs(
            'get', '-H', '-o', 'value', 'mountpoint,readonly,setuid,devices,exec', replica_parent
        ).stdout
        assert values.split() == ['none', 'on', 'off', 'off', 'off'], replica_parent
        assert backup.zfs('allow', replica_parent).stdout.split('\n', 1)[1].split()[-2:] == [
            USER,
            'create,mount,receive',
        ]
        target = '%s/%s/%s' % (replica_parent, STORAGE_1, primary)
        assert exists(backup, target)
        timer = 'zfs-replication-pull@%s.timer' % target.replace('/', '_')
        assert backup.sh('systemctl is-enabled %s' % timer).stdout.strip() == 'enabled'


@pytest.mark.parametrize(
    ('change', 'message'),
    [
        ({'zfs_replication_replica_parent': ''}, 'zfs_replication_replica_parent is empty'),
        ({'parent': 'tank/it-src\nTARGET=tank'}, 'parent is a dataset name'),
        ({'target': 'tank/it-elsewhere'}, "a dataset under the pull's replica_parent"),
        (
            {'replica_parent': 'tank/it-elsewhere', 'target': 'standby/replica/x'},
            "a dataset under the pull's replica_parent",
        ),
        ({'replica_parent': 'tank/it elsewhere'}, "a dataset under the pull's replica_parent"),
    ],
    ids=['no-replica-parent', 'parent-with-newline', 'target-outside', 'target-outside-its-own', 'bad-replica-parent'],
)
def test_a_bad_pull_is_refused_before_any_change(
    storage_and_backup, refusing_standby_pool, play_standby, change, message
):
    storage, backup = storage_and_backup[:2]
    pull_change = {k: v for k, v in change.items() if not k.startswith('zfs_')}
    variables = dict(
        standby_vars(storage, 'tank/it-src', **pull_change),
        **{k: v for k, v in change.items() if k.startswith('zfs_')},
    )
    ran = play_standby(variables)
    assert ran.returncode != 0 and message in ran.stdout and 'changed=0' in ran.stdout, ran.stdout[-3000:]
    assert not exists(backup, 'standby/replica') and not exists(backup, 'tank/it-elsewhere')
    assert backup.sh('test -e %s' % KEY, check=False).returncode != 0
