"""What OpenZFS 2.4 has that the first VM's 2.3.2 lacks and that touches the volumes' space and the service user's
rights, on the VM that runs it (the second VM's Debian 13, trixie-backports; docs/security.md, What OpenZFS 2.4
changes): `zfs rewrite`, which any user who may write a file can run on it, and the default user, group and project
quotas."""

import pytest
from stack_layout import PARENT

WRAPPER = '/usr/local/libexec/nomad-zfs-csi/zfs'
VOLUME = PARENT + '/t-24'


@pytest.fixture(autouse=True)
def openzfs_24(vm, stack):
    """These run on the VM whose OpenZFS is 2.4 (the Makefile's VM_B_TESTS), and fail anywhere else."""
    version = vm.sh('cat /sys/module/zfs/version').stdout.strip()
    assert tuple(int(n) for n in version.split('-')[0].split('.')[:2]) >= (2, 4), (
        'OpenZFS %s: use ZFSVM_RELEASE=trixie' % version
    )


@pytest.fixture
def volume(vm):
    """t-24, made and sized by the service user through the wrapper, as democratic-csi does: root then gives it a
    quota of twice its refquota."""
    made = vm.sh(
        '%s create -p %s && %s set refquota=8M %s' % (WRAPPER, VOLUME, WRAPPER, VOLUME), user='csi', check=False
    )
    assert made.returncode == 0, made.stderr
    assert vm.zfs('get', '-Hp', '-o', 'value,source', 'quota', VOLUME).stdout == '%d\tlocal\n' % (16 << 20)
    yield VOLUME
    vm.sh('zfs destroy -r %s' % VOLUME, check=False)


def test_a_workload_rewriting_its_file_around_snapshots_stays_within_the_quota(vm, volume):
    """zfs rewrite (OpenZFS 2.3.4 and later) writes a file's blocks anew, as the file's writer may: nobody here,
    with no delegation at all, through a bind mount of the volume as the zfs-local drivers give a task (the parent's
    directory is closed to it). Around snapshots each rewrite keeps the old blocks too, as a workload's own rewrite
    of the data would, and the quota that counts snapshots (twice the capacity) stops the third. ZFS checks a quota
    per transaction group, so the write that crosses it can land most of its blocks; once over, nothing more
    lands."""
    bind = '/run/t-24'
    vm.sh(
        'mkdir -p {b} && mount --bind /{v} {b} && dd if=/dev/urandom of={b}/data bs=1M count=6 status=none'
        ' && chown nobody {b}/data && sync'.format(b=bind, v=volume)
    )
    try:
        rewrite = 'zfs snapshot %s@autosnap_%%d && runuser -u nobody -- /usr/sbin/zfs rewrite %s/data && sync' % (
            volume,
            bind,
        )
        rounds = [vm.sh(rewrite % n, check=False) for n in (1, 2, 3)]
        assert [r.returncode == 0 for r in rounds] == [True, True, False], rounds
        assert 'quota exceeded' in rounds[2].stderr.lower(), rounds[2]
        # What round 3 wrote is on disk before the count that round 4 must not raise.
        vm.sh('sync && zpool sync %s' % volume.split('/')[0])
        over = int(vm.zfs('get', '-Hp', '-o', 'value', 'used', volume).stdout)
        fourth = vm.sh(rewrite % 4, check=False)
        assert fourth.returncode != 0 and 'quota exceeded' in fourth.stderr.lower(), fourth
        assert int(vm.zfs('get', '-Hp', '-o', 'value', 'used', volume).stdout) - over < 1 << 20
    finally:
        vm.sh('umount %s' % bind, check=False)


@pytest.mark.parametrize('quota', ['defaultuserquota', 'defaultgroupquota', 'defaultprojectquota'])
def test_the_service_user_cannot_set_a_default_quota(vm, volume, quota):
    """2.4's default quotas apply to every user, group or project without one of its own: on a parent they would
    bound every tenant's writes. The service user holds no delegation for them, and the wrapper sets none."""
    for zfs, target in (('/usr/sbin/zfs', volume), ('/usr/sbin/zfs', PARENT), (WRAPPER, volume)):
        refused = vm.sh('%s set %s=1M %s || exit 1' % (zfs, quota, target), user='csi', check=False)
        assert refused.returncode != 0, (zfs, target)
        assert vm.zfs('get', '-H', '-o', 'value', quota, target).stdout.strip() in ('none', '0', '-'), (zfs, target)
