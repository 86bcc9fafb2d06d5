[[- /* Small partials shared by the job templates.
     fail messages avoid ": " because nomad-pack shows only the text after it. */ -]]

[[- define "checks" -]]
[[- $drivers := list "zfs-generic-nfs" "zfs-generic-iscsi" "zfs-local-dataset" "zfs-local-zvol" -]]
[[- if not (has (var "driver" .) $drivers) -]]
[[- fail (printf "variable driver = %q is not a driver this pack knows; use one of %s" (var "driver" .) (join ", " $drivers)) -]]
[[- end -]]
[[- if not (var "instance_id" .) -]]
[[- fail "variable instance_id is required; set a stable UUID (for example from uuidgen) that never changes for this storage" -]]
[[- end -]]
[[- if not (var "dataset_parent_name" .) -]]
[[- fail "variable dataset_parent_name is required; set the delegated parent dataset, e.g. tank/nomad/csi" -]]
[[- end -]]
[[- if not (var "detached_snapshots_parent_name" .) -]]
[[- fail "variable detached_snapshots_parent_name is required; democratic-csi's controller fails every probe without it (TypeError reading replace). Set a dataset outside dataset_parent_name, e.g. tank/nomad/csi-snapshots" -]]
[[- end -]]
[[- $snap := var "detached_snapshots_parent_name" . -]]
[[- if and $snap (or (eq $snap (var "dataset_parent_name" .)) (hasPrefix (printf "%s/" (var "dataset_parent_name" .)) $snap)) -]]
[[- fail "variable detached_snapshots_parent_name must not be, or be under, dataset_parent_name" -]]
[[- end -]]
[[- if and (eq (var "task_driver" .) "raw_exec") (not (var "democratic_csi_dir" .)) -]]
[[- fail "variable democratic_csi_dir is required for task_driver raw_exec; set it to democratic-csi's source directory after npm ci" -]]
[[- end -]]
[[- if eq (var "driver" .) "zfs-generic-nfs" -]]
[[- if not (var "nfs_clients" .) -]]
[[- fail "variable nfs_clients is required for driver zfs-generic-nfs; list the networks of the nodes that mount volumes (e.g. [\"10.0.0.0/24\"]), since without it every host could mount every volume" -]]
[[- end -]]
[[- range var "nfs_clients" . -]]
[[- if not (regexMatch "^[A-Za-z0-9][A-Za-z0-9.-]*(/[0-9]{1,3})?$|^\\[[0-9A-Fa-f:.]+\\](/[0-9]{1,3})?$" .) -]]
[[- fail (printf "variable nfs_clients has %q; use an address, a network such as 10.0.0.0/24, a host name, or an IPv6 network in brackets such as [fd00::]/64" .) -]]
[[- end -]]
[[- end -]]
[[- /* OpenZFS reads a bare rw or ro as that access for every host. */ -]]
[[- if regexMatch "(^|,)(rw|ro)(=|,|$)" (var "nfs_share_options" .) -]]
[[- fail "variable nfs_share_options must not hold rw or ro (OpenZFS gives a bare one to every host); list the clients in nfs_clients" -]]
[[- end -]]
[[- end -]]
[[- range var "node_mount_flags" . -]]
[[- if not (regexMatch "^[a-z][a-z0-9_.=-]*$" .) -]]
[[- fail (printf "variable node_mount_flags has %q; give one mount option per item, such as nosuid or nodev" .) -]]
[[- end -]]
[[- end -]]
[[- if and (var "filesystem_root_owner" .) (not (regexMatch "^[0-9]{1,10}:[0-9]{1,10}$" (var "filesystem_root_owner" .))) -]]
[[- fail "variable filesystem_root_owner takes numeric UID:GID, such as 65534:65534" -]]
[[- end -]]
[[- if and (eq (var "driver" .) "zfs-generic-iscsi") (not (var "iscsi_target_portal" .)) -]]
[[- fail "variable iscsi_target_portal is required for driver zfs-generic-iscsi; set the storage host's portal the nodes log in to, e.g. storage1.example.internal:3260" -]]
[[- end -]]
[[- if and (hasPrefix "zfs-generic-" (var "driver" .)) (not (var "ssh_host" .)) -]]
[[- fail (printf "variable ssh_host is required for driver %s; set it to the storage host the controller reaches over SSH" (var "driver" .)) -]]
[[- end -]]
[[- end -]]

[[- define "prefix" -]]
[[- coalesce (var "job_name_prefix" .) (var "plugin_id" .) -]]
[[- end -]]

[[- /* Where a job runs; .pool is its node pool. */ -]]
[[- define "placement" -]]
[[- $ctx := .ctx -]]
[[- if var "region" $ctx ]]
  region      = [[ var "region" $ctx | quote ]]
[[- end ]]
[[- if var "namespace" $ctx ]]
  namespace   = [[ var "namespace" $ctx | quote ]]
[[- end ]]
  datacenters = [[ var "datacenters" $ctx | toStringList ]]
  node_pool   = [[ .pool | quote ]]

  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }
