"""The zfs_replication role's standby hosts' keys: read from each host (slurp's results), bound to the address
Ansible reaches it at, and a host without a key refused but in check mode."""

import base64

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.nomad_zfs.csi.plugins.filter.standby_host_keys import standby_host_keys

KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK0 zfs-replica@backup-1'
HOSTVARS = {'backup-1.example.internal': {}, 'client-2': {'ansible_host': '10.0.20.12'}}


def slurped(host, key=KEY):
    """What ansible.builtin.slurp registers for one loop item: the file's content, base64, with its newline."""
    return {'item': host, 'content': base64.b64encode((key + '\n').encode()).decode(), 'encoding': 'base64'}


def missing(host):
    """slurp's result (failed_when false) for a file that is not there."""
    return {'item': host, 'failed': False, 'msg': 'file not found: /var/lib/zfs-replica/.ssh/id_ed25519.pub'}


def test_each_key_is_bound_to_its_hosts_ansible_host_else_its_name():
    keys = standby_host_keys([slurped('backup-1.example.internal'), slurped('client-2')], HOSTVARS)
    assert keys == [
        {'key': KEY, 'from': 'backup-1.example.internal'},
        {'key': KEY, 'from': '10.0.20.12'},
    ]


def test_a_host_without_a_key_is_refused_by_name():
    with pytest.raises(AnsibleFilterError, match='client-2 has no replication key: run the zfs_replication role'):
        standby_host_keys([slurped('backup-1.example.internal'), missing('client-2')], HOSTVARS)


def test_check_mode_leaves_out_a_host_of_the_same_run_that_has_made_no_key_yet():
    keys = standby_host_keys([missing('client-2'), slurped('backup-1.example.internal')], HOSTVARS, True)
    assert keys == [{'key': KEY, 'from': 'backup-1.example.internal'}]
