# The demo's workload: a batch job that claims a CSI volume (-var volume=, "demo" by
# default; -var volume_type=host for a dynamic host volume of that name) and either writes a file into it (-var action=write), prints it back
# (-var action=read) or prints the size the task sees (-var action=size), each in
# its own allocation. exec, not raw_exec: Nomad refuses CSI volumes for
# raw_exec tasks ("csi_hook failed: no task supports CSI").
variable "action" {
  type    = string
  default = "write"
}

variable "volume" {
  type    = string
  default = "demo"
}

variable "volume_type" {
  type    = string
  default = "csi"
}

locals {
  scripts = {
    write = "date -u +written-by-$NOMAD_ALLOC_ID-at-%FT%TZ > /data/proof.txt && cat /data/proof.txt"
    read  = "cat /data/proof.txt"
    size  = "df -B1 --output=size /data | tail -1"
  }
}

job "demo-workload" {
  datacenters = ["*"]
  type        = "batch"

  group "workload" {
    volume "data" {
      type            = var.volume_type
      source          = var.volume
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }

    task "run" {
      driver = "exec"

      config {
        command = "/bin/sh"
        args    = ["-c", local.scripts[var.action]]
      }

      volume_mount {
        volume      = "data"
        destination = "/data"
      }

      resources {
        cpu    = 50
        memory = 64
      }
    }
  }
}
