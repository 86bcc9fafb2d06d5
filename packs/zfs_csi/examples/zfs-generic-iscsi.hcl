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
# Yours: the storage host's name, and the service user the storage_host role made for this plugin
# (storage_host_user).
ssh_host     = "storage-1.example.internal"
ssh_username = "csi-iscsi"
# Yours: the portal as the clients reach it.
iscsi_target_portal = "storage-1.example.internal:3260"
# Yours: clients of their own for the controller, which holds the storage host's key (the README's client
# requirements).
# controller_node_pool = "admin"
# The service user runs zfs by its delegation alone (zvols are never mounted or shared), and targetcli through
# sudo, which gives it the storage_host role's confined one (iscsi_targetcli_sudo, the default). Detached snapshots
# and volumes made from them need zfs receive as root: set zfs_cli_path to the role's wrapper for those, as the NFS
# example does.
zfs_sudo = false
# Tenants' exec tasks run as nobody: each new file system's root is theirs.
filesystem_root_owner = "65534:65534"
