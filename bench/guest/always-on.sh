#!/bin/sh
# In the guest (bench/always-on.sh): the cost of always-on profiling of the
# whole machine at 99 Hz, deferstack record -a in windows against perf 7.x
# record -a --switch-output, in one boot. Figures only; exits non-zero only
# when a configuration could not be measured at all.
#
#   always-on.sh cost:REPS:SCALE:SWITCHES   (under QEMU -icount)
#   always-on.sh mem:WINDOWS:PERF_WINDOWS    (a plain boot: memory only)
#
# cost: the fixed work below, unprofiled and under each recorder (its first
#   window open, no switch during the work), REPS times interleaved: the
#   steady cost is the guest time the same work takes more, as a share of
#   it (the work keeps both CPUs busy and icount time counts the
#   instructions of both, the recorder's included). Then SWITCHES window
#   switches by SIGUSR2 under light churn: the recorder's CPU time per
#   switch (each window synthesizes every process, the kernel symbols and
#   the build-ids again). Always-on with windows of W seconds then costs
#   the steady share + switch cost / (W x CPUs).
# mem: WINDOWS switches by SIGUSR2 under churn (PERF_WINDOWS for perf, whose
#   switch is slow here), each once the one before is done: the recorder's
#   RSS before, after, and its peak, and the time per switch.
#
# The work, all at once, a fixed amount each (SCALE 1: about 1.3 s of guest
# time): the cost_bench workloads (short and long reads, 100-deep stacks, a
# user loop, off-CPU ping-pong; cost_bench pins them to CPU 1) and a
# fork/exec churn (busybox true, then a shell running sleep 0).
#
# Lines for the host: "aon: ..." per timed run, "aonsw: ..." per switch run,
# "aonmem: ..." per memory run. Everything else is "# " diagnostics.
# run-suite passes NAME:A:B as the arguments A B
phase=${1:-}
[ $# -gt 0 ] && shift
P=/opt/perf7/perf
freq=99
fail=0
d=/tmp/aon
mkdir -p $d
hz=$(getconf CLK_TCK 2> /dev/null || echo 100)

# utime + stime ticks of PID and its children waited for (the pprof writer)
pticks() { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$1/stat" 2> /dev/null || echo 0; }
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status" 2> /dev/null; }
# CLOCK_MONOTONIC in ns (/proc/uptime has 10 ms steps)
now_ns() { awk '/^now at/ { print $3; exit }' /proc/timer_list; }

# the fixed work, all at once; returns when all of it is done (not
# "wait" alone: the recorder is a child too)
work() {
	pids=
	for w in "short $((30 * $1))" "long $((8 * $1))" "deep $((60 * $1))" \
		"cpu $((20 * $1))" "offcpu $((40 * $1))"; do
		# shellcheck disable=SC2086
		/tests/cost_bench ${w% *} none ${w#* } > /dev/null &
		pids="$pids $!"
	done
	(
		i=0
		while [ $i -lt $((150 * $1)) ]; do
			/bin/busybox true
			/bin/sh -c 'sleep 0'
			i=$((i + 1))
		done
	) &
	pids="$pids $!"
	# shellcheck disable=SC2086
	wait $pids
}

# start TOOL WINDOW: TOOL's recorder writing windows $d/TOOL/w.data.*
# (WINDOW: a time, or "signal"), in the background as $rec; returns once
# its first window is open. The recorders as the service runs them:
# deferstack-profiler.service with its defaults, and perf's equivalent.
start() {
	rm -rf "${d:?}/$1" && mkdir -p "$d/$1"
	sw=--switch-output
	[ "$2" = signal ] || sw=--switch-output=$2
	case $1 in
	deferstack)
		deferstack record -a -F $freq -e cpu-clock $sw --keep 2 --pprof-dir "$d/$1/pprof" \
			-o "$d/$1/w.data" > "$d/$1/out" 2> "$d/$1/err" &
		;;
	deferstack-nopprof)
		deferstack record -a -F $freq -e cpu-clock $sw --keep 2 \
			-o "$d/$1/w.data" > "$d/$1/out" 2> "$d/$1/err" &
		;;
	perf7)
		$P record -a -F $freq --call-graph fp,defer $sw --switch-max-files=2 \
			-o "$d/$1/w.data" > "$d/$1/out" 2> "$d/$1/err" &
		;;
	esac
	rec=$!
	i=0
	while [ $i -lt 600 ] && ! ls "$d/$1"/w.data* > /dev/null 2>&1; do
		sleep 0.1
		i=$((i + 1))
	done
	sleep 1
	kill -0 $rec 2> /dev/null
}
# closed windows so far: deferstack's "window" lines, perf's "Dump" lines
switched() { cat "$d/$1/err" "$d/$1/out" 2> /dev/null | grep -c -e '^deferstack: window ' -e 'Dump '; }
# switch TOOL N: N switches by SIGUSR2, each once the one before is done
switch_n() {
	n=0
	while [ $n -lt "$2" ] && kill -0 $rec 2> /dev/null; do
		kill -USR2 $rec
		n=$((n + 1))
		j=0
		while [ $j -lt 600 ] && [ "$(switched "$1")" -lt $n ]; do
			sleep 0.05
			j=$((j + 1))
		done
	done
	done_sw=$(switched "$1")
}
stop() {
	kill -INT $rec
	wait $rec
	grep -i 'lost\|error\|warn\|summary of all' "$d/$1/err" | head -4 | sed "s/^/#   $1: /"
}

