"""A public key that a role writes after its own options must be one key: the storage_host role refuses a second
line (which would log in as the CSI service user with a shell, without restrict) before anything else, here with
the real ansible-playbook on this host, where the role stops before it first connects."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
COLLECTIONS = REPO.parents[2] if REPO.parents[1].name == 'ansible_collections' else REPO / 'build' / 'collections'
KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK0 csi@nomad'
CONTRACT = {
    'driver': 'zfs-generic-nfs',
    'parent': 'tank/nomad/csi',
    'snapshots_parent': 'tank/nomad/csi-snapshots',
    'zfs_cli_path': '/usr/local/libexec/nomad-zfs-csi/zfs',
}


def storage_host(tmp_path, pubkey):
    book = tmp_path / 'play.yml'
    book.write_text('- hosts: all\n  gather_facts: false\n  roles: [nomad_zfs.csi.storage_host]\n')
    extra = tmp_path / 'vars.json'
    extra.write_text(json.dumps({'storage_host_user_pubkey': pubkey, 'nomad_zfs_csi_storage': CONTRACT}))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_NOCOLOR='1')
    argv = [str(BIN / 'ansible-playbook'), '-i', 'storage-1,', '-c', 'local', str(book), '-e', '@%s' % extra]
    argv += ['-e', 'ansible_python_interpreter=%s' % sys.executable]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=False)


@pytest.mark.parametrize('pubkey', [KEY + '\n' + KEY, '\n' + KEY, 'command="/bin/sh" ' + KEY])
def test_storage_host_refuses_anything_but_one_key_before_it_connects(tmp_path, pubkey):
    ran = storage_host(tmp_path, pubkey)
    assert ran.returncode == 2 and 'storage_host_user_pubkey is not one SSH public key' in ran.stdout, ran.stdout
    assert 'Check SSH access to the storage host' not in ran.stdout and 'changed=0' in ran.stdout
