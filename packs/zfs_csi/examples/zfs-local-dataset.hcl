# zfs-local-dataset: each volume a dataset on the client that runs it, from the client's own pool; the node plugin
# runs on every client of node_pool and needs OpenZFS there. Copy this file, change the values marked below, and run:
#   nomad-pack run packs/zfs_csi --name zfs-local -f my-local.hcl
driver    = "zfs-local-dataset"
plugin_id = "zfs-local"
# Yours: one per plugin, for democratic-csi's own records (`uuidgen`).
instance_id = "5a9d0a0e-3c1b-4bb2-9f52-0f8c1a1e7d33"
# Yours: a parent in every client's pool.
dataset_parent_name            = "tank/nomad/local"
detached_snapshots_parent_name = "tank/nomad/local-snapshots"
# Yours: the clients with ZFS.
node_pool      = "storage"
volume_id_hash = "md5"
# A dataset made by hand on one node, registered as a volume there.
volumes = [{
  id          = "scratch"
  mode        = "register"
  external_id = "scratch"
  topology    = { required = [{ "org.democratic-csi.topology/node" = "storage-1" }] }
}]
# Beside CSI: a dynamic host volume the zfs-dataset plugin (host_volume_plugin role) makes on a storage node.
host_volumes = [{
  name         = "pgdata"
  node_pool    = "storage"
  capacity_max = "10G"
  parameters   = { compression = "zstd", recordsize = "16K" }
}]
