"""Verify the storage host after site.yml: least privilege, checked as the service user over SSH."""

import re
from pathlib import Path

import pytest
import testinfra
import yaml

# The contract both roles read (inventories/local/group_vars/all.yml, which the scenario links).
STORAGE = yaml.safe_load(
    (Path(__file__).resolve().parents[4] / 'inventories' / 'local' / 'group_vars' / 'all.yml').read_text()
)['nomad_zfs_csi_storage']
PARENT, SNAPSHOTS = STORAGE['parent'], STORAGE['snapshots_parent']
# democratic-csi with zfs.cli.sudoEnabled off runs this instead of zfs (the pack's zfs_cli_path).
WRAPPER = STORAGE['zfs_cli_path']
# What the sudo rule runs as root (roles/storage_host/vars/main.yml's storage_host_zfs_root).
ROOT_HELPER = '/usr/local/libexec/nomad-zfs-csi/zfs-root'
# roles/storage_host/vars/main.yml for zfs-generic-nfs, plus the parent's own properties;
# destroy and userprop are granted below the parents only. No promote, rename, rollback (no driver calls them),
# receive (root receives plain streams for it), refreservation (a reservation outside the quota), share or sharenfs
# (root sets what zfs share -a reads).
NFS_DRIVER_SET = sorted(['clone', 'create', 'mount', 'refquota', 'send', 'snapshot', 'atime', 'compression'])
# inventories/local/group_vars/storage_hosts.yml, chosen unlike the kernel's defaults (8 threads, +3).
NFS_THREADS = 4


@pytest.fixture(scope='module')
def csi(host):
    """The same VM, reached as the CSI service user with the authorised key."""
    hostvars = host.ansible.get_variables()
    return testinfra.get_host(
        'ssh://csi@%s:%s' % (hostvars['ansible_host'], hostvars['ansible_port']),
        ssh_identity_file=hostvars['ansible_private_key_file'],
        ssh_extra_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR',
    )


def test_service_user_exists(host):
    user = host.user('csi')
    assert user.exists and user.uid != 0


def test_parent_delegates_exactly_the_driver_set(host):
    section = host.check_output('/usr/sbin/zfs allow %s', PARENT)
    assert 'user root' not in section  # the stray grant from prepare.yml is gone
    granted = re.findall(r'^(\S.*permissions):\n\s+user (\S+) (\S+)$', section, re.M)
    assert granted == [
        ('Descendent permissions', 'csi', 'destroy,userprop'),
        ('Local+Descendent permissions', 'csi', ','.join(NFS_DRIVER_SET)),
    ]


@pytest.mark.parametrize('parent', [PARENT, SNAPSHOTS])
def test_service_user_cannot_destroy_a_parent(host, csi, parent):
    """By delegation, not because a mounted parent cannot be unmounted by csi: unmounted here,
    the parent still refuses csi's destroy, directly and through democratic-csi's zfs wrapper."""
    host.check_output('/usr/sbin/zfs unmount %s', parent)
    try:
        for zfs in ('/usr/sbin/zfs', WRAPPER):
            refused = csi.run('%s destroy -p %s', zfs, parent)
            assert refused.rc != 0 and 'permission denied' in refused.stderr, (zfs, refused.stderr)
            assert host.run('/usr/sbin/zfs list %s', parent).rc == 0
    finally:
        host.run('/usr/sbin/zfs mount %s', parent)


@pytest.mark.parametrize('parent', [PARENT, SNAPSHOTS])
def test_both_parents_have_a_local_quota(host, parent):
    """The snapshots parent's too (storage_host_snapshots_parent_quota, the parent's by default): what the user
    makes or receives there is bounded as in the parent."""
    out = host.check_output('/usr/sbin/zfs get -Hp -o value,source quota %s', parent)
    assert out.split() == [str(2 * 1024**3), 'local']


def test_service_user_creates_and_snapshots_under_the_parent(host, csi):
    csi.run('/usr/sbin/zfs create %s/by-csi', PARENT)  # "may only be mounted by root" is expected
    made = csi.run('/usr/sbin/zfs snapshot %s/by-csi@s', PARENT)
    try:
        assert made.rc == 0, made.stderr
        assert host.run('/usr/sbin/zfs list %s/by-csi@s', PARENT).rc == 0
    finally:
        host.run('/usr/sbin/zfs destroy -r %s/by-csi', PARENT)


