"""CSI volumes made by democratic-csi itself (zfs-generic-nfs) for Nomad in the VM: what each Nomad operation
does to ZFS and NFS on the storage host, and how faults are reported."""

import subprocess
import time

import pytest

from conftest import PARENT, SNAPSHOTS

GIB = 1024**3
SECRETS = 'nomad/jobs/zfs-csi'


def created(stack, volume_id, **extra):
    result = stack.volume(volume_id, **extra)
    assert result['rc'] == 0, result
    return result


def props(vm, dataset, *names):
    out = vm.zfs('get', '-Hp', '-o', 'property,value', ','.join(names), dataset).stdout
    return dict(line.split('\t') for line in out.splitlines())


def exports(vm):
    """The paths the kernel's NFS server exports."""
    return {line.split()[0] for line in vm.sh('exportfs -s').stdout.splitlines() if line.strip()}


def exists(vm, name):
    return vm.zfs('list', '-H', '-t', 'all', name, check=False).returncode == 0


def test_create_gives_a_dataset_with_refquota_and_its_export(stack, vm):
    made = stack.volume('t-create')
    assert made['changed'] and made['rc'] == 0, made
    dataset = PARENT + '/t-create'
    assert props(vm, dataset, 'refquota', 'mounted', 'sharenfs') == {
        'refquota': str(GIB),
        'mounted': 'yes',
        'sharenfs': 'rw=@127.0.0.1/32,no_root_squash',
    }
    assert '/' + dataset in exports(vm)
    assert stack.volume('t-create')['changed'] is False


def test_a_second_allocation_reads_what_the_first_wrote(stack, vm):
    created(stack, 't-rw')
    written = stack.workload('t-rw', 'write')
    assert written.startswith('written-by-')
    assert stack.workload('t-rw', 'read') == written
    # On the dataset itself, as the storage host sees it.
    assert vm.sh('cat /%s/t-rw/proof.txt' % PARENT).stdout.strip() == written


def test_a_nomad_snapshot_is_a_zfs_snapshot_and_a_volume_made_from_it_holds_the_file(stack, vm):
    created(stack, 't-snap-src')
    vm.sh('echo before-the-snapshot > /%s/t-snap-src/file' % PARENT)
    made = stack.api(
        'PUT',
        '/v1/volumes/snapshot',
        {'Snapshots': [{'SourceVolumeID': 't-snap-src', 'Name': 'snap1', 'PluginID': 'zfs'}]},
    )
    snapshot = made['Snapshots'][0]
    snapshots = vm.zfs('list', '-H', '-t', 'snapshot', '-o', 'name', '-r', PARENT).stdout.split()
    assert any(name.startswith(PARENT + '/t-snap-src@') for name in snapshots), snapshots
    vm.sh('echo after-the-snapshot > /%s/t-snap-src/file' % PARENT)
    made = created(stack, 't-from-snap', snapshot_id=snapshot['ID'])
    assert made['changed'], made
    assert stack.volume('t-from-snap', snapshot_id=snapshot['ID'])['changed'] is False
    assert vm.sh('cat /%s/t-from-snap/file' % PARENT).stdout.strip() == 'before-the-snapshot'
    assert props(vm, PARENT + '/t-from-snap', 'mounted', 'sharenfs')['mounted'] == 'yes'


def test_a_raised_capacity_raises_refquota_and_the_workload_sees_it(stack, vm):
    created(stack, 't-grow')
    grown = stack.volume('t-grow', capacity_min='2G', capacity_max='2G')
    assert grown['rc'] == 0 and grown['changed'], grown
    assert props(vm, PARENT + '/t-grow', 'refquota')['refquota'] == str(2 * GIB)
    seen = int(stack.workload('t-grow', 'size'))
    assert GIB < seen <= 2 * GIB, seen
    shrink = stack.volume('t-grow', capacity_min='1G', capacity_max='1G')
    assert shrink['rc'] != 0 and 'a volume cannot shrink' in shrink['msg'], shrink
    assert props(vm, PARENT + '/t-grow', 'refquota')['refquota'] == str(2 * GIB)


