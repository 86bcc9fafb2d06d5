driver                         = "zfs-generic-iscsi"
instance_id                    = "0c7f4c55-3b7d-4d67-8d43-5b0f5a0a8e21"
dataset_parent_name            = "tank/nomad/zvols"
detached_snapshots_parent_name = "tank/nomad/zvols-snapshots"
ssh_host                       = "storage1.example.internal"
iscsi_target_portal            = "storage1.example.internal:3260"
controller_count               = 1
