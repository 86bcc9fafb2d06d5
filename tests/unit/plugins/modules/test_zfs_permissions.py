"""zfs_permissions' desired grants: descendent_permissions adds to the descendents only."""

from ansible_collections.nomad_zfs.csi.plugins.module_utils.zfs_allow import empty_grants, parse_allow, plan
from ansible_collections.nomad_zfs.csi.plugins.modules.zfs_permissions import desired_grants

# A parent delegated before destroy moved below it: everything at local+descendent.
BEFORE = """---- Permissions on tank/nomad/csi -----------------------------------
Local+Descendent permissions:
\tuser csi create,destroy,mount,snapshot
"""


class _Module(object):
    def __init__(self, **params):
        self.params = dict(users=['csi'], groups=[], everyone=False, permissions=[], descendent_permissions=[],
                           scope='both', create_time=[], sets={}, state='exact')
        self.params.update(params)


def test_descendent_permissions_are_granted_below_the_dataset_only():
    module = _Module(permissions=['create', 'mount', 'snapshot'], descendent_permissions=['destroy'])
    held = desired_grants(module, empty_grants())['principals'][('user', 'csi')]
    assert held == {'local': {'create', 'mount', 'snapshot'}, 'descendent': {'create', 'destroy', 'mount', 'snapshot'}}


def test_moving_destroy_below_the_parent_takes_it_off_the_parent_alone():
    current = parse_allow(BEFORE)['tank/nomad/csi']
    module = _Module(permissions=['create', 'mount', 'snapshot'], descendent_permissions=['destroy'])
    assert plan(current, desired_grants(module, current), 'exact', True) == [
        ['unallow', '-u', 'csi', '-l', 'destroy']]
