#!/usr/bin/env bash
# Fetch upstream perf 7.x (Debian sid's linux-perf) and pack it, with exactly the
# shared libraries it needs (its ldd closure), into build/perf7.cpio.gz under
# /opt/perf7/, for guest/run-guest.sh's DS_INITRD_EXTRA.
#
#   guest/fetch-perf7.sh      -> prints the path of build/perf7.cpio.gz
#
# The sid system is a debootstrap chroot in build/perf7-root (the machine's own
# apt sources are never touched); cached: a second run only repacks if needed.
# Exit 3 means the download is impossible (no network / no sid mirror).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

mirror=${DS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
root=$DS_BUILD/perf7-root
stage=$DS_BUILD/perf7
out=$DS_BUILD/perf7.cpio.gz

# The real perf binary in the chroot: Debian's /usr/bin/perf may be a wrapper
# script that picks /usr/bin/perf_VERSION.
real_perf() {
	local f
	for f in "$root"/usr/bin/perf_7* "$root"/usr/bin/perf "$root"/usr/lib/linux-tools*/perf; do
		[ -f "$f" ] && file -b "$f" | grep -q ELF && { echo "${f#"$root"}"; return 0; }
	done
	return 1
}

if [ ! -e "$root/.perf7-done" ] || ! real_perf > /dev/null; then
	ds_need_pkgs debootstrap debian-archive-keyring file cpio gzip
	if [ ! -e "$root/.debootstrap-done" ]; then
		rm -rf "$root"
		mkdir -p "$DS_BUILD"
		ds_log "debootstrap --variant=minbase sid $root (a few minutes)"
		if ! debootstrap --variant=minbase sid "$root" "$mirror" > "$DS_BUILD/perf7-debootstrap.log" 2>&1; then
			tail -5 "$DS_BUILD/perf7-debootstrap.log" >&2
			if grep -qiE 'Failed getting release file|could not resolve|Temporary failure|unable to fetch|Connection (refused|timed out)' \
				"$DS_BUILD/perf7-debootstrap.log"; then
				ds_log "cannot download from $mirror"
				exit 3
			fi
			ds_die "debootstrap failed (log: $DS_BUILD/perf7-debootstrap.log)"
		fi
		touch "$root/.debootstrap-done"
	fi
	ds_log "installing linux-perf in the sid chroot"
	# The mirror may serve a sid snapshot whose Release file is past Valid-Until.
	echo 'Acquire::Check-Valid-Until "false";' > "$root/etc/apt/apt.conf.d/99deferstack"
	chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 ||
		{ ds_log "apt-get update in the chroot failed"; exit 3; }
	chroot "$root" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends linux-perf \
		> "$DS_BUILD/perf7-install.log" 2>&1 ||
		ds_die "apt-get install linux-perf in the chroot failed"
	chroot "$root" apt-get clean
	real_perf > /dev/null || ds_die "no perf ELF binary in the chroot"
	touch "$root/.perf7-done"
fi

perf=$(real_perf)
ver=$(chroot "$root" "$perf" --version 2>/dev/null || true)
case $ver in "perf version 7."*) ;; *) ds_log "warning: sid's perf is '$ver', not 7.x" ;; esac
if [ -f "$out" ] && [ "$out" -nt "$root/.perf7-done" ] && [ -f "$stage/version" ] &&
   [ "$(cat "$stage/version")" = "$ver" ]; then
	echo "$out"
	exit 0
fi

ds_log "packing $perf ($ver) and its ldd closure"
rm -rf "$stage"
mkdir -p "$stage/opt/perf7/bin" "$stage/opt/perf7/lib"
cp -L "$root$perf" "$stage/opt/perf7/bin/perf"
# ldd prints "libx.so.N => /path (addr)" and the loader as "/lib64/ld-linux-x86-64.so.2 (addr)".
libs=$(chroot "$root" ldd "$perf" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
[ -n "$libs" ] || ds_die "ldd found no libraries for $perf"
for lib in $libs; do
	[ -e "$root$lib" ] || ds_die "ldd names $lib, missing in the chroot"
	cp -L "$root$lib" "$stage/opt/perf7/lib/$(basename "$lib")"
done
[ -f "$stage/opt/perf7/lib/ld-linux-x86-64.so.2" ] || ds_die "no dynamic loader in the closure"
strip --strip-unneeded "$stage"/opt/perf7/lib/*.so* 2>/dev/null || true
cat > "$stage/opt/perf7/perf" <<'EOF'
#!/bin/sh
# perf 7.x from Debian sid with its own libraries (see guest/fetch-perf7.sh).
exec /opt/perf7/lib/ld-linux-x86-64.so.2 --library-path /opt/perf7/lib /opt/perf7/bin/perf "$@"
EOF
chmod 755 "$stage/opt/perf7/perf"
echo "$ver" > "$stage/opt/perf7/version"
(cd "$stage" && find opt -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --quiet --reproducible) | gzip -9 > "$out.tmp"
mv "$out.tmp" "$out"
echo "$ver" > "$stage/version"
ds_log "$out: $(du -k "$out" | cut -f1) KiB, $(echo "$libs" | wc -w) libraries"
echo "$out"
