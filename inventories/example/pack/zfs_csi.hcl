# The zfs_csi pack's variables for this cluster; the csi_plugin role adds the driver, the parents, the zfs program,
# the plugin id, the namespace and the secrets' path from the inventory. The image stays the pack's pinned default.
instance_id = "3b0b8d4e-5f0c-4c8e-9a3e-2d6f1c9a7e41"
ssh_host    = "storage-1.example.internal"
# The Nomad clients that mount volumes: each volume is exported read-write to them only.
nfs_clients = ["10.0.20.0/24"]
# The storage_host role's delegation: the service user owns each volume's root, so chmod needs no root.
zfs_sudo_path            = "/usr/bin/env"
dataset_permissions_mode = "0777"
datacenters              = ["dc1"]
controller_count         = 2
