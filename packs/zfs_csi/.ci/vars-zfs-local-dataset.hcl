driver                         = "zfs-local-dataset"
instance_id                    = "5a9d0a0e-3c1b-4bb2-9f52-0f8c1a1e7d33"
dataset_parent_name            = "tank/nomad/local"
detached_snapshots_parent_name = "tank/nomad/local-snapshots"
node_pool                      = "storage"
volume_id_hash                 = "md5"
volumes = [{
  id          = "scratch"
  mode        = "register"
  external_id = "scratch"
  topology    = { required = [{ "org.democratic-csi.topology/node" = "storage-1" }] }
}]
# Beside CSI: a dynamic host volume the zfs-dataset plugin makes on a storage node.
host_volumes = [{
  name         = "pgdata"
  node_pool    = "storage"
  capacity_max = "10G"
  parameters   = { compression = "zstd", recordsize = "16K" }
}]
