#!/usr/bin/env bash
# Build Nomad, nomad-pack and csi-sanity from their Go modules.
# `go install pkg@version` refuses modules whose go.mod has replace directives,
# so each module is copied out of the module cache and built in place.
# Binaries, GOMODCACHE and GOCACHE live outside the repo, keyed by version.
set -euo pipefail

NOMAD_VERSION=${NOMAD_VERSION:-v1.11.3}
# The api revision that v1.11.3 pins (v0.0.0-20260304165455-489f8b9d1054) answers
# "403 Forbidden: This module version is not available" from proxy.golang.org
# here; the nearest revision the proxy serves is used instead, for both builds.
NOMAD_API_PSEUDO=${NOMAD_API_PSEUDO:-v0.0.0-20260730080045-c3018272781e}
PACK_VERSION=${PACK_VERSION:-v0.4.2}
CSI_SANITY_VERSION=${CSI_SANITY_VERSION:-v5.6.0}

CACHE=${NOMAD_ZFS_CSI_CACHE:-$HOME/.cache/nomad-zfs-csi}
export GOMODCACHE=$CACHE/go/mod GOCACHE=$CACHE/go/build GOFLAGS=-modcacherw CGO_ENABLED=0
BIN=$CACHE/bin
mkdir -p "$BIN" "$CACHE/src"

log() { printf '[build-go-tools] %s\n' "$*" >&2; }

# copy_module MODULE VERSION -> prints a writable copy of the module source
copy_module() {
  local mod=$1 ver=$2 dir dest json
  dest=$CACHE/src/$(basename "$mod")-$ver
  if [ ! -f "$dest/go.mod" ]; then
    json=$(go mod download -json "$mod@$ver" || true)
    dir=$(sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p' <<<"$json")
    [ -n "$dir" ] || { log "go mod download $mod@$ver: $(sed -n 's/^\s*"Error": "\(.*\)"$/\1/p' <<<"$json")"; return 1; }
    rm -rf "$dest" && cp -r "$dir" "$dest" && chmod -R u+w "$dest"
  fi
  printf '%s\n' "$dest"
}

# cgo on: without it Nomad leaves out the exec driver, the only driver here that can
# mount a CSI volume into a task (raw_exec: "csi_hook failed: no task supports CSI").
build_nomad() {
  local out=$BIN/nomad-$NOMAD_VERSION-cgo src
  [ -x "$out" ] && return 0
  log "building nomad $NOMAD_VERSION"
  src=$(copy_module github.com/hashicorp/nomad "$NOMAD_VERSION")
  # The module zip lacks ./api, which go.mod replaces; point it at the matching revision.
  (cd "$src" && go mod edit -replace "github.com/hashicorp/nomad/api=github.com/hashicorp/nomad/api@$NOMAD_API_PSEUDO" \
     && CGO_ENABLED=1 go build -mod=mod -trimpath -o "$out.tmp" . && mv "$out.tmp" "$out")
}

build_pack() {
  local out=$BIN/nomad-pack-$PACK_VERSION src
  [ -x "$out" ] && return 0
  log "building nomad-pack $PACK_VERSION"
  src=$(copy_module github.com/hashicorp/nomad-pack "$PACK_VERSION")
  (cd "$src" && go mod edit -replace "github.com/hashicorp/nomad/api=github.com/hashicorp/nomad/api@$NOMAD_API_PSEUDO" \
     && go build -mod=mod -trimpath -o "$out.tmp" . && mv "$out.tmp" "$out")
}

# The CSI conformance suite; its go.mod has no replace directives, so go install works.
build_csi_sanity() {
  local out=$BIN/csi-sanity-$CSI_SANITY_VERSION
  [ -x "$out" ] && return 0
  log "building csi-sanity $CSI_SANITY_VERSION"
  GOBIN=$CACHE/go/gobin-$CSI_SANITY_VERSION go install "github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity@$CSI_SANITY_VERSION"
  mv "$CACHE/go/gobin-$CSI_SANITY_VERSION/csi-sanity" "$out"
}

build_nomad
build_pack
build_csi_sanity

# Stable names for the rest of the repo, and a version check of each binary.
ln -sf "nomad-$NOMAD_VERSION-cgo" "$BIN/nomad"
ln -sf "nomad-pack-$PACK_VERSION" "$BIN/nomad-pack"
ln -sf "csi-sanity-$CSI_SANITY_VERSION" "$BIN/csi-sanity"
"$BIN/nomad" version | grep -q "Nomad ${NOMAD_VERSION}" || { log "nomad version mismatch: $("$BIN/nomad" version)"; exit 1; }
"$BIN/nomad-pack" version 2>&1 | grep -q "${PACK_VERSION#v}" || { log "nomad-pack version mismatch: $("$BIN/nomad-pack" version 2>&1)"; exit 1; }
log "ok: $BIN"
