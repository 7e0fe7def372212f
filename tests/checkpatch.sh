#!/usr/bin/env bash
# Every patch of the series is `checkpatch.pl --strict` clean (with the kernel
# tree's own checkpatch, after guest/build-kernel.sh extracted it).
set -uo pipefail
. "$(dirname "$0")/../guest/lib.sh"

[ -x "$DS_SRC/scripts/checkpatch.pl" ] || "$DS_ROOT/guest/build-kernel.sh" fast >/dev/null ||
	exit 1
pass=0 fail=0
while read -r p; do
	case $p in ''|'#'*) continue ;; esac
	# Debian's python3 (with ply and git), not a user's own python first in PATH.
	if out=$(cd "$DS_SRC" && PATH=/usr/bin:/bin:$PATH perl scripts/checkpatch.pl --strict -q \
		"$DS_ROOT/kernel/patches/$p" 2>&1) && [ -z "$out" ]; then
		pass=$((pass + 1))
		echo "ok - $p"
	else
		fail=$((fail + 1))
		echo "not ok - $p"
		echo "$out" | sed 's/^/    /'
	fi
done < "$DS_ROOT/kernel/patches/series"
echo "checkpatch: $pass passed, $fail failed"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
