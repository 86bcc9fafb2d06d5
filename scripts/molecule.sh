#!/usr/bin/env bash
# Run each Molecule scenario; fail if its verifier ran no tests, since
# Molecule only warns "Skipping, no tests found".
set -euo pipefail
cd "$(dirname "$0")/.."
# An empty ./molecule (left by tools) would make Molecule ignore extensions/molecule.
rmdir molecule 2>/dev/null || true
# The key of the VM the integration tests left up, in the same cache and run dir they use.
export ZFSVM_KEY=${ZFSVM_KEY:-${ZFSVM_RUN_DIR:-${NOMAD_ZFS_CSI_CACHE:-$HOME/.cache/nomad-zfs-csi}/zfsvm/run}/id_ed25519}
# The stack tests' mitogen settings (tests/integration/zfsvm_client.py, mitogen_env says why).
mitogen=$(.venv/bin/python -c 'import shlex, sys; sys.path.insert(0, "tests/integration"); from zfsvm_client import mitogen_env
for name, value in mitogen_env().items(): print("export %s=%s" % (name, shlex.quote(value)))')
eval "$mitogen"
scenarios=("$@")
# csi_plugin first: it reuses the VM the integration tests left up, and storage_host's
# prepare starts from a clean tank/nomad and its destroy stops the VM.
[ ${#scenarios[@]} -gt 0 ] || scenarios=(csi_plugin storage_host)
for scenario in "${scenarios[@]}"; do
  # A run killed midway (a cancelled job) leaves the scenario's state saying created and prepared, with the
  # inventory of a VM that is gone: the next run would skip create and prepare and fail on a stale port (seen
  # 2026-11-28: "ssh: connect to host 127.0.0.1 port 58635: Connection refused"). reset removes that state only.
  reset=$(.venv/bin/molecule reset -s "$scenario" 2>&1) || { echo "$reset" >&2; exit 1; }
  log=$(mktemp)
  .venv/bin/molecule test -s "$scenario" 2>&1 | tee "$log"
  grep -qE '[0-9]+ passed' "$log" || { echo "molecule: scenario $scenario ran no verifier tests" >&2; exit 1; }
  rm -f "$log"
done
