driver              = "zfs-local-zvol"
instance_id         = "b2b7f9c4-1a57-4c1e-8e2d-7c6f3f0d9b44"
dataset_parent_name = "tank/nomad/localzvol"
namespace           = "storage"
