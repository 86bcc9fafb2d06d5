variable "driver" {
  description = "democratic-csi driver: zfs-generic-nfs, zfs-generic-iscsi, zfs-local-dataset or zfs-local-zvol."
  type        = string
  default     = "zfs-generic-nfs"
}

variable "plugin_id" {
  description = "CSI plugin id in Nomad; also passed as --csi-name."
  type        = string
  default     = "zfs"
}

variable "job_name_prefix" {
  description = "Prefix of the job names; empty means the plugin id."
  type        = string
  default     = ""
}

variable "instance_id" {
  description = "Stable UUID of this driver instance (democratic-csi instance_id). Required."
  type        = string
  default     = ""
}

variable "dataset_parent_name" {
  description = "Delegated parent dataset that holds every volume, e.g. tank/nomad/csi. Required."
  type        = string
  default     = ""
}

variable "detached_snapshots_parent_name" {
  description = "Parent for detached snapshots, outside dataset_parent_name. Required: democratic-csi's controller fails every probe without it."
  type        = string
  default     = ""
}

variable "dataset_properties" {
  description = "Extra ZFS properties set on every volume dataset (zfs.datasetProperties)."
  type        = map(string)
  default     = {}
}

variable "dataset_enable_quotas" {
  description = "Set refquota to the requested capacity (datasetEnableQuotas)."
  type        = bool
  default     = true
}

variable "dataset_enable_reservation" {
  description = "Set refreservation to the requested capacity (datasetEnableReservation)."
  type        = bool
  default     = false
}

variable "zfs_sudo" {
  description = "Run every zfs command through sudo (zfs.cli.sudoEnabled). Set false with zfs_cli_path for a delegated service user."
  type        = bool
  default     = true
}

variable "zfs_cli_path" {
  description = "zfs program democratic-csi runs on the storage host (zfs.cli.paths.zfs); empty keeps democratic-csi's default."
  type        = string
  default     = ""
}

variable "zfs_sudo_path" {
  description = "Program democratic-csi puts before chmod when it does not run as root (zfs.cli.paths.sudo); empty keeps /usr/bin/sudo. With the storage_host role's delegation set /usr/bin/env: the service user owns the root directory of each volume it creates, so the chmod of dataset_permissions_mode needs no root."
  type        = string
  default     = ""
}

variable "node_mount_flags" {
  description = "Mount options the node plugin adds to every volume's staging mount (node.mount.mount_flags), which each task's bind mount of it inherits; one option per item. The default keeps a setuid file or a device node that a task writes onto its volume from giving anything to whoever runs or opens it later on the client; [] adds none."
  type        = list(string)
  default     = ["nosuid", "nodev"]
}

variable "dataset_permissions_mode" {
  description = "Mode democratic-csi sets on each new volume's root directory (zfs.datasetPermissionsMode), e.g. 0777 so tasks running as any user can write; empty leaves it as created."
  type        = string
  default     = ""
}

variable "filesystem_root_owner" {
  description = "UID:GID of the root directory of each ext4 filesystem the node plugin makes on a block volume (zvol, iSCSI LUN), as mkfs.ext4 -E root_owner= (node.format.ext4.customOptions), e.g. 65534:65534 for exec tasks that run as nobody with no capabilities; empty leaves it root's, mode 0755."
  type        = string
  default     = ""
}

variable "volume_id_hash" {
  description = "Hash democratic-csi makes each new volume's ID and dataset name from (_private.csi.volume.idHash.strategy): md5, crc8, crc16 or crc32; empty uses the volume's name. democratic-csi takes only names matching ^[a-z0-9][a-z0-9_-]*$, so Nomad per_alloc names such as web[0] need one."
  type        = string
  default     = ""
}

variable "ssh_host" {
  description = "Storage host the controller reaches over SSH (zfs-generic-* drivers)."
  type        = string
  default     = ""
}

variable "ssh_port" {
  description = "SSH port of the storage host."
  type        = number
  default     = 22
}

variable "ssh_username" {
  description = "Non-root service user on the storage host."
  type        = string
  default     = "csi"
}

variable "secrets_variable_path" {
  description = "Nomad Variable holding ssh_private_key (and the controller's iscsi_chap_userid and iscsi_chap_password with iscsi_chap), read by the jobs' template block and never rendered into job text. Empty: each job reads its own nomad/jobs/<job>, which its workload identity may read when ACLs are on; a shared path needs a workload ACL policy per job."
  type        = string
  default     = ""
}

variable "nfs_share_host" {
  description = "Address clients mount NFS shares from (zfs-generic-nfs); defaults to ssh_host."
  type        = string
  default     = ""
}

variable "nfs_clients" {
  description = "Required for zfs-generic-nfs: the networks or hosts that may mount the volumes (10.0.0.0/24, 192.168.1.7, [fd00::]/64), the nodes that run the node plugin. Each volume is exported read-write to these only, never to everyone."
  type        = list(string)
  default     = []
}

variable "nfs_share_options" {
  description = "NFS export options for the nfs_clients, after their rw= list in each volume's sharenfs (zfs-generic-nfs); no rw or ro of their own."
  type        = string
  default     = "no_root_squash"
}

variable "iscsi_target_portal" {
  description = "iSCSI portal host:port that the nodes log in to (zfs-generic-iscsi; required there)."
  type        = string
  default     = ""
}

variable "iscsi_base_name" {
  description = "iSCSI IQN base name (zfs-generic-iscsi)."
  type        = string
  default     = "iqn.2003-01.org.linux-iscsi.storage:nomad"
}

