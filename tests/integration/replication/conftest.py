import json
import subprocess

import pytest

from separate_hosts import BACKUP_1, STORAGE_1
from zfsvm_client import BIN, ansible_env, mitogen_env, run_module_on


def playbook(inventory, hosts, tmp_path):
    """Runs the zfs_replication role on hosts of inventory with these variables, under mitogen like the other roles'
    tests; the run's CompletedProcess."""
    # A book and variables of their own per group: a test may play on both hosts.
    book = tmp_path / ('play-%s.yml' % hosts)
    book.write_text('- hosts: %s\n  gather_facts: false\n  roles: [nomad_zfs.csi.zfs_replication]\n' % hosts)

    def run(variables, *flags):
        extra = tmp_path / ('vars-%s.json' % hosts)
        extra.write_text(json.dumps(variables))
        argv = [str(BIN / 'ansible-playbook'), '-i', str(inventory), str(book), '-e', '@%s' % extra]
        env = ansible_env(**mitogen_env())
        return subprocess.run(argv + list(flags), env=env, capture_output=True, text=True, timeout=900, check=False)

    return run


@pytest.fixture
def play(vm, tmp_path):
    """The zfs_replication role against the VM with these variables."""
    return playbook(vm.inventory, 'zfs', tmp_path)


@pytest.fixture(scope='module')
def storage_and_backup(separate_hosts, tmp_path_factory):
    """storage-1 and backup-1, hosts of their own (separate_hosts.py) booted afresh for each test module, so that
    nothing a module's role runs left there reaches the next; and an inventory of the two: group primary and group
    standby."""
    separate_hosts.down(STORAGE_1, BACKUP_1)
    storage, backup = separate_hosts.up(STORAGE_1, BACKUP_1)
    inventory = separate_hosts.inventory(
        tmp_path_factory.mktemp('hosts') / 'inventory.yml', {'primary': [storage], 'standby': [backup]}
    )
    return storage, backup, inventory


@pytest.fixture
def play_primary(storage_and_backup, tmp_path):
    """The zfs_replication role on storage-1 with these variables."""
    return playbook(storage_and_backup[2], 'primary', tmp_path)


@pytest.fixture
def play_standby(storage_and_backup, tmp_path):
    """The zfs_replication role on backup-1 with these variables."""
    return playbook(storage_and_backup[2], 'standby', tmp_path)


@pytest.fixture
def run_on_standby(storage_and_backup):
    """Run one collection module on backup-1 with Ansible; its result."""
    inventory = storage_and_backup[2]

    def run(module, args, check=False):
        return run_module_on(BACKUP_1, ['-i', str(inventory)], ansible_env(), module, args, check=check, timeout=600)

    return run
