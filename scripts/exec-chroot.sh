#!/usr/bin/env bash
# The exec driver's chroot tree of the local stack's clients, built in the VM as root (nomad-dev.sh start pipes it
# there; node B's client names the same tree). The pack's README, Client requirements, says
# the same to operators.
#
# Why a tree of its own, on a file system of its own:
# - Nomad v1.11.3 runs a template's change_script as uid 0 in the task's chroot, whatever the task's user (the
#   executor's Exec sets no user; docs/security.md). A tenant's job can have one.
# - Nomad hard-links chroot_env's files into each allocation and copies only where the link fails. With the client's
#   own /etc and /lib as sources, that uid 0 owned the client's files through the links: it appended to the VM's
#   /etc/adduser.conf, and libc was as near. A link across file systems fails, so a tree on a tmpfs makes every
#   allocation get copies, which only that allocation sees.
# - The copies are the client's files all the same: the tree holds what the workloads run (a shell, coreutils,
#   grep, sed, find; fio for bench/) and the libraries they load, and of /etc only what names users and hosts.
#   No shadow, no SSH host keys, no Nomad configuration, which that uid 0 would read.
# Usage: exec-chroot.sh [TREE] (default /var/lib/nzc-chroot). Builds anew when this script changed; else nothing.
set -euo pipefail
tree=${1:-/var/lib/nzc-chroot}
stamp=${EXEC_CHROOT_STAMP:-unknown}
if mountpoint -q "$tree" && [ "$(cat "$tree/.stamp" 2>/dev/null)" = "$stamp" ]; then exit 0; fi
umount "$tree" 2>/dev/null || true
mkdir -p "$tree"
mount -t tmpfs -o size=256m,mode=0755,nosuid,nodev nzc-chroot "$tree"
mkdir -p "$tree/bin" "$tree/etc" "$tree/lib/x86_64-linux-gnu" "$tree/lib64"

# Each package's commands by their file names (sh is dash's), copied rather than linked: the tree is the source.
# A package that is not installed (fio but where bench/ runs) lists nothing.
commands=$({ dpkg -L coreutils dash bash grep sed findutils fio 2>/dev/null || true; } |
  grep -E '^(/usr)?/s?bin/[^/]+$' | sort -u)
for command in $commands; do
  if [ -f "$command" ]; then cp -L "$command" "$tree/bin/${command##*/}"; fi
done
# The libraries they load, where the tasks' loader looks by default (ldd fails on a script, such as bashbug).
libraries=$(for command in "$tree"/bin/*; do ldd "$command" 2>/dev/null || true; done |
  awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u)
for library in $libraries; do cp -L "$library" "$tree/lib/x86_64-linux-gnu/"; done
cp -L /lib64/ld-linux-x86-64.so.2 "$tree/lib64/"
[ -e "$tree/bin/sh" ] || cp -L /bin/sh "$tree/bin/sh"
for file in passwd group nsswitch.conf hosts resolv.conf localtime; do
  if [ -e "/etc/$file" ]; then cp -L "/etc/$file" "$tree/etc/"; fi
done
echo "$stamp" >"$tree/.stamp"
mount -o remount,ro "$tree"
