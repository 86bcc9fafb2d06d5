"""Verify the storage host after site.yml: least privilege, checked as the service user over SSH."""

import re

import pytest
import testinfra

PARENT = 'tank/nomad/csi'
# roles/storage_host/vars/main.yml for zfs-generic-nfs, plus the parent's own properties.
NFS_DRIVER_SET = sorted(['clone', 'create', 'destroy', 'mount', 'mountpoint', 'promote', 'receive', 'refquota',
                         'refreservation', 'rename', 'rollback', 'send', 'share', 'sharenfs', 'snapshot', 'userprop',
                         'atime', 'compression'])
# inventories/local/group_vars/storage_hosts.yml, chosen unlike the kernel's defaults (8 threads, +3).
NFS_THREADS = 4


@pytest.fixture(scope='module')
def csi(host):
    """The same VM, reached as the CSI service user with the authorised key."""
    hostvars = host.ansible.get_variables()
    return testinfra.get_host(
        'ssh://csi@%s:%s' % (hostvars['ansible_host'], hostvars['ansible_port']),
        ssh_identity_file=hostvars['ansible_private_key_file'],
        ssh_extra_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes')


def test_service_user_exists(host):
    user = host.user('csi')
    assert user.exists and user.uid != 0


def test_parent_delegates_exactly_the_driver_set(host):
    section = host.check_output('/usr/sbin/zfs allow %s', PARENT)
    assert 'user root' not in section  # the stray grant from prepare.yml is gone
    granted = re.findall(r'^\s+user (\S+) (\S+)$', section, re.M)
    assert granted == [('csi', ','.join(NFS_DRIVER_SET))]


def test_parent_quota_is_local(host):
    out = host.check_output('/usr/sbin/zfs get -Hp -o value,source quota %s', PARENT)
    assert out.split() == [str(2 * 1024 ** 3), 'local']


def test_service_user_creates_and_snapshots_under_the_parent(host, csi):
    csi.run('/usr/sbin/zfs create %s/by-csi', PARENT)  # "may only be mounted by root" is expected
    made = csi.run('/usr/sbin/zfs snapshot %s/by-csi@s', PARENT)
    try:
        assert made.rc == 0, made.stderr
        assert host.run('/usr/sbin/zfs list %s/by-csi@s', PARENT).rc == 0
    finally:
        host.run('/usr/sbin/zfs destroy -r %s/by-csi', PARENT)


def test_service_user_cannot_create_outside_the_parent(csi):
    outside = csi.run('/usr/sbin/zfs create tank/nomad/not-csi')
    assert outside.rc != 0 and 'permission denied' in outside.stderr


@pytest.mark.parametrize('command', ['/usr/sbin/zfs mount tank/other', '/usr/sbin/zfs share tank/other', '/usr/sbin/zfs destroy %s' % PARENT,
                                     '/usr/sbin/zfs mount %s/../other' % PARENT, '/bin/true'])
def test_sudo_goes_no_further_than_the_narrow_rule(csi, command):
    denied = csi.run('sudo -n ' + command)
    assert denied.rc != 0 and 'password is required' in denied.stderr, command


def test_sudo_allows_mount_under_the_parent(host, csi):
    host.check_output('/usr/sbin/zfs create -o mountpoint=/mnt/by-csi %s/mountable', PARENT)
    try:
        host.check_output('/usr/sbin/zfs unmount %s/mountable', PARENT)
        mounted = csi.run('sudo -n /usr/sbin/zfs mount %s/mountable', PARENT)
        assert mounted.rc == 0, mounted.stderr
        assert host.mount_point('/mnt/by-csi').exists
    finally:
        host.run('/usr/sbin/zfs destroy -r %s/mountable', PARENT)


def test_nfs_server_runs_with_the_role_settings(host):
    assert host.service('nfs-server').is_running and host.service('nfs-server').is_enabled
    assert host.service('zfs-share').is_enabled
    assert int(host.file('/proc/fs/nfsd/threads').content_string) == NFS_THREADS
    offered = host.file('/proc/fs/nfsd/versions').content_string.split()
    assert '-3' in offered and '+4.2' in offered, offered


def test_service_user_shares_a_child_that_mounts_over_nfs(host, csi):
    """The zfs-generic-nfs flow: sharenfs as the user (delegated), mount and share via sudo."""
    child = PARENT + '/shared'
    csi.run('/usr/sbin/zfs create %s', child)  # "may only be mounted by root" is expected
    try:
        for command in ('/usr/sbin/zfs set sharenfs=rw=@127.0.0.1/32 %s', 'sudo -n /usr/sbin/zfs mount %s',
                        'sudo -n /usr/sbin/zfs share %s'):
            done = csi.run(command, child)
            assert done.rc == 0, (command, done.stderr)
        host.check_output('echo written-on-zfs > /%s/file', child)
        host.check_output('mkdir -p /mnt/nfs-check && mount -t nfs -o vers=4.2 127.0.0.1:/%s /mnt/nfs-check', child)
        assert host.check_output('cat /mnt/nfs-check/file') == 'written-on-zfs'
    finally:
        host.run('umount /mnt/nfs-check')
        host.run('/usr/sbin/zfs destroy -r %s', child)
