#!/bin/sh
# Runs on the storage host. Times N democratic-csi volume lifecycles (the zfs
# command lines its zfs-generic-nfs controller sends) two ways: as the service
# user through the storage_host role's zfs wrapper, and as democratic-csi's
# zfs.cli.sudoEnabled does it, "sudo zfs" for every command (here as root, since
# the service user has no full sudo). Counts the zfs processes of one lifecycle.
# Usage: wrapper_lifecycle.sh wrapper|sudo N PARENT
set -eu
mode=$1 n=$2 parent=$3
wrapper=/usr/local/libexec/nomad-zfs-csi/zfs
case $mode in
  wrapper) zfs_way() { sh $trace "$wrapper" "$@"; } ;;
  sudo) zfs_way() { sh $trace -c 'sudo -n /usr/sbin/zfs "$@"' sh "$@"; } ;;
  *) echo "mode must be wrapper or sudo" >&2; exit 2 ;;
esac
# Its own file: the two modes run as different users in sticky /tmp.
trace_file=$(mktemp)
run() { zfs_way "$@" 2>>"$trace_file"; }

lifecycle() {
  vol=$parent/bench-$1 clone=$parent/bench-$1-clone
  run create -p -o refquota=1073741824 "$vol"
  run set sharenfs=rw=@127.0.0.1/32 "$vol"
  run snapshot "$vol@s"
  run clone -o refquota=1073741824 "$vol@s" "$clone"
  run destroy -r -p "$clone" >/dev/null
  run destroy -r -p "$vol" >/dev/null
}

# zfs processes in one lifecycle, counted the same way for both: the sh -x
# trace shows each zfs started.
trace=-x
lifecycle count
processes=$(grep -cE '^\+ (exec |sudo -n )?/usr/sbin/zfs ' "$trace_file")
trace=

start=$(date +%s%N)
i=0
while [ $i -lt "$n" ]; do lifecycle $i; i=$((i + 1)); done
end=$(date +%s%N)
rm -f "$trace_file"
echo "mode=$mode lifecycles=$n zfs_processes_per_lifecycle=$processes ms_per_lifecycle=$(( (end - start) / n / 1000000 ))"
