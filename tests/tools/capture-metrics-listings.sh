#!/usr/bin/env bash
# Capture the `zfs list` and `zpool list` that tests/unit feeds to _zfs_metrics, from real OpenZFS in the VM:
# bash tests/tools/capture-metrics-listings.sh (the VM running). Under tank/it-metrics:
#   csi/vol-a: a filesystem as democratic-csi makes one (refquota, its csi_volume_name), 1 MiB written, two snapshots;
#   csi/vol-b: a zvol of 64 MiB with no snapshot;
#   csi/vol-c: a filesystem with no limit and no democratic-csi property;
#   host/ns1/web: a host volume as the zfs-dataset plugin makes one (<parent>/<namespace>/<name>, refquota), one
#   snapshot; host/ns1 itself is its namespace's dataset, not a volume.
# The listing names tank/it-metrics/missing too, which does not exist.
set -euo pipefail
cd "$(dirname "$0")/../.."
FIXTURES=tests/unit/fixtures
VERSION=$(bash tests/zfsvm/zfsvm.sh ssh "/usr/sbin/zfs version | head -1" | sed -E 's/^zfs-([0-9.]+).*/\1/')
columns=$(.venv/bin/python -c 'import sys; sys.path.insert(0, "plugins/module_utils"); import _zfs_metrics as m; print(" ".join(m.LIST_ARGS)); print(" ".join(m.POOL_ARGS))')
list_args=$(sed -n 1p <<<"$columns") pool_args=$(sed -n 2p <<<"$columns")
script=$(
  cat <<'EOF'
set -eu
zfs=/usr/sbin/zfs
top=tank/it-metrics
$zfs destroy -r $top 2>/dev/null || true
$zfs create -p $top/csi
$zfs create -p $top/host/ns1
$zfs create -o refquota=16M -o democratic-csi:csi_volume_name=vol-a $top/csi/vol-a
head -c 1048576 /dev/urandom > /$top/csi/vol-a/data; sync
$zfs snapshot $top/csi/vol-a@one
sleep 1
$zfs snapshot $top/csi/vol-a@two
$zfs create -V 64M -o democratic-csi:csi_volume_name=vol-b $top/csi/vol-b
$zfs create $top/csi/vol-c
$zfs create -o refquota=32M $top/host/ns1/web
head -c 65536 /dev/urandom > /$top/host/ns1/web/data; sync
$zfs snapshot $top/host/ns1/web@daily
EOF
)
bash tests/zfsvm/zfsvm.sh ssh "$script"
bash tests/zfsvm/zfsvm.sh ssh "/usr/sbin/zfs $list_args tank/it-metrics/csi tank/it-metrics/host tank/it-metrics/missing" \
  >"$FIXTURES/zfs_list_metrics_$VERSION.txt" 2>"$FIXTURES/zfs_list_metrics_$VERSION.stderr" || true
bash tests/zfsvm/zfsvm.sh ssh "/usr/sbin/zpool $pool_args" >"$FIXTURES/zpool_list_metrics_$VERSION.txt"
bash tests/zfsvm/zfsvm.sh ssh "/usr/sbin/zfs destroy -r tank/it-metrics"
wc -l "$FIXTURES"/z*_list_metrics_"$VERSION".*
