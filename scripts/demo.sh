#!/usr/bin/env bash
# The main job on the local default stack: boot the ZFS VM and a Nomad dev agent in
# it, run site.yml twice (the second run must report changed=0 on every host), then
# show the delegation, the dataset democratic-csi made for volume demo, and a
# workload's file surviving into a second allocation on that dataset, and read from its replica on pool backup,
# which the VM, its own standby, pulled (zfs_replication). Last, ZFS without CSI: a dynamic host volume that the
# zfs-dataset plugin made on a second client follows its job to the first one when its client is drained
# (scripts/demo_follow.py).
# Nomad's ACLs are on: site.yml uses the management token only to make the tokens (nomad_access); the
# plugins are deployed on the operators' tokens, and everything after site.yml here runs on tenant
# demo's submitter token, in namespace demo, except the host volume's create and delete (its operator's), the
# drain (the admin's, who runs `nomad node drain`) and the follow (the mover's).
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${NOMAD_ZFS_CSI_CACHE:-$HOME/.cache/nomad-zfs-csi}
export ANSIBLE_COLLECTIONS_PATH=$PWD/build/collections ANSIBLE_PIPELINING=1 ANSIBLE_HOST_KEY_CHECKING=0
export ANSIBLE_SSH_ARGS='-o ControlMaster=auto -o ControlPersist=300s -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'
eval "$(bash tests/zfsvm/zfsvm.sh start)"
export ZFSVM_PORT ZFSVM_KEY
bash scripts/nomad-dev.sh start
play() { .venv/bin/ansible-playbook -i inventories/local playbooks/site.yml; }
play
# tee to a file, not /dev/stderr: reopening that truncates a log the caller redirected to.
out=$(mktemp); trap 'rm -f "$out"' EXIT
play | tee "$out"
second=$(cat "$out")
for host in zfsvm nomad-dev; do
  grep -qE "$host +: ok=[0-9]+ +changed=0 +unreachable=0 +failed=0" <<<"$second" \
    || { echo "demo: the second site.yml run changed or failed something on $host" >&2; exit 1; }
done
echo "--- zfs allow tank/nomad/csi (storage host)"
bash tests/zfsvm/zfsvm.sh ssh /usr/sbin/zfs allow tank/nomad/csi
echo "--- the csi user creates and snapshots a child over SSH"
ssh -q -i "$ZFSVM_KEY" -p "$ZFSVM_PORT" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null csi@127.0.0.1 \
  '/usr/sbin/zfs create tank/nomad/csi/demo-child 2>&1 | grep -v "may only be mounted by root" || true; /usr/sbin/zfs snapshot tank/nomad/csi/demo-child@now && /usr/sbin/zfs list -r -t all -o name tank/nomad/csi/demo-child && /usr/sbin/zfs destroy -r tank/nomad/csi/demo-child'
echo "--- the dataset democratic-csi made for volume demo (storage host)"
bash tests/zfsvm/zfsvm.sh ssh /usr/sbin/zfs get -H -o name,property,value refquota,used,sharenfs tank/nomad/csi/demo \
  || { echo "demo: democratic-csi made no dataset tank/nomad/csi/demo for volume demo" >&2; exit 1; }
# The agent's address, CA and a client certificate it accepts (HTTPS, verify_https_client), for the nomad CLI and the
# modules below.
eval "$(bash scripts/nomad-dev.sh env)"
# The admin hands each their token, out of the variables nomad_access wrote them to.
secret() { NOMAD_TOKEN=$(bash scripts/nomad-dev.sh token) "$CACHE/bin/nomad" var get -item=secret "nomad-access/tokens/$1"; }
csi_operator=$(secret csi-operator)
NOMAD_TOKEN=$(secret demo-submitter)
export NOMAD_TOKEN NOMAD_NAMESPACE=demo
echo "--- tenant demo's submitter token: its own namespace only"
"$CACHE/bin/nomad" acl token self | sed -n '/^Name/p;/^Policies/p'
refused=$("$CACHE/bin/nomad" job run -detach -namespace default scripts/demo-workload.nomad 2>&1) \
  && { echo "demo: the submitter token ran a job in namespace default" >&2; exit 1; }
