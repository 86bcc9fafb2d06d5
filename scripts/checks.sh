#!/usr/bin/env bash
# make test's checks after set-up, in two lanes. The emulated VM keeps about one core of
# two busy, so the checks that need no VM (unit, sanity, lint, changelog, pack, the
# integration tests against Nomad agents on this host) run beside the VM's lane
# (integration on the VM, then Molecule, which reuses that VM), which starts at once.
# Each lane stops at its first failure; the host lane's lines carry a "[host]" prefix;
# both lanes always finish.
# A second VM for part of the VM's lane was measured and dropped: with both VMs running, the host
# was 99 % busy and the first VM's tests took about three times as long (README, Tests).
set -uo pipefail
cd "$(dirname "$0")/.." || exit

# The VM's lane is the longer one, and its first site.yml runs while sanity and lint take both
# cores (once its plugin was not healthy within 300 s then): the host lane runs niced.
(renice -n 10 -p "$BASHPID" >/dev/null; make --no-print-directory unit sanity lint changelog pack integration-host 2>&1 | sed -u 's/^/[host] /') &
host=$!
make --no-print-directory integration-vm molecule
vm_rc=$?
wait "$host"
host_rc=$?

[ "$host_rc" = 0 ] || echo "checks: the host lane failed (rc=$host_rc): its [host] lines above say where" >&2
[ "$vm_rc" = 0 ] || echo "checks: the VM lane failed (rc=$vm_rc)" >&2
[ "$host_rc" = 0 ] && [ "$vm_rc" = 0 ]
