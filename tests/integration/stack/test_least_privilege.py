"""Attacks on the local stack, each run as the actor would run it, each refused with nothing changed
(docs/security.md lists them by actor): the CSI service user through its SSH key, the wrapper and sudo; a hostile
primary's replica through the zfs-dataset plugin run with Nomad's DHV_* environment; the standby's key; the
replication user on its own host.

They share the stack that site.yml converged, and a target directory that root reads from and nobody else may
cover: /var/lib/nzc-lp-target with a marker file.
"""

import json
import re
import shlex
import subprocess

import pytest
from stack_layout import HOST_VOLUME_PLUGIN, PARENT, SNAPSHOTS, STACK

from zfsvm_client import wait_until

WRAPPER = '/usr/local/libexec/nomad-zfs-csi/zfs'
ROOT_HELPER = '/usr/local/libexec/nomad-zfs-csi/zfs-root'
TARGET = '/var/lib/nzc-lp-target'
VOLUME = PARENT + '/t-lp'


@pytest.fixture(scope='module', autouse=True)
def converged(stack):
    """Every attack here is on what site.yml set up."""
    return stack


@pytest.fixture(scope='module')
def target(vm):
    vm.sh('mkdir -p %s && echo root-reads-this > %s/marker' % (TARGET, TARGET))
    yield TARGET
    vm.sh('umount %s 2>/dev/null; rm -rf %s' % (TARGET, TARGET), check=False)


def as_csi(vm, command):
    return vm.sh(command, user='csi', check=False)


def covered(vm):
    """Whether anything is mounted on the target, or its marker is gone."""
    mounted = vm.sh('findmnt -n %s' % TARGET, check=False).returncode == 0
    return mounted or vm.sh('cat %s/marker' % TARGET, check=False).stdout != 'root-reads-this\n'


def datasets(vm, root):
    return vm.zfs('list', '-H', '-r', '-o', 'name,mounted,canmount', root, check=False).stdout


@pytest.fixture
def volume(vm):
    """t-lp, a volume the service user made through the wrapper, mounted in its root-owned parent directory."""
    made = as_csi(vm, '%s create -p %s' % (WRAPPER, VOLUME))
    assert made.returncode == 0, made.stderr
    yield VOLUME
    vm.sh('zfs unmount -f %s/x 2>/dev/null; zfs destroy -r %s' % (VOLUME, VOLUME), check=False)


def test_the_service_user_cannot_have_root_mount_a_dataset_through_its_link(vm, target, volume):
    """A child dataset at the path of a symbolic link in the user's own volume: the wrapper, sudo and the boot's
    zfs mount -a all refuse to follow it."""
    assert vm.sh('stat -c %U ' + '/' + volume).stdout.strip() == 'csi'
    link = as_csi(vm, 'ln -s %s /%s/x' % (target, volume))
    assert link.returncode == 0, link.stderr
    # Not in the parent's own directory, which is root's.
    assert as_csi(vm, 'ln -s %s /%s/t-lp-link' % (target, PARENT)).returncode != 0

    wrapped = as_csi(vm, '%s create %s/x' % (WRAPPER, volume))
    assert wrapped.returncode != 0 and 'only filesystems exactly one level below' in wrapped.stderr, wrapped.stderr
    assert vm.zfs('list', volume + '/x', check=False).returncode != 0, 'refused before it exists'

    made = as_csi(vm, '/usr/sbin/zfs create -u %s/x' % volume)  # the delegation allows the dataset itself
    assert made.returncode == 0, made.stderr
    for command in (
        'sudo -n %s mount %s/x' % (ROOT_HELPER, volume),
        'sudo -n %s share %s/x' % (ROOT_HELPER, volume),
        'sudo -n /usr/sbin/zfs mount %s/x' % volume,
        '%s mount %s/x' % (WRAPPER, volume),
    ):
        refused = as_csi(vm, command)
        assert refused.returncode != 0, command
    # Root's zfs set of the volume's sharenfs, without -u, mounted every unmounted child that inherits it, there.
    for command in (
        'sudo -n %s sharenfs %s rw=@127.0.0.1/32' % (ROOT_HELPER, volume),
        'sudo -n %s unshare %s' % (ROOT_HELPER, volume),
    ):
        done = as_csi(vm, command)
        assert done.returncode == 0 and not covered(vm), (command, done.stderr)
    # No rename is delegated (no driver renames), so it cannot move it either.
    renamed = as_csi(vm, '/usr/sbin/zfs rename %s/x %s/x2' % (volume, volume))
    assert renamed.returncode != 0 and 'permission denied' in renamed.stderr, renamed.stderr
    assert not covered(vm)

    # At boot: the guard runs before zfs-mount.service; then what zfs mount -a does.
    unit = vm.sh('systemctl show -p Before -p WantedBy -p UnitFileState nomad-zfs-csi-mount-guard').stdout
    assert 'zfs-mount.service' in unit and 'UnitFileState=enabled' in unit, unit
    vm.sh('systemctl restart nomad-zfs-csi-mount-guard && zfs mount -a')
    assert not covered(vm)
    assert vm.zfs('get', '-H', '-o', 'value', 'canmount', volume + '/x').stdout.strip() == 'noauto'
    assert 'guard: set canmount=noauto %s/x' % volume in vm.sh('journalctl -t nomad-zfs-csi-zfs-root -o cat').stdout