tools=deferstack
if [ -x "$P" ]; then
	export HOME=/tmp/perf7home PAGER=cat
	mkdir -p "$HOME"
	echo "# $($P --version)"
	tools="$tools perf7"
else
	echo "# no perf 7.x in this initramfs: no perf rows"
fi

case $phase in
cost)
	reps=${1:-3} scale=${2:-1} nsw=${3:-20}
	echo "# always-on cost: kernel $(uname -r), $(nproc) CPUs, $freq Hz, reps $reps, scale $scale, $nsw switches"
	work "$scale" # warm-up: page cache, the programs' first exec
	r=1
	while [ "$r" -le "$reps" ]; do
		for t in none $tools; do
			rec=
			if [ $t != none ] && ! start $t 1h; then
				echo "# FAIL: $t did not start"
				sed 's/^/#   /' "$d/$t/err" | tail -5
				fail=1
				continue
			fi
			p0=0
			[ -n "$rec" ] && p0=$(pticks $rec)
			t0=$(now_ns)
			work "$scale"
			t1=$(now_ns)
			p1=0
			[ -n "$rec" ] && p1=$(pticks $rec)
			bytes=0
			if [ -n "$rec" ]; then
				stop $t
				# the window, its side files (deferstack) and pprof
				bytes=$(cat "$d/$t"/w.data.* "$d/$t"/pprof/* 2> /dev/null | wc -c)
			fi
			echo "aon: tool=$t rep=$r ns=$((t1 - t0)) rec_ticks=$((p1 - p0)) hz=$hz bytes=$bytes"
		done
		r=$((r + 1))
	done
	# the switch without the pprof writer too: what each part costs
	for t in $tools deferstack-nopprof; do
		(while :; do /bin/busybox true; sleep 0.05; done) &
		churn=$!
		if start $t signal; then
			p0=$(pticks $rec)
			t0=$(now_ns)
			switch_n $t "$nsw"
			t1=$(now_ns)
			p1=$(pticks $rec)
			echo "aonsw: tool=$t switches=$n done=$done_sw ns=$((t1 - t0)) rec_ticks=$((p1 - p0)) hz=$hz" \
				"processes=$(ls -d /proc/[0-9]* | wc -l)"
			stop $t
		else
			echo "# FAIL: $t did not start"
			fail=1
		fi
		kill $churn 2> /dev/null
		wait $churn 2> /dev/null
	done
	;;
mem)
	nwin=${1:-100}
	# perf's own switch takes about a minute of this emulated machine's
	# time: fewer windows for it
	pwin=${2:-5}
	echo "# always-on mem: kernel $(uname -r), $(nproc) CPUs, $freq Hz, $nwin windows" \
		"($pwin for perf)"
	for t in $tools; do
		want=$nwin
		[ $t = perf7 ] && want=$pwin
		(while :; do /bin/busybox true; /tests/cost_bench short none 1 > /dev/null; done) &
		churn=$!
		if start $t signal; then
			rss1=$(status_kb $rec VmRSS)
			t0=$(now_ns)
			switch_n $t "$want"
			t1=$(now_ns)
			rss=$(status_kb $rec VmRSS)
			hwm=$(status_kb $rec VmHWM)
			echo "aonmem: tool=$t windows=$n done=$done_sw ns=$((t1 - t0)) rss_start_kb=${rss1:-0}" \
				"rss_kb=${rss:-0} hwm_kb=${hwm:-0}"
			ls -l "$d/$t" | sed "s/^/#   $t: /"
			tail -3 "$d/$t/err" | sed "s/^/#   $t: /"
			stop $t
		else
			echo "# FAIL: $t did not start"
			fail=1
		fi
		kill $churn 2> /dev/null
		wait $churn 2> /dev/null
	done
	;;
*)
	echo "# FAIL: always-on.sh cost:REPS:SCALE:SWITCHES | mem:WINDOWS"
	fail=1
	;;
esac
exit $fail
