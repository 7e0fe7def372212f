#!/usr/bin/env bash
# Upstream perf 7.x (Debian sid's linux-perf) on our kernel and on the stock 7.x
# reference kernel: fetch and pack it (guest/fetch-perf7.sh) with sid's stock
# perl, python3, gzip and sort (guest/pack-stock.sh), then run the guest
# tests tests/guest/perf7_e2e.sh and stock_stacks.sh on -k fast and -k ref
# with them in the initramfs.
# Exit non-zero if either boot fails; SKIP (exit 0) if perf 7.x cannot be downloaded.
#
#   tests/perf7.sh [KERNEL...]      (default: fast ref)
#   tests/perf7.sh --prepare        fetch and pack only (tests/run-all.sh does
#                                   it before any guest boots: both are cached)
set -uo pipefail
. "$(dirname "$0")/../guest/lib.sh"

prepare_only=
[ "${1:-}" = --prepare ] && { prepare_only=1; shift; }
kernels=("$@")
[ ${#kernels[@]} -gt 0 ] || kernels=(fast ref)

t0=$(date +%s)
cpio=$("$DS_ROOT/guest/fetch-perf7.sh")
rc=$?
if [ $rc -eq 3 ]; then
	echo "SKIP: perf7: cannot download Debian sid's linux-perf (no network or mirror)"
	echo "perf7: 0 passed, 0 failed"
	exit 0
elif [ $rc -ne 0 ] || [ ! -f "$cpio" ]; then
	echo "perf7: fetch-perf7.sh failed (exit $rc)"
	echo "perf7: 0 passed, 1 failed"
	exit 1
fi
stock=$("$DS_ROOT/guest/pack-stock.sh") || {
	echo "perf7: guest/pack-stock.sh failed"
	echo "perf7: 0 passed, 1 failed"
	exit 1
}
cat "$cpio" "$stock" > "$DS_BUILD/perf7-stock.cpio.gz"
cpio=$DS_BUILD/perf7-stock.cpio.gz
ds_log "perf 7.x and stock programs archive $cpio ($(du -k "$cpio" | cut -f1) KiB) in $(( $(date +%s) - t0 ))s"
[ -z "$prepare_only" ] || exit 0

pass=0 fail=0
for k in "${kernels[@]}"; do
	t=$(date +%s)
	# perf 7.x starts slowly under emulation: perf7_e2e.sh takes 170 to
	# 320 s, over the guest's default budget of 300 s per test.
	if DS_TEST_BUDGET=600 DS_INITRD_EXTRA=$cpio "$DS_ROOT/guest/run-guest.sh" -k "$k" \
		-s perf7_e2e.sh,stock_stacks.sh -t 1500 \
		-o "$DS_BUILD/perf7-out/$k"; then
		pass=$((pass + 1))
		ds_log "perf7 on $k: PASS in $(( $(date +%s) - t ))s"
	else
		fail=$((fail + 1))
		ds_log "perf7 on $k: FAIL in $(( $(date +%s) - t ))s (console: $DS_BUILD/logs/$k-perf7_e2e.sh,stock_stacks.sh.log, files: $DS_BUILD/perf7-out/$k)"
	fi
done
echo "perf7: $pass passed, $fail failed"
[ $fail -eq 0 ]
