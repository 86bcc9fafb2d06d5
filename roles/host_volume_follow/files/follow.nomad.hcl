# The follow controller: ansible-rulebook runs the collection's follow rulebook (nomad_zfs.csi.follow) on a client of
# the admin node pool. Its Nomad token is its workload identity, which the mover's follow policy is bound to
# (nomad_access_follow_namespace); its SSH key and known hosts come from the variable nomad/jobs/<job>, which only
# this job and a management token read. The host_volume_follow role runs it.
variable "job_id" {
  type = string
}
variable "namespace" {
  type = string
}
variable "node_pool" {
  type = string
}
# ansible-rulebook on the admin clients, with the collection in ANSIBLE_COLLECTIONS_PATH (environment).
variable "rulebook" {
  type = string
}
variable "environment" {
  type = map(string)
}
# The follow's inventory (YAML) and the rulebook's variables (JSON): written as given, never templated.
variable "inventory" {
  type = string
}
variable "rulebook_vars" {
  type = string
}
# One acts, holding the follow's lock (the rulebook's follow_lock); the others wait for it, to take over at once.
variable "count" {
  type = number
}
# The admin clients it may run on, by node ID: a client names its pool itself, and an ID only the node's secret
# registers again.
variable "node_ids" {
  type = list(string)
}

job "nomad-zfs-csi-follow" {
  id        = var.job_id
  name      = var.job_id
  namespace = var.namespace
  node_pool = var.node_pool
  type      = "service"

  constraint {
    attribute = "${node.unique.id}"
    operator  = "set_contains_any"
    value     = join(",", var.node_ids)
  }

  group "follow" {
    count = var.count

    # A crashed rulebook comes back, and goes on from the moves' journals and the lock's cursor.
    restart {
      attempts = 10
      interval = "30m"
      delay    = "15s"
      mode     = "delay"
    }

    task "rulebook" {
      driver = "raw_exec"

      # NOMAD_TOKEN: the workload identity, which Nomad's API takes as this job's token.
      identity {
        env = true
      }

      config {
        command = var.rulebook
        # -v: its INFO lines too (the lock taken, a reconnect).
        args    = ["-v", "-r", "nomad_zfs.csi.follow", "-i", "local/inventory.yml", "--vars", "local/vars.json"]
      }

      env {
        HOME                     = "${NOMAD_TASK_DIR}"
        ANSIBLE_PRIVATE_KEY_FILE = "${NOMAD_SECRETS_DIR}/ssh_key"
        # Ansible's own SSH arguments, with the known hosts of the variable, which SSH checks.
        ANSIBLE_SSH_ARGS = "-o ControlMaster=auto -o ControlPersist=60s -o UserKnownHostsFile=${NOMAD_SECRETS_DIR}/known_hosts -o StrictHostKeyChecking=yes"
      }

      # The operator's settings (PATH, ANSIBLE_COLLECTIONS_PATH, NOMAD_ADDR, NOMAD_CACERT, ...), inventory and the
      # rulebook's variables: passed base64-encoded, so that no value is read as a template.
      template {
        data        = "{{ base64Decode \"${base64encode(join("", [for k in sort(keys(var.environment)) : "${k}=${jsonencode(var.environment[k])}\n"]))}\" }}"
        destination = "local/environment"
        env         = true
      }

      template {
        data        = "{{ base64Decode \"${base64encode(var.inventory)}\" }}"
        destination = "local/inventory.yml"
      }

      template {
        data        = "{{ base64Decode \"${base64encode(var.rulebook_vars)}\" }}"
        destination = "local/vars.json"
      }

      template {
        data        = "{{ with nomadVar \"nomad/jobs/${var.job_id}\" }}{{ .ssh_private_key }}{{ end }}\n"
        destination = "secrets/ssh_key"
        perms       = "0600"
      }

      template {
        data        = "{{ with nomadVar \"nomad/jobs/${var.job_id}\" }}{{ .known_hosts }}{{ end }}\n"
        destination = "secrets/known_hosts"
        perms       = "0600"
      }

      resources {
        cpu    = 500
        memory = 1024
      }
    }
  }
}
