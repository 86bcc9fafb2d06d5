#!/bin/sh
# Installed by the nomad_zfs.csi storage_host role; changes here are overwritten.
#
# zfs for democratic-csi running as the storage host's service user, with
# zfs.cli.sudoEnabled false and zfs.cli.paths.zfs set to this file. Every zfs
# command runs as the caller, so `zfs allow` decides what is permitted. Linux
# keeps mounting, sharing and unmounting to root, so after (or before) the
# commands that need it this asks root through the narrow sudo rule, which runs
# the role's root helper (zfs-root): it mounts and shares only datasets exactly
# one level below the parent, at the mountpoint they inherit. It runs with the
# caller's rights and grants nothing the caller could not do by hand; it exists
# because democratic-csi's sudo is all or nothing.
#
# The parent and the helper come from the root-owned file the role writes for
# the service user (one for each on a host that serves several plugins):
#   parent=tank/nomad/csi
#   root_helper=/usr/local/libexec/nomad-zfs-csi/zfs-root
set -u
zfs=/usr/sbin/zfs
# The login's name (sshd, su, sudo and systemd set LOGNAME), else id's: id costs 21 ms a call in the emulated VM,
# a third of a zfs list. Naming another user only reads that user's settings; root still acts only as this
# user's sudo rule allows.
conf=/etc/nomad-zfs-csi/storage/${LOGNAME:-$(id -un)}.conf
parent='' helper='' quota_percent=''
while IFS= read -r line; do
  case $line in
    parent=?*) parent=${line#parent=} ;;
    root_helper=/?*) helper=${line#root_helper=} ;;
    volume_quota_percent=?*) quota_percent=${line#volume_quota_percent=} ;;
  esac
done <"$conf" || true
if [ -z "$parent" ] || [ -z "$helper" ]; then
  echo "nomad-zfs-csi: no parent= or root_helper= line in $conf; run the storage_host role" >&2
  exit 1
fi

under_parent() {
  case $1 in "$parent"/*) return 0 ;; esac
  return 1
}

# The only shape root mounts and shares: <parent>/<volume>.
a_volume() {
  case $1 in "$parent"/*/*) return 1 ;; "$parent"/?*) return 0 ;; esac
  return 1
}


as_root() {
  sudo -n "$helper" "$@" || {
    echo "nomad-zfs-csi: sudo zfs-root $* failed; is the storage_host role's sudo rule in place?" >&2
    return 1
  }
}

# Mount a volume that should be mounted and is not, and share it when its
# sharenfs asks for that (not with a second argument, "mount-only"). One zfs get; a missing dataset is left alone,
# and so is anything but a volume of the parent.
mount_and_share() {
  a_volume "$1" || return 0
  { read -r type; read -r canmount; read -r mounted; read -r sharenfs; } <<EOF
$("$zfs" get -H -o value type,canmount,mounted,sharenfs "$1" 2>/dev/null)
EOF
  [ "$type" = filesystem ] && [ "$canmount" = on ] || return 0
  if [ "$mounted" = no ]; then as_root mount "$1" || return 1; fi
  if [ "$sharenfs" != off ] && [ $# -eq 1 ]; then as_root share "$1" || return 1; fi
}

# Unmount (and so unshare) the dataset and its descendants, children first.
unmount_tree() {
  "$zfs" list -H -r -t filesystem -o name,mounted "$1" 2>/dev/null | sort -r | while read -r name mounted; do
    if [ "$mounted" = yes ]; then as_root unmount "$name" || exit 1; fi
  done
}

# Up to five processes whose mount namespace still mounts the dataset or one below it, after root unmounted it
# here: a local user's `unshare -Urm` copies every mount, and its copy keeps the dataset busy until that namespace
# ends (the copy is locked: not even root can unmount it there). zfs destroy -r destroys the snapshots first and
# the busy dataset last, so a delete is refused before it starts. One grep, on deletes only.
holders() {
  grep -lsF -e " - zfs $1 " -e " - zfs $1/" /proc/[0-9]*/mountinfo | sed -n 's|^/proc/\([0-9]*\)/mountinfo$|\1|p' |
    head -n 5 | tr '\n' ' '
}

# A volume's quota, which counts its snapshots, from its refquota (the capacity democratic-csi sets): root's, since
# the user holds no quota delegation. Nothing where the role set no volume_quota_percent.
bound() {
  a_volume "$1" || return 0
  # Only the dataset drivers' settings have the line; root leaves anything but a filesystem alone.
  [ -n "$quota_percent" ] || return 0
  as_root bound "$1"
}

last_arg() { for a in "$@"; do :; done; printf '%s\n' "$a"; }

# "zfs create" flags: -V (a zvol, never mounted).
scan_create_flags() {
  volume=no skip=no
  for a in "$@"; do
    if [ "$skip" = yes ]; then skip=no; continue; fi
    case $a in
      -o | -b) skip=yes; continue ;;
      -*=* | --* | [!-]*) continue ;;
    esac
    case $a in *V) volume=yes skip=yes ;; *V*) volume=yes ;; esac
  done
}

