#!/usr/bin/env bash
# Benchmarks. The anchor (community.general) comes from the `ansible` package,
# installed into a venv of its own so the collection's venv stays minimal.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${NOMAD_ZFS_CSI_CACHE:-$HOME/.cache/nomad-zfs-csi}
ANSIBLE_PKG='ansible==12.3.0'   # the line that pairs with ansible-core 2.19
venv=$CACHE/venv-bench-$(printf '%s %s' "$ANSIBLE_PKG" "$(python3 -VV)" | sha256sum | cut -c1-12)
if [ ! -f "$venv/.complete" ]; then
  rm -rf "$venv" && python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q "$ANSIBLE_PKG" "$(grep -E '^ansible-core==' requirements.txt | cut -d'#' -f1 | tr -d ' ')"
  touch "$venv/.complete"
fi
PATH=$venv/bin:$PATH "$venv/bin/python" bench/zfs_bench.py
