"""site.yml refuses early: bad role arguments, an unreachable storage host or one without an NFS server leave
the stack's Nomad (and the storage host) untouched."""

import json
import subprocess

import pytest
import yaml

from nomad_agent import free_port
from zfsvm_client import BIN, REPO, ansible_env

# The extended tier (docs/testing.md, Tiers): make test leaves it out.
pytestmark = pytest.mark.extended

CONTRACT = yaml.safe_load((REPO / 'inventories' / 'local' / 'group_vars' / 'all.yml').read_text())[
    'nomad_zfs_csi_storage'
]


def site(stack, tmp_path, *extra, inventory=None, **env):
    key = tmp_path / 'id_unused'  # the role reads the .pub before it ever connects
    key.write_text('not a key\n')
    (tmp_path / 'id_unused.pub').write_text('ssh-ed25519 AAAA unused\n')
    settings = dict(ZFSVM_PORT=free_port(), ZFSVM_KEY=key)
    settings.update(env)
    environment = ansible_env(**settings)
    argv = [
        str(BIN / 'ansible-playbook'),
        '-i',
        str(inventory or REPO / 'inventories' / 'local'),
        str(REPO / 'playbooks' / 'site.yml'),
        '-e',
        'csi_plugin_nomad_addr=' + stack.address,
    ] + list(extra)
    return subprocess.run(argv, capture_output=True, text=True, env=environment, check=False, timeout=600)


def nomad_state(stack):
    """Jobs, variables and volumes with their modify indexes: any write shows up here."""
    return [
        sorted((item['ID'] if 'ID' in item else item['Path'], item['ModifyIndex']) for item in stack.get(path))
        for path in ('/v1/jobs', '/v1/vars', '/v1/volumes?type=csi')
    ]


def test_unreachable_storage_host_stops_before_nomad(stack, tmp_path):
    before = nomad_state(stack)
    proc = site(stack, tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert 'Cannot reach storage host zfsvm as root@127.0.0.1:' in out, out[-3000:]
    assert 'Connection refused' in out and 'Nothing was changed on it or in Nomad' in out
    assert 'Create the CSI service user' not in out  # the role never started
    assert nomad_state(stack) == before


def test_wrong_ssh_key_stops_before_nomad(vm, stack, tmp_path):
    key = tmp_path / 'id_wrong'
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', str(key)], check=True)
    before = nomad_state(stack)
    # No SSH connection sharing: a master opened earlier with the right key would let this one in.
    proc = site(
        stack,
        tmp_path,
        ZFSVM_PORT=vm.port,
        ZFSVM_KEY=key,
        ANSIBLE_SSH_ARGS='-o ControlMaster=no -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null',
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert 'Cannot reach storage host zfsvm as root@127.0.0.1:%s' % vm.port in out, out[-3000:]
    assert 'Permission denied (publickey' in out, out[-3000:]
    assert nomad_state(stack) == before


def test_missing_nfs_server_stops_before_anything_changes(vm, stack, tmp_path):
    vm.sh('mv /usr/sbin/rpc.nfsd /usr/sbin/rpc.nfsd.hidden')
    try:

        def everything():
            return (
                nomad_state(stack),
                vm.state(),
                vm.sh('getent passwd; ls -l /etc/sudoers.d /etc/nfs.conf.d 2>&1 || true').stdout,
            )

        before = everything()
        proc = site(stack, tmp_path, ZFSVM_PORT=vm.port, ZFSVM_KEY=vm.key)
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0
        assert 'Storage host zfsvm has no NFS server (/usr/sbin/rpc.nfsd)' in out, out[-3000:]
        assert 'storage_host_install_nfs: true' in out and 'Nothing was changed on it or in Nomad' in out
        assert 'Create the CSI service user' not in out
        assert everything() == before
    finally:
        vm.sh('mv /usr/sbin/rpc.nfsd.hidden /usr/sbin/rpc.nfsd')


def test_unknown_driver_is_rejected_at_the_start_of_the_play(stack, tmp_path):
    before = nomad_state(stack)
    bogus = dict(CONTRACT, driver='zfs-bogus')
    proc = site(stack, tmp_path, '-e', json.dumps({'nomad_zfs_csi_storage': bogus}))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and nomad_state(stack) == before
    assert 'nomad_zfs_csi_storage' in out and 'zfs-generic-nfs' in out and 'zfs-bogus' in out, out[-3000:]
    assert 'Create the CSI service user' not in out  # failed before the first real task


def test_missing_contract_is_rejected_at_the_start_of_the_play(stack, tmp_path):
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(
        'storage_hosts:\n  hosts:\n    zfsvm:\n      ansible_host: 127.0.0.1\n      ansible_port: %d\n' % free_port()
    )
    proc = site(stack, tmp_path, inventory=inventory)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert 'missing required arguments: nomad_zfs_csi_storage' in out, out[-3000:]


def test_halves_that_disagree_stop_before_either_changes(vm, stack, tmp_path):
    """A host-level contract on the storage host: the plugin would use parents the host was not prepared for."""
    inventory = tmp_path / 'hosts.yml'
    inventory.write_text(
        json.dumps(
            {
                'all': {'vars': {'nomad_zfs_csi_storage': CONTRACT}},
                'storage_hosts': {
                    'hosts': {
                        'zfsvm': {
                            'ansible_host': '127.0.0.1',
                            'ansible_port': vm.port,
                            'ansible_user': 'root',
                            'ansible_ssh_private_key_file': vm.key,
                            'nomad_zfs_csi_storage': dict(CONTRACT, parent='tank/nomad/elsewhere'),
                        }
                    }
                },
                'nomad': {'hosts': {'nomad-dev': {'ansible_connection': 'local'}}},
            }
        )
    )
    before = nomad_state(stack), vm.state()
    proc = site(stack, tmp_path, inventory=inventory)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and (nomad_state(stack), vm.state()) == before
    assert (
        'Nomad host(s) nomad-dev would deploy the plugin with another nomad_zfs_csi_storage than storage '
        'host zfsvm' in out
    ), out[-3000:]
    assert 'Check SSH access to the storage host' not in out


def test_delegating_a_root_only_property_is_refused_before_anything_changes(stack, tmp_path):
    """With the sudo mount rule, a delegated mountpoint would let the user have root mount a dataset anywhere."""
    before = nomad_state(stack)
    proc = site(stack, tmp_path, '-e', '{"storage_host_extra_permissions": ["hold", "mountpoint"]}')
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and nomad_state(stack) == before
    assert 'storage_host_extra_permissions asks to delegate mountpoint' in out, out[-3000:]
    assert 'Remove them from storage_host_extra_permissions' in out
    assert 'Check SSH access to the storage host' not in out  # refused before the first connection


def test_turning_setuid_on_for_the_parent_is_refused(stack, tmp_path):
    proc = site(stack, tmp_path, '-e', '{"storage_host_parent_properties": {"setuid": "on", "compression": "lz4"}}')
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert 'storage_host_parent_properties turns setuid on' in out, out[-3000:]
    assert 'Check SSH access to the storage host' not in out
