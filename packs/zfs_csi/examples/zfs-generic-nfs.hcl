# zfs-generic-nfs: each volume a dataset under dataset_parent_name on a storage host, exported over NFS to the
# clients that run the node plugin. Copy this file, change the values marked below, and run:
#   nomad-pack run packs/zfs_csi --name zfs -f my-nfs.hcl
driver = "zfs-generic-nfs"
# Yours: one per plugin, for democratic-csi's own records (`uuidgen`).
instance_id = "8f1c2e64-6f0e-4d7c-9a53-0c3f7b1f4a10"
# Yours: the storage_host role's parents (nomad_zfs_csi_storage.parent and .snapshots_parent).
dataset_parent_name            = "tank/nomad/csi"
detached_snapshots_parent_name = "tank/nomad/csi-snapshots"
# Yours: the storage host's name, as its host key and the clients' mounts know it.
ssh_host = "storage-1.example.internal"
# Yours: the clients that mount volumes; each volume is exported to them only.
nfs_clients = ["10.0.20.0/24"]
# Yours: clients of their own for the controller, which holds the storage host's key (the README's client
# requirements).
# controller_node_pool = "admin"
# A storage host that the storage_host role prepared: zfs through its wrapper, as the service user, without sudo
# (its narrow sudo rule refuses democratic-csi's own), and chmod without root on the volumes that user owns.
zfs_sudo      = false
zfs_cli_path  = "/usr/local/libexec/nomad-zfs-csi/zfs"
zfs_sudo_path = "/usr/bin/env"
# Tenants' exec tasks run as nobody (the README's client requirements): each volume's root writable by them.
dataset_permissions_mode = "0777"
dataset_properties       = { compression = "lz4", atime = "off" }
# Volumes to create: render -o writes them to volumes.json for nomad_csi_volume's spec_file.
volumes = [{
  id           = "pg-data"
  capacity_min = "1G"
  capacity_max = "10G"
  capabilities = [{ access_mode = "single-node-writer", attachment_mode = "file-system" }]
  fs_type      = "nfs"
  mount_flags  = ["nfsvers=4.2", "nolock"]
  }, {
  id          = "pg-restored"
  snapshot_id = "pg-data@before-upgrade"
}]
