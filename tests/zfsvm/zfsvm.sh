#!/usr/bin/env bash
# A small Debian VM (12 by default, 13 with ZFSVM_RELEASE=trixie) with real OpenZFS, for tests and the local default
# stack.
#
#   zfsvm.sh build    build (or reuse) the cached image and its container layer
#   zfsvm.sh build-base  the image alone (scripts/setup.sh, beside its other builds; the layer needs their Node)
#   zfsvm.sh start    build if needed, boot, wait for SSH, create the pools; no-op if running
#   zfsvm.sh stop     stop the VM by its own pid; no-op if stopped
#   zfsvm.sh status   exit 0 and print connection facts if running, exit 3 if not
#   zfsvm.sh ssh ...  run a command in the VM as root
#   zfsvm.sh mirror   print the Debian mirror the image is built from (tests/zfsvm/images.sh uses it too)
#
# Besides sshd, the VM forwards Nomad's HTTP port (ZFSVM_NOMAD_PORT, default 4646; the same port
# in the VM, so that the address the agent advertises works on both sides) and its RPC port (the next one) to
# 127.0.0.1 here, for the Nomad agent that scripts/nomad-dev.sh runs in it (HTTPS only) and the clients that join
# it from this host, and
# mounts a read-only tools disk at /opt/nzc: nomad, csi-sanity, node and democratic-csi, the
# same programs this host built or installed, so no download happens in the VM.
#
# The image is cached outside the repo under a key made of the build recipe
# (the functions below), the package list and the ZFS suite: editing the recipe
# rebuilds it, editing start/stop does not.
set -euo pipefail

# The guest's Debian release: bookworm (12) or trixie (13). Each has an image of its own, and each of OpenZFS from its
# backports (bookworm's own gives 2.1, trixie's 2.3; bookworm-backports 2.3, trixie-backports 2.4).
RELEASE=${ZFSVM_RELEASE:-bookworm}
ZFS_SUITE=${ZFS_SUITE:-$RELEASE-backports}
CACHE=${NOMAD_ZFS_CSI_CACHE:-$HOME/.cache/nomad-zfs-csi}
RUN_DIR=${ZFSVM_RUN_DIR:-$CACHE/zfsvm/run}
POOL=${ZFSVM_POOL:-tank}
# The local stack's standby pool, on a disk of its own: the zfs_replication role pulls tank's volumes into it.
BACKUP_POOL=${ZFSVM_BACKUP_POOL:-backup}
MEM=${ZFSVM_MEM:-3072}   # the ARC, a Nomad agent and democratic-csi's Node processes
NOMAD_PORT=${ZFSVM_NOMAD_PORT:-4646}
# Two vCPUs for one VM alone (make demo took 6 min 23 s with two, 8 min 46 s with one); make test runs two VMs of
# one each (scripts/checks.sh), since two of two on two cores slowed each other.
SMP=${ZFSVM_SMP:-2}
TOOLS_MOUNT=/opt/nzc
# No "quiet": when a boot stalls, the console log shows where. "norandmaps": qemu 7.2's TCG keys
# translated code by virtual address, so with address space randomisation every process translated
# ld.so and libc afresh. "init_on_alloc=0": the emulated CPU zeroed every kernel allocation. Test VM
# only; docs/testing.md has the figures.
KERNEL_ARGS="root=/dev/vda rw console=ttyS0 net.ifnames=0 norandmaps init_on_alloc=0"
PACKAGES=systemd-sysv,udev,openssh-server,python3,kmod,iproute2,ifupdown,isc-dhcp-client,sudo,nfs-kernel-server,procps,nftables

