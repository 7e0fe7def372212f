#!/usr/bin/env bash
# Every benchmark, one command: writes bench/RESULTS.md (the tables, the
# command behind each figure, kernel versions, date, machine). Figures only:
# it never fails on a number, but it exits non-zero when a benchmark is
# broken (a guest did not run or printed no figures).
#
#   bench/run-all.sh          (make bench-all)
#
# Steps (progress on stderr):
#  1. our kernel (guest/build-kernel.sh fast), the stock 7.x reference
#     (guest/fetch-reference.sh), perf 7.x (guest/fetch-perf7.sh; without
#     network the perf 7.x rows are left out, saying so);
#  2. per kernel, one boot under QEMU -icount (DS_QEMU_ICOUNT: virtual time
#     = guest instructions) running bench/guest/cost-bench.sh: 5 workloads x
#     (none, classic, deferred, perf 7.x fp / dwarf / fp,defer), REPS
#     repetitions each, plus a kernel-side profile of the workloads in
#     BENCH_PROFILE; then one plain boot (host time) with the same workloads
#     and our own configurations, for the wall-time spread; then one more
#     boot under -icount running bench/guest/sframe-bench.sh: the cost of
#     one user frame to the deferred walk, SFrame tables (/opt/sframe/sf_depth)
#     against frame pointers (sf_depth_fp), at stack depths 1 and 100 (on
#     the stock reference, which has no SFrame walker, sf_depth's rows are a
#     frame-pointer walk of code built without frame pointers, labelled so);
#  3. bench/file-bench.sh on the 1 M-sample deferred file (perf script and
#     perf report of perf 7.x against deferstack report --folded / script);
#  4. bench/always-on.sh: deferstack record -a in windows against perf 7.x
#     --switch-output, the whole guest at 99 Hz (bench/RESULTS-always-on.md);
#  5. bench/mkresults.py turns the logs into bench/RESULTS.md.
#
# env: BENCH_REPS (7), BENCH_ICOUNT_SHIFT (0: 1 ns per guest instruction),
#      BENCH_SF_CALLS (3000: system calls per sframe-bench run),
#      BENCH_KERNELS ("fast ref"), BENCH_PROFILE ("short,deep,cpu,offcpu"; "-": none),
#      BENCH_FILE (1: run step 3), BENCH_ALWAYS_ON (1: run step 4),
#      BENCH_OUT (build/bench-all),
#      BENCH_RESULTS (bench/RESULTS.md),
#      BENCH_LOCK (a file: each heavy step runs under flock on it, for
#      machines shared with other builds)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/guest/lib.sh"
reps=${BENCH_REPS:-7}
sf_calls=${BENCH_SF_CALLS:-3000}
shift_n=${BENCH_ICOUNT_SHIFT:-0}
read -ra kernels <<< "${BENCH_KERNELS:-fast ref}"
profile=${BENCH_PROFILE:-short,deep,cpu,offcpu}
out=${BENCH_OUT:-$DS_BUILD/bench-all}
results=${BENCH_RESULTS:-$root/bench/RESULTS.md}
t_start=$(date +%s)
broken=0

progress() { ds_log "bench-all [$(( ($(date +%s) - t_start) / 60 )) min]: $*"; }
heavy() {
	if [ -n "${BENCH_LOCK:-}" ]; then flock "$BENCH_LOCK" "$@"; else "$@"; fi
}

