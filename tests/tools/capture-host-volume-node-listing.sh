#!/usr/bin/env bash
# Capture the `zfs list` that zfs_host_volume_info runs on a node (its COLUMNS, -d 1 over the candidate datasets),
# which tests/unit feeds to _host_volume_node and the move's planner: bash tests/tools/capture-host-volume-node-listing.sh
# (the VM running). Under tank/cap, in the shape a move finds:
#   volumes/team-a/pgdata: a source marked with its volume's id and moved to storage-2, read-only, with an hourly
#     snapshot that the replica holds and the move's final snapshot, which wrote nothing;
#   replica/storage-1/tank/nomad/volumes/team-a/pgdata: the replica, received from the hourly snapshot;
#   replica/storage-3/...: a pull's target that was never made (the listing's stderr).
set -euo pipefail
cd "$(dirname "$0")/../.."
FIXTURES=tests/unit/fixtures
VERSION=$(bash tests/zfsvm/zfsvm.sh ssh "/usr/sbin/zfs version | head -1" | sed -E 's/^zfs-([0-9.]+).*/\1/')
COLUMNS=$(cd plugins/module_utils && python3 -c 'import _host_volume_node as n; print(",".join(n.COLUMNS))')
script=$(
  cat <<'EOF'
set -eu
zfs=/usr/sbin/zfs
cap=tank/cap src=tank/cap/volumes/team-a/pgdata replica=tank/cap/replica/storage-1/tank/nomad/volumes/team-a
$zfs destroy -r $cap 2>/dev/null || true
$zfs create -p $src
$zfs create -p $replica
head -c 65536 /dev/urandom > "$($zfs get -H -o value mountpoint $src)/data"; sync
$zfs snapshot $src@autosnap_2026-11-26_09:00:00_hourly
$zfs send $src@autosnap_2026-11-26_09:00:00_hourly | $zfs receive -u $replica/pgdata
$zfs set readonly=on nomad-zfs-csi:host-volume-id=6d0f7a5e-2c1b-4f7e-9a35-0c6a2f3b9e11 \
  nomad-zfs-csi:moved-to=storage-2 $src
sleep 1
$zfs snapshot $src@nomad-zfs-csi-move_2026-11-26_10:00:00
$zfs list -H -p -o "$COLUMNS" -t filesystem,volume,snapshot -d 1 $src $replica $replica/pgdata \
  tank/cap/replica/storage-3/tank/nomad/volumes/team-a tank/cap/replica/storage-3/tank/nomad/volumes/team-a/pgdata \
  > /run/node.txt 2> /run/node.stderr || true
$zfs destroy -r $cap
EOF
)
bash tests/zfsvm/zfsvm.sh ssh "COLUMNS='$COLUMNS'; $script"
bash tests/zfsvm/zfsvm.sh ssh "cat /run/node.txt" > "$FIXTURES/zfs_list_host_volume_node_$VERSION.txt"
bash tests/zfsvm/zfsvm.sh ssh "cat /run/node.stderr" > "$FIXTURES/zfs_list_host_volume_node_$VERSION.stderr"
echo "wrote $FIXTURES/zfs_list_host_volume_node_$VERSION.{txt,stderr}"
