# The pack's production path on the local stack: democratic-csi's image under Nomad's docker driver (the
# default task_driver), privileged on the node, beside the stack's raw_exec plugin under a plugin id of its own:
#   nomad-pack run packs/zfs_csi --name zfs-docker -f packs/zfs_csi/.ci/vars-zfs-generic-nfs-docker-local-stack.hcl
# What a production user sets (examples/zfs-generic-nfs.hcl) with the local stack's values, and one override: the
# image that tests/zfsvm/images.sh builds from the same source and Debian packages, since no registry is
# reachable here (docs/testing.md says how it differs from upstream's). The controller and node jobs read the SSH
# key from their own nomad/jobs/zfs-docker-controller and nomad/jobs/zfs-docker-node variables.
driver                         = "zfs-generic-nfs"
plugin_id                      = "zfs-docker"
instance_id                    = "0d0c4e15-7d3a-4f0e-b1c6-2f5a8e9d7c31"
dataset_parent_name            = "tank/nomad/csi"
detached_snapshots_parent_name = "tank/nomad/csi-snapshots"
ssh_host                       = "127.0.0.1"
nfs_clients                    = ["127.0.0.1/32"]
zfs_sudo                       = false
zfs_cli_path                   = "/usr/local/libexec/nomad-zfs-csi/zfs"
zfs_sudo_path                  = "/usr/bin/env"
dataset_permissions_mode       = "0777"
image                          = "democraticcsi/democratic-csi:v1.9.4-local"
# One agent, and controllers go on distinct hosts.
controller_count = 1
# democratic-csi starts slowly on the emulated VM (vars-zfs-generic-nfs-local-stack.hcl has the figures).
plugin_health_timeout = "10m"
