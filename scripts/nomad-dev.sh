#!/usr/bin/env bash
# The Nomad half of the local default stack: `nomad agent -dev` on 127.0.0.1:4646,
# raw_exec enabled, data under a short path (a CSI plugin's socket path must fit
# the 108-byte unix socket limit). Usage: nomad-dev.sh start|stop|status
set -euo pipefail
CACHE=${NOMAD_ZFS_CSI_CACHE:-$HOME/.cache/nomad-zfs-csi}
DIR=${NOMAD_DEV_DIR:-/tmp/nzc-dev}
ADDR=http://127.0.0.1:4646
log() { printf '[nomad-dev] %s\n' "$*" >&2; }
up() { curl -sf "$ADDR/v1/status/leader" | grep -q '"'; }

start() {
  if up; then log "already running at $ADDR"; return 0; fi
  mkdir -p "$DIR"
  cat >"$DIR/agent.hcl" <<HCL
bind_addr = "127.0.0.1"
data_dir  = "$DIR/data"
client {
  options = {
    # Cloud fingerprinters in this Nomad build abort the agent; there is no cloud here.
    "fingerprint.denylist" = "env_aws,env_gce,env_azure,env_digitalocean"
  }
}
plugin "raw_exec" {
  config {
    enabled = true
  }
}
HCL
  setsid "$CACHE/bin/nomad" agent -dev -config "$DIR/agent.hcl" >>"$DIR/agent.log" 2>&1 < /dev/null &
  echo $! >"$DIR/pid"
  for _ in $(seq 120); do
    if up && curl -sf "$ADDR/v1/nodes" | grep -q '"Status":"ready"'; then log "up at $ADDR (log: $DIR/agent.log)"; return 0; fi
    kill -0 "$(cat "$DIR/pid")" 2>/dev/null || { tail -20 "$DIR/agent.log" >&2; log "agent exited"; return 1; }
    sleep 0.5
  done
  log "no ready node within 60 s (log: $DIR/agent.log)"; return 1
}

stop() {
  if [ -f "$DIR/pid" ] && kill -0 "$(cat "$DIR/pid")" 2>/dev/null; then
    # Stop the plugin jobs first so their volume mounts are released.
    for job in zfs-node zfs-controller; do "$CACHE/bin/nomad" job stop -address="$ADDR" -purge "$job" >/dev/null 2>&1 || true; done
    local pid; pid=$(cat "$DIR/pid")
    kill "$pid"
    for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    log "stopped"
  fi
  rm -f "$DIR/pid"
  # Allocations' secrets dirs are tmpfs mounts the agent leaves behind; the next start
  # begins from an empty data dir, as `nomad agent -dev` expects.
  awk -v d="$DIR/data/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r | xargs -r -n1 umount -l
  rm -rf "$DIR/data"
}

case ${1:-status} in
  start) start ;;
  stop) stop ;;
  status) if up; then log "running at $ADDR"; else log "not running"; exit 3; fi ;;
  *) log "usage: $0 start|stop|status"; exit 2 ;;
esac
