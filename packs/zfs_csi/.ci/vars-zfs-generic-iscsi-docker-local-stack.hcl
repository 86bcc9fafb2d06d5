# zfs-generic-iscsi on the local stack, as vars-zfs-generic-nfs-docker-local-stack.hcl runs the NFS driver: the
# image under docker, beside the stack's plugins under a plugin id of its own.
#   nomad-pack run packs/zfs_csi --name zfs-iscsi -f packs/zfs_csi/.ci/vars-zfs-generic-iscsi-docker-local-stack.hcl
# The storage host's second service user csi-iscsi and parent tank/nomad/iscsi come from the storage_host role
# (tests/integration/stack/test_iscsi_target.py); it runs zfs itself by its delegation, and targetcli through sudo,
# which gives it the role's confined one. The controller job's nomad/jobs/zfs-iscsi-controller variable holds the
# SSH key and the CHAP pair (iscsi_chap_userid, iscsi_chap_password), the node job's the SSH key.
driver                         = "zfs-generic-iscsi"
plugin_id                      = "zfs-iscsi"
instance_id                    = "5b8e2f0c-93d1-4c1e-a7c4-6e0d2b9f4a17"
dataset_parent_name            = "tank/nomad/iscsi"
detached_snapshots_parent_name = "tank/nomad/iscsi-snapshots"
ssh_host                       = "127.0.0.1"
ssh_username                   = "csi-iscsi"
zfs_sudo                       = false
iscsi_target_portal            = "127.0.0.1:3260"
image                          = "democraticcsi/democratic-csi:v1.9.4-local"
controller_count               = 1
plugin_health_timeout          = "10m"
# Tenants' exec tasks run as nobody with no capabilities (scripts/nomad-dev.sh): the new ext4 root is theirs.
filesystem_root_owner = "65534:65534"