def exported(vm):
    """The exports file's entries and the kernel's export table, in any order (zfs share -a rewrites them)."""
    return sorted(vm.sh('cat /etc/exports.d/zfs.exports; exportfs -s').stdout.splitlines())


def test_the_service_user_cannot_export_more_than_its_volume(vm, volume):
    """sharenfs is root's: zfs stores a newline in it, and shared by root such a value wrote the line "/ *(rw)(...)"
    into /etc/exports.d/zfs.exports, at once or later when zfs-share.service (PartOf nfs-server) ran zfs share -a.
    The user holds no sharenfs delegation, so it can neither set one nor flip it between root's check and root's
    use; root sets the value it checked, plain export options only, from its argv."""
    exports = exported(vm)
    value = 'rw=@127.0.0.1/32\n/ *(rw)'
    direct = as_csi(vm, '/usr/sbin/zfs set sharenfs=%s %s || exit 1' % (shlex.quote(value), volume))
    assert direct.returncode != 0 and 'permission denied' in direct.stderr, direct.stderr
    # sudo's rule refuses the value before the helper, which would too.
    wrapped = as_csi(vm, '%s set sharenfs=%s %s' % (WRAPPER, shlex.quote(value), volume))
    assert wrapped.returncode != 0 and 'a password is required' in wrapped.stderr, wrapped.stderr
    helped = as_csi(vm, 'sudo -n %s sharenfs %s %s' % (ROOT_HELPER, volume, shlex.quote(value)))
    assert helped.returncode != 0 and 'a password is required' in helped.stderr, helped.stderr
    assert vm.zfs('get', '-H', '-o', 'value,source', 'sharenfs', volume).stdout == 'off\tdefault\n'
    vm.sh('systemctl restart zfs-share.service')
    assert exported(vm) == exports

    shared = as_csi(vm, '%s set sharenfs=rw=@127.0.0.1/32 %s' % (WRAPPER, volume))
    assert shared.returncode == 0 and '/' + volume in vm.sh('exportfs -s').stdout.split(), shared.stderr
    assert vm.zfs('get', '-H', '-o', 'value,source', 'sharenfs', volume).stdout == 'rw=@127.0.0.1/32\tlocal\n'
    unshared = as_csi(vm, '%s inherit sharenfs %s' % (WRAPPER, volume))
    assert unshared.returncode == 0 and exported(vm) == exports, unshared.stderr


def test_the_service_user_cannot_reserve_move_or_expose_outside_its_volumes(vm, volume):
    """No refreservation for the dataset drivers and a quota on the snapshots parent too: it reserved more than the
    parent's quota there. No rename: it moved a volume out of the parent's quota and backups. volmode=none on the
    parents (root's): a zvol it made or received became a block device of the host, which udev probed."""
    before = datasets(vm, SNAPSHOTS)
    quota = int(vm.zfs('get', '-Hp', '-o', 'value', 'quota', PARENT).stdout)
    assert vm.zfs('get', '-Hp', '-o', 'value,source', 'quota', SNAPSHOTS).stdout == '%d\tlocal\n' % quota
    over = str(quota + (1 << 30))
    for command in (
        '/usr/sbin/zfs create -o refreservation=%s %s/t-lp-reserve' % (over, SNAPSHOTS),
        '/usr/sbin/zfs create -V %s %s/t-lp-thick' % (over, SNAPSHOTS),
    ):
        refused = as_csi(vm, command + ' || exit 1')
        assert refused.returncode != 0, command
        assert re.search('permission denied|out of space|exceeds', refused.stderr), (command, refused.stderr)
    moved = as_csi(vm, '/usr/sbin/zfs rename %s %s/t-lp-moved || exit 1' % (volume, SNAPSHOTS))
    assert moved.returncode != 0 and 'permission denied' in moved.stderr, moved.stderr
    assert datasets(vm, SNAPSHOTS) == before
    assert vm.zfs('list', volume, check=False).returncode == 0

    zvol = PARENT + '/t-lp-zvol'
    made = as_csi(vm, '/usr/sbin/zfs create -s -V 8M %s' % zvol)
    try:
        if made.returncode == 0:
            vm.sh('udevadm settle')
            assert vm.sh('test -e /dev/zvol/%s' % zvol, check=False).returncode != 0, 'no device of it'
            volmode = as_csi(vm, '/usr/sbin/zfs set volmode=dev %s || exit 1' % zvol)
            assert volmode.returncode != 0 and 'permission denied' in volmode.stderr, volmode.stderr
        assert vm.zfs('get', '-H', '-o', 'value,source', 'volmode', PARENT).stdout == 'none\tlocal\n'
    finally:
        vm.zfs('destroy', zvol, check=False)


