"""topology.yml, the one file by which the tests' copy of inventories/example differs from it (conftest.py), and
the hosts it names."""

import json
import secrets
import subprocess

import yaml

from nomad_agents import SERVER
from separate_hosts import ADDRESSES, BACKUP_1, CLIENT_1, CLIENT_2, STORAGE_1
from zfsvm_client import BIN, REPO

# Brought up in this order, and down in the reverse: a client goes while storage-1 still answers its NFS mount's
# unmount, which a client without its server waits on for minutes (the teardown took 260 s the other way round).
HOSTS = (SERVER, STORAGE_1, BACKUP_1, CLIENT_1, CLIENT_2)
# The example's contract between the two halves, with storage-1's own parents.
STORAGE = yaml.safe_load((REPO / 'inventories' / 'example' / 'group_vars' / 'all.yml').read_text())[
    'nomad_zfs_csi_storage'
] | {'parent': 'tank/storage-1/csi', 'snapshots_parent': 'tank/storage-1/csi-snapshots'}
# Each host's own datasets in the VM's shared pool: gone before the hosts boot, and after they are down.
DATASETS = ('tank/storage-1', 'tank/backup-1', 'tank/client-1', 'tank/client-2')
# Where backup-1's pulls land (the example's group_vars/backup_hosts.yml has a pool of its own).
BACKUP_REPLICAS = 'tank/backup-1/replica'
# The admin host, where the Nomad half and the moves run (the example's group nomad).
ADMIN = 'nomad-admin.example.internal'


def host_volumes(client, leaf='volumes'):
    """A client's host volume parent (or its replica parent, leaf 'replica'), of its own in the VM's shared pool."""
    return 'tank/%s/%s' % (client.split('.', maxsplit=1)[0], leaf)


def vault(example, csi_key, management):
    """group_vars/nomad/vault.yml as deploy.md has the operator create it, encrypted with a password in a file that
    ANSIBLE_VAULT_PASSWORD_FILE names (the Cluster's environment); that file's path."""
    password = example.parent / 'vault-pass'
    password.write_text(secrets.token_hex(16) + '\n')
    password.chmod(0o600)
    write_vault(example, password, {'vault_nomad_management_token': management, 'vault_csi_ssh_private_key': csi_key})
    return password


def vault_file(example):
    return example / 'group_vars' / 'nomad' / 'vault.yml'


def add_to_vault(example, password, items):
    """The vault with items added, as an operator adds with ansible-vault edit."""
    argv = [str(BIN / 'ansible-vault'), 'view', '--vault-password-file', str(password), str(vault_file(example))]
    held = yaml.safe_load(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)
    write_vault(example, password, held | items)


def write_vault(example, password, items):
    path = vault_file(example)
    path.write_text(yaml.safe_dump(items))
    subprocess.run(
        [str(BIN / 'ansible-vault'), 'encrypt', '--vault-password-file', str(password), str(path)],
        check=True, capture_output=True,
    )  # fmt: skip


def topology(separate_hosts, example):
    """topology.yml: the one file that differs from the example, secrets apart (vault())."""
    admin = {
        'nomad_zfs_csi_storage': STORAGE,
        'csi_plugin_pack_vars': {
            'nfs_clients': ['%s/32' % ADDRESSES[c] for c in (CLIENT_1, CLIENT_2)],
            'task_driver': 'raw_exec',
            'node_path': '/opt/nzc/bin/node',
            'democratic_csi_dir': '/opt/nzc/democratic-csi',
            'stage_publish_base_dir': '/var/lib/nomad/client/csi/node/zfs',
            'plugin_health_timeout': '10m',
        },
        # democratic-csi's start on the emulated CPU, four of them at once (the local stack's reason too).
        'csi_plugin_wait_timeout': 900,
    }
    hosts = {
        STORAGE_1: {'nomad_zfs_csi_storage': STORAGE},
        BACKUP_1: {'zfs_replication_replica_parent': BACKUP_REPLICAS},
        ADMIN: admin,
    }
    for client in (CLIENT_1, CLIENT_2):
        hosts[client] = {
            'host_volume_plugin_parent': host_volumes(client),
            'host_volume_plugin_replica_parent': host_volumes(client, 'replica'),
        }
    connection = separate_hosts.connection_vars()
    # The example's own: admin, who becomes root. The admin host's interpreter is its group's, which wins.
    for name in ('ansible_user', 'ansible_become'):
        connection.pop(name)
    (example / 'topology.yml').write_text(json.dumps({'all': {'vars': connection, 'hosts': hosts}}, indent=1))
