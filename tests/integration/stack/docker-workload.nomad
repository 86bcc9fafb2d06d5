# scripts/demo-workload.nomad's write, as a task under docker: busybox from tests/zfsvm/images.sh, with the CSI
# volume at /data. The test reads the file back with the demo's exec workload, in a second allocation.
variable "volume" {
  type = string
}

job "docker-workload" {
  datacenters = ["*"]
  type        = "batch"

  group "workload" {
    volume "data" {
      type            = "csi"
      source          = var.volume
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }

    task "run" {
      driver = "docker"

      config {
        image   = "nzc/busybox:local"
        command = "/bin/sh"
        args    = ["-c", "date -u +written-under-docker-by-$NOMAD_ALLOC_ID > /data/proof.txt && cat /data/proof.txt"]
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
