#!/usr/bin/env bash
# Benchmark on a REAL recording of this machine (issue 23): records
#   perf record -F 10000 -g -a -o DIR/real.data -- sleep 10
# at run time (never kept, never committed: DIR is a temporary directory
# removed at the end unless BENCH_KEEP=1), while a compiler load runs
# (clang -O2 over lib/*.c in a loop, so that libLLVM and libclang-cpp are
# met as on a busy build host; BENCH_REAL_LOAD=mixed, the default where g++
# and python3 are installed, adds a g++ -O2 loop over a C++ file of the
# standard library's containers, algorithms and streams and a python3 loop
# over its json, re, decimal and sqlite3 modules, for the issue's >= 10 k
# distinct functions; none: only what the machine does anyway), then times
# (median of BENCH_RUNS, default 3) and measures the peak RSS
# (/usr/bin/time -v) of
#   deferstack report --folded, deferstack script, perf script
# on that file, all with the kallsyms copied at recording time, output to
# /dev/null; prints the samples, the distinct functions met (per object, the
# top ones), and the ratios against perf script.  Then the linearity case:
# bench/symscale (out/bench/symscale) resolves growing numbers of distinct
# functions of a generated object of BENCH_SCALE_FUNCS (40000) functions
# and of libLLVM when installed, against libdwfl's per-address lookup.
# Figures only: never fails on a number; exits 0 with a note when it cannot
# record (no perf, no permission for -a).
#
#   bench/real-bench.sh       (make bench-real)
#   env: BENCH_RUNS (3), BENCH_REAL_SECONDS (10), BENCH_REAL_FREQ (10000),
#        BENCH_REAL_LOAD (mixed | clang | none; the most the machine has),
#        BENCH_SCALE_FUNCS (40000), BENCH_KEEP=1 (keep DIR), BENCH_DIR (DIR),
#        BENCH_DS_BASE=PATH (also measure another deferstack binary, e.g. a
#        build of main, as ds-base-*: before/after figures in one run)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${BENCH_RUNS:-3}
secs=${BENCH_REAL_SECONDS:-10}
freq=${BENCH_REAL_FREQ:-10000}
nfuncs=${BENCH_SCALE_FUNCS:-40000}
ds=$root/out/deferstack
perf=$(command -v perf || true)

if [ -z "$perf" ]; then
	echo "real-bench: skipped: no perf to record with (Debian: linux-perf)"
	exit 0
fi
if [ ! -x /usr/bin/time ]; then
	echo "real-bench: skipped: /usr/bin/time missing (Debian: time)"
	exit 0
fi
make -s -C "$root" out/deferstack out/bench/symscale || exit 1
dir=${BENCH_DIR:-}
if [ -z "$dir" ]; then
	dir=$(mktemp -d /tmp/ds-real-bench.XXXXXX) || exit 1
	[ "${BENCH_KEEP:-0}" = 1 ] || trap 'rm -rf "$dir"' EXIT
else
	mkdir -p "$dir" || exit 1
fi
cd "$dir" || exit 1

# ---- the recording, with the compiler load
load=${BENCH_REAL_LOAD:-mixed}
if [ "$load" = mixed ] && ! { command -v g++ && command -v python3; } > /dev/null; then
	load=clang
fi
command -v clang > /dev/null || load=none
loadpids=()
if [ "$load" = mixed ]; then
	cat > "$dir/load.cc" <<'CXX'
#include <algorithm>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>
int main(int argc, char **argv)
{
	std::map<std::string, std::vector<int>> m;
	std::unordered_map<int, std::string> u;
	std::regex re("([a-z]+)=([0-9]+)");
	std::ostringstream os;
	for (int i = 0; i < argc * 1000; i++) {
		m[std::to_string(i % 97)].push_back(i);
		u[i] = std::to_string(i);
	}
	for (auto &kv : m) {
		std::sort(kv.second.rbegin(), kv.second.rend());
		os << kv.first << '=' << kv.second.size() << ' ';
	}
	std::string s = os.str();
	for (std::sregex_iterator it(s.begin(), s.end(), re), end; it != end; ++it)
		std::cout << (*it)[1] << (*it)[2];
	return (int)u.size() & 1;
}
CXX
	cat > "$dir/load.py" <<'PY'
import decimal, json, re, sqlite3
db = sqlite3.connect(":memory:")
db.execute("create table t (k text, v real)")
for i in range(20000):
    d = {"k": str(i), "v": [i, i * 2, {"x": str(decimal.Decimal(i) / 7)}]}
    s = json.dumps(d, sort_keys=True)
    m = re.search(r'"x": "([0-9.]+)"', s)
    db.execute("insert into t values (?, ?)", (json.loads(s)["k"], float(m.group(1))))
db.execute("select k, sum(v) from t group by substr(k, 1, 2) order by 2").fetchall()
PY
	(while :; do g++ -O2 -c "$dir/load.cc" -o /dev/null 2> /dev/null; done) &
	loadpids+=($!)
	(while :; do python3 "$dir/load.py"; done) &
	loadpids+=($!)
