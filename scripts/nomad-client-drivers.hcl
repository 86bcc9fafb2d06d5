# The drivers of the tests' Nomad clients (scripts/nomad-dev.sh's agent, and the separate hosts' clients of
# tests/integration/cluster): raw_exec for democratic-csi from source, exec hardened for tenants' tasks.
plugin "raw_exec" {
  config {
    enabled = true
  }
}
# As a production client whose tenants run exec tasks: a task that runs as nobody got the driver's default
# capabilities as ambient ones (dac_override, fowner, chown, setuid...), and with them wrote the client's own files
# through the chroot's hard links to /etc. A tenant's task gets none: not even net_bind_service, with which a
# userspace NFS client would send from a privileged port as uid 0, and the exports trust that (no_root_squash).
# Nor may it run as another account of the client (a service user such as csi, a person): only as nobody (65534).
# Nomad's user.denylist keeps root out by name only. Not gid 0: Nomad v1.11.3 counts every user in group 0 (its
# getGroupsID appends the user's groups after as many zeros), so denying 0 refuses nobody too.
plugin "exec" {
  config {
    allow_caps       = []
    denied_host_uids = "0-65533"
    denied_host_gids = "1-65533"
  }
}
