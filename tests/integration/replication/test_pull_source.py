"""The primary end of pull replication, between two hosts of their own (separate_hosts.py): the zfs_replication
role's user, forced command and delegation on storage-1, with the real syncoid on backup-1 pulling through the
standby's key by storage-1's name, the key bound to backup-1's address, and everything else refused through it.
storage-1's volumes are under tank/it-src, backup-1's replicas in pool standby: the VM's pools, which the hosts
share."""

import re

import pytest

from separate_hosts import JUMP, STORAGE_1
from zfsvm_client import STOP_BACKUPS, changed, wait_until

USER = 'zfs-replica'
# Where the role's standby end keeps its key, which a primary's zfs_replication_standby_hosts reads.
KEY = '/var/lib/zfs-replica/.ssh/id_ed25519'
# ConnectTimeout: a pull across the partition below fails in seconds.
SYNCOID = (
    'syncoid --no-privilege-elevation --no-sync-snap --create-bookmark --no-rollback --recvoptions=u '
    '--recursive --skip-parent --sshkey=%s --sshoption=StrictHostKeyChecking=no --sshoption=ConnectTimeout=5 '
    '%s@%s:{src} {dst}' % (KEY, USER, STORAGE_1)
)
SOURCE = 'tank/it-src'


@pytest.fixture
def primary(vm, storage_and_backup):
    """On storage-1, tank/it-src/v1 with 1 MiB in it and one scheduled snapshot; pool standby with backup-1's replica
    parent; backup-1's key pair. All gone afterwards, the user's key revoked."""
    storage, backup = storage_and_backup[:2]

    def clean():
        vm.sh('zpool destroy standby; rm -f /var/tmp/standby.img', check=False)
        backup.sh('rm -f %s %s.pub' % (KEY, KEY), check=False)
        storage.sh('rm -f /var/lib/%s/.ssh/authorized_keys' % USER, check=False)
        # By storage-1, where they are mounted: the VM sees them unmounted, and its destroy would find them busy.
        storage.zfs('destroy', '-r', SOURCE, check=False)
        storage.zfs('destroy', '-r', 'tank/it-other', check=False)

    clean()
    storage.zfs('create', '-p', SOURCE + '/v1')
    storage.zfs('create', 'tank/it-other')
    storage.sh('head -c 1048576 /dev/urandom > /%s/v1/f && zfs snapshot %s/v1@autosnap_1_hourly' % (SOURCE, SOURCE))
    storage.zfs('snapshot', 'tank/it-other@autosnap_1_hourly')
    # Nothing of it mounted (-m none), in the VM or in backup-1, so that the VM can destroy it.
    vm.sh('truncate -s 512M /var/tmp/standby.img && zpool create -m none standby /var/tmp/standby.img')
    backup.sh('zfs create -p -o canmount=off -o setuid=off -o devices=off standby/replica/it-src')
    backup.sh("mkdir -p %s && ssh-keygen -q -t ed25519 -N '' -C replica@backup-1 -f %s" % (KEY.rsplit('/', 1)[0], KEY))
    yield SOURCE
    clean()


# The longest a send through the key runs here, so that the stalled one below ends soon.
SEND_MAX = 15


def guid(host, snapshot):
    return host.zfs('get', '-Hp', '-o', 'value', 'guid', snapshot).stdout.strip()


def through_the_key(host, command, options=''):
    return host.sh(
        'ssh -i %s -o StrictHostKeyChecking=no -o BatchMode=yes -o ConnectTimeout=5 %s %s@%s %s'
        % (KEY, options, USER, STORAGE_1, command),
        check=False,
    )


