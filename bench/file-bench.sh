#!/usr/bin/env bash
# File-level benchmark against perf: a 1 M-sample perf.data file (classic
# callchains) and the same samples as a raw deferred file (USER_DEFERRED
# markers + CALLCHAIN_DEFERRED records), synthesized on the host by
# bench/mkbench.c (no QEMU, no root for the files; see its header for the
# model), then wall time (best of BENCH_RUNS, default 3) and peak RSS
# (/usr/bin/time -v) of
#   deferstack report --folded, deferstack script,
#   perf script, perf report --stdio
# on each file: host perf (6.1) on the classic file, Debian sid's perf 7.x
# (the chroot of guest/fetch-perf7.sh, build/perf7-root; run it first, or
# BENCH_FETCH_PERF7=1) on the deferred file (and on the classic one).
# Prints the figures and the ratios against perf script; figures only,
# never fails on a number.
#
#   bench/file-bench.sh       (make bench-file)
#   env: BENCH_SAMPLES (1000000), BENCH_RUNS (3), BENCH_DIR (build/bench-file),
#        BENCH_PERF_REPORT=1 (also perf report --stdio: minutes and up to
#        9 GB each; off by default, it once took the machine down),
#        BENCH_VMEM_KB (8000000: ulimit -v of every command measured),
#        BENCH_PERF_TIMEOUT (900: seconds, perf's commands under timeout),
#        BENCH_FETCH_PERF7=1 (build the sid chroot if missing),
#        BENCH_KINDS ("classic deferred": which files are measured),
#        BENCH_DS_BASE=PATH (also measure another deferstack binary, e.g. an
#        older build, as ds-base-*: before/after figures in one run)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/guest/lib.sh"
samples=${BENCH_SAMPLES:-1000000}
runs=${BENCH_RUNS:-3}
dir=${BENCH_DIR:-$DS_BUILD/bench-file}
p7root=$DS_BUILD/perf7-root
ds=$root/out/deferstack
perf_report=${BENCH_PERF_REPORT:-0}
ptimeout="timeout ${BENCH_PERF_TIMEOUT:-900}"
# perf report on a 1 M-sample file takes GBs (8.7 GB here): never unbounded
ulimit -v "${BENCH_VMEM_KB:-8000000}" 2>/dev/null || true

command -v /usr/bin/time > /dev/null || ds_need_pkgs time
make -s -C "$root" out/deferstack out/bench/mkbench || exit 1
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# ---- inputs: the workload (a real ELF with 320 functions), a copy of
# libc (the same path in the sid chroot), kallsyms, the two files
if [ ! -x "$dir/bench_workload" ] || [ "$root/bench/mkbench.c" -nt "$dir/bench_workload" ]; then
	"$root/out/bench/mkbench" --source 320 > "$dir/bench_workload.c" &&
		cc -O1 -g -fno-omit-frame-pointer -fno-inline "$dir/bench_workload.c" \
			-o "$dir/bench_workload" || exit 1
fi
cp /lib/x86_64-linux-gnu/libc.so.6 "$dir/libc.so.6.new" && mv "$dir/libc.so.6.new" "$dir/libc.so.6" 2>/dev/null ||
	cmp -s /lib/x86_64-linux-gnu/libc.so.6 "$dir/libc.so.6" || exit 1
cp /proc/kallsyms "$dir/kallsyms"
for kind in classic deferred; do
	f=$dir/$kind.data
	stamp="$samples $(md5sum < "$dir/kallsyms" | cut -c1-8)"
	if [ ! -f "$f" ] || [ "$root/out/bench/mkbench" -nt "$f" ] || [ "$(cat "$f.stamp" 2>/dev/null)" != "$stamp" ]; then
		flag=; [ $kind = deferred ] && flag=--deferred
		"$root/out/bench/mkbench" $flag -n "$samples" "$f" "$dir/bench_workload" \
			"$dir/libc.so.6" "$dir/kallsyms" || exit 1
		echo "$stamp" > "$f.stamp"
	fi
done

# ---- perf 7.x: sid's perf in its chroot, the inputs at the same paths
perf7=
if [ ! -x "$p7root/usr/bin/perf" ] && [ "${BENCH_FETCH_PERF7:-0}" = 1 ]; then
	"$root/guest/fetch-perf7.sh" > /dev/null || true
fi
if [ -e "$p7root/.perf7-done" ] && chroot "$p7root" perf --version > /dev/null 2>&1; then
	# perf 7.x's script and report die of SIGSEGV at once without /proc
	# in the root (its --version does not need it)
	if ! awk -v m="$p7root/proc" '$2 == m { f = 1 } END { exit !f }' /proc/self/mounts; then
		mkdir -p "$p7root/proc" && mount --bind /proc "$p7root/proc" &&
			trap 'umount -l "$p7root/proc"' EXIT
	fi
	mkdir -p "$p7root$dir"
	for f in bench_workload libc.so.6 kallsyms classic.data deferred.data; do
		ln -f "$dir/$f" "$p7root$dir/$f" 2>/dev/null || cp "$dir/$f" "$p7root$dir/$f"
	done
	perf7="$ptimeout chroot $p7root perf"
