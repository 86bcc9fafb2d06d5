#!/usr/bin/env bash
# Separate hosts inside the ZFS VM, run in the VM as root (tests/integration/separate_hosts.py sends it):
#
#   hosts.sh up NAME=ADDRESS ...   each NAME (a fully qualified host name) a host of its own, if not up already
#   hosts.sh down NAME ...         those hosts gone, with all they wrote
#   hosts.sh cut NAME / mend NAME  the host's link to the others down, or up again: a real partition
#   hosts.sh off NAME / on NAME    the host's power cut (all its processes killed at once), or its boot again on the
#                                  root it kept, as a machine's disk outlives a power cut (mend a cut host first: on
#                                  waits for its sshd). Its address and what the kernel serves for it stay (an NFS
#                                  server's nfsd): a power cut of a client, not of a storage host.
#
# Each host is a systemd-nspawn container that boots its own systemd: its own network namespace with one address
# on a bridge that only the hosts and the VM share, its own host name and sshd with a host key of its own, its own
# /etc, users, units and timers. Its root is an overlay of the VM's image as built (the read-only disk /dev/vde,
# none of what ran in the VM since) under a tmpfs of its own, so that nothing one host writes is another's.
# What the hosts do share is the VM's kernel: its ZFS pools (/dev/zfs is passed in), its NFS and iSCSI modules.
# The bridge's addresses are routed nowhere: no host has a default route, and the VM forwards nothing to them.
# The VM itself is 10.99.0.1 on the bridge, the jump host that this host's SSH goes through.
set -euo pipefail

LAN=nzc-lan
JUMP=10.99.0.1
LOWER=/var/lib/nzc-hosts/lower
RUN=/run/nzc-hosts
# What the image runs at boot that would act on the VM's shared kernel or pools for every host: the pools' import
# and mounts (the VM imports them), zed, docker and the iSCSI target's and initiator's saved state. The host's
# ifupdown would ask DHCP for an address that this script gives. Not zfs-share: it shares what this host mounted,
# through the NFS server of its own network namespace, and a storage host's role runs it.
MASKED="networking.service zfs-import-cache.service zfs-import-scan.service zfs-mount.service
zfs-zed.service docker.service docker.socket containerd.service rtslib-fb-targetctl.service iscsid.service
iscsid.socket open-iscsi.service prometheus-node-exporter.service console-getty.service"

short() { printf '%s' "${1%%.*}"; }

lan() {
  [ -d "$LOWER/etc" ] || { mkdir -p "$LOWER"; mount -o ro,noload /dev/vde "$LOWER"; }
  [ -e "/run/netns/$LAN" ] && return 0
  ip netns add "$LAN"
  ip -n "$LAN" link set lo up
  ip -n "$LAN" link add br0 type bridge
  ip -n "$LAN" link set br0 up
  ip link add nzc-jump type veth peer name jump
  ip link set jump netns "$LAN"
  ip -n "$LAN" link set jump master br0 up
  ip addr add "$JUMP/24" dev nzc-jump
  ip link set nzc-jump up
}

# The host's root before its first boot: its name (short, as Debian's installer writes /etc/hostname: Nomad names
# its node after it, and the example maps those names to inventory hosts), its own host key (and no other), the
# masked units, and user admin, who logs in with root's key and may sudo, as an inventory's ansible_user would.
prepare() {
  local fqdn=$1 root=$2 unit
  printf '%s\n' "$(short "$fqdn")" >"$root/etc/hostname"
  { printf '127.0.0.1 localhost\n'; grep -h ' # nzc-host$' /etc/hosts; } >"$root/etc/hosts"
  rm -f "$root"/etc/ssh/ssh_host_*
  ssh-keygen -q -t ed25519 -N '' -C "root@$fqdn" -f "$root/etc/ssh/ssh_host_ed25519_key"
  for unit in $MASKED; do ln -sf /dev/null "$root/etc/systemd/system/$unit"; done
  chroot "$root" useradd --create-home --shell /bin/bash admin
  install -d -m 700 -o 1000 -g 1000 "$root/home/admin/.ssh"
  install -m 600 -o 1000 -g 1000 /root/.ssh/authorized_keys "$root/home/admin/.ssh/authorized_keys"
  printf 'admin ALL=(ALL) NOPASSWD: ALL\n' >"$root/etc/sudoers.d/admin"
  chmod 440 "$root/etc/sudoers.d/admin"
}