def test_syncoid_pulls_through_the_forced_command_and_nothing_else_runs(
    vm, separate_hosts, storage_and_backup, primary, play_primary
):
    storage, backup = storage_and_backup[:2]
    public = backup.sh('cat %s.pub' % KEY).stdout.strip()
    # The standby's key bound to its name, as inventories/example binds it: storage-1 resolves the name.
    variables = {
        'zfs_replication_snapshots': [{'parent': primary}],
        'zfs_replication_standby_keys': [{'key': public, 'from': backup.name}],
        'zfs_replication_send_max_seconds': SEND_MAX,
    }
    checked = play_primary(variables, '--check', '--diff')
    assert changed(checked)[storage.name] > 0
    assert storage.sh('test -e /var/lib/%s/.ssh/authorized_keys' % USER, check=False).returncode != 0
    assert changed(play_primary(variables))[storage.name] > 0
    # A second run's changed=0 with standby keys: site.yml's, whose VM serves its own pulls (csi_plugin_recovery).
    # This test runs syncoid itself. The role started sanoid's timer, whose snapshots would land in the pool that the
    # refusals below must leave as it was (seen in CI: a run at 16:45 between the two listings).
    storage.sh(STOP_BACKUPS)
    assert 'from="%s",' % backup.address in storage.sh('cat /var/lib/%s/.ssh/authorized_keys' % USER).stdout
    assert storage.zfs('allow', primary).stdout.split('\n', 1)[1].split() == [
        'Local+Descendent',
        'permissions:',
        'user',
        USER,
        'bookmark,hold,send',
    ]

    # A full send, then an increment, as syncoid does them, through the key, from backup-1 to storage-1 by name.
    dst = 'standby/replica/it-src'
    pulled = backup.sh(SYNCOID.format(src=primary, dst=dst) + ' 2>&1', check=False)
    assert pulled.returncode == 0, pulled.stdout
    assert guid(backup, dst + '/v1@autosnap_1_hourly') == guid(storage, primary + '/v1@autosnap_1_hourly')
    assert backup.zfs('get', '-H', '-o', 'value', 'mounted', dst + '/v1').stdout.strip() == 'no'
    storage.sh('head -c 1048576 /dev/urandom > /%s/v1/g && zfs snapshot %s/v1@autosnap_2_hourly' % (primary, primary))
    # Across a partition (storage-1's link down) the pull fails; once the link is back, the next one sends the
    # increment.
    separate_hosts.cut(storage)
    try:
        across = backup.sh(SYNCOID.format(src=primary, dst=dst) + ' 2>&1', check=False)
    finally:
        separate_hosts.mend(storage)
    assert across.returncode != 0 and 'Connection timed out' in across.stdout, across.stdout
    pulled = backup.sh(SYNCOID.format(src=primary, dst=dst) + ' 2>&1', check=False)
    assert pulled.returncode == 0 and 'incremental' in pulled.stdout.lower(), pulled.stdout
    assert guid(backup, dst + '/v1@autosnap_2_hourly') == guid(storage, primary + '/v1@autosnap_2_hourly')
    # --create-bookmark: the newest sent snapshot is also a bookmark on the primary, made through the key.
    assert '#autosnap_2_hourly' in storage.zfs('list', '-H', '-t', 'bookmark', '-o', 'name', primary + '/v1').stdout

    # A copy of the key elsewhere (the VM, 10.99.0.1 on the hosts' bridge) logs in no more than a stranger's.
    vm.sh("umask 077 && cat > /root/.ssh/it-replica-copy <<'EOF'\n%s\nEOF" % backup.sh('cat %s' % KEY).stdout.strip())
    stolen = vm.sh(
        'ssh -i /root/.ssh/it-replica-copy -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null '
        "-o BatchMode=yes %s@%s 'zfs list %s'; rc=$?; rm -f /root/.ssh/it-replica-copy; exit $rc"
        % (USER, STORAGE_1, primary),
        check=False,
    )
    assert stolen.returncode == 255 and 'Permission denied' in stolen.stderr, (JUMP, stolen)

    # Everything else through the key is refused before it runs, and changes nothing: a hold would make every
    # destroy of the snapshot fail, and root's own hold stays.
    storage.zfs('hold', 'root-keeps', primary + '/v1@autosnap_1_hourly')
    before = storage.zfs('list', '-H', '-r', '-t', 'all', '-o', 'name,guid', 'tank').stdout
    for command in (
        "'zfs hold standby-keeps %s/v1@autosnap_2_hourly'" % primary,
        "'zfs release root-keeps %s/v1@autosnap_1_hourly'" % primary,
        "'zfs destroy %s/v1@autosnap_1_hourly'" % primary,
        "'zfs rollback -r %s/v1@autosnap_1_hourly'" % primary,
        "'zfs snapshot %s/v1@mine'" % primary,
        "'zfs receive %s/v2'" % primary,
        "'zfs set readonly=on %s/v1'" % primary,
        "'zfs send tank/it-other@autosnap_1_hourly'",
        "'zfs send %s/v1@autosnap_1_hourly | sh'" % primary,
        "'sh -c id'",
        "'rm -rf /%s/v1'" % primary,
    ):
        refused = through_the_key(backup, command)
        assert refused.returncode == 1 and 'zfs-replication-source: refused' in refused.stderr, (command, refused)
    assert storage.zfs('list', '-H', '-r', '-t', 'all', '-o', 'name,guid', 'tank').stdout == before
    holds = storage.zfs('holds', '-H', primary + '/v1@autosnap_1_hourly', primary + '/v1@autosnap_2_hourly').stdout
    assert [line.split('\t')[:2] for line in holds.splitlines()] == [[primary + '/v1@autosnap_1_hourly', 'root-keeps']]
    storage.zfs('release', 'root-keeps', primary + '/v1@autosnap_1_hourly')

    # A send whose stream is never read (16 MiB, more than the pipes and the SSH window hold) holds the range's
    # snapshots, so root's destroy of them, as sanoid's pruning does it, fails; at the bound the forced command ends
    # it, its holds go, and the destroy succeeds.
    oldest = primary + '/v1@autosnap_1_hourly'
    storage.sh('head -c 16777216 /dev/urandom > /%s/v1/h && zfs snapshot %s/v1@autosnap_3_hourly' % (primary, primary))
    stalled = "'zfs send -I %s %s/v1@autosnap_3_hourly'" % (oldest, primary)
    backup.sh(
        'setsid sh -c "ssh -i %s -o StrictHostKeyChecking=no -o BatchMode=yes %s@%s %s | sleep 600" '
        '</dev/null >/dev/null 2>&1 &' % (KEY, USER, STORAGE_1, stalled)
    )

    def send_holds():
        return [line for line in storage.zfs('holds', '-H', oldest).stdout.splitlines() if '\t.send-' in line]

    try:
        wait_until(
            send_holds, timeout=SEND_MAX, why='no .send- hold on %s while the stalled send runs' % oldest, pause=1
        )
        busy = storage.zfs('destroy', oldest, check=False)
        assert busy.returncode != 0 and "it's being held" in busy.stderr, busy
        wait_until(lambda: not send_holds(), timeout=SEND_MAX + 30, why='the stalled send still holds %s' % oldest)
        storage.zfs('destroy', oldest)
    finally:
        backup.sh('pkill -f "sleep 600"', check=False)
    assert through_the_key(backup, '').returncode != 0  # no shell either
    # perl's own variables, were an sshd to pass them (Debian's passes LANG and LC_* only): the command of
    # authorized_keys, run as sshd runs it, ignores them (taint mode).
    storage.sh("mkdir -p /tmp/it-evil && echo 'print STDERR qq(evil ran\\n);' > /tmp/it-evil/evil.pm")
    command = storage.sh('sed -n \'s/.*command="\\([^"]*\\)".*/\\1/p\' /var/lib/%s/.ssh/authorized_keys' % USER).stdout
    forced = storage.sh(
        'cd / && runuser -u %s -- env PERL5LIB=/tmp/it-evil PERL5OPT=-Mevil '
        "SSH_ORIGINAL_COMMAND='zfs destroy %s/v1@autosnap_1_hourly' sh -c '%s'" % (USER, primary, command.strip()),
        check=False,
    )
    assert forced.returncode == 1 and 'zfs-replication-source: refused' in forced.stderr, forced
    assert 'evil ran' not in forced.stderr + forced.stdout and command.startswith('/usr/bin/perl -T '), command
    assert 'zfs-replication-source: refused' in storage.sh('journalctl -t zfs-replication-source --no-pager').stdout

    # The same key, read by storage-1 from backup-1 itself (zfs_replication_standby_hosts), where the play runs on
    # storage-1 alone, as under --limit: the same authorised key, its task unchanged (the run starts again the
    # sanoid timer that this test stopped).
    keys = storage.sh('cat /var/lib/%s/.ssh/authorized_keys' % USER).stdout
    from_the_host = dict(variables, zfs_replication_standby_keys=[], zfs_replication_standby_hosts=[backup.name])
    ran = play_primary(from_the_host)
    installed = re.search(r'Install the forced command[^\n]*\n(\w+): \[', ran.stdout)
    assert changed(ran) and installed and installed.group(1) == 'ok', ran.stdout[-4000:]
    assert storage.sh('cat /var/lib/%s/.ssh/authorized_keys' % USER).stdout == keys

    # Revoked: with no key listed, the key logs in no more.
    assert changed(play_primary(dict(variables, zfs_replication_standby_keys=[])))[storage.name] > 0
    assert through_the_key(backup, "'zfs list %s'" % primary).returncode == 255


