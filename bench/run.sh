#!/usr/bin/env bash
# Benchmarks: BENCH=zfs (default), nomad, wrapper, volumes, host_volumes, replication, move, follow, plugin, fio,
# targetcli, metrics or all. The anchors (community.general) come from the `ansible` package, installed into a venv of its own so
# the collection's venv stays minimal; python-nomad is there for both Nomad modules.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${NOMAD_ZFS_CSI_CACHE:-$HOME/.cache/nomad-zfs-csi}
ANSIBLE_PKG='ansible==12.3.0'   # the line that pairs with ansible-core 2.19
PINS=$(grep -E '^(ansible-core|python-nomad)==' requirements.txt | cut -d'#' -f1 | tr -d ' ' | tr '\n' ' ')
venv=$CACHE/venv-bench-$(printf '%s %s %s' "$ANSIBLE_PKG" "$PINS" "$(python3 -VV)" | sha256sum | cut -c1-12)
if [ ! -f "$venv/.complete" ]; then
  rm -rf "$venv" && python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  # shellcheck disable=SC2086  # PINS is a list of requirement specifiers
  "$venv/bin/pip" install -q "$ANSIBLE_PKG" $PINS
  touch "$venv/.complete"
fi
case ${BENCH:-zfs} in
  zfs) PATH=$venv/bin:$PATH "$venv/bin/python" bench/zfs_bench.py ;;
  nomad) PATH=$venv/bin:$PATH BENCH_ANSIBLE_BIN=$venv/bin "$venv/bin/python" bench/nomad_bench.py ;;
  wrapper) PATH=$venv/bin:$PATH "$venv/bin/python" bench/wrapper_bench.py ;;
  volumes) PATH=$venv/bin:$PATH "$venv/bin/python" bench/volume_bench.py ;;
  host_volumes) PATH=$venv/bin:$PATH "$venv/bin/python" bench/host_volume_bench.py ;;
  replication) PATH=$venv/bin:$PATH "$venv/bin/python" bench/replication_bench.py ;;
  # No anchor module here: the repo's venv, whose pytest the stack's test helpers import.
  move) .venv/bin/python bench/move_bench.py ;;
  follow) .venv/bin/python bench/follow_bench.py ;;
  plugin) .venv/bin/python bench/plugin_bench.py ;;
  fio) .venv/bin/python bench/fio_bench.py ;;
  targetcli) .venv/bin/python bench/targetcli_bench.py ;;
  metrics) .venv/bin/python bench/metrics_bench.py ;;
  all) for b in zfs nomad wrapper volumes host_volumes replication move follow plugin fio targetcli metrics; do BENCH=$b bash "$0"; done ;;
  *) echo "bench: BENCH must be zfs, nomad, wrapper, volumes, host_volumes, replication, move, follow, plugin, fio, targetcli, metrics or all" >&2; exit 2 ;;
esac