def test_deleted_destroys_the_dataset_and_its_export(stack, vm):
    created(stack, 't-deleted')
    assert exists(vm, PARENT + '/t-deleted')
    checked = stack.module('nomad_csi_volume', {'id': 't-deleted', 'state': 'deleted'}, check=True)
    assert checked['changed'] and exists(vm, PARENT + '/t-deleted'), checked
    gone = stack.volume('t-deleted', state='deleted')
    assert gone['changed'] and gone['rc'] == 0, gone
    assert not exists(vm, PARENT + '/t-deleted')
    assert '/%s/t-deleted' % PARENT not in exports(vm)


def test_absent_deregisters_and_keeps_the_dataset(stack, vm):
    created(stack, 't-absent')
    vm.sh('echo kept > /%s/t-absent/file' % PARENT)
    gone = stack.volume('t-absent', state='absent')
    assert gone['changed'] and gone['rc'] == 0, gone
    assert 't-absent' not in [v['ID'] for v in stack.api('GET', '/v1/volumes?type=csi')]
    assert vm.sh('cat /%s/t-absent/file' % PARENT).stdout.strip() == 'kept'


def test_delete_snapshot_with_an_unknown_id_leaves_both_parents(stack, vm):
    """democratic-csi v1.9.4 answers this with `zfs destroy` of the snapshots parent; the delegation refuses."""
    before = [vm.zfs('list', '-H', '-o', 'name,guid', p).stdout for p in (PARENT, SNAPSHOTS)]
    grants = [vm.zfs('allow', p).stdout for p in (PARENT, SNAPSHOTS)]
    stack.nomad('volume', 'snapshot', 'delete', 'zfs', 'no-such-snapshot', check=False)
    assert [vm.zfs('list', '-H', '-o', 'name,guid', p).stdout for p in (PARENT, SNAPSHOTS)] == before
    assert [vm.zfs('allow', p).stdout for p in (PARENT, SNAPSHOTS)] == grants


@pytest.fixture
def without_delegated_create(vm):
    vm.zfs('unallow', '-u', 'csi', 'create', PARENT)
    yield
    vm.zfs('allow', '-u', 'csi', 'create', PARENT)


def test_a_missing_delegation_is_named_in_the_error(stack, vm, without_delegated_create):
    refused = stack.volume('t-no-create')
    assert refused['rc'] != 0 and 'permission denied' in refused['msg'], refused
    assert not exists(vm, PARENT + '/t-no-create')


@pytest.fixture
def wrong_ssh_key(stack, vm):
    """The plugin's secret replaced by a key the storage host never authorised; restored afterwards."""
    key = vm.workdir / 'id_wrong'
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', str(key)], check=True)
    stack.module('nomad_variable', {'path': SECRETS, 'items': {'ssh_private_key': key.read_text()}})
    yield
    stack.module('nomad_variable', {'path': SECRETS, 'items': {'ssh_private_key': open(vm.key).read()}})
    stack.wait_healthy()


def test_a_wrong_ssh_key_is_named_when_the_plugin_turns_unhealthy(stack, vm, wrong_ssh_key):
    """The controller's template re-renders with the new key and restarts democratic-csi, which exits on
    its first SSH connection; the role's health wait then names the reason. Under emulation the restarted
    task may take a minute to log it, and until then the newest error line is an older one."""
    check = {'plugin_id': 'zfs', 'jobs': ['zfs-controller', 'zfs-node']}
    deadline = time.monotonic() + 300
    while True:
        refused = stack.module('nomad_csi_plugin_info', dict(check, wait_timeout=20))
        if refused['rc'] != 0 and 'All configured authentication methods failed' in refused['msg']:
            break
        assert time.monotonic() < deadline, 'no SSH reason within 300 s: %s' % refused.get('msg', refused)
        time.sleep(5)
    assert 'controller allocation' in refused['msg'], refused['msg']
