#!/usr/bin/env bash
# Install democratic-csi from source (it ships only as container images) for the
# local stack, which runs it with Node under raw_exec inside the ZFS VM.
# The source comes from shared/vendor (beside or above the checkout) when it is there,
# else from upstream's tag
# archive; either must match the pinned checksum. The install is cached by it.
# Prints the install directory.
set -euo pipefail

VERSION=v1.9.4
SHA256=f80d2daf097e995765df1e60f648afe7bc02b00260d3ab9b47a2a32834106b8f
REPO=$(cd "$(dirname "$0")/../.." && pwd)
# The workplace keeps it in shared/vendor beside (or above) the checkout.
vendored() {
  local dir=$REPO name=democratic-csi-${VERSION#v}.tar.gz
  [ -z "${DEMOCRATIC_CSI_TARBALL:-}" ] || { printf '%s\n' "$DEMOCRATIC_CSI_TARBALL"; return; }
  while [ "$dir" != / ]; do
    dir=$(dirname "$dir")
    [ -f "$dir/shared/vendor/$name" ] && { printf '%s\n' "$dir/shared/vendor/$name"; return; }
  done
  printf '%s\n' "$REPO/../shared/vendor/$name"
}
VENDORED=$(vendored)
UPSTREAM=https://github.com/democratic-csi/democratic-csi/archive/refs/tags/$VERSION.tar.gz
CACHE=${NOMAD_ZFS_CSI_CACHE:-$HOME/.cache/nomad-zfs-csi}
DEST=$CACHE/democratic-csi/$VERSION-${SHA256:0:12}
# The checked archive, kept so a later install needs neither the vendor copy nor the network.
KEPT=$CACHE/democratic-csi/$VERSION-${SHA256:0:12}.tar.gz

log() { printf '[democratic-csi] %s\n' "$*" >&2; }

if [ ! -f "$DEST/.complete" ]; then
  mkdir -p "$CACHE"
  work=$(mktemp -d "$CACHE/democratic-csi.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  if [ -f "$KEPT" ]; then
    cp "$KEPT" "$work/src.tar.gz"
  elif [ -f "$VENDORED" ]; then
    cp "$VENDORED" "$work/src.tar.gz"
  else
    log "no $VENDORED; downloading $UPSTREAM"
    curl -fsSL --retry 3 -o "$work/src.tar.gz" "$UPSTREAM"
  fi
  echo "$SHA256  $work/src.tar.gz" | sha256sum -c --quiet - \
    || { log "checksum mismatch for democratic-csi $VERSION: expected $SHA256, got $(sha256sum "$work/src.tar.gz" | cut -c1-64)"; exit 1; }
  mkdir "$work/tree"
  tar -xzf "$work/src.tar.gz" -C "$work/tree" --strip-components=1
  log "npm ci $VERSION"
  # Its native modules are optional; --ignore-scripts keeps npm from building them.
  (cd "$work/tree" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
  mkdir -p "$(dirname "$DEST")"; rm -rf "$DEST"
  cp "$work/src.tar.gz" "$KEPT"
  mv "$work/tree" "$DEST"; touch "$DEST/.complete"
fi
printf '%s\n' "$DEST"
