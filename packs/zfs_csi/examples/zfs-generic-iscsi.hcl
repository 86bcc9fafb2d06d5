# zfs-generic-iscsi: each volume a zvol under dataset_parent_name on a storage host, exported by its LIO target.
# The controller's variable holds the SSH key and the CHAP pair, each node's iscsid.conf the same pair (the
# README's iSCSI section). Copy this file, change the values marked below, and run:
#   nomad-pack run packs/zfs_csi --name zfs-iscsi -f my-iscsi.hcl
driver    = "zfs-generic-iscsi"
plugin_id = "zfs-iscsi"
# Yours: one per plugin, for democratic-csi's own records (`uuidgen`).
instance_id = "0c7f4c55-3b7d-4d67-8d43-5b0f5a0a8e21"
# Yours: the storage_host role's parents for this plugin's service user.
dataset_parent_name            = "tank/nomad/zvols"
detached_snapshots_parent_name = "tank/nomad/zvols-snapshots"
# Yours: the storage host's name, and its portal as the clients reach it.
ssh_host            = "storage1.example.internal"
# Yours: the storage_host role's service user for this plugin (storage_host_user).
ssh_username        = "csi-iscsi"
iscsi_target_portal = "storage1.example.internal:3260"
# The service user runs zfs by its delegation, and targetcli through sudo, which gives it the storage_host role's
# confined one (iscsi_targetcli_sudo, the default).
zfs_sudo         = false
controller_count = 1
# Tenants' exec tasks run as nobody: each new file system's root is theirs.
filesystem_root_owner = "65534:65534"