def test_parents_keep_setuid_devices_and_zvol_devices_off(host):
    for parent in (PARENT, SNAPSHOTS):
        out = host.check_output('/usr/sbin/zfs get -H -o property,value,source setuid,devices,volmode %s', parent)
        assert out.splitlines() == ['setuid\toff\tlocal', 'devices\toff\tlocal', 'volmode\tnone\tlocal'], parent


def test_service_user_cannot_point_a_mountpoint_out_of_the_parent(host, csi):
    """With sudo zfs mount allowed, a mountpoint the user chose would be root mounting anywhere."""
    at_create = csi.run('/usr/sbin/zfs create -o mountpoint=/etc/nzc-escape %s/escape', PARENT)
    csi.run('/usr/sbin/zfs create %s/moved', PARENT)  # "may only be mounted by root" is expected
    # zfs set exits 255 on "permission denied", which testinfra takes for an SSH failure.
    later = csi.run('/usr/sbin/zfs set mountpoint=/etc/nzc-escape %s/moved || exit 1', PARENT)
    try:
        assert at_create.rc != 0 and 'permission denied' in at_create.stderr, at_create.stderr
        assert host.run('/usr/sbin/zfs list %s/escape', PARENT).rc != 0
        assert later.rc != 0 and 'permission denied' in later.stderr, later.stderr
        assert host.check_output('/usr/sbin/zfs get -H -o value mountpoint %s/moved', PARENT) == '/%s/moved' % PARENT
    finally:
        host.run('/usr/sbin/zfs destroy %s/escape', PARENT)
        host.run('/usr/sbin/zfs destroy %s/moved', PARENT)


def test_a_received_dataset_is_mounted_under_the_parent_without_setuid(host, csi):
    """zfs receive carries files with any owner and mode and, with -p, properties: root (standing in for a
    machine the user controls) sends a dataset with a set-uid copy of sh that asks to mount in /etc and to be
    exported. The user holds no receive delegation; root receives for it through the wrapper, a plain stream only."""
    bait = 'tank/nzc-bait'
    host.check_output(
        '/usr/sbin/zfs create -o mountpoint=/etc/nzc-bait -o setuid=on -o sharenfs=rw=@192.0.2.1/32 %s && '
        'install -m 4755 /bin/sh /etc/nzc-bait/suid-sh && /usr/sbin/zfs snapshot %s@s && '
        '/usr/sbin/zfs send -p %s@s > /tmp/bait-p.zstream && /usr/sbin/zfs send %s@s > /tmp/bait.zstream && '
        'chmod 644 /tmp/bait-p.zstream /tmp/bait.zstream',
        bait,
        bait,
        bait,
        bait,
    )
    try:
        direct = csi.run('/usr/sbin/zfs receive %s/bait < /tmp/bait.zstream || exit 1', PARENT)
        assert direct.rc != 0 and 'permission denied' in direct.stderr, direct.stderr
        with_props = csi.run('%s receive %s/bait < /tmp/bait-p.zstream || exit 1', WRAPPER, PARENT)
        assert with_props.rc != 0 and 'several datasets or properties' in with_props.stderr, with_props.stderr
        assert host.run('/usr/sbin/zfs list %s/bait', PARENT).rc != 0
        received = csi.run('%s receive %s/bait < /tmp/bait.zstream || exit 1', WRAPPER, PARENT)
        assert received.rc == 0, received.stderr
        props = host.check_output(
            '/usr/sbin/zfs get -H -o property,value,source mountpoint,setuid,sharenfs %s/bait', PARENT
        )
        # All come from above (the parent's own mountpoint is the pool's default, hence "default").
        assert props.splitlines() == [
            'mountpoint\t/%s/bait\tdefault' % PARENT,
            'setuid\toff\tinherited from %s' % PARENT,
            'sharenfs\toff\tdefault',
        ], props
        options = host.check_output('findmnt -n -o TARGET,OPTIONS --source %s/bait', PARENT)
        assert options.split()[0] == '/%s/bait' % PARENT and 'nosuid' in options and 'nodev' in options, options
        escalated = csi.run('/%s/bait/suid-sh -p -c id', PARENT)
        assert escalated.rc == 0 and 'euid=0' not in escalated.stdout, escalated.stdout
    finally:
        host.run('/usr/sbin/zfs destroy -r %s/bait', PARENT)
        host.run('/usr/sbin/zfs destroy -r %s', bait)
        host.run('rm -f /tmp/bait.zstream /tmp/bait-p.zstream')


def test_service_user_cannot_create_outside_the_parent(csi):
    outside = csi.run('/usr/sbin/zfs create tank/nomad/not-csi')
    assert outside.rc != 0 and 'permission denied' in outside.stderr