fi
perf6=$(command -v perf || true)

# measure NAME CMD...: best wall time of $runs runs, peak RSS of that run;
# stdout to /dev/null, stderr kept in $dir/NAME.err
declare -A wall rss
measure() {
	local name=$1 best= bestrss= i t m
	shift
	for i in $(seq "$runs"); do
		/usr/bin/time -v -o "$dir/$name.time" "$@" > /dev/null 2> "$dir/$name.err"
		read -r t m _ < <(awk -f "$root/bench/time-v.awk" "$dir/$name.time")
		if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then
			best=$t bestrss=$m
		fi
	done
	wall[$name]=$best rss[$name]=$bestrss
	printf '  %-28s %8.2f s %10d KiB   %s\n' "$name" "$best" "$bestrss" "$*"
}

ratio() {	# ratio NAME REF: speed-up (REF time / NAME time), memory (NAME / REF)
	local n=$1 r=$2
	[ -n "${wall[$n]:-}" ] && [ -n "${wall[$r]:-}" ] || return 0
	awk -v tn="${wall[$n]}" -v tr="${wall[$r]}" -v mn="${rss[$n]}" -v mr="${rss[$r]}" \
		-v n="$n" -v r="$r" 'BEGIN { printf "  %-28s %6.1fx the speed of %-20s memory 1/%.1f of it\n",
		n, tr / (tn > 0 ? tn : 0.005), r, mr / (mn > 0 ? mn : 1) }'
}

echo "=== file benchmark: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(uname -r)"
echo "  deferstack $(git -C "$root" describe --always --dirty 2>/dev/null), ${perf6:+$($perf6 --version)}${perf7:+, sid: $($perf7 --version)}"
echo "  files: $(ls -l "$dir/classic.data" | awk '{ printf "classic.data %.0f MB", $5 / 1e6 }'), $(ls -l "$dir/deferred.data" | awk '{ printf "deferred.data %.0f MB", $5 / 1e6 }'), $samples samples each; best of $runs"
ks=$dir/kallsyms
cd "$dir" || exit 1
kinds=${BENCH_KINDS:-classic deferred}
for kind in $kinds; do
	f=$dir/$kind.data
	echo "--- $kind.data"
	measure "ds-report-folded-$kind" "$ds" report --folded -i "$f" -k "$ks"
	measure "ds-script-$kind" "$ds" script -i "$f" -k "$ks"
	if [ -n "${BENCH_DS_BASE:-}" ]; then
		measure "ds-base-report-folded-$kind" "$BENCH_DS_BASE" report --folded -i "$f" -k "$ks"
		measure "ds-base-script-$kind" "$BENCH_DS_BASE" script -i "$f" -k "$ks"
	fi
	if [ $kind = classic ] && [ -n "$perf6" ]; then
		measure "perf6-script-$kind" $ptimeout "$perf6" script -i "$f" --kallsyms "$ks"
		[ "$perf_report" = 0 ] ||
			measure "perf6-report-$kind" $ptimeout "$perf6" report --stdio -i "$f" --kallsyms "$ks"
	fi
	# --no-inline: sid's minbase root has no addr2line, and perf 7.x dies of
	# SIGPIPE at its first inline lookup without it (perf 6.1 does not look
	# inline frames up in script by default either)
	if [ -n "$perf7" ]; then
		measure "perf7-script-$kind" $perf7 script --no-inline -i "$f" --kallsyms "$ks"
		[ "$perf_report" = 0 ] ||
			measure "perf7-report-$kind" $perf7 report --no-inline --stdio -i "$f" --kallsyms "$ks"
	fi
done
[ -n "$perf6" ] || echo "  (no host perf: no perf 6.1 figures)"
[ -n "$perf7" ] || echo "  (no sid chroot in $p7root: no perf 7.x figures; guest/fetch-perf7.sh builds it)"
echo "--- ratios (deferstack against perf script on the same file; target >= 10x, memory <= 1/5)"
for kind in $kinds; do
	ref=perf7-script-$kind
	[ $kind = classic ] && [ -n "$perf6" ] && ref=perf6-script-$kind
	for n in ds-report-folded-$kind ds-script-$kind ${BENCH_DS_BASE:+ds-base-report-folded-$kind ds-base-script-$kind}; do
		ratio "$n" "$ref"
		[ $kind = classic ] && [ -n "$perf7" ] && ratio "$n" "perf7-script-$kind"
		[ "$perf_report" = 0 ] || ratio "$n" "${ref/script/report}"
	done
done
exit 0