def test_a_local_user_holding_a_volumes_mount_is_named_and_nothing_of_it_is_destroyed(vm, volume):
    """A local user's unshare -Urm copies the volume's mount into a namespace of its own, which keeps the dataset
    busy until it ends (not even root can unmount a locked copy), and zfs destroy -r destroyed the snapshots before
    failing on the dataset. The delete is refused before anything of the volume is destroyed, naming the holder,
    and the volume stays mounted; once the holder is gone the same delete goes through."""
    vm.zfs('snapshot', volume + '@kept')
    vm.sh('setsid runuser -u nobody -- unshare -Urm sleep 600 </dev/null >/dev/null 2>&1 &')

    def holders():
        listed = 'for p in $(pgrep -u nobody -x sleep); do grep -qF " - zfs %s " /proc/$p/mountinfo && echo $p; done'
        return vm.sh(listed % volume, check=False).stdout.split()

    try:
        holder = wait_until(
            holders,
            timeout=30,
            why="nobody's namespace does not hold %s" % volume,
            pause=1,
        )[0]
        refused = as_csi(vm, '%s destroy -r %s' % (WRAPPER, volume))
        assert refused.returncode == 1, refused
        assert 'process(es) %s still mounts it' % holder in refused.stderr, refused.stderr
        assert 'nothing of it was destroyed' in refused.stderr, refused.stderr
        assert vm.zfs('list', '-H', '-t', 'snapshot', '-o', 'name', volume).stdout == volume + '@kept\n'
        assert vm.zfs('get', '-H', '-o', 'value', 'mounted', volume).stdout == 'yes\n'
    finally:
        vm.sh('pkill -u nobody -x sleep', check=False)
    wait_until(lambda: vm.sh('pgrep -u nobody -x sleep', check=False).returncode != 0, timeout=30, why='sleep lives')
    destroyed = as_csi(vm, '%s destroy -r %s' % (WRAPPER, volume))
    assert destroyed.returncode == 0, destroyed.stderr
    assert vm.zfs('list', volume, check=False).returncode != 0


def test_a_workload_cannot_grow_its_csi_volume_past_twice_its_capacity_around_snapshots(vm, volume):
    """refquota, which democratic-csi sets to the capacity, leaves snapshots out. Root gives the volume a quota of
    twice that (storage_host_volume_quota_percent) when the driver sets its refquota, which the service user cannot
    change; a workload's third round of 6 MiB into an 8 MiB volume around snapshots then fails."""
    sized = as_csi(vm, '%s set refquota=8M %s' % (WRAPPER, volume))
    assert sized.returncode == 0, sized.stderr
    assert vm.zfs('get', '-Hp', '-o', 'value,source', 'quota', volume).stdout == '%d\tlocal\n' % (16 << 20)
    raised = as_csi(vm, '/usr/sbin/zfs set quota=1G %s || exit 1' % volume)
    assert raised.returncode != 0 and 'permission denied' in raised.stderr, raised.stderr
    rewrite = 'rm -f /{v}/data && dd if=/dev/urandom of=/{v}/data bs=1M count=6 status=none && sync'.format(v=volume)
    rounds = [vm.sh(rewrite + ' && zfs snapshot %s@autosnap_%d' % (volume, n), check=False) for n in (1, 2, 3)]
    assert [r.returncode for r in rounds] == [0, 0, 1], rounds
    assert 'Disk quota exceeded' in rounds[2].stderr, rounds[2]


