#!/usr/bin/env bash
# Where a sample's guest instructions go, per kernel function, deferred
# against classic: an exact count, not a sampled profile.
#
#   bench/qemu-plugin/profile.sh [-k fast|debug|BZIMAGE] [WORKLOAD ...]
#
# WORKLOADs are cost_bench's (default: short cpu offcpu deep). Per
# workload, one boot under QEMU -icount with insn_profile.so (a TCG plugin:
# instructions executed per translation block) running
# bench/guest/insn-profile.sh, whose windows are cut by the guest's sync
# (ksys_sync); bench/qemu-plugin/attribute.py then prints, per kernel
# function, the instructions one sample costs in each mode and the
# difference, grouped by what the code does for deferral.
#
# The plugin is built against the qemu-plugin.h of the installed QEMU's own
# Debian source (apt-get source into build/qemu-src, with a private apt
# state: nothing changes in the host's apt configuration).
#
# A rep-prefixed string instruction counts once per iteration under TCG
# (a struct copy of 80 bytes with rep movsl is 20): figures are guest
# instructions as -icount counts them, as in bench/RESULTS.md.
#
# env: PROFILE_REPS (300: repetitions per window), PROFILE_ROWS (40),
#      PROFILE_SYSTEM_MAP (for a BZIMAGE outside an obj-* build directory)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/guest/lib.sh"
kernel=fast
while getopts k: o; do
	case $o in
	k) kernel=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || set -- short cpu offcpu deep
reps=${PROFILE_REPS:-300}
rows=${PROFILE_ROWS:-40}
out=$DS_BUILD/insn-profile
mkdir -p "$out"

ds_need_pkgs qemu-system-x86 gcc python3 xz-utils

# qemu-plugin.h of the QEMU that will load the plugin.
src=$DS_BUILD/qemu-src
header=$src/include/qemu/qemu-plugin.h
qemu_src_version=$(dpkg-query -W -f='${source:Version}' qemu-system-x86)
if [ ! -f "$header" ] || [ "$(cat "$src/.version" 2>/dev/null)" != "$qemu_src_version" ]; then
	ds_log "fetching the Debian source of qemu $qemu_src_version for qemu-plugin.h"
	apt=$DS_BUILD/qemu-src-apt
	rm -rf "$apt" "$src"
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$src"
	. /etc/os-release
	for suite in "$VERSION_CODENAME" "$VERSION_CODENAME-updates"; do
		echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main"
	done > "$apt/sources.list"
	echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security $VERSION_CODENAME-security main" >> "$apt/sources.list"
	aopt=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
	      -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o Debug::NoLocking=1)
	apt-get "${aopt[@]}" -q update >&2
	(cd "$apt" && apt-get "${aopt[@]}" -q source --download-only "qemu=$qemu_src_version" >&2)
	tar -C "$src" --strip-components=1 -xJf "$apt"/qemu_*.orig.tar.xz --wildcards '*/include/qemu/qemu-plugin.h'
	echo "$qemu_src_version" > "$src/.version"
fi
plugin=$out/insn_profile.so
gcc -O2 -shared -fPIC -Wall -Wextra -Werror -I"$src/include/qemu" -o "$plugin" \
	"$root/bench/qemu-plugin/insn_profile.c"

case $kernel in
fast|debug)
	ds_guest_image "$kernel" > /dev/null
	name=$kernel
	map=$DS_BUILD/obj-$kernel/System.map ;;
*)
	name=$(basename "$kernel")
	map=${PROFILE_SYSTEM_MAP:-$(dirname "$kernel")/../../../System.map} ;;
esac
[ -f "$map" ] || { ds_log "no System.map for $kernel (PROFILE_SYSTEM_MAP)"; exit 1; }
mark=$(awk '$3 == "ksys_sync" { print $1; exit }' "$map")
[ -n "$mark" ] || { ds_log "no ksys_sync in $map"; exit 1; }
initrd=${DS_INITRD:-$("$root/guest/make-initramfs.sh")}

for wl in "$@"; do
	rm -f "$out/$wl".*
	suite=insn-profile.sh:$wl:$reps
	DS_QEMU_ICOUNT=0 DS_INITRD=$initrd DS_RUN_TAG=insn-profile \
		DS_QEMU_EXTRA="-plugin $plugin,mark=$mark,out=$out/$wl" \
		"$root/guest/run-guest.sh" -k "$kernel" -s "$suite" -t 3600 >&2
	log=$DS_BUILD/logs/$name-$suite.insn-profile.log
	echo "== $wl ($name, $reps repetitions per window)"
	python3 "$root/bench/qemu-plugin/attribute.py" "$map" "$log" "$out/$wl" "$rows"
done