[[- if eq (var "task_driver" $ctx) "docker" ]]

  constraint {
    attribute = "${attr.driver.docker.privileged.enabled}"
    value     = "true"
  }
[[- end ]]
[[- end -]]

[[- /* The Nomad Variable a job's template reads its secrets from. */ -]]
[[- define "secrets_path" -]]
[[- coalesce (var "secrets_variable_path" .ctx) (printf "nomad/jobs/%s" .job) -]]
[[- end -]]

[[- /* democratic-csi's driver config; secrets come from a Nomad Variable at run time: by default the job's
own nomad/jobs/<job>, which its workload identity may read with ACLs on and no further policy. */ -]]
[[- define "driver_config" -]]
[[- $ctx := .ctx -]]
driver: [[ var "driver" $ctx ]]
instance_id: [[ var "instance_id" $ctx | quote ]]
[[- if var "volume_id_hash" $ctx ]]
_private:
  csi:
    volume:
      idHash:
        strategy: [[ var "volume_id_hash" $ctx | quote ]]
[[- end ]]
[[- /* Only the controller reaches the storage host: a node plugin's config holds no key, so root on a client
       that runs no controller cannot take it from there. */ -]]
[[- if and (hasPrefix "zfs-generic-" (var "driver" $ctx)) (ne .mode "node") ]]
sshConnection:
  host: [[ var "ssh_host" $ctx | quote ]]
  port: [[ var "ssh_port" $ctx ]]
  username: [[ var "ssh_username" $ctx | quote ]]
  privateKey: |
[[- /* trimSpace: a key stored from its file (with the newline) or by site.yml (without) renders the same, so
       storing the same key again does not restart the plugin. */]]
{{ with nomadVar "[[ template "secrets_path" . ]]" }}{{ .ssh_private_key.Value | trimSpace | indent 4 }}{{ end }}
[[- end ]]
zfs:
  cli:
    sudoEnabled: [[ var "zfs_sudo" $ctx ]]
[[- if or (var "zfs_cli_path" $ctx) (var "zfs_sudo_path" $ctx) ]]
    paths:
[[- if var "zfs_cli_path" $ctx ]]
      zfs: [[ var "zfs_cli_path" $ctx | quote ]]
[[- end ]]
[[- if var "zfs_sudo_path" $ctx ]]
      sudo: [[ var "zfs_sudo_path" $ctx | quote ]]
[[- end ]]
[[- end ]]
  datasetParentName: [[ var "dataset_parent_name" $ctx | quote ]]
[[- if var "detached_snapshots_parent_name" $ctx ]]
  detachedSnapshotsDatasetParentName: [[ var "detached_snapshots_parent_name" $ctx | quote ]]
[[- end ]]
  datasetEnableQuotas: [[ var "dataset_enable_quotas" $ctx ]]
  datasetEnableReservation: [[ var "dataset_enable_reservation" $ctx ]]
[[- if var "dataset_permissions_mode" $ctx ]]
  datasetPermissionsMode: [[ var "dataset_permissions_mode" $ctx | quote ]]
[[- end ]]
[[- if var "dataset_properties" $ctx ]]
  datasetProperties:
[[- range $k, $v := var "dataset_properties" $ctx ]]
    [[ $k | quote ]]: [[ $v | quote ]]
[[- end ]]
[[- end ]]
[[- $mount_flags := ternary list (var "node_mount_flags" $ctx) (eq .mode "controller") -]]
[[- if or (var "filesystem_root_owner" $ctx) $mount_flags ]]
node:
[[- if $mount_flags ]]
  # Every volume's staging mount, and so each task's bind mount of it: a setuid file or a device node that a
  # task writes onto its volume gives nothing to whoever runs or opens it later on the client.
  mount:
    mount_flags: [[ join "," $mount_flags | quote ]]
[[- end ]]
[[- if var "filesystem_root_owner" $ctx ]]
  # A block volume's new ext4 root, for tasks that run as nobody with no capabilities (exec, allow_caps = []).
  format:
    ext4:
      customOptions: ["-E", "root_owner=[[ var "filesystem_root_owner" $ctx ]]"]
[[- end ]]
[[- end ]]
[[- if eq (var "driver" $ctx) "zfs-generic-nfs" ]]
nfs:
  shareStrategy: setDatasetProperties
  shareStrategySetDatasetProperties:
    properties:
      sharenfs: "[[ template "sharenfs" $ctx ]]"
  shareHost: [[ coalesce (var "nfs_share_host" $ctx) (var "ssh_host" $ctx) | quote ]]
[[- end ]]
[[- if eq (var "driver" $ctx) "zfs-generic-iscsi" ]]
iscsi:
  shareStrategy: targetCli
  shareStrategyTargetCli:
    sudoEnabled: [[ var "iscsi_targetcli_sudo" $ctx ]]
    basename: [[ var "iscsi_base_name" $ctx | quote ]]
    tpg:
      # Each target's own LUN for any initiator that logs in: with CHAP, only one that knows the pair.
      attributes:
        authentication: [[ ternary 1 0 (var "iscsi_chap" $ctx) ]]
        generate_node_acls: 1
        cache_dynamic_acls: 1
        demo_mode_write_protect: 0
