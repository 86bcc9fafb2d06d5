#!/usr/bin/env bash
# The container images of the ZFS VM's Docker, as root filesystem tarballs built on this host (no registry is
# reachable here), which zfsvm.sh imports into the VM's container layer:
#
#   democratic-csi.tar  democratic-csi v1.9.4 as its own Dockerfile lays it out (docs/testing.md says how it
#                       differs): Debian 12 with the node service's tools, Node, the vendored source with its
#                       node_modules (tests/tools/install-democratic-csi.sh), and its docker/ wrappers
#   busybox.tar         a workload: Debian's busybox-static, nothing else
#
# Cached under a key made of this recipe and its inputs. Prints the directory that holds them.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${NOMAD_ZFS_CSI_CACHE:-$HOME/.cache/nomad-zfs-csi}
# Upstream's runtime packages that the zfs-generic and zfs-local drivers' node and controller call, from the
# Dockerfile's list; its rclone, restic, kopia, objectivefs and the other filesystems' tools serve other drivers.
PACKAGES=netbase,socat,e2fsprogs,xfsprogs,nfs-common,sudo,rsync,procps,util-linux,mount

log() { printf '[images] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# The host's Debian mirror, as zfsvm.sh finds it.
mirror() { bash "$HERE/zfsvm.sh" mirror; }

democratic_csi() {
  local root=$1 app=$2
  debootstrap --variant=minbase --include="$PACKAGES" bookworm "$root" "$(mirror)" >"$root.log" 2>&1 \
    || { tail -20 "$root.log" >&2; die "debootstrap failed (log: $root.log)"; }
  rm -rf "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* "$root"/usr/share/{doc,man,info,locale}
  install -m 755 "$(readlink -f "$(command -v node)")" "$root/usr/local/bin/node"
  chroot "$root" useradd --create-home csi
  mkdir -p "$root/home/csi/app"
  cp -a "$app/." "$root/home/csi/app/"
  rm -rf "$root/home/csi/app/docker"
  chroot "$root" chown -R csi: /home/csi
  # Its wrappers: iscsiadm and multipath run the host's through chroot /host; mount and umount do for zfs.
  local w
  for w in iscsiadm multipath; do install -m 755 "$app/docker/$w" "$root/usr/local/sbin/$w"; done
  for w in mount umount zfs zpool; do install -m 755 "$app/docker/$w" "$root/usr/local/bin/$w"; done
}

busybox() {
  local root=$1 deb=$1.deb
  mkdir -p "$deb" "$root/bin" "$root/tmp"
  (cd "$deb" && apt-get download busybox-static >/dev/null 2>&1) || die "apt-get download busybox-static failed"
  dpkg-deb -x "$deb"/busybox-static_*.deb "$deb/x"
  install -m 755 "$deb/x/bin/busybox" "$root/bin/busybox"
  chroot "$root" /bin/busybox --install -s /bin
}

[ "$(id -u)" = 0 ] || die "building the images needs root (debootstrap, chroot)"
command -v debootstrap >/dev/null || die "debootstrap is missing (zfsvm.sh build installs it)"
APP=$(bash "$HERE/../tools/install-democratic-csi.sh")
KEY=$( {
  declare -f democratic_csi busybox
  echo "$PACKAGES $(basename "$APP")"
  sha256sum "$(readlink -f "$(command -v node)")" | cut -c1-64
} | sha256sum | cut -c1-16)
DIR=$CACHE/zfsvm/images-$KEY
if [ ! -f "$DIR/ready" ]; then
  t0=$SECONDS
  mkdir -p "$CACHE/zfsvm"
  work=$(mktemp -d "$CACHE/zfsvm/images.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  for image in democratic_csi busybox; do
    log "building ${image//_/-}"
    mkdir -p "$work/$image"
    "$image" "$work/$image/root" "$APP"
    tar -C "$work/$image/root" --numeric-owner -cf "$work/${image//_/-}.tar" .
    rm -rf "${work:?}/$image"
  done
  find "$CACHE/zfsvm" -maxdepth 1 -name 'images-*' -type d -exec rm -rf {} +
  mv "$work" "$DIR"; touch "$DIR/ready"
  trap - EXIT
  log "images ready in $((SECONDS - t0)) s: $DIR"
fi
printf '%s\n' "$DIR"
