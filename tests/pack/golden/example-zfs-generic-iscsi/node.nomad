job "zfs-iscsi-node" {
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
        image        = "democraticcsi/democratic-csi:v1.9.4"
        privileged   = true
        network_mode = "host"
        ipc_mode     = "host"
        args = [
          "--csi-version=1.5.0",
          "--csi-name=zfs-iscsi",
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
        # The host's tools (zfs, iscsiadm) run by chroot /host, democratic-csi's docker/ wrappers. (Nomad itself
        # mounts the host's /dev into a node plugin, where a LUN logged in to later shows.)
        mount {
          type   = "bind"
          source = "/"
          target = "/host"
          bind_options {
            propagation = "rshared"
          }
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
driver: zfs-generic-iscsi
instance_id: "0c7f4c55-3b7d-4d67-8d43-5b0f5a0a8e21"
zfs:
  cli:
    sudoEnabled: false
  datasetParentName: "tank/nomad/zvols"
  detachedSnapshotsDatasetParentName: "tank/nomad/zvols-snapshots"
  datasetEnableQuotas: true
  datasetEnableReservation: false
node:
  # Every volume's staging mount, and so each task's bind mount of it: a setuid file or a device node that a
  # task writes onto its volume gives nothing to whoever runs or opens it later on the client.
  mount:
    mount_flags: "nosuid,nodev"
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
        type           = "node"
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
