"""The csi_plugin role's csi_plugin_volumes and csi_plugin_snapshots: every option of nomad_csi_volume and
nomad_csi_snapshot, and nothing else."""

import json
import subprocess
from pathlib import Path

from conftest import PARENT, REPO
from zfsvm_client import BIN

PLAY = Path(__file__).parent / 'csi_plugin_only.yml'
DEMO = {'id': 'demo', 'capacity_min': '1G', 'capacity_max': '1G'}


def role(stack, volumes, snapshots=()):
    argv = [
        str(BIN / 'ansible-playbook'),
        '-v',
        '-i',
        str(REPO / 'inventories' / 'local'),
        str(PLAY),
        '-e',
        json.dumps({'csi_plugin_volumes': volumes, 'csi_plugin_snapshots': list(snapshots)}),
    ]
    return subprocess.run(argv, env=stack.env, capture_output=True, text=True, timeout=900, check=False)


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
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    assert 't-role-absent' not in [v for v, _index in volumes(stack)]
    assert vm.zfs('list', '-H', PARENT + '/t-role-absent', check=False).returncode == 0
    assert 'hush-4242' not in ran.stdout + ran.stderr


def test_a_volume_its_snapshot_and_a_volume_from_it_in_one_run_then_nothing_to_do(stack, vm):
    wanted = [
        DEMO,
        {'id': 't-role-restored', 'capacity_min': '1G', 'snapshot_id': 't-role-src@r1'},
        {'id': 't-role-src', 'capacity_min': '1G'},
    ]
    snapshots = [{'source_volume_id': 't-role-src', 'name': 'r1'}]
    ran = role(stack, wanted, snapshots)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    assert vm.zfs('list', '-H', '-t', 'snapshot', PARENT + '/t-role-src@r1', check=False).returncode == 0
    # democratic-csi clones a volume from a snapshot unless told to copy it.
    origin = vm.zfs('get', '-H', '-o', 'value', 'origin', PARENT + '/t-role-restored').stdout.strip()
    assert origin == PARENT + '/t-role-src@r1'
    again = role(stack, wanted, snapshots)
    assert again.returncode == 0 and 'changed=0' in again.stdout, again.stdout[-3000:]
