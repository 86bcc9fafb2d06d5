"""The zfs-generic-iscsi driver, as a second plugin beside the stack's NFS one: the storage_host role for service
user csi-iscsi and parent tank/nomad/iscsi, democratic-csi's own targetcli scripts over SSH as that user, and forged
ones. Root's targetcli exports any block device of the host to anyone, so the user reaches it only through the role's
confined targetcli (files/targetcli-root.py). Then the pack's plugin under docker, end to end: a volume is a zvol
behind CHAP that the node logs in to, formats and mounts for a workload. (test_docker_plugin.py runs csi-sanity's
controller suite against it.)"""

import shlex

import pytest
from stack_layout import STACK

import iscsi_stack
from iscsi_stack import (
    BASENAME,
    CONFIGFS,
    CREATE,
    DELETE,
    INITIATOR,
    ISCSID_CONF,
    PARENT,
    PLAYBOOK,
    PLUGIN,
    SECRET,
    STORAGE,
    USER,
    democratic_csi,
    logs_with_the_secret,
    script,
    sessions,
    targets,
)
from zfsvm_client import changed, playbook_said, wait_until

# The extended tier (docs/testing.md, Tiers): make test leaves it out.
pytestmark = pytest.mark.extended

VOLUME, NAME = 'Pg-1', 'pg-1'
IQN = BASENAME + ':' + NAME
NODE_CHAP = [
    'node.session.auth.authmethod = CHAP',
    'node.session.auth.username = nomad',
    'node.session.auth.password = ' + SECRET,
]
MIB = 1024**2
# The stack's own storage instance's settings (the zfs-generic-nfs plugin's, user csi).
NFS_CONF = '/etc/nomad-zfs-csi/storage/csi.conf'


@pytest.fixture(scope='module')
def iscsi_host(stack, vm):
    """The storage_host and iscsi_initiator roles (iscsi_host.yml). A CHAP pair no target could be given stops the
    initiator's role with nothing changed. Check mode changes nothing; then they prepare the host, and a second run
    changes nothing. The initiator's CHAP pair is then in iscsid.conf (root's only), and no output shows the secret, at
    -vvv. The VM's own iscsid.conf is put back afterwards."""
    refused = stack.playbook(
        STACK / 'iscsi_initiator_only.yml', extra=dict(INITIATOR, iscsi_initiator_chap_password='a space ' + SECRET)
    )
    assert refused.returncode != 0 and 'iscsi_initiator_chap_password take letters' in refused.stdout
    extra = dict(STORAGE, **INITIATOR)
    original = vm.sh('md5sum ' + ISCSID_CONF).stdout
    checked = stack.playbook(PLAYBOOK, '--check', '--diff', '-vvv', extra=extra)
    assert checked.returncode == 0, playbook_said(checked)
    assert changed(checked)['zfsvm'] > 0 and vm.sh('md5sum ' + ISCSID_CONF).stdout == original
    assert vm.sh('id %s' % USER, check=False).returncode != 0
    assert vm.zfs('list', PARENT, check=False).returncode != 0
    nfs_storage = vm.sh('cat %s' % NFS_CONF).stdout
    with iscsi_stack.host_undone_after(vm):
        runs = [stack.playbook(PLAYBOOK, '-vvv', extra=extra) for _run in range(2)]
        assert [run.returncode for run in runs] == [0, 0], runs[-1].stdout[-3000:]
        assert [changed(run)['zfsvm'] > 0 for run in runs] == [True, False], runs[1].stdout[-3000:]
        assert not [run for run in [refused, checked] + runs if SECRET in run.stdout + run.stderr]
        conf = vm.sh('grep "^node\\.session\\.auth\\." {0}; stat -c %U:%a {0}'.format(ISCSID_CONF)).stdout
        assert conf.splitlines() == NODE_CHAP + ['root:600'], conf
        # iscsid runs before the first iscsiadm, which reads iscsid.conf only through a running iscsid.
        units = vm.sh('systemctl is-active iscsid.socket iscsid.service; systemctl is-enabled iscsid.service')
        assert units.stdout.split() == ['active', 'active', 'enabled'], units.stdout
        # Each instance has its settings: the NFS one's are as they were, and the boot guard reads both.
        assert vm.sh('cat %s' % NFS_CONF).stdout == nfs_storage
        guard = vm.sh('systemctl restart nomad-zfs-csi-mount-guard && systemctl is-active nomad-zfs-csi-mount-guard')
        assert guard.stdout.strip() == 'active'
        made = vm.sh('zfs create -V 64M %s/%s' % (PARENT, VOLUME), user=USER, check=False)
        assert made.returncode == 0, made.stderr
        vm.sh('udevadm settle')
        yield


