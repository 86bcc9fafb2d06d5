"""The primary end of pull replication: the zfs_replication role's user, forced command and delegation, with
the real syncoid pulling through the standby's key (root in the same VM plays the standby, receiving into a
second pool), and everything else refused through that key."""

import pytest

from zfsvm_client import STOP_BACKUPS, changed, wait_until

USER = 'zfs-replica'
KEY = '/root/.ssh/id_replica'
SYNCOID = (
    'syncoid --no-privilege-elevation --no-sync-snap --create-bookmark --no-rollback --recvoptions=u '
    '--recursive --skip-parent --sshkey=%s --sshoption=StrictHostKeyChecking=no %s@127.0.0.1:{src} {dst}' % (KEY, USER)
)


@pytest.fixture
def primary(vm):
    """tank/it-src/v1 with 1 MiB in it and one scheduled snapshot; a standby pool with its replica parent; the
    standby's key pair. All gone afterwards, the user's key revoked."""
    name = vm.pool + '/it-src'

    def clean():
        vm.sh(
            'zpool destroy standby; rm -f /var/tmp/standby.img %s %s.pub /var/lib/%s/.ssh/authorized_keys'
            % (KEY, KEY, USER),
            check=False,
        )
        vm.zfs('destroy', '-r', name, check=False)
        vm.zfs('destroy', '-r', vm.pool + '/it-other', check=False)

    clean()
    vm.zfs('create', '-p', name + '/v1')
    vm.zfs('create', vm.pool + '/it-other')
    vm.sh('head -c 1048576 /dev/urandom > /%s/v1/f && zfs snapshot %s/v1@autosnap_1_hourly' % (name, name))
    vm.zfs('snapshot', vm.pool + '/it-other@autosnap_1_hourly')
    vm.sh('truncate -s 512M /var/tmp/standby.img && zpool create standby /var/tmp/standby.img')
    vm.sh('zfs create -p -o canmount=off -o setuid=off -o devices=off standby/replica/it-src')
    vm.sh("ssh-keygen -q -t ed25519 -N '' -C replica@standby -f %s" % KEY)
    yield name
    clean()


# The longest a send through the key runs here, so that the stalled one below ends soon.
SEND_MAX = 15


def guid(vm, snapshot):
    return vm.zfs('get', '-Hp', '-o', 'value', 'guid', snapshot).stdout.strip()


def through_the_key(vm, command, options=''):
    return vm.sh(
        'ssh -i %s -o StrictHostKeyChecking=no -o BatchMode=yes %s %s@127.0.0.1 %s' % (KEY, options, USER, command),
        check=False,
    )