[[- /* The controller alone sets the target's CHAP pair; the nodes have it in their iscsid.conf. */ -]]
[[- if and (var "iscsi_chap" $ctx) (eq .mode "controller") ]]
      auth:
{{- with nomadVar "[[ template "secrets_path" . ]]" }}
        userid: {{ .iscsi_chap_userid.Value | toJSON }}
        password: {{ .iscsi_chap_password.Value | toJSON }}
{{- end }}
[[- end ]]
  targetPortal: [[ var "iscsi_target_portal" $ctx | quote ]]
[[- end ]]
[[- end -]]

[[- /* Each volume's sharenfs: read-write for nfs_clients only (OpenZFS's @network form), then the options. */ -]]
[[- define "sharenfs" -]]
[[- $clients := list -]]
[[- range var "nfs_clients" . -]][[- $clients = append $clients (printf "@%s" .) -]][[- end -]]
rw=[[ join ":" $clients ]][[ with var "nfs_share_options" . ]],[[ . ]][[ end ]]
[[- end -]]

[[- /* democratic-csi's arguments; .socket is where it listens. */ -]]
[[- define "democratic_csi_args" -]]
[[- $ctx := .ctx ]]
          "--csi-version=[[ var "csi_version" $ctx ]]",
          "--csi-name=[[ var "plugin_id" $ctx ]]",
          "--driver-config-file=${NOMAD_SECRETS_DIR}/driver-config.yaml",
[[- if eq .mode "monolith" ]]
          "--csi-mode=controller",
          "--csi-mode=node",
[[- else ]]
          "--csi-mode=[[ .mode ]]",
[[- end ]]
          "--server-socket=[[ .socket ]]",
[[- end -]]

[[- /* One plugin task; .mode is controller, node or monolith. */ -]]
[[- define "plugin_task" -]]
[[- $ctx := .ctx -]]
    task "plugin" {
      driver = [[ var "task_driver" $ctx | quote ]]
      # democratic-csi shuts down cleanly on SIGTERM only.
      kill_signal = "SIGTERM"

      config {
[[- if eq (var "task_driver" $ctx) "docker" ]]
        image        = [[ var "image" $ctx | quote ]]
        privileged   = true
        network_mode = "host"
        ipc_mode     = "host"
        args = [
[[- template "democratic_csi_args" (dict "ctx" $ctx "mode" .mode "socket" "/csi/csi.sock") ]]
        ]
[[- if ne .mode "controller" ]]
        mount {
          type     = "bind"
          source   = "/run/udev"
          target   = "/run/udev"
          readonly = true
        }
[[- end ]]
[[- if and (ne .mode "controller") (or (hasPrefix "zfs-local-" (var "driver" $ctx)) (eq (var "driver" $ctx) "zfs-generic-iscsi")) ]]
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
[[- end ]]
[[- else ]]
        # democratic-csi from source; without a mount namespace the socket is the host path Nomad gives.
        command = [[ var "node_path" $ctx | quote ]]
        args = [
          [[ printf "%s/bin/democratic-csi" (var "democratic_csi_dir" $ctx) | quote ]],
[[- template "democratic_csi_args" (dict "ctx" $ctx "mode" .mode "socket" "${CSI_ENDPOINT}") ]]
        ]
[[- end ]]
      }
[[- if ne .mode "controller" ]]

      env {
        CSI_NODE_ID = "${attr.unique.hostname}"
      }
[[- end ]]

      # Readable by the task's user only: the controller's configuration holds the storage host's SSH key.
      template {
        destination = "${NOMAD_SECRETS_DIR}/driver-config.yaml"
        perms       = "0400"
        change_mode = "restart"
        data        = <<EOH
[[ template "driver_config" (dict "ctx" $ctx "job" .job "mode" .mode) ]]
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
[[- /* Two layouts, so the output stays `nomad fmt` clean. */ -]]
[[- if var "stage_publish_base_dir" $ctx ]]
        id                     = [[ var "plugin_id" $ctx | quote ]]
        type                   = [[ .mode | quote ]]
        mount_dir              = "/csi"
        health_timeout         = [[ var "plugin_health_timeout" $ctx | quote ]]
        stage_publish_base_dir = [[ var "stage_publish_base_dir" $ctx | quote ]]
[[- else ]]
        id             = [[ var "plugin_id" $ctx | quote ]]
        type           = [[ .mode | quote ]]
        mount_dir      = "/csi"
        health_timeout = [[ var "plugin_health_timeout" $ctx | quote ]]
[[- end ]]
      }

      resources {
[[- $res := ternary (var "controller_resources" $ctx) (var "node_resources" $ctx) (eq .mode "controller") ]]
        cpu    = [[ $res.cpu ]]
        memory = [[ $res.memory ]]
      }
    }
[[- end -]]