VICTIM = 'tank/t-lp-victim'


def test_the_service_user_cannot_clone_another_snapshot_by_receiving(vm, volume):
    """It made an incremental stream of its own volume, forged the start record's fromguid to name a root-owned
    snapshot's guid, and received it with -o origin=: a clone of the victim, whose data it read (OpenZFS checks a
    receive's rights on the target only). It holds no receive delegation; root receives for it only a plain full
    stream of one snapshot into a new dataset."""
    vm.sh('zfs create %s && echo root-secret > /%s/secret && zfs snapshot %s@s' % (VICTIM, VICTIM, VICTIM))
    try:
        guid = int(vm.zfs('get', '-Hp', '-o', 'value', 'guid', VICTIM + '@s').stdout)
        made = as_csi(
            vm,
            'set -e; /usr/sbin/zfs snapshot %s@a; /usr/sbin/zfs snapshot %s@b; '
            '/usr/sbin/zfs send -i @a %s@b > /tmp/t-lp-inc.zstream; /usr/sbin/zfs send %s@b > /tmp/t-lp-full.zstream; '
            # drr_fromguid, the 49th to 56th bytes of the start record, little-endian.
            "python3 -c \"import struct,sys; f=open(sys.argv[1],'r+b'); f.seek(48); f.write(struct.pack('<Q', %d))\" "
            '/tmp/t-lp-inc.zstream' % (volume, volume, volume, volume, guid),
        )
        assert made.returncode == 0, made.stderr
        steal = PARENT + '/t-lp-steal'
        for command, refusal in (
            ('/usr/sbin/zfs receive -u -o origin=%s@s %s' % (VICTIM, steal), 'permission denied'),
            ('/usr/sbin/zfs receive -u %s' % steal, 'cannot receive'),
            ('%s receive %s' % (WRAPPER, steal), 'incremental or a clone'),
            ('%s receive -o origin=%s@s %s' % (WRAPPER, VICTIM, steal), 'a password is required'),
            ('sudo -n %s receive -o origin=%s@s %s' % (ROOT_HELPER, VICTIM, steal), 'password is required'),
        ):
            refused = as_csi(vm, command + ' < /tmp/t-lp-inc.zstream || exit 1')
            assert refused.returncode != 0 and refusal in refused.stderr, (command, refused.stderr)
            assert vm.zfs('list', steal, check=False).returncode != 0, command
        assert vm.zfs('get', '-H', '-o', 'value', 'clones', VICTIM + '@s').stdout.strip() in ('', '-')
        # What democratic-csi's detached volumes send, a full stream of one snapshot, root receives and mounts.
        plain = as_csi(vm, '%s receive %s < /tmp/t-lp-full.zstream' % (WRAPPER, steal))
        assert plain.returncode == 0, plain.stderr
        assert vm.zfs('get', '-H', '-o', 'value', 'origin,mounted', steal).stdout.split() == ['-', 'yes']
        again = as_csi(vm, '%s receive %s < /tmp/t-lp-full.zstream' % (WRAPPER, steal))
        assert again.returncode != 0 and 'destination' in again.stderr and 'exists' in again.stderr, again.stderr
    finally:
        vm.sh('zfs destroy -r %s/t-lp-steal; rm -f /tmp/t-lp-*.zstream' % PARENT, check=False)
        destroyed = vm.zfs('destroy', '-r', VICTIM, check=False)
    assert destroyed.returncode == 0, "the victim stays its owner's to destroy: %s" % destroyed.stderr


def test_the_service_user_cannot_switch_off_every_volumes_backups(vm, volume):
    """User properties on a parent are inherited by every volume; a volume's own stay the user's to set."""
    for prop in ('syncoid:sync=false', 'com.sun:auto-snapshot=false'):
        for parent in (PARENT, SNAPSHOTS):
            refused = as_csi(vm, '/usr/sbin/zfs set %s %s || exit 1' % (prop, parent))
            assert refused.returncode != 0 and 'permission denied' in refused.stderr, (prop, parent, refused.stderr)
    assert vm.zfs('get', '-H', '-o', 'value,source', 'syncoid:sync', volume).stdout.split('\t')[0] == '-'
    own = as_csi(vm, '/usr/sbin/zfs set syncoid:sync=false %s' % volume)
    assert own.returncode == 0, own.stderr


