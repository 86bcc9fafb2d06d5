#!/usr/bin/env bash
# make test's checks after set-up, in two lanes side by side. The emulated VM keeps about one
# core of two busy, and most of its time is waiting on its own emulated CPU, so:
# - the stack lane boots the VM at once and runs the stack tests (Nomad in the VM, site.yml,
#   democratic-csi), then Molecule's csi_plugin scenario on that VM, then stops it;
# - the host lane runs the checks that need no VM (unit, sanity, lint, changelog, pack, the
#   integration tests against Nomad agents on this host), then boots a second VM for the ZFS
#   modules' tests and Molecule's storage_host scenario, whose destroy stops it.
# Each lane stops at its first failure; the host lane's lines carry a "[host]" prefix;
# both lanes always finish.
set -uo pipefail
cd "$(dirname "$0")/.." || exit
CACHE=${NOMAD_ZFS_CSI_CACHE:-$HOME/.cache/nomad-zfs-csi}

host_lane() {
  make --no-print-directory unit sanity lint changelog pack integration-host || return
  # The second VM: its own run dir, and a Nomad port of its own, which nothing here uses.
  ZFSVM_RUN_DIR=$CACHE/zfsvm/run-zfs ZFSVM_NOMAD_PORT=4656 \
    make --no-print-directory integration-zfs molecule SCENARIOS=storage_host
  local rc=$?
  ZFSVM_RUN_DIR=$CACHE/zfsvm/run-zfs bash tests/zfsvm/zfsvm.sh stop 2>/dev/null
  return $rc
}

(host_lane 2>&1 | sed -u 's/^/[host] /') &
host=$!
make --no-print-directory integration-stack molecule SCENARIOS=csi_plugin
vm_rc=$?
bash tests/zfsvm/zfsvm.sh stop 2>/dev/null
wait "$host"
host_rc=$?

[ "$host_rc" = 0 ] || echo "checks: the host lane failed (rc=$host_rc): its [host] lines above say where" >&2
[ "$vm_rc" = 0 ] || echo "checks: the stack lane failed (rc=$vm_rc)" >&2
[ "$host_rc" = 0 ] && [ "$vm_rc" = 0 ]
