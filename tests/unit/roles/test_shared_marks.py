"""The zfs-dataset plugin's marks have one source, plugins/module_utils/_host_volume_node.py. The plugin runs alone
on a Nomad client and the roles' tasks are YAML, so neither can import it: their copies must agree with it."""

from pathlib import Path

import yaml

from ansible_collections.nomad_zfs.csi.plugins.module_utils import _host_volume_node as node
from ansible_collections.nomad_zfs.csi.plugins.module_utils._replication_status import MOVE_SNAPSHOT
from ansible_collections.nomad_zfs.csi.tests.unit.roles.test_zfs_dataset_plugin import plugin

ROLES = Path(__file__).resolve().parents[3] / 'roles'


def role_vars(role):
    return yaml.safe_load((ROLES / role / 'vars' / 'main.yml').read_text())


def test_the_plugin_and_the_roles_name_the_marks_as_the_move_reads_them():
    assert (plugin.MARK, plugin.MOVED) == (node.MARK, node.MOVED)
    # The plugin's delete takes a move's final snapshot with the volume, as one of the collection's own.
    assert MOVE_SNAPSHOT in plugin.SCHEDULED
    # The move role sets and reads the marks only through the modules, which import them.
    move_role = ''.join(path.read_text() for path in (ROLES / 'host_volume_move').rglob('*.yml'))
    assert node.MOVED not in move_role and node.MARK not in move_role
    assert role_vars('host_volume_plugin')['host_volume_plugin_mark'] == node.MARK
