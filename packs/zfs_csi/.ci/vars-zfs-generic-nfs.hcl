driver                         = "zfs-generic-nfs"
instance_id                    = "8f1c2e64-6f0e-4d7c-9a53-0c3f7b1f4a10"
dataset_parent_name            = "tank/nomad/csi"
detached_snapshots_parent_name = "tank/nomad/csi-snapshots"
ssh_host                       = "storage1.example.internal"
# The compute nodes that mount volumes; each volume is exported to them only.
nfs_clients = ["10.0.20.0/24"]
# The storage_host role's delegated set-up: zfs as the service user, root only for mount and share.
zfs_sudo                 = false
zfs_cli_path             = "/usr/local/libexec/nomad-zfs-csi/zfs"
zfs_sudo_path            = "/usr/bin/env"
dataset_permissions_mode = "0777"
dataset_properties       = { compression = "lz4", atime = "off" }
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