def test_the_service_users_key_and_the_controllers_key_file(vm, stack):
    """Its key runs commands and nothing else (restrict); the controller's key file is 0400."""
    keys = vm.sh('cat ~csi/.ssh/authorized_keys').stdout
    # The wrapper's directory first on PATH: democratic-csi's zfs send | zfs receive, by name, reach the wrapper.
    login = (
        'restrict,command="PATH=%s:$PATH; exec /bin/sh -c \\"$SSH_ORIGINAL_COMMAND\\"" ssh-' % WRAPPER.rsplit('/', 1)[0]
    )
    assert keys.startswith(login), keys
    assert as_csi(vm, 'command -v zfs').stdout == WRAPPER + '\n'
    forward = subprocess_ssh(vm, ['-o', 'ExitOnForwardFailure=yes', '-R', '0:127.0.0.1:22'], 'true')
    assert forward.returncode != 0 and 'forwarding failed' in forward.stderr, forward.stderr
    modes = vm.sh('stat -c %a /var/lib/nzc-nomad/alloc/*/plugin/secrets/driver-config.yaml').stdout.split()
    assert modes and set(modes) == {'400'}, modes


def test_the_service_user_cannot_have_root_write_or_chown_through_its_ssh_link(vm, stack):
    """The service user owns its home, so it can swap its .ssh for a link to root's. Root's next storage_host run
    would have given root's .ssh to it and written its key there (ansible.builtin.file follows links); file_set
    refuses, naming the link, and root's .ssh keeps its owner, mode and keys."""
    roots = 'stat -c "%U:%G %a %i" /root/.ssh /root/.ssh/authorized_keys && sha256sum /root/.ssh/authorized_keys'
    before = vm.sh(roots).stdout
    swapped = as_csi(vm, 'mv ~/.ssh ~/.ssh-kept && ln -s /root/.ssh ~/.ssh')
    assert swapped.returncode == 0, swapped.stderr
    try:
        run = stack.playbook(STACK / 'storage_host_only.yml')
        out = run.stdout + run.stderr
        assert 'files[0].path /home/csi/.ssh is a symbolic link' in out, out[-3000:]
        assert re.search(r'zfsvm +: ok=\d+ +changed=0 +unreachable=0 +failed=1', out), out[-3000:]
        assert vm.sh(roots).stdout == before
    finally:
        vm.sh('rm -f ~csi/.ssh && mv ~csi/.ssh-kept ~csi/.ssh')


def subprocess_ssh(vm, options, command):
    """A connection of its own as csi, with its warnings (no -q), and stdin left alone (ssh would make it
    non-blocking, which later ansible runs refuse)."""
    argv = [word for word in vm.ssh_argv('csi') if word != '-q']
    argv = argv[:1] + ['-n', '-o', 'ControlMaster=no', '-o', 'ControlPath=none'] + options + argv[1:]
    return subprocess.run(
        argv + [command], capture_output=True, text=True, timeout=120, check=False, stdin=subprocess.DEVNULL
    )


# A hostile primary's replica, as a pull leaves it on this standby, and the zfs-dataset plugin run as Nomad runs it.
REPLICAS = 'tank/it-lp-replicas'
PULLED = '127.0.0.1/tank/nomad/volumes'
PULL_CONF = '/etc/nomad-zfs-csi/pulls/it-lp.conf'
PLUGIN_DIR = '/tmp/it-lp-plugin'


@pytest.fixture
def standby(vm, target):
    """The plugin with a replica parent in tank and a pull whose target is under it; a replica of default/t-evil
    that holds a link to the target and a child dataset at the link's path, as a primary can send them."""
    replica = '%s/%s/default/t-evil' % (REPLICAS, PULLED)
    vm.sh(
        'mkdir -p {d} && cp {plugin} {d}/zfs-dataset && printf "parent=tank/nomad/volumes\\nreplica_parent={r}\\n" '
        '> {d}/zfs-dataset.conf && printf "TARGET={r}/{p}\\n" > {conf}'.format(
            d=PLUGIN_DIR, plugin=HOST_VOLUME_PLUGIN, r=REPLICAS, p=PULLED, conf=PULL_CONF
        )
    )
    vm.zfs('create', '-o', 'mountpoint=none', '-o', 'readonly=on', REPLICAS)
    vm.zfs('create', '-p', '-o', 'mountpoint=/mnt/it-lp-evil', '-o', 'readonly=off', replica)
    vm.sh('ln -s %s /mnt/it-lp-evil/x' % target)
    vm.zfs('create', '-u', replica + '/x')
    vm.sh('zfs unmount {r} && zfs inherit mountpoint {r} && zfs inherit readonly {r}'.format(r=replica))
    yield replica
    vm.sh('rm -rf %s %s' % (PLUGIN_DIR, PULL_CONF))
    vm.zfs('destroy', '-r', REPLICAS, check=False)
    vm.zfs('destroy', '-r', 'tank/nomad/volumes/nomad', check=False)