def test_a_bad_key_or_from_is_refused_before_any_change(storage_and_backup, primary, play_primary):
    storage, backup = storage_and_backup[:2]
    public = backup.sh('cat %s.pub' % KEY).stdout.strip()
    for bad, said in (
        ('command="/bin/sh" ' + public, 'not one SSH public key'),
        (public + '\n' + public, 'not one SSH public key'),
        ({'key': public, 'from': 'backup-9.example.internal'}, 'from names backup-9.example.internal, which this host'),
        ({'key': public, 'from': '*.example.internal'}, 'matches host names only with UseDNS yes'),
    ):
        ran = play_primary({'zfs_replication_snapshots': [{'parent': primary}], 'zfs_replication_standby_keys': [bad]})
        assert ran.returncode != 0 and said in ran.stdout and 'changed=0' in ran.stdout, ran.stdout
    # A standby host that has made no key (storage-1 is none): refused by name, and nothing is authorised.
    ran = play_primary(
        {'zfs_replication_snapshots': [{'parent': primary}], 'zfs_replication_standby_hosts': [storage.name]}
    )
    assert ran.returncode != 0 and '%s has no replication key' % storage.name in ran.stdout, ran.stdout
    assert storage.sh('test -e /var/lib/%s/.ssh/authorized_keys' % USER, check=False).returncode != 0
