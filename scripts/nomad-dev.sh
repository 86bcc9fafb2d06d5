#!/usr/bin/env bash
# The Nomad half of the local default stack: `nomad agent -dev` inside the ZFS VM,
# where volumes can be mounted (this host's kernel has no NFS or ZFS). Its HTTP API
# is forwarded to 127.0.0.1:4646 here (the VM's ZFSVM_NOMAD_PORT), so Ansible, the
# modules and nomad-pack run on this host as they would against any cluster.
# ZFSVM_RUN_DIR picks the VM, as for zfsvm.sh.
# ACLs are on: start bootstraps them and keeps the management token in $TOKEN_FILE (`nomad-dev.sh
# token` prints it). Only site.yml's nomad_access play and the tests' own checks use it; the playbook's
# other plays run on the operators' tokens that play makes, and the demo's workload on a submitter's.
# Its API is HTTPS only, to clients with a certificate of its own CA (verify_https_client), as a production
# agent's: `nomad-dev.sh env` prints NOMAD_ADDR, NOMAD_CACERT, NOMAD_CLIENT_CERT and NOMAD_CLIENT_KEY.
# Usage: nomad-dev.sh start|stop|status|token|env
set -euo pipefail
cd "$(dirname "$0")/.."
ZFSVM=tests/zfsvm/zfsvm.sh
CACHE=${NOMAD_ZFS_CSI_CACHE:-$HOME/.cache/nomad-zfs-csi}
# In the VM's run dir, which its next boot empties: a new VM has a new agent.
RUN_DIR=${ZFSVM_RUN_DIR:-$CACHE/zfsvm/run}
TOKEN_FILE=$RUN_DIR/nomad-management.token
# A CA, the agent's certificate and a client one, made by `nomad tls` for each VM. The VM holds the same files at
# the same path: the roles' TLS variables name one path for the host that runs them and the nodes' hosts, as on a
# cluster whose hosts are provisioned alike (inventories/local/group_vars).
TLS_DIR=$RUN_DIR/nomad-tls
CA=$TLS_DIR/nomad-agent-ca.pem CLIENT_CERT=$TLS_DIR/global-cli-nomad.pem CLIENT_KEY=$TLS_DIR/global-cli-nomad-key.pem
# Short: a CSI plugin's socket path under it must fit the 108-byte unix socket limit.
DATA_DIR=/var/lib/nzc-nomad
log() { printf '[nomad-dev] %s\n' "$*" >&2; }
addr() { bash "$ZFSVM" status 2>/dev/null | sed -n 's/^ZFSVM_NOMAD_ADDR=//p'; }
tls_curl() { curl -sf --cacert "$CA" --cert "$CLIENT_CERT" --key "$CLIENT_KEY" "$@"; }
up() { local a; a=$(addr) && [ -n "$a" ] && [ -s "$CA" ] && tls_curl "$a/v1/status/leader" | grep -q '"'; }
# curl with the management token, from a file so that it is never on a command line.
api() { tls_curl -H @<(printf 'X-Nomad-Token: %s\n' "$(cat "$TOKEN_FILE")") "$@"; }
# What the nomad CLI, nomad-pack and the collection's modules read.
env_lines() {
  printf 'export NOMAD_ADDR=%q NOMAD_CACERT=%q NOMAD_CLIENT_CERT=%q NOMAD_CLIENT_KEY=%q\n' \
    "$(addr)" "$CA" "$CLIENT_CERT" "$CLIENT_KEY"
}

