"""Where the local default stack keeps what its tests look at: the parents, the plugin's files, the scripts. Its
own module, not conftest.py, so that the stack's helpers and tests import them by one name whatever other
conftest.py a run loads (the separate hosts' too, in the same run)."""

from zfsvm_client import CACHE, REPO

WORKLOAD = REPO / 'scripts' / 'demo-workload.nomad'
STACK = REPO / 'tests' / 'integration' / 'stack'
CACHE_BIN = CACHE / 'bin'
PARENT, SNAPSHOTS = 'tank/nomad/csi', 'tank/nomad/csi-snapshots'
# zfs-local-dataset's and zfs-local-zvol's, in packs/zfs_csi/.ci/vars-zfs-local-*-local-stack.hcl
LOCAL_PARENTS = ('tank/nomad/local', 'tank/nomad/localzvol')
# The host_volume_plugin role's parent (inventories/local/group_vars/host_volume_clients.yml).
HOST_VOLUMES = 'tank/nomad/volumes'
# scripts/nomad-dev.sh's host_volume_plugin_dir, and the role's configuration beside the plugin.
HOST_VOLUME_PLUGIN = '/usr/local/libexec/nomad-host-volume-plugins/zfs-dataset'
HOST_VOLUME_CONF = HOST_VOLUME_PLUGIN + '.conf'


def host_volume_conf(parent=HOST_VOLUMES, replica_parent=None):
    """The plugin's configuration as the host_volume_plugin role writes it with the local inventory's variables."""
    replica = 'replica_parent=%s\n' % replica_parent if replica_parent else ''
    return 'parent=%s\n%svolume_quota_percent=200\nvolume_uid=65534\nvolume_gid=65534\n' % (parent, replica)


def dataset(name, namespace='default'):
    """A host volume's dataset."""
    return '%s/%s/%s' % (HOST_VOLUMES, namespace, name)
