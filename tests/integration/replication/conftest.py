import json
import subprocess

import pytest

from zfsvm_client import BIN, ansible_env, mitogen_env


@pytest.fixture
def play(vm, tmp_path):
    """The zfs_replication role against the VM with these variables, under mitogen like the other roles' tests."""
    book = tmp_path / 'play.yml'
    book.write_text('- hosts: zfs\n  gather_facts: false\n  roles: [nomad_zfs.csi.zfs_replication]\n')

    def run(variables, *flags):
        extra = tmp_path / 'vars.json'
        extra.write_text(json.dumps(variables))
        argv = [str(BIN / 'ansible-playbook'), '-i', str(vm.inventory), str(book), '-e', '@%s' % extra]
        env = ansible_env(**mitogen_env())
        return subprocess.run(argv + list(flags), env=env, capture_output=True, text=True, timeout=900, check=False)

    return run
