app {
  url = "https://github.com/democratic-csi/democratic-csi"
}

pack {
  name        = "zfs_csi"
  description = "democratic-csi ZFS drivers (zfs-generic-nfs, zfs-generic-iscsi, zfs-local-dataset, zfs-local-zvol) as Nomad CSI plugin jobs, plus CSI volume specs to register."
  version     = "0.3.0"
}
