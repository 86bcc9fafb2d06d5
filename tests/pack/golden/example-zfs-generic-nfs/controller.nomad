job "zfs-controller" {
  type = "service"

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

  group "controller" {
    count = 2

    # Two controllers on one host protect against nothing.
    constraint {
      distinct_hosts = true
    }

    task "plugin" {
      driver = "docker"
      # democratic-csi shuts down cleanly on SIGTERM only.
      kill_signal = "SIGTERM"

      config {
        image        = "democraticcsi/democratic-csi:v1.9.4"
        privileged   = true
        network_mode = "host"
        ipc_mode     = "host"
        args = [
          "--csi-version=1.5.0",
          "--csi-name=zfs",
          "--driver-config-file=${NOMAD_SECRETS_DIR}/driver-config.yaml",
          "--csi-mode=controller",
          "--server-socket=/csi/csi.sock",
        ]
      }

      # Readable by the task's user only: the controller's configuration holds the storage host's SSH key.
      template {
        destination = "${NOMAD_SECRETS_DIR}/driver-config.yaml"
        perms       = "0400"
        change_mode = "restart"
        data        = <<EOH
driver: zfs-generic-nfs
instance_id: "8f1c2e64-6f0e-4d7c-9a53-0c3f7b1f4a10"
sshConnection:
  host: "storage-1.example.internal"
  port: 22
  username: "csi"
  privateKey: |
{{ with nomadVar "nomad/jobs/zfs-controller" }}{{ .ssh_private_key.Value | trimSpace | indent 4 }}{{ end }}
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
  datasetProperties:
    "atime": "off"
    "compression": "lz4"
nfs:
  shareStrategy: setDatasetProperties
  shareStrategySetDatasetProperties:
    properties:
      sharenfs: "rw=@10.0.20.0/24,no_root_squash"
  shareHost: "storage-1.example.internal"
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
        id             = "zfs"
        type           = "controller"
        mount_dir      = "/csi"
        health_timeout = "30s"
      }

      resources {
        cpu    = 100
        memory = 256
      }
    }
  }
}