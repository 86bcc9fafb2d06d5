#!/usr/bin/env bash
# make test's checks after set-up, in three lanes side by side: the VM tests in two parts, each on an emulated
# VM of one vCPU (integration-vm-a, then with NZC_EXTENDED=1 Molecule, which reuses its VM; integration-vm-b,
# prefixed "[vm-b]"), and
# the checks that need no VM (unit, sanity, lint, changelog, pack, rules, the integration tests against Nomad agents on
# this host, the controller lines' checks; prefixed "[host]"). Each lane stops at its first failure; all lanes always
# finish.
# Two VMs of two vCPUs each slowed both about twofold on this 2-core host (four vCPUs on two cores); of one vCPU
# each, the same guest work took as long side by side as alone (docs/testing.md).
set -uo pipefail
cd "$(dirname "$0")/.." || exit
# Both VMs (the first one Molecule reuses too) with one vCPU each: two cores, two vCPUs.
export ZFSVM_SMP=1

# Each lane's output is also kept, so that the end of the log (often all a CI report shows) names what failed, and
# whole until the next run, for what the summary cuts.
logs=${NOMAD_ZFS_CSI_CACHE:-$HOME/.cache/nomad-zfs-csi}/checks-logs
rm -rf "$logs" && mkdir -p "$logs"

# The VM lanes are the longer ones, and their first site.yml runs while sanity and lint take both cores (once a
# plugin was not healthy within 300 s then): the host lane runs niced.
(renice -n 10 -p "$BASHPID" >/dev/null; make --no-print-directory unit sanity lint changelog pack rules integration-host controller-lines 2>&1 | sed -u 's/^/[host] /' | tee "$logs/host") &
host=$!
(make --no-print-directory integration-vm-b 2>&1 | sed -u 's/^/[vm-b] /' | tee "$logs/vm-b") &
vm_b=$!
# Molecule's scenarios are in the extended tier (docs/testing.md, Tiers); without them the lane stops its VM.
if [ "${NZC_EXTENDED:-0}" = 1 ]; then vm_a_after=molecule; else vm_a_after=vm-stop; fi
make --no-print-directory integration-vm-a "$vm_a_after" 2>&1 | tee "$logs/vm-a"
vm_rc=${PIPESTATUS[0]}
wait "$vm_b"
vm_b_rc=$?
wait "$host"
host_rc=$?

# pytest's short summary (FAILED and ERROR lines, the count), and make's and Molecule's own errors.
summary() {
  grep -E '(^|\] )(FAILED|ERROR) |[0-9]+ (passed|failed|errors?)\b.* in [0-9.]+s|\*\*\* \[|CRITICAL|fatal: \[' "$logs/$1" |
    tail -n 40 | cut -c1-400 >&2
}
[ "$host_rc" = 0 ] || { summary host; echo "checks: the host lane failed (rc=$host_rc): its [host] lines above say where" >&2; }
[ "$vm_b_rc" = 0 ] || { summary vm-b; echo "checks: the second VM's lane failed (rc=$vm_b_rc): its [vm-b] lines above say where" >&2; }
[ "$vm_rc" = 0 ] || { summary vm-a; echo "checks: the VM lane failed (rc=$vm_rc)" >&2; }
[ "$host_rc" = 0 ] && [ "$vm_b_rc" = 0 ] && [ "$vm_rc" = 0 ]
