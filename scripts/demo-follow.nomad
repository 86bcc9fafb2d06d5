# The demo's service on host volume demo-hv, in tenant demo's namespace: its first allocation writes a file into the
# volume, and every allocation prints the file it found there, then stays running (a drain moves only the volumes
# that running jobs claim). After the drain of the volume's node, the allocation on the other node prints the file
# that the first one wrote: the data came with the job.
job "demo-follow" {
  datacenters = ["*"]
  type        = "service"

  group "service" {
    volume "data" {
      type            = "host"
      source          = "demo-hv"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }

    # One try per placement: a failure is the demo's to report, not to hide behind a restart.
    restart {
      attempts = 0
      mode     = "fail"
    }

    task "serve" {
      driver = "exec"

      config {
        command = "/bin/sh"
        args = ["-c", <<-EOT
          [ -s /data/proof.txt ] || date -u +written-on-$NOMAD_ALLOC_ID-at-%FT%TZ > /data/proof.txt
          echo "allocation $NOMAD_ALLOC_ID found: $(cat /data/proof.txt)"
          exec sleep 86400
          EOT
        ]
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
