#!/usr/bin/env bash
# Install everything the tests and the demo need on a fresh Debian 12 machine:
# apt packages, the Python venv, Nomad and nomad-pack, democratic-csi, promtool, the ZFS
# VM image and the controller lines' Debian 13 root. Safe to run again; all
# expensive results are cached under ~/.cache/nomad-zfs-csi keyed by their inputs.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${NOMAD_ZFS_CSI_CACHE:-$HOME/.cache/nomad-zfs-csi}
mkdir -p "$CACHE"
log() { printf '[setup] %s\n' "$*" >&2; }

# gcc and libc6-dev: Nomad is built with cgo, the only way it includes the exec driver.
# The shellcheck package: ansible-test sanity skips that test without it.
# A Java runtime: ansible-rulebook runs its rules in Drools.
APT_PACKAGES=(debootstrap qemu-system-x86 qemu-utils e2fsprogs openssh-client git rsync gcc libc6-dev curl shellcheck
  openjdk-17-jre-headless)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "apt: ${missing[*]}"
  sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
  $sudo_ apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The VM images (debootstrap, a DKMS build of OpenZFS), Debian 12's and Debian 13's (make test's second VM), are the
# longest step when cold: they start first, one after the other (each build takes both cores), and the venv, the Go
# builds and democratic-csi run beside them.
RELEASES="bookworm trixie"
(for release in $RELEASES; do ZFSVM_RELEASE=$release bash tests/zfsvm/zfsvm.sh build-base || exit; done) &
image=$!

# The venv is keyed by the requirements (the collection's and the tests') and the interpreter, and linked as .venv.
py=${PYTHON:-python3}
key=$( { cat requirements.txt requirements-test.txt; "$py" -VV; } | sha256sum | cut -c1-12)
venv=$CACHE/venv-$key
if [ ! -f "$venv/.complete" ]; then
  log "venv: $venv"
  # A venv records its own path, so it is built in place; the marker says it finished.
  rm -rf "$venv"; "$py" -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q -r requirements-test.txt
  touch "$venv/.complete"
fi
ln -sfn "$venv" .venv

# The collection as Ansible finds it: build/collections/ansible_collections/nomad_zfs/csi.
mkdir -p build/collections/ansible_collections/nomad_zfs
ln -sfn ../../../.. build/collections/ansible_collections/nomad_zfs/csi

# democratic-csi runs from source with Node (the machine's, or Debian's nodejs).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  log "apt: nodejs npm"
  sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
  $sudo_ apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

# The Debian 13 root of the controller lines above the venv's (about 90 s cold).
bash scripts/controller-line.sh build >/dev/null
bash tests/tools/build-go-tools.sh
bash tests/tools/install-democratic-csi.sh >/dev/null
bash tests/tools/install-promtool.sh >/dev/null
wait "$image" || { log "a VM image build failed"; exit 1; }
# Their container layers (docker.io and democratic-csi's image, about 4 minutes each cold) need the images and
# democratic-csi.
for release in $RELEASES; do ZFSVM_RELEASE=$release bash tests/zfsvm/zfsvm.sh build; done
log "ready"
