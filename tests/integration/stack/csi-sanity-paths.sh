#!/bin/sh
# csi-sanity's path hooks for a plugin in a container. Its node service sees the node allocation's plugin directory
# at /csi, and csi-sanity, outside the container, names staging and target paths as the plugin sees them; this
# makes, removes and checks them in that directory on the host (CSI_SANITY_HOST_CSI). csi-sanity runs one command
# per hook with the path alone, so this file is linked as create, remove and check. Each does what csi-sanity does
# itself without hooks: mkdir, rmdir (which fails on a mount or a file left behind), stat.
set -eu
case $1 in
/csi/*) host=$CSI_SANITY_HOST_CSI${1#/csi} ;;
*) echo "$1 is not under the plugin's /csi" >&2; exit 2 ;;
esac
case ${0##*/} in
create) mkdir -p -- "$host" && echo "$1" ;;
remove) if [ -e "$host" ]; then rmdir -- "$host"; fi ;;
check)
	if [ -f "$host" ]; then echo file
	elif [ -d "$host" ]; then echo directory
	elif [ -e "$host" ]; then echo other
	else echo not_found
	fi ;;
*) echo "called as ${0##*/}: link this file as create, remove or check" >&2; exit 2 ;;
esac