@pytest.mark.parametrize(
    'command',
    [
        '/usr/sbin/zfs mount %s/v' % PARENT,
        '/usr/sbin/zfs destroy %s' % PARENT,
        '%s mount tank/other' % ROOT_HELPER,
        '%s share tank/other' % ROOT_HELPER,
        '%s mount %s/../other' % (ROOT_HELPER, PARENT),
        '%s mount %s/v/deeper' % (ROOT_HELPER, PARENT),
        '%s guard' % ROOT_HELPER,
        '/bin/true',
    ],
)
def test_sudo_goes_no_further_than_the_narrow_rule(csi, command):
    denied = csi.run('sudo -n ' + command)
    assert denied.rc != 0 and 'password is required' in denied.stderr, command


def test_sudo_mounts_a_volume_where_it_inherits_only(host, csi):
    host.check_output('/usr/sbin/zfs create -u %s/mountable', PARENT)
    try:
        mounted = csi.run('sudo -n %s mount %s/mountable', ROOT_HELPER, PARENT)
        assert mounted.rc == 0, mounted.stderr
        assert host.mount_point('/%s/mountable' % PARENT).exists
        # Elsewhere, even where root put it, is not the service user's to ask for.
        host.check_output('/usr/sbin/zfs set mountpoint=/mnt/by-csi %s/mountable', PARENT)  # root remounts it
        host.check_output('/usr/sbin/zfs unmount %s/mountable', PARENT)
        refused = csi.run('sudo -n %s mount %s/mountable', ROOT_HELPER, PARENT)
        assert refused.rc != 0 and 'only the one it inherits' in refused.stderr, refused.stderr
        assert not host.mount_point('/mnt/by-csi').exists
    finally:
        host.run('/usr/sbin/zfs destroy -r %s/mountable', PARENT)


def test_nfs_server_runs_with_the_role_settings(host):
    assert host.service('nfs-server').is_running and host.service('nfs-server').is_enabled
    assert host.service('zfs-share').is_enabled
    assert int(host.file('/proc/fs/nfsd/threads').content_string) == NFS_THREADS
    offered = host.file('/proc/fs/nfsd/versions').content_string.split()
    assert '-3' in offered and '+4.2' in offered, offered


def test_service_user_shares_a_child_that_mounts_over_nfs(host, csi):
    """The zfs-generic-nfs flow: mount via sudo, then root sets sharenfs, which shares it."""
    child = PARENT + '/shared'
    csi.run('/usr/sbin/zfs create %s', child)  # "may only be mounted by root" is expected
    try:
        for command in (
            'sudo -n %s mount %%s' % ROOT_HELPER,
            'sudo -n %s sharenfs %%s rw=@127.0.0.1/32' % ROOT_HELPER,
        ):
            done = csi.run(command, child)
            assert done.rc == 0, (command, done.stderr)
        host.check_output('echo written-on-zfs > /%s/file', child)
        host.check_output('mkdir -p /mnt/nfs-check && mount -t nfs -o vers=4.2 127.0.0.1:/%s /mnt/nfs-check', child)
        assert host.check_output('cat /mnt/nfs-check/file') == 'written-on-zfs'
    finally:
        host.run('umount /mnt/nfs-check')
        host.run('/usr/sbin/zfs destroy -r %s', child)


def zfs_get(host, prop, dataset):
    return host.check_output('/usr/sbin/zfs get -Hp -o value %s %s', prop, dataset)


def test_wrapper_is_root_owned(host):
    wrapper = host.file(WRAPPER)
    assert wrapper.user == 'root' and wrapper.group == 'root' and wrapper.mode == 0o755


def test_wrapper_reads_the_parent_from_the_service_users_root_owned_file(host, csi):
    conf = host.file('/etc/nomad-zfs-csi/storage/csi.conf')
    assert conf.user == 'root' and conf.mode == 0o644
    assert conf.content_string == 'parent=%s\nsnapshots_parent=%s\nroot_helper=%s\nvolume_quota_percent=200\n' % (
        PARENT,
        SNAPSHOTS,
        ROOT_HELPER,
    )
    assert csi.run('test -w /etc/nomad-zfs-csi/storage/csi.conf || test -w /etc/nomad-zfs-csi/storage').rc != 0
    assert not host.file('/etc/nomad-zfs-csi/zfs-wrapper.conf').exists


