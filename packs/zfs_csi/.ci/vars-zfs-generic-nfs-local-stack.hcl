# The repository's local default stack (inventories/local reads this file through
# the csi_plugin role's csi_plugin_pack_var_files), usable as is:
#   nomad-pack run packs/zfs_csi --name zfs -f packs/zfs_csi/.ci/vars-zfs-generic-nfs-local-stack.hcl
# Nomad runs in the ZFS VM, so the controller reaches the storage host's csi user
# at 127.0.0.1:22 there, and the node plugin mounts the VM's own NFS exports.
# democratic-csi runs from source with Node under raw_exec; a production inventory
# drops the raw_exec lines and gets the pinned image under docker, as
# vars-zfs-generic-nfs-docker-local-stack.hcl does beside this plugin.
# driver, the parents and zfs_cli_path repeat inventories/local's nomad_zfs_csi_storage,
# which the csi_plugin role passes over this file; a pack test checks they agree.
driver                         = "zfs-generic-nfs"
instance_id                    = "5c0ffee0-2b7d-4c1a-9f0e-6e1d2c3b4a59"
dataset_parent_name            = "tank/nomad/csi"
detached_snapshots_parent_name = "tank/nomad/csi-snapshots"
ssh_host                       = "127.0.0.1"
ssh_port                       = 22
nfs_clients                    = ["127.0.0.1/32"]
# zfs as the delegated csi user; root only through the storage_host role's sudo rule.
zfs_sudo     = false
zfs_cli_path = "/usr/local/libexec/nomad-zfs-csi/zfs"
# Tasks run as nobody. csi owns each volume's root directory, so the chmod needs no sudo.
dataset_permissions_mode = "0777"
zfs_sudo_path            = "/usr/bin/env"
# One agent, and controllers go on distinct hosts.
controller_count = 1
# The tools disk that tests/zfsvm/zfsvm.sh mounts in the VM.
task_driver        = "raw_exec"
node_path          = "/opt/nzc/bin/node"
democratic_csi_dir = "/opt/nzc/democratic-csi"
# scripts/nomad-dev.sh's data_dir: a raw_exec plugin sees host paths.
stage_publish_base_dir = "/var/lib/nzc-nomad/client/csi/node/zfs"
# democratic-csi starts slowly on the emulated VM when it is busy: 30 s was missed in CI, and 2 m
# (plugin never healthy in 300 s) while a second VM and the host checks shared the two cores; on 2026-12-02 the
# controller's socket came 4 min 29 s after its start, 1 s before Nomad's 5m restarted it, which left the stack's
# first volume create without a controller.
plugin_health_timeout = "10m"
