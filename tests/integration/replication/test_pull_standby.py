"""The standby end of pull replication: the zfs_replication role on a standby makes an inert replica parent,
delegates receive under it only, and pulls on its own systemd timer as the replication user, with the real
syncoid, from the primary end the same role serves. The VM plays both hosts: tank is the primary's pool, a
file-backed pool `standby` the standby's."""

import re

import pytest

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
CLEAN = """
for unit in $(systemctl list-units --all --plain --no-legend 'zfs-replication-pull@*' | cut -d' ' -f1); do
    systemctl disable --now "$unit"
done
systemctl disable --now sanoid.timer
rm -rf /etc/systemd/system/zfs-replication-pull@.* /etc/nomad-zfs-csi/pulls /etc/nomad-zfs-csi/replication-known_hosts \
    /etc/sanoid/sanoid.conf {key} {key}.pub /var/lib/{user}/.ssh/authorized_keys
systemctl daemon-reload
umount /mnt/it-replica; zpool destroy standby; rm -f /var/tmp/standby.img
""".format(key=KEY, user=USER)


def bytes_received(vm):
    """Bytes the running zfs receive has read so far: of the processes named zfs (not syncoid's shell, whose line
    names it too), the one whose arguments say receive."""
    out = vm.sh(
        'for p in $(pgrep -x zfs); do grep -qa receive /proc/$p/cmdline && sed -n "s/^rchar: //p" /proc/$p/io; done '
        '2>/dev/null | sort -n | tail -n 1',
        check=False,
    )
    return int(out.stdout.strip() or 0)


def empty_pool(vm):
    """An empty pool `standby`; afterwards no pool, no timer, no key and no policy, so that nothing runs during
    later tests."""
    vm.sh(CLEAN, check=False)
    vm.sh('truncate -s 512M /var/tmp/standby.img && zpool create standby /var/tmp/standby.img')
    yield 'standby'
    vm.sh(CLEAN, check=False)


standby_pool = pytest.fixture(empty_pool, name='standby_pool')
# One pool for every refused pull: each refusal changes nothing, which each case checks.
refusing_standby_pool = pytest.fixture(empty_pool, name='refusing_standby_pool', scope='module')


@pytest.fixture
def primary(vm, standby_pool):
    """tank/it-src/v1 (256 MiB refquota) with 32 MiB, a set-uid copy of id and one scheduled snapshot, and v2,
    opted out of snapshots and pulls."""
    name = vm.pool + '/it-src'
    vm.zfs('destroy', '-r', name, check=False)
    vm.zfs('create', '-p', '-o', 'refquota=256M', name + '/v1')
    # Opted out of snapshots (sanoid's check) and of pulls: syncoid 2.1.0 fails a recursive run with a dataset that
    # has no snapshot, unless its syncoid:sync is false.
    vm.zfs('create', '-o', 'com.sun:auto-snapshot=false', '-o', 'syncoid:sync=false', name + '/v2')
    vm.sh('head -c %d /dev/urandom > /{0}/v1/f && install -m 4755 /usr/bin/id /{0}/v1/id-suid'.format(name) % FILLED)
    vm.zfs('snapshot', name + '/v1@autosnap_1_hourly')
    yield name
    vm.zfs('destroy', '-r', name, check=False)


def standby_vars(vm, source, **pull):
    host_key = vm.sh('cat /etc/ssh/ssh_host_ed25519_key.pub').stdout.strip()
    return {
        'zfs_replication_snapshots': [{'parent': source}],
        'zfs_replication_replica_parent': REPLICAS,
        'zfs_replication_pulls': [dict({'host': '127.0.0.1', 'host_key': host_key, 'parent': source}, **pull)],
    }


def quiet(vm):
    """Stop the timers the role started (and a run of theirs): the test pulls itself, and sanoid's snapshots or a
    timer's pull landing midway would change what it asserts."""
    vm.sh(STOP_BACKUPS)


def guid(vm, snapshot):
    return vm.zfs('get', '-Hp', '-o', 'value', 'guid', snapshot).stdout.strip()


def exists(vm, name):
    return vm.zfs('list', name, check=False).returncode == 0


def stream_size(vm, *send):
    """The bytes of `zfs send <send>`, by zfs's dry run."""
    out = vm.sh('zfs send -nvP %s 2>&1' % ' '.join(send)).stdout
    return int([line.split()[1] for line in out.splitlines() if line.startswith('size')][0])


