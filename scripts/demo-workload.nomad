# The demo's workload: a batch job that claims the CSI volume "demo" and either
# writes a file into it (-var action=write) or prints it back (-var action=read),
# each in its own allocation. exec, not raw_exec: Nomad refuses CSI volumes for
# raw_exec tasks ("csi_hook failed: no task supports CSI").
variable "action" {
  type    = string
  default = "write"
}

locals {
  scripts = {
    write = "date -u +written-by-$NOMAD_ALLOC_ID-at-%FT%TZ > /data/proof.txt && cat /data/proof.txt"
    read  = "cat /data/proof.txt"
  }
}

job "demo-workload" {
  datacenters = ["*"]
  type        = "batch"

  group "workload" {
    volume "data" {
      type            = "csi"
      source          = "demo"
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
