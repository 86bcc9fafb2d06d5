#!/usr/bin/env bash
# Capture the two `zfs list` listings that tests/unit feeds to _replication_status (a primary's and its standby's),
# from real OpenZFS and syncoid in the VM: bash tests/tools/capture-replication-listings.sh (the VM running).
# Volumes under tank/it-src, pulled by syncoid as the pull unit runs it (--no-sync-snap --create-bookmark
# --recursive --skip-parent), locally as root, into pool backup:
#   v1: pulled after snapshot 1 and after snapshot 2, then written and snapshotted again (3): one to send;
#   v2: made after the last pull, with one snapshot: never pulled;
#   v3: no snapshot (opted out of snapshots and pulls);
#   v4: pulled after snapshot 1, then snapshotted twice (3, 4) with nothing written: the replica holds the newest data;
#   v5: pulled after snapshot 1, snapshotted with nothing written (3), then written and snapshotted (4).
set -euo pipefail
cd "$(dirname "$0")/../.."
FIXTURES=tests/unit/fixtures
VERSION=$(bash tests/zfsvm/zfsvm.sh ssh "/usr/sbin/zfs version | head -1" | sed -E 's/^zfs-([0-9.]+).*/\1/')
script=$(
  cat <<'EOF'
set -eu
zfs=/usr/sbin/zfs
src=tank/it-src dst=backup/it-capture
$zfs destroy -r $src 2>/dev/null || true
$zfs destroy -r $dst 2>/dev/null || true
$zfs create $src
$zfs create -p $dst/tank/it-src
write() { head -c 65536 /dev/urandom > "$($zfs get -H -o value mountpoint $src/$1)/data.$2"; sync; }
snap() { for v in "$@"; do $zfs snapshot $src/$v@autosnap_${round}_hourly; done; }
pull() { syncoid --quiet --no-sync-snap --create-bookmark --recursive --skip-parent $src $dst/tank/it-src >/dev/null; }
for v in v1 v4 v5; do $zfs create $src/$v; write $v 0; done
# Opted out as the host volume plugin opts a volume out (syncoid 2.1.0 fails a recursive run on a dataset with no
# snapshot unless it is out of the pulls too).
$zfs create -o com.sun:auto-snapshot=false -o syncoid:sync=false $src/v3
round=1; snap v1 v4 v5; pull
sleep 1; write v1 1; round=2; snap v1; pull
sleep 1; $zfs create $src/v2; write v2 0; write v1 2; round=3; snap v1 v2 v4 v5
sleep 1; round=4; snap v4; write v5 4; snap v5
$zfs list -Hp -r -t filesystem,volume,snapshot,bookmark -o name,guid,createtxg,creation,written $src > /run/primary.txt
$zfs list -Hp -r -t filesystem,volume,snapshot,bookmark -o name,guid,createtxg,creation,written $dst/tank/it-src \
  > /run/standby.txt
$zfs destroy -r $src
$zfs destroy -r $dst
EOF
)
bash tests/zfsvm/zfsvm.sh ssh "$script"
bash tests/zfsvm/zfsvm.sh ssh "cat /run/primary.txt" > "$FIXTURES/zfs_list_replication_primary_$VERSION.txt"
bash tests/zfsvm/zfsvm.sh ssh "cat /run/standby.txt" > "$FIXTURES/zfs_list_replication_standby_$VERSION.txt"
echo "wrote $FIXTURES/zfs_list_replication_{primary,standby}_$VERSION.txt"
