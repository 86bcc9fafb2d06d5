#!/usr/bin/env bash
# The main job on the local default stack: boot the ZFS VM, run site.yml twice
# (the second run must report changed=0), then show the delegation at work.
set -euo pipefail
cd "$(dirname "$0")/.."
export ANSIBLE_COLLECTIONS_PATH=$PWD/build/collections ANSIBLE_PIPELINING=1 ANSIBLE_HOST_KEY_CHECKING=0
export ANSIBLE_SSH_ARGS='-o ControlMaster=auto -o ControlPersist=300s -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'
eval "$(bash tests/zfsvm/zfsvm.sh start)"
export ZFSVM_PORT ZFSVM_KEY
play() { .venv/bin/ansible-playbook -i inventories/local playbooks/site.yml "$@"; }
play
second=$(play | tee /dev/stderr)
grep -qE 'zfsvm +: ok=[0-9]+ +changed=0 ' <<<"$second" || { echo "demo: second run changed something" >&2; exit 1; }
vm() { bash tests/zfsvm/zfsvm.sh ssh "$@"; }
echo "--- zfs allow tank/nomad/csi"
vm /usr/sbin/zfs allow tank/nomad/csi
echo "--- the csi user creates and snapshots a child over SSH"
ssh -q -i "$ZFSVM_KEY" -p "$ZFSVM_PORT" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null csi@127.0.0.1 \
  '/usr/sbin/zfs create tank/nomad/csi/demo 2>&1 | grep -v "may only be mounted by root" || true; /usr/sbin/zfs snapshot tank/nomad/csi/demo@now && /usr/sbin/zfs list -r -t all -o name tank/nomad/csi/demo && /usr/sbin/zfs destroy -r tank/nomad/csi/demo'
echo "demo: ok (second site.yml run: changed=0)"