def test_democratic_csis_scripts_export_a_zvol_of_the_parent_and_take_it_back(vm, iscsi_host):
    """Applied through rtslib as targetcli would, saved for the boot, and converging: democratic-csi sends the same
    create again on each CreateVolume of an existing volume and after a failure half-way (a target without its LUN),
    the same delete on each retry."""
    made = democratic_csi(vm, script(CREATE, VOLUME))
    assert made.returncode == 0, made.stdout + made.stderr
    # democratic-csi logs the answer: it names each auth step, never its value.
    assert 'Set auth password on %s.' % IQN in made.stdout and SECRET not in made.stdout
    try:
        tpg = '%s/iscsi/%s/tpgt_1' % (CONFIGFS, IQN)
        exported = [
            'core/iblock_0/%s/' % NAME,
            'iscsi/' + IQN,
            '/dev/zvol/%s/%s' % (PARENT, VOLUME),
        ]
        assert targets(vm).split() == exported
        # As targetcli makes a target: enabled, a portal on every address, the backstore's name as its model.
        assert vm.sh(
            'cd {0} && cat enable attrib/authentication auth/userid attrib/generate_node_acls && ls np && ls lun && '
            'cat {1}/core/iblock_0/{2}/attrib/emulate_model_alias'.format(tpg, CONFIGFS, NAME)
        ).stdout.split() == ['1', '1', 'nomad', '1', '0.0.0.0:3260', 'lun_0', '1']
        vm.sh('find {0}/lun/lun_0 -maxdepth 1 -type l -delete && rmdir {0}/lun/lun_0'.format(tpg))
        again = democratic_csi(vm, script(CREATE, VOLUME))
        assert again.returncode == 0, again.stdout + again.stderr
        assert targets(vm).split() == exported and vm.sh('ls %s/lun' % tpg).stdout.split() == ['lun_0']
        # Saved for the restore at boot (rtslib-fb-targetctl), which the role enabled, the previous file backed up.
        assert IQN in vm.sh('cat /etc/rtslib-fb-target/saveconfig.json').stdout
        assert vm.sh('systemctl is-enabled rtslib-fb-targetctl').stdout.strip() == 'enabled'
        assert vm.sh('ls /etc/rtslib-fb-target/backup | wc -l').stdout.strip() != '0'
    finally:
        gone = democratic_csi(vm, script(DELETE, VOLUME))
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert targets(vm) == '' and IQN not in vm.sh('cat /etc/rtslib-fb-target/saveconfig.json').stdout
    again = democratic_csi(vm, script(DELETE, VOLUME))
    assert again.returncode == 0 and 'No target %s.' % IQN in again.stdout, again.stdout + again.stderr
    # The script reached the confined targetcli on stdin: no CHAP secret in sudo's log, or anywhere in the journal.
    assert SECRET not in vm.sh('journalctl --since -10min -o cat').stdout


def test_forged_targetcli_scripts_are_refused_and_nothing_changes(vm, iscsi_host):
    """What the user might send instead: another device, another dataset, an operator's backstore of the same
    name, targetcli itself, arguments, a target without CHAP."""
    vm.zfs('create', '-V', '16M', 'tank/ops-disk')
    try:
        # The operator's own export, named as a volume of the user's would be.
        vm.sh('targetcli /backstores/block create ops /dev/zvol/tank/ops-disk >/dev/null')
        vm.sh('targetcli /iscsi create %s:ops >/dev/null' % BASENAME)
        vm.sh('targetcli /iscsi/%s:ops/tpg1/luns create /backstores/block/ops >/dev/null' % BASENAME)
        before = targets(vm)
        forged = {
            'the host disk': script(CREATE.replace('/dev/zvol/{parent}/{volume}', '/dev/vda'), VOLUME),
            'a zvol outside the parent': script(CREATE, 'ops-disk', parent='tank'),
            "the operator's target and backstore": script(DELETE, 'ops'),
            'a second command on a line': 'cd /iscsi\ncreate %s; saveconfig /tmp/x' % IQN,
            'the root of the tree': 'cd /\nclearconfig confirm=True',
            # With generate_node_acls=1, every initiator that reaches the portal would log in to its target.
            'CHAP undone': script(CREATE.replace('authentication=1', 'authentication=0'), VOLUME),
        }
        for what, text in forged.items():
            refused = democratic_csi(vm, text)
            assert refused.returncode != 0, what
            assert 'nomad-zfs-csi: ' in refused.stderr, (what, refused.stderr)
        for command in ('sudo -n /usr/bin/targetcli ls', 'sudo -n targetcli clearconfig confirm=True'):
            assert vm.sh(command, user=USER, check=False).returncode != 0, command
        assert targets(vm) == before
        refusals = vm.sh('journalctl -t nomad-zfs-csi-targetcli -o cat --since -10min').stdout
        assert 'refused a targetcli script of %s' % USER in refusals
        assert SECRET not in vm.sh('journalctl --since -10min -o cat').stdout
    finally:
        vm.sh(
            'targetcli /iscsi delete %s:ops >/dev/null; targetcli /backstores/block delete ops >/dev/null' % BASENAME,
            check=False,
        )
        vm.zfs('destroy', 'tank/ops-disk', check=False)


