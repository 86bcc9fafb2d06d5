job "zfs-iscsi-controller" {
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
          "--csi-name=zfs-iscsi",
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
driver: zfs-generic-iscsi
instance_id: "0c7f4c55-3b7d-4d67-8d43-5b0f5a0a8e21"
sshConnection:
  host: "storage-1.example.internal"
  port: 22
  username: "csi-iscsi"
  privateKey: |
{{ with nomadVar "nomad/jobs/zfs-iscsi-controller" }}{{ .ssh_private_key.Value | trimSpace | indent 4 }}{{ end }}
zfs:
  cli:
    sudoEnabled: false
  datasetParentName: "tank/nomad/zvols"
  detachedSnapshotsDatasetParentName: "tank/nomad/zvols-snapshots"
  datasetEnableQuotas: true
  datasetEnableReservation: false
node:
  # A block volume's new ext4 root, for tasks that run as nobody with no capabilities (exec, allow_caps = []).
  format:
    ext4:
      customOptions: ["-E", "root_owner=65534:65534"]
iscsi:
  shareStrategy: targetCli
  shareStrategyTargetCli:
    sudoEnabled: true
    basename: "iqn.2003-01.org.linux-iscsi.storage:nomad"
    tpg:
      # Each target's own LUN for any initiator that logs in: with CHAP, only one that knows the pair.
      attributes:
        authentication: 1
        generate_node_acls: 1
        cache_dynamic_acls: 1
        demo_mode_write_protect: 0
      auth:
{{- with nomadVar "nomad/jobs/zfs-iscsi-controller" }}
        userid: {{ .iscsi_chap_userid.Value | toJSON }}
        password: {{ .iscsi_chap_password.Value | toJSON }}
{{- end }}
  targetPortal: "storage-1.example.internal:3260"
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
        id             = "zfs-iscsi"
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