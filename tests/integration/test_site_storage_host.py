"""playbooks/site.yml with inventories/local against the real ZFS VM: converge, idempotence, least privilege."""

import re
import subprocess

from zfsvm_client import BIN, REPO, ansible_env


def site(vm):
    env = ansible_env(ZFSVM_PORT=vm.port, ZFSVM_KEY=vm.key)
    proc = subprocess.run([str(BIN / 'ansible-playbook'), '-i', str(REPO / 'inventories' / 'local'),
                           str(REPO / 'playbooks' / 'site.yml')], capture_output=True, text=True, env=env,
                          check=False, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return re.search(r'zfsvm\s+: ok=\d+\s+changed=(\d+)', proc.stdout).group(1)


def test_site_converges_then_changes_nothing_and_grants_least_privilege(vm):
    vm.zfs('destroy', '-r', 'tank/nomad', check=False)
    vm.zfs('create', '-p', 'tank/nomad/csi')
    vm.zfs('allow', '-u', 'root', 'snapshot', 'tank/nomad/csi')  # a stray grant that exact_for=all removes
    assert site(vm) != '0'
    assert site(vm) == '0'

    section = vm.zfs('allow', 'tank/nomad/csi').stdout
    assert 'user root' not in section
    granted = re.search(r'user csi (\S+)', section).group(1).split(',')
    assert granted == sorted(['atime', 'clone', 'compression', 'create', 'destroy', 'mount', 'mountpoint', 'promote',
                              'receive', 'refquota', 'refreservation', 'rename', 'rollback', 'send', 'share',
                              'sharenfs', 'snapshot', 'userprop'])
    assert vm.zfs('get', '-Hp', '-o', 'value,source', 'quota', 'tank/nomad/csi').stdout.split() == [
        str(2 * 1024 ** 3), 'local']

    # The service user, over SSH with its authorised key: under the parent yes, outside no.
    made = vm.sh('/usr/sbin/zfs create tank/nomad/csi/by-csi; /usr/sbin/zfs snapshot tank/nomad/csi/by-csi@s',
                 user='csi', check=False)
    assert vm.zfs('list', 'tank/nomad/csi/by-csi@s', check=False).returncode == 0, made.stderr
    outside = vm.sh('/usr/sbin/zfs create tank/nomad/not-csi', user='csi', check=False)
    assert outside.returncode != 0 and 'permission denied' in outside.stderr
    # sudo: mount under the parent is allowed, anything else is not.
    assert vm.sh('sudo -n /usr/sbin/zfs mount tank/nomad/csi/by-csi', user='csi', check=False).returncode == 0
    for command in ('sudo -n /usr/sbin/zfs mount tank/other', 'sudo -n /usr/sbin/zfs destroy tank/nomad/csi/by-csi',
                    'sudo -n /bin/true'):
        denied = vm.sh(command, user='csi', check=False)
        assert denied.returncode != 0 and 'password is required' in denied.stderr, command
    vm.zfs('destroy', '-r', 'tank/nomad/csi/by-csi')