def test_the_user_cannot_point_its_zvol_path_elsewhere(vm, iscsi_host):
    """/dev/zvol/<parent>/<volume> is udev's link to the zvol's device; the user can rename its zvols but not
    write /dev, so a renamed zvol is simply not there."""
    assert vm.sh('ln -s /dev/vda /dev/zvol/%s/x' % PARENT, user=USER, check=False).returncode != 0
    assert vm.sh('test -w /dev/zvol/%s' % shlex.quote(PARENT), user=USER, check=False).returncode != 0


def test_a_volume_is_a_zvol_behind_chap_that_workloads_format_write_read_and_grow(stack, vm, iscsi_host):
    """The pack under docker with the CHAP pair in the controller's variable: a volume is a zvol of the parent and a
    target that asks for CHAP; a workload's node logs in with the pair the iscsi_initiator role set, formats and
    mounts it, and logs out after; grown while unused, the next allocation reads the file on the larger filesystem;
    deleted, the target and the zvol go. The secret is in no log."""
    args = {'plugin_id': PLUGIN, 'capacity_min': '256M', 'capacity_max': '256M'}
    volume, zvol = 't-iscsi', PARENT + '/t-iscsi'
    with iscsi_stack.plugin(stack):
        try:
            made = stack.volume(volume, **args)
            assert made['rc'] == 0 and made['changed'], made
            assert vm.zfs('get', '-Hp', '-o', 'value', 'type,volsize', zvol).stdout.split() == [
                'volume',
                str(256 * MIB),
            ]
            tpg = '%s/iscsi/%s:%s/tpgt_1' % (CONFIGFS, BASENAME, volume)
            assert vm.sh('cat %s/attrib/authentication %s/auth/userid' % (tpg, tpg)).stdout.split() == ['1', 'nomad']

            try:
                written = stack.workload(volume, 'write')
            except AssertionError as e:
                raise AssertionError('%s\n%s' % (e, initiator_state(vm))) from None
            assert written.startswith('written-by-'), written
            wait_until(lambda: sessions(vm) == '', timeout=120, why='the node logged out after the allocation')

            grown = stack.volume(volume, **dict(args, capacity_min='512M', capacity_max='512M'))
            assert grown['rc'] == 0 and grown['changed'], grown
            assert vm.zfs('get', '-Hp', '-o', 'value', 'volsize', zvol).stdout.strip() == str(512 * MIB)
            assert stack.workload(volume, 'read') == written
            # ext4 on the grown LUN, less its own metadata: grown at the stage.
            assert 400 * MIB < int(stack.workload(volume, 'size')) <= 512 * MIB

            assert not logs_with_the_secret(stack, vm)
        finally:
            deleted = stack.volume(volume, **dict(args, state='deleted'))
    assert deleted['rc'] == 0 and deleted['changed'], deleted
    assert vm.zfs('list', zvol, check=False).returncode != 0
    assert targets(vm) == '' and sessions(vm) == ''


def initiator_state(vm):
    """What the initiator logged in with, for a failed first login (seen twice: a node record with authmethod None
    although iscsid.conf held the CHAP pair): the time, iscsid.conf's and the node records' (when each was written),
    their auth lines, passwords redacted."""
    return vm.sh(
        "date; stat -c '%n %U:%a %y' {0} /etc/iscsi/nodes/*/*; "
        "grep -H '^node.session.auth' {0} /etc/iscsi/nodes/*/* 2>&1 "
        "| sed 's/password\\( *\\)= .*/password\\1= <redacted>/'".format(ISCSID_CONF),
        check=False,
    ).stdout