def hourly(vm, dataset):
    """The dataset's hourly snapshots, oldest first."""
    out = vm.zfs('list', '-H', '-d', '1', '-t', 'snapshot', '-s', 'createtxg', '-o', 'name', dataset).stdout
    return [name.split('@')[1] for name in out.split() if name.endswith('_hourly')]


def test_the_standby_pulls_on_its_timer_as_its_user_into_an_inert_parent(vm, primary, play, run_module):
    standby = standby_vars(vm, primary, keep={'hourly': 2})
    target = '%s/127.0.0.1/%s' % (REPLICAS, primary)  # the default: <replica parent>/<host>/<parent>
    instance = target.replace('/', '_')
    timer = 'zfs-replication-pull@%s.timer' % instance

    checked = play(standby, '--check', '--diff')
    assert checked.returncode == 0 and changed(checked)['zfsvm'] > 0, checked.stdout[-3000:]
    assert not exists(vm, REPLICAS) and vm.sh('test -e %s' % KEY, check=False).returncode != 0

    assert changed(play(standby))['zfsvm'] > 0
    # The standby's public key, then its own role run as a primary too, serving that key: a host can be both.
    both = dict(standby, zfs_replication_standby_keys=[vm.sh('cat %s.pub' % KEY).stdout.strip()])
    assert changed(play(both))['zfsvm'] > 0
    # A second run's changed=0 with a standby that is its own primary: site.yml's (test_csi_plugin_recovery.py).

    values = vm.zfs('get', '-H', '-o', 'value', 'mountpoint,readonly,setuid,devices,exec,volmode', REPLICAS).stdout
    assert values.split() == ['none', 'on', 'off', 'off', 'off', 'none']
    assert vm.zfs('allow', REPLICAS).stdout.split('\n', 1)[1].split() == [
        'Local+Descendent',
        'permissions:',
        'user',
        USER,
        'create,mount,receive',
    ]
    assert vm.sh('systemctl is-enabled %s; systemctl is-active %s' % (timer, timer)).stdout.split() == [
        'enabled',
        'active',
    ]
    assert vm.sh('stat -c %%U:%%a %s' % KEY).stdout.strip() == USER + ':600'
    quiet(vm)

    # The first pull is full, the second incremental; both as the user, received unmounted.
    pull(vm, instance)
    assert guid(vm, target + '/v1@autosnap_1_hourly') == guid(vm, primary + '/v1@autosnap_1_hourly')
    assert vm.zfs('get', '-H', '-o', 'value', 'mounted', target + '/v1').stdout.strip() == 'no'
    vm.sh('head -c %d /dev/urandom > /%s/v1/g' % (MIB, primary))
    vm.zfs('snapshot', primary + '/v1@autosnap_2_hourly')
    journal = pull(vm, instance)
    assert 'incremental' in journal.lower(), journal
    assert guid(vm, target + '/v1@autosnap_2_hourly') == guid(vm, primary + '/v1@autosnap_2_hourly')
    # The increment carries the 1 MiB written, not the 32 MiB in the volume (zfs's own estimate of each stream).
    increment = stream_size(vm, '-i', '@autosnap_1_hourly', primary + '/v1@autosnap_2_hourly')
    assert MIB <= increment < 1.2 * MIB, increment
    assert stream_size(vm, primary + '/v1@autosnap_2_hourly') > FILLED
    # v2 has no snapshot: the pull leaves it out of syncoid, which would fail on it without its syncoid:sync=false.
    assert (
        not exists(vm, target + '/v2')
        and '1 of 2 datasets to send (1 in sync or without snapshots): %s/v1' % primary in journal
    ), journal

    # The recovery point, read through the same key: in step, then one snapshot behind.
    info = {'host': '127.0.0.1', 'parent': primary, 'target': target}
    status = run_module('zfs_replication_info', info, check=True)
    v1, v2 = status['volumes']
    assert v1['newest_common']['name'] == target + '/v1@autosnap_2_hourly' and v1['behind'] == 0, status
    assert 0 <= status['lag_seconds'] < 900 and status['without_snapshots'] == [primary + '/v2'], status
    vm.zfs('snapshot', primary + '/v1@autosnap_3_hourly')
    v1 = run_module('zfs_replication_info', info)['volumes'][0]
    assert (v1['newest_source']['name'], v1['behind']) == (primary + '/v1@autosnap_3_hourly', 1)
    # Nothing was written before that snapshot: the replica holds its data already, so the pull runs no syncoid
    # (which would send that snapshot, with about five SSH sessions), and the replica keeps its newest snapshot.
    assert v1['in_sync'], v1
    journal = pull(vm, instance)
    assert '0 of 2 datasets to send (2 in sync or without snapshots): nothing to pull' in journal, journal
    assert not exists(vm, target + '/v1@autosnap_3_hourly')
    shown = vm.sh('systemctl show -p User -p NoNewPrivileges --value zfs-replication-pull@%s.service' % instance)
    assert shown.stdout.split() == [USER, 'yes'], shown.stdout

    # A pull killed midway resumes where it stopped (zfs receive -s and its token), not from zero.
    assert changed(play(dict(both, zfs_replication_pull_bwlimit='1M')))['zfsvm'] > 0
    quiet(vm)
    vm.sh('head -c %d /dev/urandom > /%s/v1/h' % (24 * MIB, primary))
    vm.zfs('snapshot', primary + '/v1@autosnap_4_hourly')
    whole = stream_size(vm, '-i', '@autosnap_3_hourly', primary + '/v1@autosnap_4_hourly')
    vm.sh('systemctl start --no-block zfs-replication-pull@%s.service' % instance)
    # A third of the stream in, at the 1 MiB/s limit: counted from what the receive read, since a loaded host took
    # more than the 8 s once allowed before the first byte (the resume then had the whole stream left).
    wait_until(lambda: bytes_received(vm) >= whole // 3, timeout=300, why='a third of the stream received')
    vm.sh('systemctl kill -s KILL zfs-replication-pull@%s.service' % instance)
    token = vm.zfs('get', '-H', '-o', 'value', 'receive_resume_token', target + '/v1').stdout.strip()
    assert token not in ('', '-'), 'the killed receive left no resume token'
    assert changed(play(both))['zfsvm'] > 0  # no limit
    quiet(vm)
    journal = pull(vm, instance)
    remaining = re.search(r'Resuming interrupted zfs send/receive .*\(~ ([0-9.]+) ([KMG]i?B) remaining\)', journal)
    assert remaining, journal
    left = float(remaining.group(1)) * {'K': 2**10, 'M': 2**20, 'G': 2**30}[remaining.group(2)[0]]
    assert left < 0.8 * whole, (left, whole, journal)
    assert guid(vm, target + '/v1@autosnap_4_hourly') == guid(vm, primary + '/v1@autosnap_4_hourly')

    # syncoid 2.1.0 bookmarks the newest snapshot of a whole pull, not of a resumed one (the role README's Limits).
    assert not exists(vm, primary + '/v1#autosnap_4_hourly')
    # sanoid on the primary pruned every snapshot the replica has: the bookmark the last pull left is where the next
    # increment starts, with no full send and no rollback.
    for n in (5, 6):
        vm.sh('head -c %d /dev/urandom > /%s/v1/i%d' % (MIB, primary, n))
        vm.zfs('snapshot', primary + '/v1@autosnap_%d_hourly' % n)
        if n == 6:
            vm.zfs('destroy', primary + '/v1@autosnap_1_hourly%autosnap_5_hourly')
        journal = pull(vm, instance)
    from_bookmark = r"Sending incremental %s/v1#'?autosnap_5_hourly'? \.\.\. autosnap_6_hourly" % primary
    assert re.search(from_bookmark, journal), journal
    assert guid(vm, target + '/v1@autosnap_6_hourly') == guid(vm, primary + '/v1@autosnap_6_hourly')

    # sanoid on the standby prunes the replica to the pull's keep (2 hourly), oldest first, and keeps the newest, from
    # which the next pull sends only the increment. The primary's 24 hourly are not reached: nothing pruned there.
    received = hourly(vm, target + '/v1')
    assert len(received) > 2 and received[-1] == 'autosnap_6_hourly', received
    pruned = vm.sh(SANOID_A_MONTH_ON + '--prune-snapshots', timeout=300)
    assert hourly(vm, target + '/v1') == received[-2:], pruned.stdout
    assert hourly(vm, primary + '/v1') == ['autosnap_6_hourly'], pruned.stdout
    vm.sh('head -c %d /dev/urandom > /%s/v1/i7' % (MIB, primary))
    vm.zfs('snapshot', primary + '/v1@autosnap_7_hourly')
    journal = pull(vm, instance)
    assert re.search(
        r"Sending incremental %s/v1@'?autosnap_6_hourly'? \.\.\. '?autosnap_7_hourly" % primary, journal
    ), journal
    assert guid(vm, target + '/v1@autosnap_7_hourly') == guid(vm, primary + '/v1@autosnap_7_hourly')

    # The same user and syncoid, told to write outside the replica parent, change nothing there.
    before = vm.zfs('list', '-H', '-r', '-t', 'all', '-o', 'name,guid', vm.pool).stdout
    outside = vm.sh(
        'cd / && runuser -u %s -- syncoid --no-privilege-elevation --no-sync-snap --no-rollback --recvoptions=u '
        '--recursive --sshkey=%s --sshoption=UserKnownHostsFile=/etc/nomad-zfs-csi/replication-known_hosts '
        '%s@127.0.0.1:%s %s/it-evil 2>&1' % (USER, KEY, USER, primary, vm.pool),
        check=False,
    )
    assert outside.returncode != 0, outside.stdout
    for command in (
        'zfs destroy -r %s' % REPLICAS,
        'zfs create %s/it-evil' % vm.pool,
        'zfs set readonly=off ' + target,
    ):
        refused = vm.sh('cd / && runuser -u %s -- %s' % (USER, command), check=False)
        assert refused.returncode != 0, command
    assert vm.zfs('list', '-H', '-r', '-t', 'all', '-o', 'name,guid', vm.pool).stdout == before
    assert exists(vm, target + '/v1@autosnap_7_hourly')

    # Mounted by root, the replica is read-only and its set-uid file runs as nothing.
    vm.sh('zfs set mountpoint=/mnt/it-replica %s/v1 && (zfs mount %s/v1 || true)' % (target, target))
    assert {'ro', 'nosuid', 'nodev', 'noexec'} <= set(vm.sh('findmnt -n -o OPTIONS /mnt/it-replica').stdout.split(','))
    assert vm.sh('stat -c %A /mnt/it-replica/id-suid').stdout.strip() == '-rwsr-xr-x'  # received with its bit
    ran = vm.sh('runuser -u nobody -- /mnt/it-replica/id-suid -u', check=False)
    assert ran.returncode != 0 and 'Permission denied' in ran.stderr and ran.stdout == '', ran
    vm.sh('zfs umount %s/v1 && zfs inherit mountpoint %s/v1' % (target, target))

    # A pull no longer listed stops; its replica stays.
    assert changed(play(dict(both, zfs_replication_pulls=[])))['zfsvm'] > 0
    assert vm.sh('systemctl is-enabled %s' % timer, check=False).stdout.strip() != 'enabled'
    assert vm.sh('systemctl is-active %s' % timer, check=False).stdout.strip() == 'inactive'
    assert exists(vm, target + '/v1@autosnap_7_hourly')


def test_a_pull_may_land_under_a_replica_parent_of_its_own(vm, primary, play):
    """A standby with two pools keeps each primary's replicas where they would be adopted: each replica parent is
    made inert and delegated alike."""
    variables = standby_vars(vm, primary)
    variables['zfs_replication_pulls'].append(
        dict(variables['zfs_replication_pulls'][0], replica_parent=REPLICAS + '-b')
    )
    assert changed(play(variables))['zfsvm'] > 0
    quiet(vm)
    for replica_parent in (REPLICAS, REPLICAS + '-b'):
        values = vm.zfs('get', '-H', '-o', 'value', 'mountpoint,readonly,setuid,devices,exec', replica_parent).stdout
        assert values.split() == ['none', 'on', 'off', 'off', 'off'], replica_parent
        assert vm.zfs('allow', replica_parent).stdout.split('\n', 1)[1].split()[-2:] == [USER, 'create,mount,receive']
        target = '%s/127.0.0.1/%s' % (replica_parent, primary)
        assert exists(vm, target)
        timer = 'zfs-replication-pull@%s.timer' % target.replace('/', '_')
        assert vm.sh('systemctl is-enabled %s' % timer).stdout.strip() == 'enabled'


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
def test_a_bad_pull_is_refused_before_any_change(vm, refusing_standby_pool, play, change, message):
    pull_change = {k: v for k, v in change.items() if not k.startswith('zfs_')}
    variables = dict(
        standby_vars(vm, vm.pool + '/it-src', **pull_change),
        **{k: v for k, v in change.items() if k.startswith('zfs_')},
    )
    ran = play(variables)
    assert ran.returncode != 0 and message in ran.stdout and 'changed=0' in ran.stdout, ran.stdout[-3000:]
    assert not exists(vm, 'standby/replica') and not exists(vm, vm.pool + '/it-elsewhere')
    assert vm.sh('test -e %s' % KEY, check=False).returncode != 0
