driver              = "zfs-local-dataset"
instance_id         = "5a9d0a0e-3c1b-4bb2-9f52-0f8c1a1e7d33"
dataset_parent_name = "tank/nomad/local"
node_pool           = "storage"
