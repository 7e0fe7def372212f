#!/usr/bin/env bash
# Which TCG setting runs the guests without the emulator's own failures:
# runs perf_fuzz N times (seeds 1, 2, 3 in turn) per kernel, TCG thread mode
# and pin mode, one boot per run, and prints one line per run and a table of
# passes, failures by kind (int3 oops, other splat, hang, fuzzer failure),
# calls and boot+run time. Measures, never fails on a result.
#
#   bench/emulator-compare.sh [-n RUNS] [-d SECONDS] [-j PARALLEL]
#                             [-k "ref fast"] [-m "single multi"] [-p "pin free"]
#
# -j 2 runs two guests at once: fair only for thread=single (one host thread
# per guest); multi-threaded guests take both CPUs each.
set -uo pipefail
. "$(dirname "$0")/../guest/lib.sh"

runs=10 secs=60 par=1 kernels="ref fast" modes="single multi" pins="pin free"
while getopts "n:d:j:k:m:p:" opt; do
	case $opt in
	n) runs=$OPTARG ;;
	d) secs=$OPTARG ;;
	j) par=$OPTARG ;;
	k) kernels=$OPTARG ;;
	m) modes=$OPTARG ;;
	p) pins=$OPTARG ;;
	*) exit 2 ;;
	esac
done

out=$DS_BUILD/emulator-compare
mkdir -p "$out"
DS_INITRD=$("$DS_ROOT/guest/make-initramfs.sh") || exit 1
export DS_INITRD
for k in $kernels; do
	ds_guest_image "$k" >/dev/null || exit 1
done

# one_run KERNEL MODE PIN I: one boot; prints "KERNEL MODE PIN SEED VERDICT CALLS SECONDS LOG"
one_run() {
	local k=$1 m=$2 p=$3 i=$4 seed suite tag log rc t0 verdict calls
	seed=$(( (i - 1) % 3 + 1 ))
	suite=perf_fuzz:$secs:$seed
	[ "$p" = pin ] && suite+=:pin
	tag=$m.$i
	log=$out/$k-$m-$p-$i.log
	t0=$(date +%s)
	# the per-test budget ends a stuck fuzzer with the kernel's state dumped
	DS_RUN_TAG=$tag DS_QEMU_TCG_THREAD=$m DS_TEST_BUDGET=$((secs + 120)) \
		"$DS_ROOT/guest/run-guest.sh" -k "$k" -s "$suite" -t $((secs * 2 + 300)) \
		> "$log.host" 2>&1
	rc=$?
	cp "$DS_BUILD/logs/$k-$suite.$tag.log" "$log" 2>/dev/null
	calls=$(grep -aoE '# [0-9]+ calls in' "$log" | awk '{print $2}' | tail -1)
	if [ $rc -eq 0 ]; then
		verdict=pass
	elif grep -aq 'Oops: int3' "$log"; then
		verdict=int3
	elif grep -aqE 'timed out|still running after' "$log" "$log.host"; then
		verdict=hang
	elif grep -aqE "$DS_SPLAT_RE" "$log"; then
		verdict=splat
	else
		verdict=fail
	fi
	echo "$k $m $p $seed $verdict ${calls:-0} $(( $(date +%s) - t0 )) $log"
}

results=$out/results.$(date +%Y%m%dT%H%M%S)
: > "$results"
for k in $kernels; do
	for m in $modes; do
		for p in $pins; do
			for i in $(seq 1 "$runs"); do
				while [ "$(jobs -rp | wc -l)" -ge "$par" ]; do wait -n; done
				one_run "$k" "$m" "$p" "$i" | tee -a "$results" &
			done
		done
	done
done
wait

echo
echo "perf_fuzz ${secs}s, $runs runs per row, seeds 1-3 in turn ($results):"
printf '%-6s %-7s %-5s %5s %5s %5s %6s %5s %10s %9s\n' kernel tcg keys pass int3 splat hang fail 'calls/run' 's/run'
awk -f "$DS_ROOT/bench/emulator-table.awk" "$results" | sort
