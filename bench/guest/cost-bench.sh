#!/bin/sh
# In the guest (suite cost-bench.sh:REPS:PERF7:PROFILE, bench/run-all.sh):
# every workload of cost_bench under every profiling configuration, REPS
# repetitions each in this one boot. Figures only; exits non-zero only when
# a configuration could not be measured at all.
#
#   REPS     repetitions per configuration (default 5)
#   PERF7    1: also perf 7.x record (fp, dwarf, fp,defer) when /opt/perf7 exists
#   PROFILE  workloads to profile kernel-side with perf 7.x (-a cpu-clock
#            every 5 us, enabled around the workload alone, flat symbols of
#            the workload's process) in classic and deferred mode, separated
#            by '+' (the harness splits a suite's tests at commas) or ','
#
# Lines for the host: "cost: ..." (cost_bench, one per repetition),
# "cost7: ..." (totals of a perf record run, from its perf.data),
# "prof: ..." (kernel profile tables). Everything else is "# " diagnostics.
reps=${1:-5}
perf7=${2:-0}
profile=${3:-}
[ "$profile" = - ] && profile=
P=/opt/perf7/perf
period=50000
workloads="short long deep cpu offcpu"
fail=0

echo "# cost-bench: kernel $(uname -r), reps $reps, period ${period}ns," \
	"clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"

for wl in $workloads; do
	for m in none classic deferred; do
		/tests/cost_bench "$wl" "$m" "$reps" "$period" || { echo "# FAIL: cost_bench $wl $m"; fail=1; }
	done
done

# event ARGS for perf record: what cost_bench samples itself.
perf_event() {
	if [ "$1" = offcpu ]; then echo "-e context-switches -c 1"; else echo "-e cpu-clock -c $period"; fi
}
# stat_count FILE NAME: the "NAME events: N" count of perf report --stats.
stat_count() {
	awk -v n="$2" '$1 == n && $2 == "events:" && !f { print $3; f = 1 } END { if (!f) print 0 }' "$1"
}

rm -f /tmp/ctl /tmp/ack
mkfifo /tmp/ctl /tmp/ack
if [ "$perf7" = 1 ] && [ -x "$P" ]; then
	export HOME=/tmp/perf7home PAGER=cat
	mkdir -p "$HOME"
	# perf script's source lines through libdw: the guest has no addr2line.
	printf '[addr2line]\n\tstyle = libdw\n' > "$HOME/.perfconfig"
	echo "# $($P --version)"
	for wl in $workloads; do
		for cg in fp dwarf defer; do
			case $cg in
			fp) opt="--call-graph fp" ;;
			dwarf) opt="--call-graph dwarf,8192" ;;
			defer) opt="--call-graph fp,defer" ;;
			esac
			d=/tmp/p7.data
			rm -f $d
			# Events start disabled (-D -1); cost_bench enables them around
			# each repetition through the control fifos, as it does its own.
			# shellcheck disable=SC2046,SC2086
			COST_CTL=/tmp/ctl COST_ACK=/tmp/ack \
			$P record $(perf_event "$wl") --no-inherit $opt -o $d \
				--control fifo:/tmp/ctl,/tmp/ack -D -1 -- \
				/tests/cost_bench "$wl" ext "$reps" "$period" > /tmp/p7.out 2> /tmp/p7.err
			rc=$?
			sed "s/mode=ext/mode=perf-$cg/" /tmp/p7.out
			if [ $rc -ne 0 ] || [ ! -s $d ]; then
				echo "# FAIL: perf record $opt on $wl (exit $rc)"
				sed 's/^/#   /' /tmp/p7.err | tail -5
				fail=1
				continue
			fi
			grep -i 'switching off\|lost' /tmp/p7.err | sed 's/^/#   record: /' | head -3
			$P report -i $d --stats > /tmp/p7.stats 2> /dev/null
			samples=$(stat_count /tmp/p7.stats SAMPLE)
			records=$(stat_count /tmp/p7.stats CALLCHAIN_DEFERRED)
			lost=$(stat_count /tmp/p7.stats LOST_SAMPLES)
			lostrec=$(stat_count /tmp/p7.stats LOST)
			# struct perf_file_header: the data section's size at byte 48.
			bytes=$(od -An -t u8 -j 48 -N 8 $d | tr -d ' ')
			# perf script: blank-line separated stacks; complete = reaches bench_root.
			$P script -i $d --comm cost_bench > /tmp/p7.script 2> /dev/null
			set -- $(awk '
				function done() { if (blk != "") { n++; if (blk ~ /bench_root/) c++ } blk = "" }
				/^[ \t]*$/ { done(); next }
				{ blk = blk "\n" $0 }
				END { done(); print n + 0, c + 0 }' /tmp/p7.script)
			echo "cost7: wl=$wl mode=perf-$cg samples=$samples stacks=$1 complete=$2" \
				"records=$records bytes=$bytes lost=$lost lostrec=$lostrec"
		done
	done
	rm -f /tmp/p7.data /tmp/p7.script
elif [ "$perf7" = 1 ]; then
	echo "# no perf 7.x in this initramfs: no perf record figures"
fi

# Kernel-side profile: which kernel functions the workload's time goes to,
# classic against deferred, from a system-wide cpu-clock profile of perf 7.x.
if [ -n "$profile" ] && [ -x "$P" ]; then
	export HOME=/tmp/perf7home PAGER=cat
	mkdir -p "$HOME"
	# 5 us periods over 20 repetitions: a few thousand samples of the workload.
	kperiod=5000 kreps=20
	for wl in $(echo "$profile" | tr ',+' '  '); do
		for m in classic deferred; do
			COST_CTL=/tmp/ctl COST_ACK=/tmp/ack \
			$P record -a -e cpu-clock -c $kperiod -o /tmp/k.data \
				--control fifo:/tmp/ctl,/tmp/ack -D -1 -- \
				/tests/cost_bench "$wl" "$m" "$kreps" "$period" > /tmp/k.out 2> /tmp/k.err ||
				{ echo "# FAIL: profile of $wl $m"; sed 's/^/#   /' /tmp/k.err | tail -5; fail=1; continue; }
			# Totals of the profiled repetitions: per-sample costs from the profile.
			awk -v t="$wl $m" '/^cost:/ { for (i = 2; i <= NF; i++) { split($i, kv, "=")
					if (kv[1] == "ns" || kv[1] == "samples" || kv[1] == "unwinds") s[kv[1]] += kv[2] }
				n++ }
				END { printf "prof: %s: # %d repetitions: %.3f ms, %d samples, %d user unwinds\n",
					t, n, s["ns"] / 1e6, s["samples"], s["unwinds"] }' /tmp/k.out
			$P report -i /tmp/k.data --stdio --no-children -n --comm cost_bench \
				--percentage relative --sort sym --percent-limit 1 2> /dev/null |
				awk -v t="$wl $m" '/^ *[0-9.]+%/ { print "prof: " t ": " $0 }
					/^# (Samples|Event count)/ { print "prof: " t ": " $0 }' | head -45
		done
	done
	rm -f /tmp/k.data
fi
exit $fail
