# zfs-local-dataset on the repository's local default stack: democratic-csi as a
# root monolith under raw_exec in the ZFS VM, beside the zfs-generic-nfs plugin
# (vars-zfs-generic-nfs-local-stack.hcl), under its own plugin id and parent.
#   nomad-pack run packs/zfs_csi --name zfs-local -f packs/zfs_csi/.ci/vars-zfs-local-dataset-local-stack.hcl
driver                         = "zfs-local-dataset"
plugin_id                      = "zfs-local"
instance_id                    = "0d4c6b1e-7e0f-4a52-9a53-6f0c2a9d8e31"
dataset_parent_name            = "tank/nomad/local"
detached_snapshots_parent_name = "tank/nomad/local-snapshots"
# Tasks run as nobody; the monolith runs as root, so the chmod needs no sudo.
dataset_permissions_mode = "0777"
task_driver              = "raw_exec"
node_path                = "/opt/nzc/bin/node"
democratic_csi_dir       = "/opt/nzc/democratic-csi"
# A monolith: Nomad mounts volumes from <data_dir>/client/csi/monolith/<plugin_id>.
stage_publish_base_dir = "/var/lib/nzc-nomad/client/csi/monolith/zfs-local"
# democratic-csi starts slowly on the emulated VM when it is busy: 30 s was missed in CI, and 2 m
# (plugin never healthy in 300 s) while a second VM and the host checks shared the two cores; on 2026-12-02 the
# controller's socket came 4 min 29 s after its start, 1 s before Nomad's 5m restarted it, which left the stack's
# first volume create without a controller.
plugin_health_timeout = "10m"
