#!/usr/bin/env bash
# Run each Molecule scenario; fail if its verifier ran no tests, since
# Molecule only warns "Skipping, no tests found".
set -euo pipefail
cd "$(dirname "$0")/.."
# An empty ./molecule (left by tools) would make Molecule ignore extensions/molecule.
rmdir molecule 2>/dev/null || true
# The key of the VM the integration tests left up, in the same cache they use.
export ZFSVM_KEY=${ZFSVM_KEY:-${NOMAD_ZFS_CSI_CACHE:-$HOME/.cache/nomad-zfs-csi}/zfsvm/run/id_ed25519}
# mitogen's strategy: one guest Python per play, not one per task (tests/integration/zfsvm_client.py, mitogen_env).
ANSIBLE_STRATEGY_PLUGINS=$(.venv/bin/python -c 'import ansible_mitogen, os; print(os.path.dirname(ansible_mitogen.__file__))')/plugins/strategy
export ANSIBLE_STRATEGY_PLUGINS ANSIBLE_STRATEGY=mitogen_linear
scenarios=("$@")
# csi_plugin first: it reuses the VM the integration tests left up, and storage_host's
# prepare starts from a clean tank/nomad and its destroy stops the VM.
[ ${#scenarios[@]} -gt 0 ] || scenarios=(csi_plugin storage_host)
for scenario in "${scenarios[@]}"; do
  log=$(mktemp)
  .venv/bin/molecule test -s "$scenario" 2>&1 | tee "$log"
  grep -qE '[0-9]+ passed' "$log" || { echo "molecule: scenario $scenario ran no verifier tests" >&2; exit 1; }
  rm -f "$log"
done