def plugin(vm, name, namespace='default', capacity=64 << 20, **parameters):
    env = {
        'DHV_OPERATION': 'create',
        'DHV_NAMESPACE': namespace,
        'DHV_VOLUME_NAME': name,
        'DHV_VOLUME_ID': '6d0f7a5e-2c1b-4f7e-9a35-0c6a2f3b9e11',
        'DHV_CAPACITY_MIN_BYTES': '0',
        'DHV_CAPACITY_MAX_BYTES': str(capacity),
        'DHV_PARAMETERS': json.dumps(parameters),
    }
    argv = 'env -i %s %s/zfs-dataset create' % (' '.join(shlex.quote('%s=%s' % kv) for kv in env.items()), PLUGIN_DIR)
    ran = vm.sh(argv, check=False)
    return ran.returncode, json.loads(ran.stdout or '{}').get('error', '')


def test_a_hostile_primarys_replica_is_refused_and_nothing_changes(vm, standby):
    before = datasets(vm, 'tank')
    # A replica with a child: adopted, the child would mount through the link onto the target.
    code, error = plugin(vm, 't-evil', adopt_replica=PULLED)
    assert code == 1 and 'has datasets below it (%s/x)' % standby in error, error
    # Short of the pull target: namespace nomad, name volumes would adopt the whole pull, every namespace's replica.
    code, error = plugin(vm, 'volumes', namespace='nomad', adopt_replica='127.0.0.1/tank')
    assert code == 1 and 'is not the target of a zfs_replication pull' in error, error
    # A quota that limits nothing, and a value zfs would refuse only after -p made the namespace's dataset.
    code, error = plugin(vm, 't-big', capacity=1000 << 50)
    assert code == 1 and 'more than pool tank can ever hold' in error, error
    code, error = plugin(vm, 't-nl', namespace='t-lp-ns', compression='lz4\n')
    assert code == 1 and 'parameter compression=' in error, error
    assert datasets(vm, 'tank') == before
    assert not covered(vm)


def test_the_replication_user_cannot_move_its_own_ssh_directory(vm):
    """Its .ssh is root's, so that the forced command stays in front of every standby's key; so is its home."""
    home = vm.sh('getent passwd zfs-replica | cut -d: -f6').stdout.strip()
    moved = vm.sh('runuser -u zfs-replica -- mv %s/.ssh %s/.ssh-aside' % (home, home), check=False)
    assert moved.returncode != 0 and 'Permission denied' in moved.stderr, moved.stderr
    assert vm.sh('stat -c %U:%a ' + home).stdout.strip() == 'root:755'


def test_the_standbys_key_works_from_the_standbys_address_only(vm):
    """A copy of the standby's private key is of no use from elsewhere (from= in the primary's authorized_keys):
    from 127.0.0.2, another address of the same VM, it is refused."""
    ssh = (
        'ssh -i /var/lib/zfs-replica/.ssh/id_ed25519 -b {src} -o StrictHostKeyChecking=no -o BatchMode=yes '
        '-o UserKnownHostsFile=/dev/null zfs-replica@127.0.0.1 "zfs list -H -o name %s"' % PARENT
    )
    assert vm.sh(ssh.format(src='127.0.0.1')).stdout.strip() == PARENT
    elsewhere = vm.sh(ssh.format(src='127.0.0.2'), check=False)
    assert elsewhere.returncode == 255 and 'Permission denied' in elsewhere.stderr, elsewhere.stderr


def test_what_a_primary_sends_cannot_fill_the_standbys_pool_or_make_devices(vm):
    """The replica parent's quota is 80% of its pool (zfs_replication_replica_quota's default), and volmode=none."""
    size = int(vm.sh('zpool list -Hp -o size backup').stdout)
    got = vm.zfs('get', '-Hp', '-o', 'property,value,source', 'quota,volmode', 'backup/replica').stdout.splitlines()
    assert got == ['quota\t%d\tlocal' % (size * 80 // 100 // 1048576 * 1048576), 'volmode\tnone\tlocal'], got
