"""The csi_plugin role's csi_plugin_volumes and csi_plugin_snapshots: every option of nomad_csi_volume and
nomad_csi_snapshot, and nothing else."""

from stack_layout import PARENT

from zfsvm_client import playbook_said

DEMO = {'id': 'demo', 'namespace': 'demo', 'capacity_min': '1G', 'capacity_max': '1G'}  # the inventory's


def role(stack, volumes, snapshots=()):
    """The csi_plugin role alone, on the operator's token that site.yml's nomad_access play made."""
    extra = {
        'csi_plugin_volumes': volumes,
        'csi_plugin_snapshots': list(snapshots),
        'csi_plugin_nomad_token': stack.secret('csi-operator'),
    }
    return stack.csi_plugin_role(extra)


def volumes(stack):
    return sorted((v['ID'], v['ModifyIndex']) for v in stack.get('/v1/volumes?type=csi'))


def test_a_typo_in_a_volume_fails_before_any_write(stack):
    before = volumes(stack), stack.get('/v1/jobs')
    ran = role(stack, [DEMO, {'id': 't-typo', 'capcity_min': '1G'}])
    assert ran.returncode != 0
    assert 'csi_plugin_volumes.capcity_min. Supported parameters include' in ran.stdout, ran.stdout[-3000:]
    assert (volumes(stack), stack.get('/v1/jobs')) == before


def test_state_and_secrets_reach_the_module(stack, vm):
    """A volume listed with state: absent is deregistered and keeps its dataset; its secrets never show."""
    made = stack.volume('t-role-absent')
    assert made['rc'] == 0, made
    ran = role(stack, [DEMO, {'id': 't-role-absent', 'state': 'absent', 'secrets': {'token': 'hush-4242'}}])
    assert ran.returncode == 0, playbook_said(ran)
    assert 't-role-absent' not in [v for v, _index in volumes(stack)]
    assert vm.zfs('list', '-H', PARENT + '/t-role-absent', check=False).returncode == 0
    assert 'hush-4242' not in ran.stdout + ran.stderr


def test_a_volume_its_snapshot_and_a_volume_from_it_in_one_run_then_nothing_to_do(stack, vm):
    wanted = [
        DEMO,
        {'id': 't-role-restored', 'namespace': 'demo', 'capacity_min': '1G', 'snapshot_id': 't-role-src@r1'},
        {'id': 't-role-src', 'namespace': 'demo', 'capacity_min': '1G'},
        {'id': 't-role-default', 'capacity_min': '1G'},
    ]
    snapshots = [{'source_volume_id': 't-role-src', 'name': 'r1', 'namespace': 'demo'}]
    ran = role(stack, wanted, snapshots)
    assert ran.returncode == 0, playbook_said(ran)
    assert vm.zfs('list', '-H', '-t', 'snapshot', PARENT + '/t-role-src@r1', check=False).returncode == 0
    # democratic-csi clones a volume from a snapshot unless told to copy it.
    origin = vm.zfs('get', '-H', '-o', 'value', 'origin', PARENT + '/t-role-restored').stdout.strip()
    assert origin == PARENT + '/t-role-src@r1'
    # Each volume in its own namespace: the one without a namespace key in csi_plugin_namespace.
    assert sorted(v['ID'] for v in stack.get('/v1/volumes?type=csi&namespace=demo')) == [
        'demo',
        't-role-restored',
        't-role-src',
    ]
    assert 't-role-default' in [v['ID'] for v in stack.get('/v1/volumes?type=csi&namespace=default')]
    again = role(stack, wanted, snapshots)
    assert again.returncode == 0 and 'changed=0' in again.stdout, again.stdout[-3000:]
