job "zfs-local-zvol-node" {
  # Every client that may mount a volume runs the node plugin.
  type = "system"

  datacenters = ["*"]
  node_pool   = "default"

  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }

  group "node" {
    task "plugin" {
      driver = "raw_exec"
      # democratic-csi shuts down cleanly on SIGTERM only.
      kill_signal = "SIGTERM"

      config {
        # democratic-csi from source; without a mount namespace the socket is the host path Nomad gives.
        command = "/opt/nzc/bin/node"
        args = [
          "/opt/nzc/democratic-csi/bin/democratic-csi",
          "--csi-version=1.5.0",
          "--csi-name=zfs-local-zvol",
          "--driver-config-file=${NOMAD_SECRETS_DIR}/driver-config.yaml",
          "--csi-mode=controller",
          "--csi-mode=node",
          "--server-socket=${CSI_ENDPOINT}",
        ]
      }

      env {
        CSI_NODE_ID = "${attr.unique.hostname}"
      }

      # Readable by the task's user only: the controller's configuration holds the storage host's SSH key.
      template {
        destination = "${NOMAD_SECRETS_DIR}/driver-config.yaml"
        perms       = "0400"
        change_mode = "restart"
        data        = <<EOH
driver: zfs-local-zvol
instance_id: "7a1d3e52-9c4b-4f0e-b8d6-2e5f7a9c1b03"
zfs:
  cli:
    sudoEnabled: true
  datasetParentName: "tank/nomad/localzvol"
  detachedSnapshotsDatasetParentName: "tank/nomad/localzvol-snapshots"
  datasetEnableQuotas: true
  datasetEnableReservation: false
  datasetPermissionsMode: "0777"
node:
  # Every volume's staging mount, and so each task's bind mount of it: a setuid file or a device node that a
  # task writes onto its volume gives nothing to whoever runs or opens it later on the client.
  mount:
    mount_flags: "nosuid,nodev"
  # A block volume's new ext4 root, for tasks that run as nobody with no capabilities (exec, allow_caps = []).
  format:
    ext4:
      customOptions: ["-E", "root_owner=65534:65534"]
EOH
      }

      # A storage plugin never gives up: with mode "fail" a system job's plugin that misses its health
      # timeout a few times stays dead, and so does every volume on that node. The interval is short
      # because "delay" waits out the rest of it after the third failure: with 5m a plugin whose SSH key
      # was fixed stayed down for minutes (seen in CI).
      restart {
        attempts = 3
        interval = "1m"
        delay    = "10s"
        mode     = "delay"
      }

      csi_plugin {
        id                     = "zfs-local-zvol"
        type                   = "monolith"
        mount_dir              = "/csi"
        health_timeout         = "10m"
        stage_publish_base_dir = "/var/lib/nzc-nomad/client/csi/monolith/zfs-local-zvol"
      }

      resources {
        cpu    = 100
        memory = 256
      }
    }
  }
}
