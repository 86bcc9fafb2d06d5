# The fio benchmark's workload (bench/fio_bench.py): one allocation that claims a CSI volume, mounted at /data, and
# runs Debian's fio there with the benchmark's arguments (no shell), printing fio's JSON report. exec, as the
# demo's workload: fio and its libraries come from the node's /bin and /lib/x86_64-linux-gnu (the local stack's
# chroot_env; both are /usr's on Debian 12).
variable "volume" {
  type = string
}

variable "fio_args" {
  type = list(string)
}

job "fio-workload" {
  datacenters = ["*"]
  type        = "batch"

  group "fio" {
    volume "data" {
      type            = "csi"
      source          = var.volume
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }

    task "fio" {
      driver = "exec"

      config {
        command = "/bin/fio"
        args    = var.fio_args
      }

      # librados's libceph-common.so.2 is found by its RUNPATH, /usr/lib/x86_64-linux-gnu/ceph, which the chroot
      # has as /lib/x86_64-linux-gnu/ceph only (without it fio exits 127).
      env {
        LD_LIBRARY_PATH = "/lib/x86_64-linux-gnu/ceph"
      }

      volume_mount {
        volume      = "data"
        destination = "/data"
      }

      resources {
        cpu    = 200
        memory = 256
      }
    }
  }
}
