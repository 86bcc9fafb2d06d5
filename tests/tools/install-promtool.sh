#!/usr/bin/env bash
# promtool, for `promtool check rules` and `promtool test rules` on the zfs_metrics role's alert rules: taken out of
# Debian 12's prometheus package (2.42.0), which is not installed (its server and web assets are not needed), into
# the cache, keyed by the package's version: the one apt offers, since a point release replaces the one before it on
# the mirror. Prints the path.
set -euo pipefail
CACHE=${NOMAD_ZFS_CSI_CACHE:-$HOME/.cache/nomad-zfs-csi}
candidate() { apt-cache policy prometheus 2>/dev/null | sed -n 's/^ *Candidate: //p'; }
version=$(candidate)
if [ -z "$version" ] || [ "$version" = "(none)" ]; then
  # A fresh machine's package lists may not be there yet.
  sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
  $sudo_ apt-get update -qq
  version=$(candidate)
fi
if [ -z "$version" ] || [ "$version" = "(none)" ]; then
  echo "install-promtool: apt offers no prometheus package (apt-cache policy prometheus)" >&2
  exit 1
fi
bin=$CACHE/bin/promtool-$version
if [ ! -x "$bin" ]; then
  work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
  (cd "$work" && apt-get download -qq "prometheus=$version")
  dpkg-deb -x "$work"/prometheus_*.deb "$work/root"
  mkdir -p "$CACHE/bin"
  install -m 0755 "$work/root/usr/bin/promtool" "$bin"
fi
ln -sfn "$(basename "$bin")" "$CACHE/bin/promtool"
echo "$CACHE/bin/promtool"
