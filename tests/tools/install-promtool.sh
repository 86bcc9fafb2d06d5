#!/usr/bin/env bash
# promtool, for `promtool check rules` and `promtool test rules` on the zfs_metrics role's alert rules: taken out of
# Debian 12's prometheus package (2.42.0), which is not installed (its server and web assets are not needed), into
# the cache, keyed by the package's version. Prints the path.
set -euo pipefail
CACHE=${NOMAD_ZFS_CSI_CACHE:-$HOME/.cache/nomad-zfs-csi}
VERSION=2.42.0+ds-5+deb12u1
bin=$CACHE/bin/promtool-$VERSION
if [ ! -x "$bin" ]; then
  work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
  sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
  # A fresh machine's package lists may not know the version yet.
  apt-cache show "prometheus=$VERSION" >/dev/null 2>&1 || $sudo_ apt-get update -qq
  (cd "$work" && apt-get download -qq "prometheus=$VERSION")
  dpkg-deb -x "$work"/prometheus_*.deb "$work/root"
  mkdir -p "$CACHE/bin"
  install -m 0755 "$work/root/usr/bin/promtool" "$bin"
fi
ln -sfn "$(basename "$bin")" "$CACHE/bin/promtool"
echo "$CACHE/bin/promtool"