def test_wrapper_runs_a_democratic_csi_volume_lifecycle_as_the_service_user(host, csi):
    """The command lines democratic-csi's zfs-generic-nfs controller sends over SSH (values quoted as its
    escapeShell does): create, share, snapshot, clone, destroy; each needs root on Linux at some step."""
    vol, clone = PARENT + '/pvc-w1', PARENT + '/pvc-w2'
    try:
        created = csi.run(
            WRAPPER + ' create -p -o democratic-csi:csi_volume_name="pvc-w1" '
            '-o refquota="1073741824" ' + vol + ' || exit 1'
        )
        assert created.rc == 0 and created.stderr == '', created.stderr
        assert zfs_get(host, 'mounted', vol) == 'yes' and zfs_get(host, 'refquota', vol) == '1073741824'

        shared = csi.run(WRAPPER + ' set sharenfs="rw=@127.0.0.1/32,no_root_squash" ' + vol + ' || exit 1')
        assert shared.rc == 0 and shared.stderr == '', shared.stderr
        assert '/' + vol in host.check_output('exportfs -s').split()  # the kernel's export table

        host.check_output('echo before-snapshot > /%s/file', vol)
        for command in (' snapshot %s@snap-1' % vol, ' clone -o refquota="1073741824" %s@snap-1 %s' % (vol, clone)):
            done = csi.run(WRAPPER + command + ' || exit 1')
            assert done.rc == 0 and done.stderr == '', (command, done.stderr)
        assert zfs_get(host, 'mounted', clone) == 'yes'
        assert host.file('/%s/file' % clone).content_string == 'before-snapshot\n'

        # DeleteVolume's first step; root unshares it and sets sharenfs=off.
        unshared = csi.run(WRAPPER + ' inherit sharenfs ' + vol + ' || exit 1')
        assert unshared.rc == 0 and unshared.stderr == '', unshared.stderr
        assert '/' + vol not in host.check_output('exportfs -s').split()
        assert host.check_output('/usr/sbin/zfs get -H -o value sharenfs %s', vol) == 'off'
        for dataset in (clone, vol):
            destroyed = csi.run(WRAPPER + ' destroy -r -p %s || exit 1', dataset)
            assert destroyed.rc == 0, destroyed.stderr
        assert host.run('/usr/sbin/zfs list %s', vol).rc != 0
        assert '/' + vol not in host.check_output('exportfs -s').split()
        assert host.run('findmnt -n --source %s', vol).rc != 0
        # democratic-csi treats exactly this as "already deleted".
        again = csi.run(WRAPPER + ' destroy -r -p %s || exit 1', vol)
        assert again.rc != 0 and 'dataset does not exist' in again.stderr, again.stderr
    finally:
        host.run('/usr/sbin/zfs destroy -r %s; /usr/sbin/zfs destroy -r %s', clone, vol)


def test_wrapper_refuses_a_filesystem_deeper_than_a_volume(host, csi):
    """Root never mounts one (the user owns a volume's directory, and could put a link where it would mount)."""
    created = csi.run(WRAPPER + ' create -p %s/ns/a/pvc-w3 || exit 1', PARENT)
    try:
        assert created.rc != 0 and 'only filesystems exactly one level below' in created.stderr, created.stderr
        assert host.run('/usr/sbin/zfs list %s/ns', PARENT).rc != 0
    finally:
        host.run('/usr/sbin/zfs destroy -r %s/ns', PARENT)


def test_wrapper_retry_mounts_what_an_interrupted_create_left(host, csi):
    """A controller killed between create and mount leaves an unmounted dataset; its retry's
    create -p succeeds on the existing dataset and must leave the volume mounted."""
    csi.check_output('/usr/sbin/zfs create -u %s/half', PARENT)
    try:
        retried = csi.run(WRAPPER + ' create -p %s/half || exit 1', PARENT)
        assert retried.rc == 0, retried.stderr
        assert zfs_get(host, 'mounted', PARENT + '/half') == 'yes'
    finally:
        host.run('/usr/sbin/zfs destroy %s/half', PARENT)


@pytest.mark.parametrize(
    'command, refusal',
    [
        ('create tank/nomad/not-csi', 'permission denied'),
        ('mount tank/other', 'password is required'),
        ('destroy %s' % SNAPSHOTS, 'permission denied'),
    ],
)
def test_wrapper_gives_no_more_than_the_user_has(host, csi, command, refusal):
    refused = csi.run(WRAPPER + ' ' + command + ' || exit 1')
    assert refused.rc != 0 and refusal in refused.stderr, refused.stderr
    assert host.run('/usr/sbin/zfs list tank/nomad/not-csi').rc != 0
    assert zfs_get(host, 'mounted', SNAPSHOTS) == 'yes'