log() { printf '[zfsvm] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# The host's own Debian mirror, so no host name is written into the repo.
mirror() {
  local uri
  uri=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  [ -n "$uri" ] || uri=$(awk '$1=="deb" && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  [ -n "$uri" ] || die "no Debian mirror found in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list"
  printf '%s\n' "$uri"
}

need_host_tools() {
  local missing=()
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
  command -v qemu-img >/dev/null || missing+=(qemu-utils)
  command -v mkfs.ext4 >/dev/null || missing+=(e2fsprogs)
  command -v ssh-keygen >/dev/null || missing+=(openssh-client)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing host packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

build() {
  [ -f "$IMAGE_DIR/ready" ] && return 0
  need_host_tools
  [ "$(id -u)" = 0 ] || die "building the image needs root (debootstrap, chroot)"
  local work root m t0=$SECONDS
  work=$(mktemp -d "$CACHE/zfsvm/build.XXXXXX")
  root=$work/root
  m=$(mirror)
  # Unmount the chroot's pseudo filesystems whatever happens.
  trap 'for d in dev/pts dev proc sys; do umount -l "$root/$d" 2>/dev/null || true; done' RETURN
  log "debootstrap $RELEASE from $m"
  debootstrap --variant=minbase --include="$PACKAGES" "$RELEASE" "$root" "$m" >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log" >&2; die "debootstrap failed (log: $work/debootstrap.log)"; }
  cat >"$root/etc/apt/sources.list" <<SRC
deb $m $RELEASE main contrib
deb $m $RELEASE-updates main contrib
deb $m $RELEASE-backports main contrib
SRC
  for d in proc sys dev dev/pts; do mount --bind "/$d" "$root/$d"; done
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"; chmod +x "$root/usr/sbin/policy-rc.d"
  log "installing kernel and OpenZFS ($ZFS_SUITE) in the chroot"
  chroot "$root" /bin/sh -euc "
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends linux-image-amd64 linux-headers-amd64
    apt-get install -y -qq --no-install-recommends -t $ZFS_SUITE zfs-dkms zfsutils-linux
    # The zfs_replication role's engine, so that tests need no mirror.
    apt-get install -y -qq --no-install-recommends sanoid
    apt-get clean
  " >"$work/chroot.log" 2>&1 || { tail -30 "$work/chroot.log" >&2; die "chroot install failed (log: $work/chroot.log)"; }
  ls "$root"/lib/modules/*/updates/dkms/zfs.ko* >/dev/null 2>&1 || die "zfs.ko was not built (log: $work/chroot.log)"
  rm -f "$root/usr/sbin/policy-rc.d"
  # Boot and login settings: DHCP on the user-mode NIC, root by key only.
  echo zfsvm >"$root/etc/hostname"
  printf '/dev/vda / ext4 rw,errors=remount-ro 0 1\n' >"$root/etc/fstab"
  printf 'auto lo\niface lo inet loopback\nauto eth0\niface eth0 inet dhcp\n' >"$root/etc/network/interfaces"
  echo zfs >"$root/etc/modules-load.d/zfs.conf"
  mkdir -p "$root/root/.ssh" && chmod 700 "$root/root/.ssh"
  ssh-keygen -q -t ed25519 -N '' -C zfsvm-test -f "$work/id_ed25519"
  cp "$work/id_ed25519.pub" "$root/root/.ssh/authorized_keys"
  printf 'UseDNS no\n' >"$root/etc/ssh/sshd_config.d/zfsvm.conf"
  for d in dev/pts dev proc sys; do umount -l "$root/$d"; done
  cp "$root"/boot/vmlinuz-* "$work/vmlinuz"; cp "$root"/boot/initrd.img-* "$work/initrd.img"
  chmod 644 "$work/vmlinuz" "$work/initrd.img"
  log "making root.img"
  mkfs.ext4 -q -F -L zfsvm-root -d "$root" "$work/root.img" 4G
  rm -rf "$root"
  mkdir -p "$(dirname "$IMAGE_DIR")"; rm -rf "$IMAGE_DIR"
  mv "$work" "$IMAGE_DIR"; touch "$IMAGE_DIR/ready"
  log "image ready in $((SECONDS - t0)) s: $IMAGE_DIR"
}

# The container layer: a qcow2 over the base image, made by booting it once, with Debian's docker.io, AppArmor
# (Debian's kernel has it on, and docker loads its default profile with apparmor_parser), targetcli-fb (the LIO
# iSCSI target's tool, for the zfs-generic-iscsi driver's storage host) and dbus (targetcli asks the system bus for
# tcmu-runner's backstores, and fails without one), open-iscsi (the node's initiator, which democratic-csi's node
# runs through chroot /host), prometheus-node-exporter (which the zfs_metrics role would install), systemd-container
# (systemd-nspawn: the separate hosts of tests/zfsvm/hosts.sh), and the images of tests/zfsvm/images.sh imported under
# the names the tests use. Kept apart from the base image, whose DKMS build
# takes most of twenty minutes; keyed by the base image, this recipe and the images.
LAYER_PACKAGES="docker.io apparmor targetcli-fb dbus open-iscsi prometheus-node-exporter systemd-container"
# Debian 13 ships docker's client apart from its daemon (docker.io only recommends it).
[ "$RELEASE" = bookworm ] || LAYER_PACKAGES="$LAYER_PACKAGES docker-cli"
DCSI_IMAGE=democraticcsi/democratic-csi:v1.9.4-local
BUSYBOX_IMAGE=nzc/busybox:local

layer() {
  local images key
  images=$(bash "$(dirname "${BASH_SOURCE[0]}")/images.sh")
  key=$( { echo "$KEY $LAYER_PACKAGES $DCSI_IMAGE $BUSYBOX_IMAGE $(basename "$images")"; declare -f layer_build; } \
    | sha256sum | cut -c1-16)
  LAYER_DIR=$CACHE/zfsvm/layer-$RELEASE-$key
  [ -f "$LAYER_DIR/ready" ] || layer_build "$images"
}

layer_build() {
  local images=$1 work t0=$SECONDS deadline
  work=$(mktemp -d "$CACHE/zfsvm/layer.XXXXXX")
  cp "$IMAGE_DIR/id_ed25519" "$work/"; chmod 600 "$work/id_ed25519"
  free_port >"$work/port"
  qemu-img create -q -f qcow2 -F raw -b "$IMAGE_DIR/root.img" "$work/root.qcow2"
  log "building the container layer (docker.io, the images of $images)"
  qemu-system-x86_64 -accel "tcg,thread=multi" -cpu max -m "$MEM" -smp "$SMP" \
    -kernel "$IMAGE_DIR/vmlinuz" -initrd "$IMAGE_DIR/initrd.img" \
    -append "$KERNEL_ARGS" \
    -drive file="$work/root.qcow2",format=qcow2,if=virtio \
    -netdev user,id=n0,hostfwd=tcp:127.0.0.1:"$(cat "$work/port")"-:22 -device virtio-net-pci,netdev=n0 \
    -display none -serial file:"$work/console.log" -daemonize -pidfile "$work/qemu.pid" 9>&-
  # shellcheck disable=SC2064  # the pid file's path now; EXIT, since die exits
  trap "kill \$(cat '$work/qemu.pid' 2>/dev/null) 2>/dev/null || true" EXIT
  deadline=$((SECONDS + ${ZFSVM_BOOT_TIMEOUT:-420}))
  until ssh_at "$work" true 2>/dev/null; do
    [ $SECONDS -lt "$deadline" ] || { tail -8 "$work/console.log" >&2; die "the layer's VM gave no SSH (log: $work)"; }
    sleep 2
  done
  # open-iscsi's trigger rebuilds the initramfs with the ZFS modules (5 min 36 s in the emulated VM), for nothing:
  # the VM boots the kernel and initrd of the image's directory (-kernel, -initrd), never the one inside.
  ssh_at "$work" "export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && \
    dpkg-divert --local --rename --add /usr/sbin/update-initramfs && ln -s /bin/true /usr/sbin/update-initramfs && \
    apt-get install -y -qq --no-install-recommends $LAYER_PACKAGES && apt-get clean && \
    rm /usr/sbin/update-initramfs && dpkg-divert --local --rename --remove /usr/sbin/update-initramfs" >"$work/apt.log" 2>&1 \
    || { tail -20 "$work/apt.log" >&2; die "installing $LAYER_PACKAGES failed (log: $work/apt.log)"; }
  # ENTRYPOINT, WORKDIR and ENV as upstream's Dockerfile sets them.
  ssh_at "$work" docker import --change "'ENTRYPOINT [\"bin/democratic-csi\"]'" --change "'WORKDIR /home/csi/app'" \
    --change "'ENV DEMOCRATIC_CSI_IS_CONTAINER=true'" --change "'ENV NODE_ENV=production'" - "$DCSI_IMAGE" \
    <"$images/democratic-csi.tar" >/dev/null || die "docker import of $DCSI_IMAGE failed"
  ssh_at "$work" docker import - "$BUSYBOX_IMAGE" <"$images/busybox.tar" >/dev/null \
    || die "docker import of $BUSYBOX_IMAGE failed"
  # poweroff asks logind, which the VM does not run, for inhibitors first (and says so), then powers off.
  ssh_at "$work" "systemctl stop docker.service docker.socket containerd.service; sync; systemctl poweroff" 2>/dev/null || true
  # qemu removes its pid file as it exits.
  for _ in $(seq 120); do
    { [ -f "$work/qemu.pid" ] && kill -0 "$(cat "$work/qemu.pid")" 2>/dev/null; } || break
    sleep 1
  done
  # The other release's layer stays: make test boots both.
  find "$CACHE/zfsvm" -maxdepth 1 -name "layer-$RELEASE-*" -type d -exec rm -rf {} +
  rm -f "$work/id_ed25519" "$work/port" "$work/qemu.pid"
  mv "$work" "$LAYER_DIR"; touch "$LAYER_DIR/ready"
  trap - EXIT
  log "container layer ready in $((SECONDS - t0)) s: $LAYER_DIR"
}

# The tools disk: an ext4 image keyed by the exact binaries and source it holds,
# built in seconds from what scripts/setup.sh installed on this host.
tools_disk() {
  local here nomad sanity node dcsi key disk work
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tools" && pwd)
  bash "$here/build-go-tools.sh" >&2
  nomad=$(readlink -f "$CACHE/bin/nomad")
  sanity=$(readlink -f "$CACHE/bin/csi-sanity")
  node=$(readlink -f "$(command -v node)") || die "node is not installed (scripts/setup.sh installs it)"
  dcsi=$(bash "$here/install-democratic-csi.sh")
  key=$( { sha256sum "$nomad" "$sanity" "$node" | cut -c1-64; basename "$dcsi"; } | sha256sum | cut -c1-16)
  disk=$CACHE/zfsvm/tools-$key.img
  if [ ! -f "$disk" ]; then
    log "making the tools disk $disk"
    work=$(mktemp -d "$CACHE/zfsvm/tools.XXXXXX")
    mkdir -p "$work/root/bin"
    cp "$nomad" "$work/root/bin/nomad"; cp "$sanity" "$work/root/bin/csi-sanity"; cp "$node" "$work/root/bin/node"
    cp -a "$dcsi" "$work/root/democratic-csi"
    mkfs.ext4 -q -F -L nzc-tools -d "$work/root" "$work/tools.img" 1G >&2
    mv "$work/tools.img" "$disk"; rm -rf "$work"
    find "$CACHE/zfsvm" -maxdepth 1 -name 'tools-*.img' ! -name "$(basename "$disk")" -delete
  fi
  printf '%s\n' "$disk"
}

running() { [ -f "$RUN_DIR/qemu.pid" ] && kill -0 "$(cat "$RUN_DIR/qemu.pid")" 2>/dev/null; }

# VMs booted from this run directory that the pid file no longer names (an
# interrupted start, a killed test run). Each one eats emulated CPU and slows
# the next boot several-fold, so start and stop remove them.
kill_strays() {
  local pid tracked='' strays=()
  running && tracked=$(cat "$RUN_DIR/qemu.pid")
  for pid in $(pgrep -f -- "file=$RUN_DIR/root.qcow2" || true); do
    [ "$pid" = "$tracked" ] || strays+=("$pid")
  done
  [ ${#strays[@]} -gt 0 ] || return 0
  log "stopping ${#strays[@]} stray VM(s) from an earlier run: ${strays[*]}"
  kill "${strays[@]}" 2>/dev/null || true
  sleep 1; kill -9 "${strays[@]}" 2>/dev/null || true
}

# Why a boot was slow: the host's load and its busiest processes.
host_load() {
  log "host: $(uptime)"
  ps -eo pid,etime,pcpu,args --sort=-pcpu | head -6 | cut -c1-160 | sed 's/^/[zfsvm]   /' >&2
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

ssh_vm() { ssh_at "$RUN_DIR" "$@"; }

# Root in the VM that the run directory $1 holds the key and the forwarded SSH port of.
ssh_at() {
  local dir=$1; shift
  ssh -q -i "$dir/id_ed25519" -p "$(cat "$dir/port")" -o BatchMode=yes \
    -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=5 root@127.0.0.1 "$@"
}

# One boot attempt: a fresh copy-on-write layer and pool disk, then wait for sshd.
boot_once() {
  local port tools accel=(-accel "tcg,thread=multi" -cpu max)
  tools=$(tools_disk)
  rm -f "$RUN_DIR/root.qcow2" "$RUN_DIR/pool.img" "$RUN_DIR/backup.img" "$RUN_DIR/console.log"
  # A copy-on-write layer keeps the cached image pristine; the pool disks are new each boot.
  qemu-img create -q -f qcow2 -F qcow2 -b "$LAYER_DIR/root.qcow2" "$RUN_DIR/root.qcow2"
  truncate -s "${ZFSVM_POOL_SIZE:-4G}" "$RUN_DIR/pool.img"
  truncate -s 2G "$RUN_DIR/backup.img"
  port=$(free_port); echo "$port" >"$RUN_DIR/port"
  # status reads it back, so that a caller without ZFSVM_NOMAD_PORT is told the port this boot forwarded.
  echo "$NOMAD_PORT" >"$RUN_DIR/nomad_port"
  local rpc_port=$((NOMAD_PORT + 1))
  if [ "${ZFSVM_KVM:-0}" = 1 ]; then accel=(-accel kvm -cpu "${ZFSVM_KVM_CPU:-host}"); fi
  qemu-system-x86_64 "${accel[@]}" -m "$MEM" -smp "$SMP" \
    -kernel "$IMAGE_DIR/vmlinuz" -initrd "$IMAGE_DIR/initrd.img" \
    -append "$KERNEL_ARGS" \
    -drive file="$RUN_DIR/root.qcow2",format=qcow2,if=virtio \
    -drive file="$RUN_DIR/pool.img",format=raw,if=virtio \
    -drive file="$tools",format=raw,if=virtio,readonly=on \
    -drive file="$RUN_DIR/backup.img",format=raw,if=virtio \
    -drive file="$LAYER_DIR/root.qcow2",format=qcow2,if=virtio,readonly=on \
    -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-:22,hostfwd=tcp:127.0.0.1:$NOMAD_PORT-:$NOMAD_PORT,hostfwd=tcp:127.0.0.1:$rpc_port-:$rpc_port" \
    -device virtio-net-pci,netdev=n0 \
    -display none -serial file:"$RUN_DIR/console.log" -daemonize -pidfile "$RUN_DIR/qemu.pid" 9>&-
  log "booting on 127.0.0.1:$port"
  local timeout=${ZFSVM_BOOT_TIMEOUT:-420}
  local deadline=$((SECONDS + timeout))
  until ssh_vm true 2>/dev/null; do
    running || { tail -20 "$RUN_DIR/console.log" >&2; log "qemu exited during boot"; return 1; }
    if [ $SECONDS -ge $deadline ]; then
      log "no SSH within ${timeout}s; last console lines:"
      tail -8 "$RUN_DIR/console.log" | tr -d '\r' | cut -c1-160 | sed 's/^/[zfsvm]   /' >&2
      host_load
      cp "$RUN_DIR/console.log" "$RUN_DIR/console.failed.log"
      stop; return 1
    fi
    sleep 2
  done
}

start() {
  if running; then status; return 0; fi
  build
  layer
  local t0=$SECONDS attempt attempts=${ZFSVM_BOOT_ATTEMPTS:-2}
  kill_strays
  rm -rf "$RUN_DIR"; mkdir -p "$RUN_DIR"
  cp "$IMAGE_DIR/id_ed25519" "$IMAGE_DIR/id_ed25519.pub" "$RUN_DIR/"; chmod 600 "$RUN_DIR/id_ed25519"
  # A boot that misses the deadline (seen once in CI, on a busy host) is thrown away and done again from a fresh disk.
  for attempt in $(seq "$attempts"); do
    boot_once && break
    [ "$attempt" -lt "$attempts" ] || die "no SSH after $attempts boots (console of the last: $RUN_DIR/console.failed.log)"
    log "boot attempt $attempt of $attempts failed; booting again"
  done
  # The hosts entry keeps sudo from failing to resolve the VM's own name.
  ssh_vm "grep -q zfsvm /etc/hosts || echo '127.0.1.1 zfsvm' >>/etc/hosts; modprobe zfs && (zpool list $POOL >/dev/null 2>&1 || zpool create -f -o ashift=12 $POOL /dev/vdb) \
    && (zpool list $BACKUP_POOL >/dev/null 2>&1 || zpool create -f -o ashift=12 $BACKUP_POOL /dev/vdd)" \
    || { stop; die "could not create pools $POOL and $BACKUP_POOL"; }
  # The guest's host key, which inventories/local gives the standby's pull (it pulls from this same VM).
  ssh_vm cat /etc/ssh/ssh_host_ed25519_key.pub >"$RUN_DIR/ssh_host_ed25519_key.pub" \
    || { stop; die "could not read the VM's host key"; }
  ssh_vm "mkdir -p $TOOLS_MOUNT && (mountpoint -q $TOOLS_MOUNT || mount -o ro /dev/vdc $TOOLS_MOUNT)" \
    || { stop; die "could not mount the tools disk at $TOOLS_MOUNT"; }
  log "up in $((SECONDS - t0)) s, $(ssh_vm zfs version | head -1)"
  status
}

stop() {
  kill_strays
  if running; then
    local pid; pid=$(cat "$RUN_DIR/qemu.pid")
    kill "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
    log "stopped (pid $pid)"
  fi
  rm -f "$RUN_DIR/qemu.pid" "$RUN_DIR/root.qcow2" "$RUN_DIR/pool.img" "$RUN_DIR/backup.img"
}

status() {
  running || { log "not running"; return 3; }
  printf 'ZFSVM_HOST=127.0.0.1\nZFSVM_PORT=%s\nZFSVM_KEY=%s\nZFSVM_POOL=%s\nZFSVM_NOMAD_ADDR=%s\n' \
    "$(cat "$RUN_DIR/port")" "$RUN_DIR/id_ed25519" "$POOL" "https://127.0.0.1:$(cat "$RUN_DIR/nomad_port" 2>/dev/null || echo "$NOMAD_PORT")"
}

KEY=$( { declare -f build mirror; echo "$PACKAGES $RELEASE $ZFS_SUITE"; } | sha256sum | cut -c1-16)
IMAGE_DIR=$CACHE/zfsvm/image-$RELEASE-$KEY

cmd=${1:-status}; shift || true
# start, stop and build change shared state; concurrent callers (a test run and
# Molecule, two shells) take turns instead of booting two VMs on one run dir.
case $cmd in
  start|stop|build|build-base)
    mkdir -p "$CACHE/zfsvm"
    exec 9>"$CACHE/zfsvm/lock"
    flock -w 1800 9 || die "another zfsvm.sh $cmd held $CACHE/zfsvm/lock for 30 minutes" ;;
esac
case $cmd in
  build) build; layer ;;
  build-base) build ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  ssh) ssh_vm "$@" ;;
  mirror) mirror ;;
  *) die "usage: $0 build|build-base|start|stop|status|ssh CMD|mirror" ;;
esac