up_one() {
  local fqdn=$1 address=$2 name r
  name=$(short "$fqdn"); r=$RUN/$name
  systemctl is-active -q "nzc-host-$name" && return 0
  # Off (hosts.sh off): booted again on its root, as on does.
  if mountpoint -q "$r/root"; then boot "$name"; return 0; fi
  down_one "$fqdn"
  ip netns add "$name"
  ip link add "h-$name" type veth peer name "l-$name"
  ip link set "h-$name" netns "$name"
  ip -n "$name" link set "h-$name" name eth0
  ip -n "$name" addr add "$address/24" dev eth0
  ip -n "$name" link set eth0 up
  ip -n "$name" link set lo up
  ip link set "l-$name" netns "$LAN"
  ip -n "$LAN" link set "l-$name" master br0 up
  mkdir -p "$r"
  mount -t tmpfs -o size=1G,mode=0755 "nzc-$name" "$r"
  mkdir -p "$r/upper" "$r/work" "$r/root"
  # Exportable over NFS: NFSv4's pseudo root is the host's own /, which a plain overlay cannot be (mountd: "Cannot
  # export /, possibly unsupported filesystem or fsid= required", and every client's mount failed with ENOENT).
  mount -t overlay -o "lowerdir=$LOWER,upperdir=$r/upper,workdir=$r/work,index=on,nfs_export=on" "nzc-$name" "$r/root"
  prepare "$fqdn" "$r/root"
  boot "$name"
}

# The host's systemd started on its root, as it is.
boot() {
  local name=$1 r=$RUN/$1
  # In the unit itself (--keep-unit), which has no device policy: /dev/zfs, bound in, opens. A stop kills the host
  # at once, as a power cut would (down then discards its root, off keeps it). Two kinds of system call that
  # nspawn's default filter refuses, which Nomad's exec driver (runc) makes for each task: the keyring's ("unable to
  # join session keyring: ... operation not permitted") and bpf, for the task cgroup's device program ("bpf_prog_query(BPF_CGROUP_DEVICE)
  # failed: operation not permitted"), with the capabilities that program's calls need, as a host's root has them.
  systemd-run --quiet --collect --unit="nzc-host-$name" --property=KillSignal=SIGKILL \
    systemd-nspawn --quiet --boot --keep-unit --register=no --machine="$name" --directory="$r/root" \
    --network-namespace-path="/run/netns/$name" --bind-ro=/opt/nzc --bind=/dev/zfs --system-call-filter="@keyring bpf" \
    --capability=CAP_NET_ADMIN,CAP_BPF
}

# The host's processes killed at once (the unit's KillSignal), and the unit gone; its root, address and link stay.
off_one() {
  local name=$1
  systemctl stop "nzc-host-$name" 2>/dev/null || true
  systemctl reset-failed "nzc-host-$name" 2>/dev/null || true
  # Until systemd let go of the unit: a unit it still holds cannot be made again ("Unit ... was already loaded").
  local tries=30
  while [ "$(systemctl show -P LoadState "nzc-host-$name")" != not-found ]; do
    [ $((tries -= 1)) -gt 0 ] || { echo "hosts.sh: systemd still holds nzc-host-$name after 30 s" >&2; return 1; }
    sleep 1; systemctl reset-failed "nzc-host-$name" 2>/dev/null || true
  done
}

down_one() {
  local fqdn=$1 name; name=$(short "$fqdn")
  off_one "$name"
  umount "$RUN/$name/root" 2>/dev/null || true
  umount "$RUN/$name" 2>/dev/null || true
  rmdir "$RUN/$name" 2>/dev/null || true
  ip netns del "$name" 2>/dev/null || true
  ip -n "$LAN" link del "l-$name" 2>/dev/null || true
}

# Until each host's sshd answers on its address, from the VM.
wait_ssh() {
  local address deadline=$((SECONDS + 120))
  for address in "$@"; do
    until timeout 2 bash -c "exec 3<>/dev/tcp/$address/22" 2>/dev/null; do
      [ $SECONDS -lt $deadline ] || { echo "hosts.sh: no sshd on $address within 120 s" >&2; exit 1; }
      sleep 1
    done
  done
}

cmd=${1:-}; shift || true
case $cmd in
  up)
    lan
    addresses=()
    for pair in "$@"; do
      fqdn=${pair%%=*}; address=${pair#*=}
      sed -i "/ $fqdn .* # nzc-host\$/d" /etc/hosts
      printf '%s %s %s # nzc-host\n' "$address" "$fqdn" "$(short "$fqdn")" >>/etc/hosts
      addresses+=("$address")
    done
    for pair in "$@"; do up_one "${pair%%=*}" "${pair#*=}"; done
    wait_ssh "${addresses[@]}" ;;
  down)
    for fqdn in "$@"; do down_one "$fqdn"; sed -i "/ $fqdn .* # nzc-host\$/d" /etc/hosts; done ;;
  cut) ip -n "$LAN" link set "l-$(short "$1")" down ;;
  mend) ip -n "$LAN" link set "l-$(short "$1")" up ;;
  off) off_one "$(short "$1")" ;;
  on)
    name=$(short "$1")
    [ -d "$RUN/$name/root/etc" ] || { echo "hosts.sh: $1 has no root to boot: bring it up" >&2; exit 1; }
    systemctl is-active -q "nzc-host-$name" || boot "$name"
    address=$(awk -v h="$1" '($2 == h || $3 == h) && $NF == "nzc-host" {print $1}' /etc/hosts)
    [ -n "$address" ] || { echo "hosts.sh: $1 has no address: bring it up" >&2; exit 1; }
    wait_ssh "$address" ;;
  *) echo "usage: hosts.sh up NAME=ADDRESS ... | down NAME ... | cut NAME | mend NAME | off NAME | on NAME" >&2
     exit 2 ;;
esac
