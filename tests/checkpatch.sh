#!/usr/bin/env bash
# Every patch of the series is `checkpatch.pl --strict` clean (with the kernel
# tree's own checkpatch, after guest/build-kernel.sh extracted it).
set -uo pipefail
. "$(dirname "$0")/../guest/lib.sh"

[ -x "$DS_SRC/scripts/checkpatch.pl" ] || "$DS_ROOT/guest/build-kernel.sh" fast >/dev/null ||
	exit 1
pass=0 fail=0
# A patch that adds a file gets checkpatch's "does MAINTAINERS need updating?"
# unless it touches MAINTAINERS. Instead of a hunk to quiet it, check that
# every file the series adds lies under an F: pattern of the patched tree's
# MAINTAINERS (a directory ending in /, or a glob).
covered() {
	local f=$1 pat
	while read -r pat; do
		# shellcheck disable=SC2053 # $pat is a glob
		[[ $pat == */ && $f == "$pat"* ]] || [[ $f == $pat ]] && return 0
	done < <(sed -n 's/^F:[[:space:]]*//p' "$DS_SRC/MAINTAINERS")
	return 1
}
while read -r f; do
	if covered "$f"; then
		pass=$((pass + 1))
		echo "ok - $f is in MAINTAINERS"
	else
		fail=$((fail + 1))
		echo "not ok - $f, added by the series, is under no F: entry of MAINTAINERS"
	fi
done < <(git -C "$DS_SRC" diff --name-only --diff-filter=A debian-base HEAD)
# One checkpatch.pl per CPU at a time (it is single-threaded perl), results
# in the series' order.
T=$(mktemp -d /tmp/ds-checkpatch.XXXXXX)
trap 'rm -rf "$T"' EXIT
mapfile -t patches < <(grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$DS_ROOT/kernel/patches/series")
for i in "${!patches[@]}"; do
	# Debian's python3 (with ply and git), not a user's own python first in PATH.
	(cd "$DS_SRC" && PATH=/usr/bin:/bin:$PATH perl scripts/checkpatch.pl --strict -q --ignore FILE_PATH_CHANGES \
		"$DS_ROOT/kernel/patches/${patches[$i]}" > "$T/$i.out" 2>&1
	echo $? > "$T/$i.rc") &
	[ "$(jobs -rp | wc -l)" -lt "$DS_JOBS" ] || wait -n
done
wait
for i in "${!patches[@]}"; do
	p=${patches[$i]}
	if [ "$(cat "$T/$i.rc" 2>/dev/null)" = 0 ] && [ ! -s "$T/$i.out" ]; then
		pass=$((pass + 1))
		echo "ok - $p"
	else
		fail=$((fail + 1))
		echo "not ok - $p"
		sed 's/^/    /' "$T/$i.out"
	fi
done
echo "checkpatch: $pass passed, $fail failed"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
