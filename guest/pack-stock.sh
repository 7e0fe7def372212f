#!/usr/bin/env bash
# Pack stock Debian sid programs, exactly as sid ships them (nothing rebuilt:
# no frame pointers, no SFrame, only the .eh_frame every Debian object has),
# for tests/guest/stock_stacks.sh: perl, python3 (sid's current version, with
# its minimal standard library), gzip, xz and sort, with their ldd closure,
# at the paths a Debian system has them (/usr/bin, /usr/lib/x86_64-linux-gnu,
# /lib64's loader). The guest's own root has no /usr or /lib64 and its PATH
# is /bin:/tests, so nothing else in the guest picks them up by accident.
#
#   guest/pack-stock.sh      -> prints the path of build/stock.cpio.gz
#
# The sid system is guest/fetch-perf7.sh's debootstrap chroot; exit 3 when it
# cannot be downloaded (as fetch-perf7.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

root=$DS_BUILD/perf7-root
stage=$DS_BUILD/stock
out=$DS_BUILD/stock.cpio.gz
progs=(/usr/bin/perl /usr/bin/python3 /usr/bin/gzip /usr/bin/xz /usr/bin/sort)

"$DS_ROOT/guest/fetch-perf7.sh" > /dev/null || exit $?
ds_need_pkgs cpio gzip
if [ ! -x "$root/usr/bin/python3" ] || [ ! -x "$root/usr/bin/perl" ] || [ ! -x "$root/usr/bin/xz" ]; then
	ds_log "installing python3-minimal, perl-base and xz-utils in the sid chroot"
	chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 ||
		{ ds_log "apt-get update in the chroot failed"; exit 3; }
	chroot "$root" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends python3-minimal perl-base xz-utils \
		> "$DS_BUILD/stock-install.log" 2>&1 ||
		ds_die "apt-get install python3-minimal perl-base xz-utils in the chroot failed (log: $DS_BUILD/stock-install.log)"
	chroot "$root" apt-get clean
fi
# python3 -> python3.X: its library is /usr/lib/python3.X, from libpython3.X-minimal
py=$(basename "$(readlink -f "$root/usr/bin/python3")")
case $py in python3.*) ;; *) ds_die "sid's /usr/bin/python3 is $py, not python3.X" ;; esac
if [ -f "$out" ] && [ "$out" -nt "$0" ] && [ -z "$(find -H "${progs[@]/#/$root}" -newer "$out" -print -quit)" ]; then
	echo "$out"
	exit 0
fi

rm -rf "$stage"
mkdir -p "$stage/usr/bin" "$stage/usr/lib/x86_64-linux-gnu" "$stage/lib64"
for p in "${progs[@]}"; do
	cp -L "$root$p" "$stage$p"
	# "libx.so.N => /path (addr)"; the loader goes to /lib64 below
	chroot "$root" ldd "$p" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'
done | sort -u | while read -r lib; do
	cp -L "$root$lib" "$stage/usr/lib/x86_64-linux-gnu/$(basename "$lib")"
done
cp -L "$root/lib64/ld-linux-x86-64.so.2" "$stage/lib64/"
[ -f "$stage/usr/lib/x86_64-linux-gnu/libc.so.6" ] || ds_die "no libc.so.6 in the closure"
# python's own modules, found from its path (/usr/bin -> /usr/lib/$py): the
# pure-Python part of the minimal library is enough for -S -I -c
chroot "$root" dpkg -L "lib$py-minimal" | grep '\.py$' | while read -r f; do
	[ -f "$root$f" ] || continue	# a dangling link (sitecustomize.py)
	mkdir -p "$stage$(dirname "$f")"
	cp -L "$root$f" "$stage$f"
done
(cd "$stage" && find . -mindepth 1 -printf '%P\0' | LC_ALL=C sort -z |
	cpio --null -o -H newc --quiet --reproducible) | gzip -9 > "$out.tmp"
mv "$out.tmp" "$out"
ds_log "$out: $(du -k "$out" | cut -f1) KiB (${progs[*]##*/} and their libraries)"
echo "$out"