fi
if [ "$load" = mixed ] || [ "$load" = clang ]; then
	(
		while :; do
			for f in "$root"/lib/*.c; do
				clang -O2 -std=c11 -D_GNU_SOURCE -I"$root/include" -I"$root/lib" \
					-c "$f" -o /dev/null 2> /dev/null
			done
		done
	) &
	loadpids+=($!)
fi
[ "$load" = mixed ] && load="mixed: clang, g++, python3"
"$perf" record -F "$freq" -g -a -o "$dir/real.data" -- sleep "$secs" > "$dir/record.out" 2>&1
rc=$?
cp /proc/kallsyms "$dir/kallsyms"
for pid in "${loadpids[@]}"; do
	kill "$pid" 2> /dev/null
	wait "$pid" 2> /dev/null
done
if [ $rc -ne 0 ] || [ ! -s "$dir/real.data" ]; then
	echo "real-bench: skipped: perf record -a failed (root or perf_event_paranoid <= 0 needed):"
	tail -3 "$dir/record.out"
	exit 0
fi

# measure NAME CMD...: median wall time, median CPU time (user + system)
# and median peak RSS of $runs runs (the CPU time varies less than the wall
# time on a shared machine)
declare -A wall rss cpu
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
measure() {
	local name=$1 i t m c ts=() ms=() cs=()
	shift
	for i in $(seq "$runs"); do
		/usr/bin/time -v -o "$dir/$name.time" "$@" > /dev/null 2> "$dir/$name.err"
		read -r t m c < <(awk -f "$root/bench/time-v.awk" "$dir/$name.time")
		ts+=("$t")
		ms+=("$m")
		cs+=("$c")
	done
	wall[$name]=$(printf '%s\n' "${ts[@]}" | median)
	rss[$name]=$(printf '%s\n' "${ms[@]}" | median)
	cpu[$name]=$(printf '%s\n' "${cs[@]}" | median)
	printf '  %-22s %7.2f s wall %6.2f s CPU %9d KiB   (runs: %s s)\n' "$name" "${wall[$name]}" \
		"${cpu[$name]}" "${rss[$name]}" "${ts[*]}"
}

ratio() {	# ratio NAME REF
	awk -v tn="${wall[$1]}" -v tr="${wall[$2]}" -v mn="${rss[$1]}" -v mr="${rss[$2]}" \
		-v cn="${cpu[$1]}" -v cr="${cpu[$2]}" -v n="$1" -v r="$2" \
		'BEGIN { printf "  %-22s %6.1fx the speed of %s (CPU time: %.1fx), memory 1/%.1f of it\n",
		n, tr / (tn > 0 ? tn : 0.005), r, cr / (cn > 0 ? cn : 0.005), mr / (mn > 0 ? mn : 1) }'
}

echo "=== real-recording benchmark: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(uname -r)"
echo "  deferstack $(git -C "$root" describe --always --dirty 2>/dev/null), $("$perf" --version)"
echo "  load average at the start: $(cut -d' ' -f1-3 /proc/loadavg) (other jobs share the machine: times vary)"
echo "  recorded: perf record -F $freq -g -a -- sleep $secs (load: $load), $(ls -l "$dir/real.data" | awk '{ printf "%.0f MB", $5 / 1e6 }')"
ks=$dir/kallsyms
measure ds-report-folded "$ds" report --folded -i "$dir/real.data" -k "$ks"
echo "  $(grep -m1 '^summary:' "$dir/ds-report-folded.err" | cut -c1-60)..."
measure ds-script "$ds" script -i "$dir/real.data" -k "$ks"
if [ -n "${BENCH_DS_BASE:-}" ]; then
	measure ds-base-report-folded "$BENCH_DS_BASE" report --folded -i "$dir/real.data" -k "$ks"
	measure ds-base-script "$BENCH_DS_BASE" script -i "$dir/real.data" -k "$ks"
fi
measure perf-script "$perf" script -i "$dir/real.data" --kallsyms "$ks"
# distinct functions: (symbol, object) pairs of the frames script prints
"$ds" script -i "$dir/real.data" -k "$ks" 2> /dev/null |
	awk -f "$root/bench/real-funcs.awk" 2> "$dir/per-object"
sort -rn "$dir/per-object" | head -5 | awk -F'\t' '{ printf "    %7d  %s\n", $1, $2 }'
echo "--- ratios against perf script (targets: >= 10x the speed, <= 1/2 the memory)"
ratio ds-report-folded perf-script
ratio ds-script perf-script
if [ -n "${BENCH_DS_BASE:-}" ]; then
	ratio ds-base-report-folded perf-script
	ratio ds-base-script perf-script
fi

# ---- linearity: distinct functions of one object
echo "--- linearity: distinct functions resolved (bench/symscale; libdwfl per address for comparison)"
awk -v n="$nfuncs" -f "$root/bench/gen-funcs.awk" > "$dir/gen.s"
if cc -shared -nostdlib -Wl,--build-id -o "$dir/gen.so" "$dir/gen.s" 2> "$dir/gen.err"; then
	"$root/out/bench/symscale" -d 1000 "$dir/gen.so" | sed 's/^/  /'
else
	echo "  (generated object: cc failed: $(head -1 "$dir/gen.err"))"
fi
llvm=$(ls /usr/lib/llvm-*/lib/libLLVM*.so* 2> /dev/null | head -1)
if [ -n "$llvm" ]; then
	"$root/out/bench/symscale" -d 1000 "$(readlink -f "$llvm")" | sed 's/^/  /'
else
	echo "  (no libLLVM installed: /usr/lib/llvm-*/lib/libLLVM*.so*)"
fi