[ $# -gt 0 ] || exec "$zfs"
sub=$1
shift
case $sub in
  create)
    target=$(last_arg "$@")
    scan_create_flags "$@"
    [ "$volume" = yes ] && exec "$zfs" create "$@"
    # Deeper filesystems would never be mounted: refuse them before they exist.
    if under_parent "$target" && ! a_volume "$target"; then
      echo "nomad-zfs-csi: $target: only filesystems exactly one level below $parent are volumes here" >&2
      exit 1
    fi
    "$zfs" create -u "$@"
    rc=$?
    # Also when it already existed (create -p succeeds, democratic-csi takes
    # "dataset already exists" as success): a retry mounts what an interrupted
    # create left unmounted.
    mount_and_share "$target" || exit 1
    bound "$target" || exit 1
    exit $rc
    ;;
  clone)
    target=$(last_arg "$@")
    err=$("$zfs" clone "$@" 2>&1)
    rc=$?
    # zfs clone has no -u: without root it clones, then says so and exits 1.
    case $err in *"successfully created, but it may only be mounted by root"*) rc=0 err= ;; esac
    [ -z "$err" ] || printf '%s\n' "$err" >&2
    if [ $rc -eq 0 ]; then mount_and_share "$target" && bound "$target" || exit 1; fi
    exit $rc
    ;;
  set)
    case " $* " in
      *" sharenfs="*) ;;
      *" refquota="*) "$zfs" set "$@" || exit $?; bound "$(last_arg "$@")"; exit $? ;;
      *) exec "$zfs" set "$@" ;;
    esac
    # sharenfs is root's to set (the user holds no delegation of it, so the value root checks is the value every
    # later zfs share reads): the other properties as the user, then root sets it on the mounted volume, which
    # shares it.
    target=$(last_arg "$@")
    options=
    for a; do
      shift
      case $a in sharenfs=*) options=${a#sharenfs=} ;; *) set -- "$@" "$a" ;; esac
    done
    if [ $# -gt 1 ]; then "$zfs" set "$@" || exit $?; fi
    mount_and_share "$target" mount-only || exit 1
    as_root sharenfs "$target" "$options" || exit 1
    ;;
  inherit)
    case " $* " in *" sharenfs "*) ;; *) exec "$zfs" inherit "$@" ;; esac
    as_root unshare "$(last_arg "$@")" || exit 1
    ;;
  destroy)
    target=$(last_arg "$@")
    case $target in *[@#]*) exec "$zfs" destroy "$@" ;; esac
    # Only what root unmounted here can be held elsewhere; the rest is the user's own zfs destroy to refuse.
    under_parent "$target" || exec "$zfs" destroy "$@"
    unmount_tree "$target" || exit 1
    held=$(holders "$target")
    if [ -n "$held" ]; then
      mount_and_share "$target"
      echo "nomad-zfs-csi: $target is busy: the mount namespace of process(es) ${held% } still mounts it (a local" \
        "user's unshare, or a process not yet gone), so nothing of it was destroyed; delete the volume again once" \
        "they are gone" >&2
      exit 1
    fi
    exec "$zfs" destroy "$@"
    ;;
  receive)
    # Root receives (the user holds no receive delegation: with it, a forged stream or -o origin= cloned any
    # snapshot of the pool), and only a plain full stream of one snapshot into a new dataset; then the volume is
    # mounted and shared as after a create.
    target=$(last_arg "$@")
    as_root receive "$@" || exit 1
    mount_and_share "$target" || exit 1
    bound "$target" || exit 1
    ;;
  mount | unmount | share)
    exec sudo -n "$helper" "$sub" "$@"
    ;;
  *)
    exec "$zfs" "$sub" "$@"
    ;;
esac