grep -q '403' <<<"$refused" || { echo "demo: a job in namespace default failed otherwise: $refused" >&2; exit 1; }
echo "a job in namespace default: $refused"
echo "--- nomad plugin status zfs"
"$CACHE/bin/nomad" plugin status zfs
echo "--- nomad volume status demo"
"$CACHE/bin/nomad" volume status demo
# nomad_module MODULE ARGS_JSON: one of the collection's modules on this host; prints its result, the JSON the
# default callback prints after "localhost | STATUS => " (ansible-core deprecates --tree).
nomad_module() {
  local out rc=0
  out=$(.venv/bin/ansible localhost -c local -i localhost, -e "ansible_python_interpreter=$PWD/.venv/bin/python" \
    -m "nomad_zfs.csi.$1" -a "$2") || rc=$?
  python3 -c 'import json, re, sys
text = sys.stdin.read(); marks = list(re.finditer(r"^localhost \| [A-Z!]+ => ", text, re.M))
print(json.dumps(json.JSONDecoder().raw_decode(text, marks[-1].end())[0]) if marks else text)' <<<"$out"
  return $rc
}
# run_workload write|read [VAR=VALUE ...]: one batch allocation that claims the volume, run by nomad_job, which
# waits until it completed (or fails with its reason); prints what the allocation printed.
run_workload() {
  local args result alloc
  args=$(python3 -c 'import json, sys; print(json.dumps({"src": "scripts/demo-workload.nomad",
    "variables": dict(a.split("=", 1) for a in sys.argv[1:])}))' "action=$1" "${@:2}")
  result=$(nomad_module nomad_job "$args") || { echo "demo: workload $1: $result" >&2; exit 1; }
  alloc=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["allocations"][0]["id"])' <<<"$result")
  "$CACHE/bin/nomad" alloc logs "$alloc"
}
echo "--- a workload writes into volume demo, then another allocation reads the file back"
written=$(run_workload write); echo "write allocation: $written"
read_back=$(run_workload read); echo "read allocation:  $read_back"
if [ -z "$written" ] || [ "$written" != "$read_back" ]; then
  echo "demo: read back differs from what was written" >&2; exit 1
fi
"$CACHE/bin/nomad" job stop -purge demo-workload >/dev/null
echo "--- backed up: the standby's pull carries the file to pool backup, where nothing received mounts"
# sanoid snapshots on its schedule (the first hourly one may not have been taken yet), so the CSI operator
# snapshots volume demo through Nomad now; a pull sends every snapshot newer than the replica's newest.
point=demo-backup-$(date -u +%Y%m%d%H%M%S)
NOMAD_TOKEN=$csi_operator nomad_module nomad_csi_snapshot \
  "{\"plugin_id\": \"zfs\", \"source_volume_id\": \"demo\", \"namespace\": \"demo\", \"name\": \"$point\"}" >/dev/null
# What the pull's timer starts (hourly at :05 here), run now: syncoid as zfs-replica, through the forced command.
pull=zfs-replication-pull@backup_replica_127.0.0.1_tank_nomad_csi.service
bash tests/zfsvm/zfsvm.sh ssh systemctl start "$pull" \
  || { bash tests/zfsvm/zfsvm.sh ssh journalctl -u "$pull" -n 20 --no-pager >&2; echo "demo: the pull failed" >&2; exit 1; }
replica=backup/replica/127.0.0.1/tank/nomad/csi/demo@$point
# A replica is never mounted by the pull; root mounts the snapshot read-only to read it.
from_replica=$(bash tests/zfsvm/zfsvm.sh ssh "mkdir -p /mnt/demo-replica && mount -t zfs -o ro $replica /mnt/demo-replica \
  && cat /mnt/demo-replica/proof.txt; umount /mnt/demo-replica")
echo "read from $replica: $from_replica"
[ "$from_replica" = "$written" ] || { echo "demo: the replica holds another file than the one written" >&2; exit 1; }
# Volume demo's own recovery point, and the worst over the parent (the figure a playbook's failed_when reads).
.venv/bin/ansible zfsvm -i inventories/local -m nomad_zfs.csi.zfs_replication_info \
  -a '{"host": "127.0.0.1", "parent": "tank/nomad/csi", "target": "backup/replica/127.0.0.1/tank/nomad/csi"}' \
  | python3 -c 'import json, sys
r = json.loads(sys.stdin.read().split("=> ", 1)[1])
[demo] = [v for v in r["volumes"] if v["name"] == "tank/nomad/csi/demo"]
print("recovery point: volume demo is %s s behind on the replica, the worst of tank/nomad/csi %s s (zfs_replication_info)"
      % (demo["lag_seconds"], r["lag_seconds"]))'
# ZFS without CSI, on two clients: host volume demo-hv follows its job when its node is drained (scripts/demo_follow.py
# says how; a second client joins for it and leaves again).
# It takes each token from its variable itself: none of this shell's environment.
env -u NOMAD_TOKEN -u NOMAD_NAMESPACE .venv/bin/python scripts/demo_follow.py || { echo "demo: its last part, the drain, failed (scripts/demo_follow.py said why above)" >&2; exit 1; }
echo "demo: ok (second site.yml run: changed=0 on zfsvm and nomad-dev; in namespace demo, on its submitter's token, CSI volume demo kept a workload's file, and the standby's pull carried it to pool backup; host volume demo-hv followed its job to another node when its node was drained, with its file)"
