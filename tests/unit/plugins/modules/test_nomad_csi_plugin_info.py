"""What nomad_csi_plugin_info reports for a plugin that is not healthy."""

from conftest import FIXTURES

from ansible_collections.nomad_zfs.csi.plugins.modules.nomad_csi_plugin_info import last_error_line, newest_per_group

# The end of democratic-csi v1.9.4's stdout (controller, zfs-generic-nfs) when the storage host
# refuses its SSH key, as Nomad v1.11.3 served it: colour codes, stack frames and JSON context.
WRONG_KEY_LOG = (FIXTURES / 'democratic_csi_wrong_key_1.9.4.log').read_text()


def test_the_reason_is_the_last_line_that_says_what_happened():
    assert last_error_line(WRONG_KEY_LOG) == 'Error: All configured authentication methods failed'


def test_no_error_line_gives_none():
    assert last_error_line('info: new request\n    at Socket.emit (node:events:524:28) {"error": 1}\n') is None
    assert last_error_line(None) is None


def test_only_the_newest_allocation_of_each_group_is_explained():
    allocs = [dict(ID='a', JobID='zfs-controller', TaskGroup='controller', CreateIndex=10),
              dict(ID='b', JobID='zfs-controller', TaskGroup='controller', CreateIndex=30),
              dict(ID='c', JobID='zfs-node', TaskGroup='node', CreateIndex=20)]
    assert [a['ID'] for a in newest_per_group(allocs)] == ['b', 'c']