# The TLS files here, and the same in the VM (a new VM, a new CA).
make_tls() {
  if [ ! -s "$TLS_DIR/global-server-nomad.pem" ]; then
    rm -rf "$TLS_DIR"; mkdir -p "$TLS_DIR"
    for argv in "ca create" "cert create -server" "cert create -cli"; do
      # shellcheck disable=SC2086  # argv is words
      (cd "$TLS_DIR" && "$CACHE/bin/nomad" tls $argv >/dev/null)
    done
    chmod 600 "$TLS_DIR"/*-key.pem
  fi
  tar -C / -cf - "${TLS_DIR#/}" | bash "$ZFSVM" ssh "tar -C / -xf -"
}

# The exec chroot tree in the VM (scripts/exec-chroot.sh), anew when that script changed, and its chroot_env lines,
# which node B's client names too (tests/integration/stack/node_b.py).
CHROOT=/var/lib/nzc-chroot
make_chroot() {
  local stamp; stamp=$(sha256sum scripts/exec-chroot.sh | cut -c1-16)
  bash "$ZFSVM" ssh "EXEC_CHROOT_STAMP=$stamp bash -s $CHROOT" <scripts/exec-chroot.sh
}
chroot_env_lines() {
  local dir
  for dir in bin lib lib64 etc; do printf '    "%s/%s" = "/%s"\n' "$CHROOT" "$dir" "$dir"; done
}

# raw_exec runs democratic-csi from the tools disk, and docker its image (the pack's
# production default; tests/zfsvm/zfsvm.sh's container layer); exec and docker run workloads.
agent_config() {
  local port=$1
  cat <<HCL
bind_addr = "0.0.0.0"
data_dir  = "$DATA_DIR"
# The address the CLI on this host reaches the client at for logs and exec: the
# forwarded port, not the VM's own 10.0.2.15, which means this host from here. The
# agent serves on that port in the VM too, where a move asks it at that address.
# Its RPC port, the next one, likewise: a client joined from this host (the follow's admin client) learns the
# servers' addresses from their answers, and dials that one.
advertise {
  http = "127.0.0.1:$port"
  rpc  = "127.0.0.1:$((port + 1))"
}
ports {
  http = $port
  rpc  = $((port + 1))
}
client {
  # Where the host_volume_plugin role installs the zfs-dataset plugin (-dev sets none).
  host_volume_plugin_dir = "/usr/local/libexec/nomad-host-volume-plugins"
  # exec's chroot: a tree of its own on a tmpfs, which each allocation gets copies of, never links to the client's
  # files (scripts/exec-chroot.sh says why). Nomad's default (all of /usr, some 37,000 files in the VM) also cost
  # each workload minutes of emulated CPU.
  chroot_env = {
$(chroot_env_lines)
  }
  options = {
    # Cloud fingerprinters in this Nomad build abort the agent; there is no cloud here.
    "fingerprint.denylist" = "env_aws,env_gce,env_azure,env_digitalocean"
  }
}
$(cat scripts/nomad-client-drivers.hcl)
# As a production client that runs CSI plugins under docker: a node plugin is privileged. No registry is reachable:
# the images the VM's layer imported must stay (Nomad removes an image 3 minutes after its last task stopped).
plugin "docker" {
  config {
    allow_privileged = true
    volumes {
      enabled = true
    }
    gc {
      image = false
    }
  }
}
$(cat scripts/nomad-emulated-cpu.hcl)
acl {
  enabled = true
}
tls {
  http                = true
  verify_https_client = true
  ca_file             = "$CA"
  cert_file           = "$TLS_DIR/global-server-nomad.pem"
  key_file            = "$TLS_DIR/global-server-nomad-key.pem"
}
HCL
}

# A -dev agent starts with no state, so every start bootstraps anew with a fresh secret.
bootstrap() {
  local secret
  secret=$(cat /proc/sys/kernel/random/uuid)
  mkdir -p "$(dirname "$TOKEN_FILE")"
  (umask 077; printf '%s\n' "$secret" >"$TOKEN_FILE")
  printf '{"BootstrapSecret": "%s"}' "$secret" | tls_curl -X POST --data-binary @- "$1/v1/acl/bootstrap" >/dev/null
}

start() {
  # One without the token file is not this script's ACL-enabled agent: clean below restarts it.
  if up && [ -s "$TOKEN_FILE" ]; then log "already running at $(addr)"; return 0; fi
  bash "$ZFSVM" start >/dev/null
  local a; a=$(addr)
  # An agent that died leaves its plugin processes and mounts; -dev state is in memory only.
  clean
  make_tls
  make_chroot
  agent_config "${a##*:}" | bash "$ZFSVM" ssh "mkdir -p /etc/nzc && cat >/etc/nzc/nomad.hcl"
  # A transient systemd unit outlives this SSH session and is stopped by name. Its PATH has /bin, where the exec
  # tasks' chroot tree keeps their commands: Debian 13's systemd gives services none (a usr-merged system), and a
  # task inherits the agent's (the pack's README, Client requirements).
  bash "$ZFSVM" ssh "systemctl reset-failed nzc-nomad 2>/dev/null; systemd-run --unit=nzc-nomad --collect \
    --setenv=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /opt/nzc/bin/nomad agent -dev -config /etc/nzc/nomad.hcl >/dev/null 2>&1"
  local bootstrapped=""
  for _ in $(seq 180); do
    if [ -z "$bootstrapped" ] && up; then bootstrap "$a" && bootstrapped=1; fi
    if [ -n "$bootstrapped" ] && api "$a/v1/nodes" | grep -q '"Status":"ready"'; then log "up at $a (log: journalctl -u nzc-nomad in the VM)"; return 0; fi
    bash "$ZFSVM" ssh systemctl is-active -q nzc-nomad \
      || { bash "$ZFSVM" ssh journalctl -u nzc-nomad --no-pager | tail -20 >&2; log "agent exited"; return 1; }
    sleep 1
  done
  log "no ready node within 180 s (journalctl -u nzc-nomad in the VM)"; return 1
}

stop() {
  bash "$ZFSVM" status >/dev/null 2>&1 || { log "VM not running"; return 0; }
  if up; then
    # Stop the plugin jobs first so their volume mounts are released.
    for job in zfs-node zfs-controller; do
      (eval "$(env_lines)"; NOMAD_TOKEN=$(cat "$TOKEN_FILE" 2>/dev/null) "$CACHE/bin/nomad" job stop -purge "$job" >/dev/null 2>&1) || true
    done
  fi
  clean
  log "stopped"
}

# Every start begins from an empty data dir, as `nomad agent -dev` expects; mounts
# the agent leaves behind (secrets tmpfs, volumes) go first.
clean() {
  bash "$ZFSVM" ssh "systemctl stop nzc-nomad 2>/dev/null || true
    pkill -f '^/opt/nzc/bin/node ' || true
    awk -v d=$DATA_DIR/ 'index(\$2, d) == 1 {print \$2}' /proc/mounts | sort -r | xargs -r -n1 umount -l
    rm -rf $DATA_DIR"
  rm -f "$TOKEN_FILE"
}

case ${1:-status} in
  start) start ;;
  stop) stop ;;
  status) if up; then log "running at $(addr)"; else log "not running"; exit 3; fi ;;
  token) if up && [ -s "$TOKEN_FILE" ]; then cat "$TOKEN_FILE"; else log "not running"; exit 3; fi ;;
  env) if up; then env_lines; else log "not running"; exit 3; fi ;;
  *) log "usage: $0 start|stop|status|token|env"; exit 2 ;;
esac
