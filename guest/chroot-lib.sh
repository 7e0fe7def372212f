# Fresh Debian bookworm roots for the tests that need a machine with nothing
# but the distribution: tests/fresh-root.sh (does the project install what it
# calls?), tests/deb-install.sh and tests/own-machine.sh (the .debs installed
# with dpkg). Sourced after guest/lib.sh.

# ds_minbase: prints the path of a minimal bookworm root as a tarball
# (debootstrap --variant=minbase, made once, cached in build/fresh-root/).
ds_minbase() {
	local dir=$DS_BUILD/fresh-root mirror=${DS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
	local base=$DS_BUILD/fresh-root/minbase-bookworm.tar
	if [ ! -f "$base" ]; then
		ds_need_pkgs debootstrap debian-archive-keyring
		mkdir -p "$dir"
		ds_log "debootstrap --variant=minbase bookworm (cached in $base)"
		rm -rf "$dir/bootstrap"
		if ! debootstrap --variant=minbase bookworm "$dir/bootstrap" "$mirror" \
			> "$dir/debootstrap.log" 2>&1; then
			tail -5 "$dir/debootstrap.log" >&2
			ds_die "debootstrap failed (log: $dir/debootstrap.log)"
		fi
		tar -C "$dir/bootstrap" -cf "$base.tmp" . && mv "$base.tmp" "$base"
		rm -rf "$dir/bootstrap"
	fi
	echo "$base"
}

# ds_root_umount ROOT: unmount everything under ROOT, innermost first; fails
# if something stays mounted (never delete through a mount).
ds_root_umount() {
	local r=$1/ m
	awk -v r="$r" 'index($2, r) == 1 { print $2 }' /proc/self/mounts | sort -r |
		while read -r m; do umount -l "$m" 2>/dev/null; done
	! awk -v r="$r" 'index($2, r) == 1 { f = 1 } END { exit !f }' /proc/self/mounts
}

# ds_root_new ROOT: a new root at ROOT, unpacked from ds_minbase, with the
# host's apt sources (bookworm, -updates, -security: linux-source-6.12 comes
# from bookworm-security) and nothing else, services never started,
# /proc /sys /dev mounted and the host's apt archive cache shared (only the
# first run downloads). Unmount it with ds_root_umount.
ds_root_new() {
	local root=$1 base d
	base=$(ds_minbase)
	ds_root_umount "$root" || ds_die "cannot unmount what is mounted under $root"
	rm -rf --one-file-system "$root"
	mkdir -p "$root"
	tar -C "$root" -xf "$base" || ds_die "cannot unpack $base"
	rm -f "$root/etc/apt/sources.list"
	cp /etc/apt/sources.list.d/*.sources "$root/etc/apt/sources.list.d/" 2>/dev/null || true
	cp /etc/apt/sources.list "$root/etc/apt/" 2>/dev/null || true
	echo 'Acquire::Check-Valid-Until "false";' > "$root/etc/apt/apt.conf.d/99deferstack"
	printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
	chmod 755 "$root/usr/sbin/policy-rc.d"
	cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
	mkdir -p /var/cache/apt/archives/partial
	for d in /proc /sys /dev /dev/pts /var/cache/apt/archives; do
		mkdir -p "$root$d" && mount --bind "$d" "$root$d" || ds_die "cannot bind $d into $root"
	done
}

# ds_in_root ROOT SCRIPT: run a bash script in ROOT with a clean environment,
# as a fresh machine's root shell would (no PATH entries or variables of the
# host).
ds_in_root() {
	chroot "$1" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root bash -c "$2"
}