variable "iscsi_chap" {
  description = "Require CHAP on every volume's target (zfs-generic-iscsi): tpg authentication=1 with the items iscsi_chap_userid and iscsi_chap_password of the controller's secrets variable; the nodes log in with the same pair from their /etc/iscsi/iscsid.conf (node.session.auth.*). Without it any initiator that reaches the portal logs in to every volume."
  type        = bool
  default     = true
}

variable "iscsi_targetcli_sudo" {
  description = "Run targetcli on the storage host through sudo (zfs-generic-iscsi; shareStrategyTargetCli.sudoEnabled): the storage_host role's rule gives the service user a confined targetcli, never root's."
  type        = bool
  default     = true
}

variable "image" {
  description = "democratic-csi image, pinned."
  type        = string
  default     = "democraticcsi/democratic-csi:v1.9.4"
}

variable "csi_version" {
  description = "CSI spec version democratic-csi speaks (--csi-version)."
  type        = string
  default     = "1.5.0"
}

variable "task_driver" {
  description = "Task driver of the plugin tasks: docker runs the pinned image; raw_exec runs democratic-csi from source (democratic_csi_dir, node_path) as the agent's user."
  type        = string
  default     = "docker"
}

variable "democratic_csi_dir" {
  description = "With task_driver = raw_exec: democratic-csi's source directory on every client, installed with npm ci. The plugin runs as node_path DIR/bin/democratic-csi."
  type        = string
  default     = ""
}

variable "node_path" {
  description = "With task_driver = raw_exec: the Node.js program that runs democratic-csi (version 18 or later)."
  type        = string
  default     = "node"
}

variable "stage_publish_base_dir" {
  description = "With task_driver = raw_exec: where the plugin stages and publishes, as a host path. A raw_exec plugin has no /local of its own, so set it to <client data_dir>/client/csi/node/<plugin_id>, the directory Nomad mounts volumes from (client/csi/monolith/<plugin_id> for the zfs-local-* drivers, which run as a monolith). Empty keeps Nomad's default."
  type        = string
  default     = ""
}

variable "datacenters" {
  description = "Datacenters the jobs may run in."
  type        = list(string)
  default     = ["*"]
}

variable "region" {
  description = "Region of the jobs; empty for the agent's."
  type        = string
  default     = ""
}

variable "namespace" {
  description = "Namespace of the jobs; empty for default."
  type        = string
  default     = ""
}

variable "node_pool" {
  description = "Node pool of the jobs."
  type        = string
  default     = "default"
}

variable "controller_node_pool" {
  description = "Node pool of the controller job (zfs-generic-* drivers), which holds the storage host's SSH key; empty means node_pool. Give it a pool where tenants' jobs never run: root on a client reads the secrets of every task there."
  type        = string
  default     = ""
}

variable "controller_count" {
  description = "Controller instances, placed on distinct hosts (zfs-generic-* drivers)."
  type        = number
  default     = 2
}

variable "controller_resources" {
  description = "CPU (MHz) and memory (MB) of each controller."
  type        = object({ cpu = number, memory = number })
  default     = { cpu = 100, memory = 256 }
}

variable "plugin_health_timeout" {
  description = "How long Nomad waits for the plugin's socket to answer before it restarts the task (csi_plugin health_timeout). Raise it where democratic-csi starts slowly, such as an emulated VM."
  type        = string
  default     = "30s"
}

variable "node_resources" {
  description = "CPU (MHz) and memory (MB) of each node plugin."
  type        = object({ cpu = number, memory = number })
  default     = { cpu = 100, memory = 256 }
}

variable "volumes" {
  description = "CSI volumes for templates/volumes.json, in the shape of the nomad_csi_volume module's volumes option and the csi_plugin role's csi_plugin_volumes: id, then optionally name, mode, external_id, capacity_min/max (bytes or with a unit, e.g. 10G), snapshot_id, clone_id, capabilities (access_mode, attachment_mode), topology (required, preferred: lists of segment maps), fs_type, mount_flags, parameters, context, state."
  type = list(object({
    id           = string
    name         = optional(string)
    mode         = optional(string)
    external_id  = optional(string)
    capacity_min = optional(string)
    capacity_max = optional(string)
    snapshot_id  = optional(string)
    clone_id     = optional(string)
    capabilities = optional(list(object({
      access_mode     = string
      attachment_mode = string
    })))
    topology = optional(object({
      required  = optional(list(map(string)))
      preferred = optional(list(map(string)))
    }))
    fs_type     = optional(string)
    mount_flags = optional(list(string))
    parameters  = optional(map(string))
    context     = optional(map(string))
    state       = optional(string)
  }))
  default = []
}

variable "host_volumes" {
  description = "Dynamic host volumes (no CSI) for templates/host_volumes.json, in the shape of the nomad_host_volume module's volumes option: name, then optionally mode, plugin_id (the host_volume_plugin role's zfs-dataset by default), host_path, node_id, node_pool, capacity_min/max (bytes or with a unit), capabilities (access_mode, attachment_mode), parameters, state."
  type = list(object({
    name         = string
    mode         = optional(string)
    plugin_id    = optional(string)
    host_path    = optional(string)
    node_id      = optional(string)
    node_pool    = optional(string)
    capacity_min = optional(string)
    capacity_max = optional(string)
    capabilities = optional(list(object({
      access_mode     = string
      attachment_mode = string
    })))
    parameters = optional(map(string))
    state      = optional(string)
  }))
  default = []
}
