#!/usr/bin/env bash
# The cost of always-on profiling (issue 24), in the guest on our kernel:
# deferstack record -a -F 99 in windows, as deferstack-profiler.service runs
# it, side by side with perf 7.x record -a -F 99 --call-graph fp,defer
# --switch-output. Two boots of the fast kernel:
#   1. under QEMU -icount (time = guest instructions): a fixed mix of work
#      (bench/guest/always-on.sh cost) unprofiled and under each recorder,
#      AON_REPS times interleaved, then AON_SWITCHES window switches each;
#   2. a plain boot: AON_WINDOWS windows (AON_PERF_WINDOWS for perf), the
#      recorder's memory and the time a switch takes.
# Writes bench/RESULTS-always-on.md (bench/mkresults.py puts it into
# RESULTS.md). Figures only: never fails on a number; exits non-zero when a
# guest did not run or printed no figures.
#
#   bench/always-on.sh        (also step 5 of bench/run-all.sh)
#   env: AON_REPS (3), AON_SCALE (2), AON_SWITCHES (10), AON_WINDOWS (100),
#        AON_PERF_WINDOWS (5: perf's switch takes about a minute in the guest),
#        BENCH_OUT (build/bench-all), AON_RESULTS (bench/RESULTS-always-on.md),
#        DS_INITRD (an initramfs built already)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/guest/lib.sh"
reps=${AON_REPS:-3}
scale=${AON_SCALE:-2}
nsw=${AON_SWITCHES:-10}
nwin=${AON_WINDOWS:-100}
pwin=${AON_PERF_WINDOWS:-5}
out=${BENCH_OUT:-$DS_BUILD/bench-all}
results=${AON_RESULTS:-$root/bench/RESULTS-always-on.md}
broken=0
mkdir -p "$out"

"$root/guest/build-kernel.sh" fast > /dev/null || ds_die "our kernel did not build"
perf7=$("$root/guest/fetch-perf7.sh") || { ds_log "no perf 7.x: its rows are left out"; perf7=; }
# DS_INITRD: an initramfs built already (perf 7.x is appended to it)
initrd=${DS_INITRD:-}
[ -n "$initrd" ] || initrd=$("$root/guest/make-initramfs.sh") || ds_die "no initramfs"

# boot TAG SUITE PATTERN [ENV...]
boot() {
	local tag=$1 suite=$2 pat=$3 rc
	shift 3
	ds_log "always-on: $tag: booting fast, suite $suite"
	env DS_INITRD="$initrd" DS_INITRD_EXTRA="$perf7" DS_RUN_TAG="$tag" DS_TEST_BUDGET=5000 "$@" \
		"$root/guest/run-guest.sh" -k fast -s "$suite" -t 5400 > "$out/$tag.out" 2>&1
	rc=$?
	cp "$DS_BUILD/logs/fast-$suite.$tag.log" "$out/$tag.log" 2> /dev/null
	if [ $rc -ne 0 ] || ! grep -aq "$pat" "$out/$tag.log" 2> /dev/null; then
		ds_log "always-on: $tag: BROKEN (run-guest exit $rc; console in $out/$tag.log)"
		broken=1
	fi
}
boot aon-cost "always-on.sh:cost:$reps:$scale:$nsw" '^aonsw: ' DS_QEMU_ICOUNT=0
boot aon-mem "always-on.sh:mem:$nwin:$pwin" '^aonmem: '

python3 - "$out" "$results" "$reps" "$scale" "$nsw" "$nwin" "$pwin" << 'EOF'
import re, statistics, sys, time
out, results, reps, scale, nsw, nwin, pwin = sys.argv[1:]

def kv(line):
    return dict(m.groups() for m in re.finditer(r"(\w+)=(\S+)", line))

def lines(tag, prefix):
    try:
        return [kv(l) for l in open("%s/%s.log" % (out, tag), errors="replace")
                if l.startswith(prefix)]
    except OSError:
        return []

def info(tag):
    try:
        return [l.strip() for l in open("%s/%s.log" % (out, tag), errors="replace")
                if l.startswith("# always-on") or l.startswith("# perf version")]
    except OSError:
        return []

cost = lines("aon-cost", "aon: ")
sw = {r["tool"]: r for r in lines("aon-cost", "aonsw: ")}
mem = {r["tool"]: r for r in lines("aon-mem", "aonmem: ")}
ns = {}
for r in cost:
    ns.setdefault(r["tool"], []).append(r)
name = {"deferstack": "deferstack record -a, defer mode (the service's command)",
        "deferstack-nopprof": "the same without --pprof-dir",
        "perf7": "perf 7.x record -a --call-graph fp,defer --switch-output"}