mkdir -p "$out"
# only what an earlier run left (never rm -rf a directory named by the user)
rm -f "$out"/*.log "$out"/*.out "$out/meta"
{
	echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "host_kernel=$(uname -r)"
	echo "cpus=$(nproc)"
	echo "cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
	echo "mem=$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "qemu=$(qemu-system-x86_64 --version 2>/dev/null | head -1)"
	echo "commit=$(git -C "$root" describe --always --dirty 2>/dev/null)"
	echo "reps=$reps"
	echo "sf_calls=$sf_calls"
	echo "icount_shift=$shift_n"
	echo "profile=$profile"
} > "$out/meta"

progress "1/5 kernels and perf 7.x"
heavy "$root/guest/build-kernel.sh" fast > /dev/null || ds_die "our kernel did not build"
"$root/guest/fetch-reference.sh" > /dev/null || ds_die "no reference kernel"
echo "ref_version=$(cat "$DS_BUILD/ref/version" 2>/dev/null)" >> "$out/meta"
echo "fast_version=$(cat "$DS_BUILD/obj-fast/include/config/kernel.release" 2>/dev/null)" >> "$out/meta"
perf7=$(heavy "$root/guest/fetch-perf7.sh")
rc=$?
if [ $rc -ne 0 ]; then
	progress "no perf 7.x (fetch-perf7.sh exit $rc): its rows are left out"
	perf7=
fi
echo "perf7=$([ -n "$perf7" ] && cat "$DS_BUILD/perf7/version" 2>/dev/null)" >> "$out/meta"

# boot TAG KERNEL SUITE [ENV...]: one guest run, its console kept as TAG.log;
# broken when it printed no figure line (cost-bench: "cost: ", sframe-bench:
# "sfcost: " or its skip message).
boot() {
	local tag=$1 k=$2 suite=$3 rc pat='^cost: '
	shift 3
	case $suite in sframe-bench.sh*) pat='^(sfcost: |# sframe-bench: skipped)' ;; esac
	progress "$tag: booting $k, suite $suite"
	heavy env "$@" "$root/guest/run-guest.sh" -k "$k" -s "$suite" -t 2400 > "$out/$tag.out" 2>&1
	rc=$?
	cp "$DS_BUILD/logs/$k-$suite.log" "$out/$tag.log" 2>/dev/null
	if [ $rc -ne 0 ] || ! grep -aEq "$pat" "$out/$tag.log" 2>/dev/null; then
		progress "$tag: BROKEN (run-guest exit $rc; console in $out/$tag.log)"
		tail -5 "$out/$tag.out" >&2
		broken=1
	else
		progress "$tag: $(grep -acE "$pat" "$out/$tag.log") figure lines"
	fi
}

progress "2/5 guest runs: ${kernels[*]}, $reps repetitions each"
for k in "${kernels[@]}"; do
	# the suite's tests are split at commas: the workloads joined by '+'
	boot "$k-icount" "$k" "cost-bench.sh:$reps:1:$(echo "$profile" | tr ',' '+')" \
		DS_QEMU_ICOUNT="$shift_n" DS_INITRD_EXTRA="$perf7"
	boot "$k-wall" "$k" "cost-bench.sh:$reps:0:-"
	boot "$k-sframe" "$k" "sframe-bench.sh:$reps:$sf_calls" DS_QEMU_ICOUNT="$shift_n"
done

if [ "${BENCH_FILE:-1}" = 1 ]; then
	progress "3/5 stitcher against perf 7.x on the 1 M-sample deferred file"
	heavy env BENCH_KINDS=deferred BENCH_PERF_REPORT=1 "$root/bench/file-bench.sh" \
		> "$out/file-bench.out" 2>&1
	grep -q 'ds-report-folded-deferred' "$out/file-bench.out" ||
		{ progress "file benchmark BROKEN"; tail -5 "$out/file-bench.out" >&2; broken=1; }
else
	progress "3/5 file benchmark skipped (BENCH_FILE=0)"
fi

if [ "${BENCH_ALWAYS_ON:-1}" = 1 ]; then
	progress "4/5 always-on: deferstack record -a in windows against perf 7.x --switch-output"
	heavy env BENCH_OUT="$out" "$root/bench/always-on.sh" > "$out/always-on.out" 2>&1 ||
		{ progress "always-on benchmark BROKEN"; tail -5 "$out/always-on.out" >&2; broken=1; }
else
	progress "4/5 always-on skipped (BENCH_ALWAYS_ON=0)"
fi

progress "5/5 writing $results"
python3 "$root/bench/mkresults.py" "$out" > "$results.new" &&
	mv "$results.new" "$results" || { progress "mkresults failed"; broken=1; }
progress "done in $(( $(date +%s) - t_start ))s$([ $broken -ne 0 ] && echo ', with BROKEN benchmarks')"
exit $broken
