#!/usr/bin/env bash
# The Debian packages of make deb, installed with dpkg -i on a fresh bookworm
# root, tested from the installed files, and removed.
#
#   tests/deb-install.sh [DEBDIR]      (default: make deb, out/deb)
#
# In a new minimal root (guest/chroot-lib.sh: debootstrap minbase, cached):
#   1. apt-get installs the packages' dependencies (their Depends fields, as
#      apt-get install ./FILE.deb would) and the tests' tools (gcc, pkgconf,
#      man-db; for the static link of the .a: g++ (libstdc++ for the .pc's
#      -lstdc++), liblzma-dev and libbz2-dev (libdw's private libraries, which
#      libdw-dev does not pull in)); then dpkg -i libdeferstack1, libdeferstack-dev and deferstack
#      must succeed and leave all three installed;
#   2. tests/cli/installed.sh runs against /usr/bin/deferstack: --version,
#      man page, the bundled recording's folded output, check-report.sh, a
#      pkg-config consumer of the library, record -> report of a workload;
#      deferstack-profiler.service and /etc/default/deferstack installed, the
#      user deferstack made by postinst, the unit not enabled;
#   3. dpkg --purge removes all three and leaves none of their files.
# Ends with "deb-install: N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/../guest/lib.sh"
. "$DS_ROOT/guest/chroot-lib.sh"

debdir=${1:-}
root=$DS_BUILD/deb-root
pass=0 fail=0
ok()  { pass=$((pass + 1)); echo "ok - $1"; }
bad() { fail=$((fail + 1)); echo "not ok - $1"; }
finish() {
	echo "deb-install: $pass passed, $fail failed"
	[ $fail -eq 0 ]
	exit
}
in_root() { ds_in_root "$root" "$1"; }

if [ -z "$debdir" ]; then
	t0=$(date +%s)
	if make -s -C "$DS_ROOT" deb > "$DS_BUILD/deb-install-make.log" 2>&1; then
		ok "make deb ($(( $(date +%s) - t0 ))s)"
	else
		tail -20 "$DS_BUILD/deb-install-make.log"
		bad "make deb (log: $DS_BUILD/deb-install-make.log)"
		finish
	fi
	debdir=$DS_ROOT/out/deb
fi
version=$(sed -n 's/^VERSION := //p' "$DS_ROOT/Makefile")
arch=$(dpkg --print-architecture)
pkgs=(libdeferstack1 libdeferstack-dev deferstack)
debs=()
for p in "${pkgs[@]}"; do
	f=$debdir/${p}_${version}_$arch.deb
	[ -f "$f" ] || { bad "no $f"; finish; }
	debs+=("$f")
done

trap 'ds_root_umount "$root"' EXIT
t0=$(date +%s)
ds_root_new "$root"
mkdir -p "$root/src" "$root/debs"
(cd "$DS_ROOT" && git ls-files -z --cached --others --exclude-standard |
	tar --null --ignore-failed-read -T - -cf -) | tar -C "$root/src" -xf - ||
	ds_die "cannot copy the tree"
cp "${debs[@]}" "$root/debs/"

# The dependencies the packages declare, first alternative, without versions
# (the archive's are new enough), except each other.
deps=$(for f in "${debs[@]}"; do dpkg-deb -f "$f" Depends; echo; done | tr ',' '\n' |
	sed 's/|.*//; s/(.*)//; s/[[:space:]]//g' | grep -v '^libdeferstack' | grep . | sort -u |
	tr '\n' ' ')
ds_log "in $root: apt-get install $deps+ the tests' tools"
if in_root "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	--no-install-recommends $deps gcc libc6-dev pkgconf man-db binutils g++ liblzma-dev libbz2-dev" \
	> "$DS_BUILD/deb-install-apt.log" 2>&1; then
	ok "dependencies from the archive: $deps($(( $(date +%s) - t0 ))s)"
else
	tail -20 "$DS_BUILD/deb-install-apt.log"
	bad "apt-get install in the fresh root (log: $DS_BUILD/deb-install-apt.log)"
	finish
fi

if in_root 'dpkg -i /debs/*.deb' > "$DS_BUILD/deb-install-dpkg.log" 2>&1 &&
   in_root "for p in ${pkgs[*]}; do dpkg-query -W -f='\${Status}\n' \$p | grep -qx 'install ok installed' || exit 1; done"; then
	ok "dpkg -i ${pkgs[*]}: installed"
else
	cat "$DS_BUILD/deb-install-dpkg.log"
	bad "dpkg -i ${pkgs[*]}"
	finish
fi
check_file() { in_root "[ -e '$1' ]" && ok "installed: $1" || bad "installed: $1"; }
for f in /usr/bin/deferstack /usr/lib/"$(dpkg-architecture -qDEB_HOST_MULTIARCH)"/libdeferstack.so.1 \
	/usr/include/deferstack/deferstack.h /usr/share/man/man1/deferstack.1.gz \
	/lib/systemd/system/deferstack-profiler.service /etc/default/deferstack; do
	check_file "$f"
done
# the always-on profiler: its user made by postinst, the unit not enabled
if in_root 'getent passwd deferstack > /dev/null && getent group deferstack > /dev/null &&
	[ -z "$(find /etc/systemd/system -name deferstack-profiler.service 2>/dev/null)" ]'; then
	ok "deferstack-profiler.service: user and group deferstack made, the unit not enabled"
else
	bad "deferstack-profiler.service: no user deferstack, or the unit enabled"
fi

if in_root 'cd /src && tests/cli/installed.sh /usr/bin/deferstack' > "$DS_BUILD/deb-install-cli.log" 2>&1; then
	ok "tests/cli/installed.sh on the installed files: $(tail -1 "$DS_BUILD/deb-install-cli.log")"
else
	grep -E '^(FAIL|rc=)' -A3 "$DS_BUILD/deb-install-cli.log" | head -30
	bad "tests/cli/installed.sh: $(tail -1 "$DS_BUILD/deb-install-cli.log") (log: $DS_BUILD/deb-install-cli.log)"
fi

left=$(in_root "dpkg --purge ${pkgs[*]} > /dev/null 2>&1 &&
	ls -d /usr/bin/deferstack /usr/lib/*/libdeferstack* /usr/lib/*/pkgconfig/deferstack.pc \
		/usr/include/deferstack /usr/share/man/man1/deferstack.1.gz /usr/share/doc/*deferstack* \
		/lib/systemd/system/deferstack-profiler.service /etc/default/deferstack \
		/var/lib/deferstack 2>/dev/null" ||
	true)
if [ -z "$left" ] && in_root "! dpkg-query -W -f='\${Status}\n' ${pkgs[*]} 2>/dev/null | grep -q installed"; then
	ok "dpkg --purge: all three gone, no files left"
else
	bad "dpkg --purge left: $left"
fi
ds_log "deb-install: $(( $(date +%s) - t0 ))s in the root"
finish