o = []
w = o.append
w("Always-on profiling of the whole guest (2 CPUs) at 99 Hz, fast kernel, `bench/always-on.sh`, "
  "%s." % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
w("")
for l in info("aon-cost") + info("aon-mem"):
    w("- `%s`" % l.lstrip("# "))
w("")
w("The work, all at once, a fixed amount (`bench/guest/always-on.sh`, scale %s): the "
  "cost_bench workloads (short and long reads, 100-deep stacks, a user loop, off-CPU "
  "ping-pong) and a fork/exec churn, both CPUs busy. Under `-icount shift=0` guest time "
  "counts the instructions of both vCPUs, so the extra time the same work takes under a "
  "recorder is the recorder's whole cost (its process, the samples, the deferred walks) "
  "as a share of the machine. Recorders: `deferstack record -a -F 99 -e cpu-clock "
  "--switch-output --keep 2 --pprof-dir DIR` (defer mode) and `perf record -a -F 99 "
  "--call-graph fp,defer --switch-output --switch-max-files=2`, started and their "
  "first window open before the work; no switch during it. Median of %s runs, "
  "interleaved; spread = (max - min) / median." % (scale, reps))
w("")
w("| recorder | work (guest ms) | steady cost | spread | recorder CPU | bytes per minute |")
w("|---|---:|---:|---:|---:|---:|")
base = statistics.median(int(r["ns"]) for r in ns.get("none", [])) if ns.get("none") else None
if base:
    b = [int(r["ns"]) for r in ns["none"]]
    w("| no profiling | %.0f | – | %.1f %% | – | – |" % (base / 1e6, (max(b) - min(b)) / base * 100))
steady = {}
for t in ("deferstack", "perf7"):
    rs = ns.get(t)
    if not rs or not base:
        continue
    v = [int(r["ns"]) for r in rs]
    m = statistics.median(v)
    steady[t] = (m - base) / m
    cpu = statistics.median(int(r["rec_ticks"]) / int(r["hz"]) for r in rs)
    by = statistics.median(int(r["bytes"]) for r in rs)
    w("| %s | %.0f | %.2f %% | %.1f %% | %.0f ms (%.2f %% of 2 CPUs) | %.1f MiB |" % (
        name[t], m / 1e6, steady[t] * 100, (max(v) - min(v)) / m * 100, cpu * 1e3,
        cpu / (2 * m / 1e9) * 100, by / (m / 1e9) * 60 / 1048576))
w("")
w("Window switches (SIGUSR2, %s each, under light churn; each window synthesizes every "
  "process, saves kernel symbols, build-ids and, for deferstack, its pprof), and the "
  "cost of always-on profiling with windows of W seconds: steady cost + switch CPU / "
  "(W x 2 CPUs)." % nsw)
w("")
w("| recorder | switches | recorder CPU per switch | processes | always-on, 10 s windows | 60 s windows |")
w("|---|---:|---:|---:|---:|---:|")
for t in ("deferstack", "deferstack-nopprof", "perf7"):
    r = sw.get(t)
    if not r:
        continue
    done = int(r.get("done", r["switches"]))
    per = int(r["rec_ticks"]) / int(r["hz"]) / max(done, 1)
    s = steady.get(t if t != "deferstack-nopprof" else "deferstack")
    f = lambda wsec: "%.2f %%" % ((s + per / (2 * wsec)) * 100) if s is not None else "–"
    w("| %s | %s | %.0f ms | %s | %s | %s |" % (name[t], done, per * 1e3,
                                               r.get("processes", "?"), f(10), f(60)))
w("")
w("Memory: %s windows (perf: %s) by SIGUSR2 in a plain boot (no -icount), each once the "
  "one before is done, churn running (a process and a cost_bench run at a time, all "
  "along): the recorder's RSS (kB)." % (nwin, pwin))
w("")
w("| recorder | windows | s per switch (guest) | RSS at the first window | RSS after | peak (VmHWM) |")
w("|---|---:|---:|---:|---:|---:|")
for t in ("deferstack", "perf7"):
    r = mem.get(t)
    if r:
        done = int(r.get("done", r["windows"]))
        w("| %s | %d | %.1f | %s | %s | %s |" % (name[t], done, int(r["ns"]) / 1e9 / max(done, 1),
                                               r["rss_start_kb"], r["rss_kb"], r["hwm_kb"]))
open(results, "w").write("\n".join(o) + "\n")
print("\n".join(o))
EOF
[ $? -eq 0 ] || broken=1
ds_log "always-on: $results$([ $broken -ne 0 ] && echo ', with BROKEN runs')"
exit $broken