def test_syncoid_pulls_through_the_forced_command_and_nothing_else_runs(vm, primary, play):
    public = vm.sh('cat %s.pub' % KEY).stdout.strip()
    variables = {
        'zfs_replication_snapshots': [{'parent': primary}],
        'zfs_replication_standby_keys': [public],
        'zfs_replication_send_max_seconds': SEND_MAX,
    }
    checked = play(variables, '--check', '--diff')
    assert changed(checked)['zfsvm'] > 0
    assert vm.sh('test -e /var/lib/%s/.ssh/authorized_keys' % USER, check=False).returncode != 0
    assert changed(play(variables))['zfsvm'] > 0
    # A second run's changed=0 with standby keys: site.yml's, whose VM serves its own pulls (csi_plugin_recovery).
    # This test runs syncoid itself. The role started sanoid's timer, whose snapshots would land in the pool that the
    # refusals below must leave as it was (seen in CI: a run at 16:45 between the two listings).
    vm.sh(STOP_BACKUPS)
    assert vm.zfs('allow', primary).stdout.split('\n', 1)[1].split() == [
        'Local+Descendent',
        'permissions:',
        'user',
        USER,
        'bookmark,hold,send',
    ]

    # A full send, then an increment, as syncoid does them, through the key.
    dst = 'standby/replica/it-src'
    pulled = vm.sh(SYNCOID.format(src=primary, dst=dst) + ' 2>&1', check=False)
    assert pulled.returncode == 0, pulled.stdout
    assert guid(vm, dst + '/v1@autosnap_1_hourly') == guid(vm, primary + '/v1@autosnap_1_hourly')
    assert vm.zfs('get', '-H', '-o', 'value', 'mounted', dst + '/v1').stdout.strip() == 'no'
    vm.sh('head -c 1048576 /dev/urandom > /%s/v1/g && zfs snapshot %s/v1@autosnap_2_hourly' % (primary, primary))
    pulled = vm.sh(SYNCOID.format(src=primary, dst=dst) + ' 2>&1', check=False)
    assert pulled.returncode == 0 and 'incremental' in pulled.stdout.lower(), pulled.stdout
    assert guid(vm, dst + '/v1@autosnap_2_hourly') == guid(vm, primary + '/v1@autosnap_2_hourly')
    # --create-bookmark: the newest sent snapshot is also a bookmark on the primary, made through the key.
    assert '#autosnap_2_hourly' in vm.zfs('list', '-H', '-t', 'bookmark', '-o', 'name', primary + '/v1').stdout

    # Everything else through the key is refused before it runs, and changes nothing: a hold would make every
    # destroy of the snapshot fail, and root's own hold stays.
    vm.zfs('hold', 'root-keeps', primary + '/v1@autosnap_1_hourly')
    before = vm.zfs('list', '-H', '-r', '-t', 'all', '-o', 'name,guid', vm.pool).stdout
    for command in (
        "'zfs hold standby-keeps %s/v1@autosnap_2_hourly'" % primary,
        "'zfs release root-keeps %s/v1@autosnap_1_hourly'" % primary,
        "'zfs destroy %s/v1@autosnap_1_hourly'" % primary,
        "'zfs rollback -r %s/v1@autosnap_1_hourly'" % primary,
        "'zfs snapshot %s/v1@mine'" % primary,
        "'zfs receive %s/v2'" % primary,
        "'zfs set readonly=on %s/v1'" % primary,
        "'zfs send %s/it-other@autosnap_1_hourly'" % vm.pool,
        "'zfs send %s/v1@autosnap_1_hourly | sh'" % primary,
        "'sh -c id'",
        "'rm -rf /%s/v1'" % primary,
    ):
        refused = through_the_key(vm, command)
        assert refused.returncode == 1 and 'zfs-replication-source: refused' in refused.stderr, (command, refused)
    assert vm.zfs('list', '-H', '-r', '-t', 'all', '-o', 'name,guid', vm.pool).stdout == before
    holds = vm.zfs('holds', '-H', primary + '/v1@autosnap_1_hourly', primary + '/v1@autosnap_2_hourly').stdout
    assert [line.split('\t')[:2] for line in holds.splitlines()] == [[primary + '/v1@autosnap_1_hourly', 'root-keeps']]
    vm.zfs('release', 'root-keeps', primary + '/v1@autosnap_1_hourly')

    # A send whose stream is never read (16 MiB, more than the pipes and the SSH window hold) holds the range's
    # snapshots, so root's destroy of them, as sanoid's pruning does it, fails; at the bound the forced command ends
    # it, its holds go, and the destroy succeeds.
    oldest = primary + '/v1@autosnap_1_hourly'
    vm.sh('head -c 16777216 /dev/urandom > /%s/v1/h && zfs snapshot %s/v1@autosnap_3_hourly' % (primary, primary))
    stalled = "'zfs send -I %s %s/v1@autosnap_3_hourly'" % (oldest, primary)
    vm.sh(
        'setsid sh -c "ssh -i %s -o StrictHostKeyChecking=no -o BatchMode=yes %s@127.0.0.1 %s | sleep 600" '
        '</dev/null >/dev/null 2>&1 &' % (KEY, USER, stalled)
    )

    def send_holds():
        return [line for line in vm.zfs('holds', '-H', oldest).stdout.splitlines() if '\t.send-' in line]

    try:
        wait_until(
            send_holds, timeout=SEND_MAX, why='no .send- hold on %s while the stalled send runs' % oldest, pause=1
        )
        busy = vm.zfs('destroy', oldest, check=False)
        assert busy.returncode != 0 and "it's being held" in busy.stderr, busy
        wait_until(lambda: not send_holds(), timeout=SEND_MAX + 30, why='the stalled send still holds %s' % oldest)
        vm.zfs('destroy', oldest)
    finally:
        vm.sh('pkill -f "sleep 600"', check=False)
    assert through_the_key(vm, '').returncode != 0  # no shell either
    # perl's own variables, were an sshd to pass them (Debian's passes LANG and LC_* only): the command of
    # authorized_keys, run as sshd runs it, ignores them (taint mode).
    vm.sh("mkdir -p /tmp/it-evil && echo 'print STDERR qq(evil ran\\n);' > /tmp/it-evil/evil.pm")
    command = vm.sh('sed -n \'s/.*command="\\([^"]*\\)".*/\\1/p\' /var/lib/%s/.ssh/authorized_keys' % USER).stdout
    forced = vm.sh(
        'cd / && runuser -u %s -- env PERL5LIB=/tmp/it-evil PERL5OPT=-Mevil '
        "SSH_ORIGINAL_COMMAND='zfs destroy %s/v1@autosnap_1_hourly' sh -c '%s'" % (USER, primary, command.strip()),
        check=False,
    )
    assert forced.returncode == 1 and 'zfs-replication-source: refused' in forced.stderr, forced
    assert 'evil ran' not in forced.stderr + forced.stdout and command.startswith('/usr/bin/perl -T '), command
    assert 'zfs-replication-source: refused' in vm.sh('journalctl -t zfs-replication-source --no-pager').stdout

    # Revoked: with no key listed, the key logs in no more.
    assert changed(play(dict(variables, zfs_replication_standby_keys=[])))['zfsvm'] > 0
    assert through_the_key(vm, "'zfs list %s'" % primary).returncode == 255


def test_a_key_with_options_or_two_keys_in_one_item_is_refused_before_any_change(vm, primary, play):
    public = vm.sh('cat %s.pub' % KEY).stdout.strip()
    for bad in ('command="/bin/sh" ' + public, public + '\n' + public):
        ran = play({'zfs_replication_snapshots': [{'parent': primary}], 'zfs_replication_standby_keys': [bad]})
        assert ran.returncode != 0 and 'not one SSH public key' in ran.stdout and 'changed=0' in ran.stdout, ran.stdout
    assert vm.sh('test -e /var/lib/%s/.ssh/authorized_keys' % USER, check=False).returncode != 0
