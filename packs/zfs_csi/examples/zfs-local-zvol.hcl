# zfs-local-zvol: each volume a zvol with a file system on the client that runs it, from the client's own pool.
# Copy this file, change the values marked below, and run:
#   nomad-pack run packs/zfs_csi --name zfs-zvol -f my-zvol.hcl
driver    = "zfs-local-zvol"
plugin_id = "zfs-zvol"
# Yours: one per plugin, for democratic-csi's own records (`uuidgen`).
instance_id = "b2b7f9c4-1a57-4c1e-8e2d-7c6f3f0d9b44"
# Yours: a parent in every client's pool.
dataset_parent_name            = "tank/nomad/localzvol"
detached_snapshots_parent_name = "tank/nomad/localzvol-snapshots"
# Yours: the namespace the plugin's jobs run in.
namespace = "storage"
