"""Verify the zfs-generic-iscsi storage instance (converge.yml's second play): its user may configure the kernel's
iSCSI target only through the role's confined targetcli, on zvols of its own parent. The attacks on that program,
and democratic-csi's own scripts through it, run in tests/integration/stack/test_iscsi_target.py."""

import re
from pathlib import Path

import pytest
import testinfra
import yaml

REPO = Path(__file__).resolve().parents[4]
# The instance converge.yml plays (the integration tests' settings).
ISCSI = yaml.safe_load((REPO / 'tests/integration/stack/iscsi_storage.yml').read_text())
USER, PARENT = ISCSI['storage_host_user'], ISCSI['nomad_zfs_csi_storage']['parent']
# The role's table of what each driver runs (destroy and userprop granted below the parent only), and the parents'
# own properties that the scenario's inventory sets (inventories/local), which the role grants too.
ROLE_VARS = yaml.safe_load((REPO / 'roles/storage_host/vars/main.yml').read_text())
BELOW_ONLY = ROLE_VARS['storage_host_below_parent_only']
SUDO_BIN = ROLE_VARS['storage_host_sudo_bin']
PARENT_PROPERTIES = yaml.safe_load((REPO / 'inventories/local/group_vars/storage_hosts.yml').read_text())[
    'storage_host_parent_properties'
]
ISCSI_SET = set(ROLE_VARS['storage_host_permission_table']['zfs-generic-iscsi'] + list(PARENT_PROPERTIES))
ISCSI_SET -= set(BELOW_ONLY)


@pytest.fixture(scope='module')
def iscsi_user(host):
    hostvars = host.ansible.get_variables()
    return testinfra.get_host(
        'ssh://%s@%s:%s' % (USER, hostvars['ansible_host'], hostvars['ansible_port']),
        ssh_identity_file=hostvars['ansible_private_key_file'],
        ssh_extra_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR',
    )


def test_its_parent_delegates_exactly_the_drivers_set(host):
    section = host.check_output('/usr/sbin/zfs allow %s', PARENT)
    granted = re.findall(r'^(\S.*permissions):\n\s+user (\S+) (\S+)$', section, re.M)
    assert granted == [
        ('Descendent permissions', USER, ','.join(sorted(BELOW_ONLY))),
        ('Local+Descendent permissions', USER, ','.join(sorted(ISCSI_SET))),
    ]
    # The target needs its zvols' devices, without partitions; the snapshots parent holds none.
    snapshots = ISCSI['nomad_zfs_csi_storage']['snapshots_parent']
    volmodes = host.check_output('/usr/sbin/zfs get -H -o name,value,source volmode %s %s', PARENT, snapshots)
    assert volmodes.splitlines() == ['%s\tdev\tlocal' % PARENT, '%s\tnone\tlocal' % snapshots], volmodes


def test_sudo_runs_only_the_confined_targetcli_which_is_roots(host, iscsi_user):
    wrapper = host.file(SUDO_BIN + '/targetcli')
    assert (wrapper.user, wrapper.group, wrapper.mode) == ('root', 'root', 0o755)
    assert host.file(SUDO_BIN).listdir() == ['targetcli']
    conf = host.file('/etc/nomad-zfs-csi/storage/%s.conf' % USER)
    assert conf.user == 'root' and 'parent=%s\n' % PARENT in conf.content_string
    listed = iscsi_user.run('sudo -n -l')
    assert listed.rc == 0 and '(root) NOPASSWD: %s/targetcli ""' % SUDO_BIN in listed.stdout, listed.stdout
    assert 'zfs-root' not in listed.stdout
    for command in ('sudo -n /usr/bin/targetcli ls', 'sudo -n targetcli ls', 'sudo -n /usr/sbin/zfs list'):
        assert iscsi_user.run(command).rc != 0, command


def test_the_saved_targets_come_back_at_boot(host):
    assert host.service('rtslib-fb-targetctl').is_enabled
