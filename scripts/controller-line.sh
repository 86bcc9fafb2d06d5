#!/usr/bin/env bash
# The controller lines beside the venv's: ansible-core 2.20 and 2.21 need Python 3.12 or later, which this Debian 12
# host lacks and no registry serves, so they run in a Debian 13 (trixie) root file system with its Python 3.13, one
# venv per line holding what requirements-test.txt holds but that line's ansible-core. The venv's line (2.19 on
# Python 3.11, requirements.txt) runs the whole suite; docs/testing.md, Controller lines, says what these run.
#
#   controller-line.sh build            build (or reuse) the cached root: debootstrap, then the venvs
#   controller-line.sh lines            the lines it holds, oldest first
#   controller-line.sh run LINE CMD...  CMD as root in the root, in this directory, with LINE's venv first on PATH and
#                                       this repo, the cache, /tmp and /dev at their own paths (a mount namespace of
#                                       its own, so nothing stays mounted), the caller's environment otherwise
#
# The root is cached under a key made of this recipe, the lines and the requirements files.
set -euo pipefail

# One per line the collection claims above the venv's (meta/runtime.yml): the newest release of each.
LINES="2.20.10 2.21.5"
PACKAGES=python3,python3-venv,git,rsync,openssh-client,ca-certificates
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${NOMAD_ZFS_CSI_CACHE:-$HOME/.cache/nomad-zfs-csi}

log() { printf '[controller-line] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# requirements-test.txt with requirements.txt inlined and no ansible-core: each venv adds its line's.
requirements() {
  grep -hv -e '^ansible-core==' -e '^-r ' "$REPO/requirements.txt" "$REPO/requirements-test.txt"
}

build_root() {
  local root=$1 line log=$CACHE/controller-build.log
  # The host's mirror and CA bundle (pip's certificate, PIP_CERT, may be a local one).
  debootstrap --variant=minbase --include="$PACKAGES" trixie "$root" "$(bash "$REPO/tests/zfsvm/zfsvm.sh" mirror)" \
    >"$log" 2>&1 || { tail -20 "$log" >&2; die "debootstrap failed (log: $log)"; }
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
  requirements >"$root/tmp/requirements.txt"
  for line in $LINES; do
    chroot "$root" /usr/bin/python3 -m venv "/opt/ansible-$line"
    chroot "$root" env PIP_FIND_LINKS= "/opt/ansible-$line/bin/pip" install -q \
      -r /tmp/requirements.txt "ansible-core==$line" >>"$log" 2>&1 \
      || { tail -20 "$log" >&2; die "pip install for ansible-core $line failed (log: $log)"; }
  done
  rm -rf "$root/tmp/requirements.txt" "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/*
}

KEY=$( { declare -f requirements build_root; echo "$LINES $PACKAGES"; requirements; } | sha256sum | cut -c1-16)
DIR=$CACHE/controller-$KEY

build() {
  [ -f "$DIR/ready" ] && return 0
  [ "$(id -u)" = 0 ] || die "building the root needs root (debootstrap, chroot)"
  command -v debootstrap >/dev/null || die "debootstrap is missing (scripts/setup.sh installs it)"
  local work t0=$SECONDS
  mkdir -p "$CACHE"
  # Two callers (both VM lanes' site.yml) build one at a time; the second finds it ready.
  exec 8>"$CACHE/controller.lock"
  flock -w 900 8 || die "another build held $CACHE/controller.lock for 15 minutes"
  [ -f "$DIR/ready" ] && { exec 8>&-; return 0; }
  work=$(mktemp -d "$CACHE/controller.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  log "building the trixie root with ansible-core $LINES"
  build_root "$work/root"
  find "$CACHE" -maxdepth 1 -name 'controller-*' -type d -exec rm -rf {} +
  mv -T "$work" "$DIR" && touch "$DIR/ready"
  trap - EXIT
  exec 8>&-
  log "root ready in $((SECONDS - t0)) s: $DIR"
}

run() {
  local line=$1 root=$DIR/root
  shift
  case " $LINES " in *" $line "*) ;; *) die "no line $line here; the lines: $LINES" ;; esac
  build
  # The binds are made inside unshare's mount namespace, which ends with the command.
  # shellcheck disable=SC2016  # the inner bash expands them
  exec unshare --mount --propagation private -- /bin/bash -euc '
    root=$1 line=$2 repo=$3 cache=$4; shift 4
    mount --rbind /dev "$root/dev"
    mount -t proc proc "$root/proc"
    for dir in /tmp "$repo" "$cache"; do mkdir -p "$root$dir" && mount --bind "$dir" "$root$dir"; done
    exec chroot "$root" /usr/bin/env PATH="/opt/ansible-$line/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
      VIRTUAL_ENV="/opt/ansible-$line" /bin/bash -c "cd \"\$0\" && exec \"\$@\"" "$PWD" "$@"
  ' - "$root" "$line" "$REPO" "$CACHE" "$@"
}

case ${1:-} in
  build) build; printf '%s\n' "$DIR" ;;
  lines) tr ' ' '\n' <<<"$LINES" ;;
  run) [ $# -ge 3 ] || die "usage: $0 run LINE COMMAND..."; shift; run "$@" ;;
  *) die "usage: $0 build | lines | run LINE COMMAND..." ;;
esac
