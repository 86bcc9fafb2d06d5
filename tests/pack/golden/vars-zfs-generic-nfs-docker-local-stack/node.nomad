job "zfs-docker-node" {
  # Every client that may mount a volume runs the node plugin.
  type = "system"

  datacenters = ["*"]
  node_pool   = "default"

  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }

  constraint {
    attribute = "${attr.driver.docker.privileged.enabled}"
    value     = "true"
  }

  group "node" {
    task "plugin" {
      driver = "docker"
      # democratic-csi shuts down cleanly on SIGTERM only.
      kill_signal = "SIGTERM"

      config {
        image        = "democraticcsi/democratic-csi:v1.9.4-local"
        privileged   = true
        network_mode = "host"
        ipc_mode     = "host"
        args = [
          "--csi-version=1.5.0",
          "--csi-name=zfs-docker",
          "--driver-config-file=${NOMAD_SECRETS_DIR}/driver-config.yaml",
          "--csi-mode=node",
          "--server-socket=/csi/csi.sock",
        ]
        mount {
          type     = "bind"
          source   = "/run/udev"
          target   = "/run/udev"
          readonly = true
        }
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
driver: zfs-generic-nfs
instance_id: "0d0c4e15-7d3a-4f0e-b1c6-2f5a8e9d7c31"
zfs:
  cli:
    sudoEnabled: false
    paths:
      zfs: "/usr/local/libexec/nomad-zfs-csi/zfs"
      sudo: "/usr/bin/env"
  datasetParentName: "tank/nomad/csi"
  detachedSnapshotsDatasetParentName: "tank/nomad/csi-snapshots"
  datasetEnableQuotas: true
  datasetEnableReservation: false
  datasetPermissionsMode: "0777"
node:
  # Every volume's staging mount, and so each task's bind mount of it: a setuid file or a device node that a
  # task writes onto its volume gives nothing to whoever runs or opens it later on the client.
  mount:
    mount_flags: "nosuid,nodev"
nfs:
  shareStrategy: setDatasetProperties
  shareStrategySetDatasetProperties:
    properties:
      sharenfs: "rw=@127.0.0.1/32,no_root_squash"
  shareHost: "127.0.0.1"
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
        id             = "zfs-docker"
        type           = "node"
        mount_dir      = "/csi"
        health_timeout = "10m"
      }

      resources {
        cpu    = 100
        memory = 256
      }
    }
  }
}
