#!/usr/bin/env bash
# make test's checks after set-up, in two lanes side by side. One emulated VM keeps about one
# core of two busy, and much of its time goes to waiting on its own emulated CPU, so:
# - the stack lane boots the VM at once and runs most stack tests (make integration-vm1: Nomad
#   in the VM, site.yml, democratic-csi), then Molecule's csi_plugin scenario on that VM, then
#   stops it;
# - the host lane runs the checks that need no VM (unit, sanity, lint, changelog, pack, the
#   integration tests against Nomad agents on this host), then boots a second VM, with its own
#   run dir and forwarded Nomad port, for the ZFS modules' tests and the rest of the stack tests
#   on a stack of its own (make integration-vm2), then Molecule's storage_host scenario, whose
#   destroy stops it.
# Each lane stops at its first failure; the host lane's lines carry a "[host]" prefix;
# both lanes always finish.
set -uo pipefail
cd "$(dirname "$0")/.." || exit
CACHE=${NOMAD_ZFS_CSI_CACHE:-$HOME/.cache/nomad-zfs-csi}

host_lane() {
  make --no-print-directory unit sanity lint changelog pack integration-host || return
  ZFSVM_RUN_DIR=$CACHE/zfsvm/run-2 ZFSVM_NOMAD_PORT=4656 \
    make --no-print-directory integration-vm2 molecule SCENARIOS=storage_host
  local rc=$?
  ZFSVM_RUN_DIR=$CACHE/zfsvm/run-2 bash tests/zfsvm/zfsvm.sh stop 2>/dev/null
  return $rc
}

# The stack lane is the longer one, and its first site.yml runs while sanity and lint take both
# cores (once its plugin was not healthy within 300 s then): the host lane runs niced.
(renice -n 10 -p "$BASHPID" >/dev/null; host_lane 2>&1 | sed -u 's/^/[host] /') &
host=$!
make --no-print-directory integration-vm1 molecule SCENARIOS=csi_plugin
vm_rc=$?
bash tests/zfsvm/zfsvm.sh stop 2>/dev/null
wait "$host"
host_rc=$?

[ "$host_rc" = 0 ] || echo "checks: the host lane failed (rc=$host_rc): its [host] lines above say where" >&2
[ "$vm_rc" = 0 ] || echo "checks: the stack lane failed (rc=$vm_rc)" >&2
[ "$host_rc" = 0 ] && [ "$vm_rc" = 0 ]
