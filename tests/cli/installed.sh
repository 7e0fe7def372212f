#!/usr/bin/env bash
# The CLI's tests against an installed deferstack (the Debian packages), from
# the installed files only: nothing of this tree is built but a consumer of
# the library and a workload.
#
#   tests/cli/installed.sh [DEFERSTACK]        (default /usr/bin/deferstack)
#
# tests/deb-install.sh runs it in a fresh bookworm root after dpkg -i:
#   - deferstack --version is the Makefile's VERSION; --help of every command;
#   - man deferstack renders (man-db, no groff warning);
#   - report --folded of the bundled recording (tests/cli/data) is the expected
#     output; the perf-report tables, filters and script lines of
#     tests/cli/check-report.sh, with the installed CLI;
#   - a consumer (tests/cli/so_consumer.c) compiled with pkg-config's flags
#     against the installed libdeferstack.so.1, and statically against the .a;
#   - record -> report of a workload (when perf events are allowed).
# Ends with "installed: N passed, N failed, N skipped"; exit 1 on a failure.
set -uo pipefail
DS=${1:-/usr/bin/deferstack}
DSAN=$DS	# check-report.sh runs "$DSAN"
cd "$(dirname "$0")/../.." || exit 1
T=$(mktemp -d /tmp/ds-installed.XXXXXX)
trap 'rm -rf "$T"' EXIT
unset DEBUGINFOD_URLS
pass=0 fail=0 skip=0
ok()   { pass=$((pass + 1)); echo "PASS: $1"; }
bad()  { fail=$((fail + 1)); echo "FAIL: $1"; }
skp()  { skip=$((skip + 1)); echo "SKIP: $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; return 1; fi; }
expect_usage() { # pattern args...: exit 2 with the pattern on stderr
	local pat=$1 rc; shift
	timeout 30 "$DS" "$@" > /dev/null 2> "$T/usage.err"
	rc=$?
	if [ $rc -eq 2 ] && grep -q -- "$pat" "$T/usage.err"; then
		ok "rejected: $*"
	else
		echo "rc=$rc"; cat "$T/usage.err"; bad "rejected: $*"
	fi
}

version=$(sed -n 's/^VERSION := //p' Makefile)
check "$DS --version: deferstack $version" bash -c "[ \"\$('$DS' --version)\" = 'deferstack $version' ]"
for c in record report script convert; do
	check "$c --help" bash -c "'$DS' $c --help | grep -q 'usage: deferstack $c'"
done
check "man -w deferstack: the packaged page" \
	bash -c "[ \"\$(man -w deferstack)\" = /usr/share/man/man1/deferstack.1.gz ]"
MANWIDTH=80 MANPAGER=cat man --warnings deferstack > "$T/man.txt" 2> "$T/man.err"
check "man deferstack renders, no warnings" \
	bash -c "grep -q 'deferstack record' '$T/man.txt' && grep -q -- '--version' '$T/man.txt' && [ ! -s '$T/man.err' ]" ||
	cat "$T/man.err"

# the bundled recording, and check-report.sh on it
cp tests/cli/data/deferred.data "$T/m.data"
cp tests/cli/data/deferred.ks "$T/flame.ks"
"$DS" report -i "$T/m.data" -k "$T/flame.ks" --folded > "$T/m.folded" 2> "$T/m.err"
check "report --folded of tests/cli/data/deferred.data = deferred.folded" \
	cmp -s "$T/m.folded" tests/cli/data/deferred.folded || diff tests/cli/data/deferred.folded "$T/m.folded"
check "report: the stitch summary" \
	grep -q 'summary: 6 samples, 2 deferred records, 4 stitched (1 record-first)' "$T/m.err"
. tests/cli/check-report.sh

# the library through pkg-config, as its users build with it
check "pkg-config --modversion deferstack: $version" \
	bash -c "[ \"\$(pkg-config --modversion deferstack)\" = '$version' ]"
pc_cflags=$(pkg-config --cflags deferstack)
pc_libs=$(pkg-config --libs deferstack)
pc_static=$(pkg-config --static --libs-only-l libdw zlib libzstd)
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror $pc_cflags tests/cli/so_consumer.c -o "$T/so_consumer" \
	$pc_libs 2> "$T/cc.err"
check "consumer built with pkg-config's flags links libdeferstack.so.1" \
	bash -c "readelf -d '$T/so_consumer' | grep -q 'NEEDED.*\[libdeferstack.so.1\]'" || cat "$T/cc.err"
check "... and runs with the installed library: 6 samples, 4 stitched" \
	bash -c "'$T/so_consumer' '$T/m.data' | grep -qx 'samples=6 stitched=4 kernel_only=2 profiled=6'"
# shellcheck disable=SC2086
cc -std=c11 $pc_cflags tests/cli/so_consumer.c -o "$T/so_static" \
	-l:libdeferstack.a $pc_static -lstdc++ 2> "$T/ccs.err"
check "... and with the installed .a (lib/README.md's static line)" \
	bash -c "! readelf -d '$T/so_static' | grep -q libdeferstack && '$T/so_static' - < '$T/m.data' | grep -qx 'samples=6 stitched=4 kernel_only=2 profiled=6'" ||
	cat "$T/ccs.err"

# record -> report of a workload, in whatever mode the running kernel offers
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 3)
if [ "$(id -u)" != 0 ] && [ "$paranoid" -gt 1 ]; then
	skp "record (needs root or perf_event_paranoid <= 1)"
else
	cc -O0 -g -fno-omit-frame-pointer -fno-inline tests/workload/burn.c -o "$T/burn"
	"$DS" record --mode auto -F 499 -o "$T/e2e.data" -- "$T/burn" 0.5 2> "$T/rec.err"
	rc=$?
	sed 's/^/# /' "$T/rec.err"
	check "record --mode auto -- burn: exit 0, a summary" \
		bash -c "[ $rc -eq 0 ] && grep -q 'summary: [1-9][0-9]* samples' '$T/rec.err'"
	"$DS" report -i "$T/e2e.data" --folded > "$T/e2e.folded" 2> /dev/null
	check "report --folded: the workload's stack, symbolized" \
		grep -q '^burn;.*main;burn_outer;burn_middle;burn_leaf ' "$T/e2e.folded"
	"$DS" report -i "$T/e2e.data" --svg "$T/e2e.svg" 2> /dev/null
	check "report --svg: a flame graph" grep -q burn_leaf "$T/e2e.svg"
fi

echo
echo "installed: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
