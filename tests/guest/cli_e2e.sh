#!/bin/sh
# The deferstack CLI end to end in the guest: record the example workload with
# deferred callchains, per task and system-wide (-a), and check that the
# stitched profiles contain the workload's real call chains. With DS_OUT set,
# the report, folded stacks, flame graph and script output are left there.
out=${DS_OUT:-/tmp/cli_e2e}
mkdir -p "$out"
cd "$out" || exit 1
fail=0
check() {
	if eval "$2"; then echo "#   ok: $1"; else echo "# FAIL: $1"; fail=1; fi
}
read_chain='wl_read_top;wl_read_mid;wl_read_leaf;wl_syscall3'
spin_chain='wl_spin_top;wl_spin_mid;wl_spin_leaf'
# Bytes per read of the workload: 8 MiB, less on the slow debug kernel
# (DS_PERIOD_SCALE), where KASAN makes a read so dear that a 2 s run
# could end after one read and one 5 ms spin round, with no spin samples.
rd=$((8388608 / ${DS_PERIOD_SCALE:-1}))

# Per task: the command and its children.
deferstack record --mode defer -F 2000 -o task.data -- \
	/tests/example_workload 2000 $rd 2> record-task.log
rc=$?
sed 's/^/# /' record-task.log
check "record --mode defer (task) exits 0" "[ $rc -eq 0 ]"
deferstack report -i task.data --folded > task.folded 2> report-task.log
check "task profile has the stitched read chain" "grep -q '$read_chain' task.folded"
check "task profile has the stitched spin chain" "grep -q '$spin_chain' task.folded"
check "task profile has kernel frames under the read chain" \
	"grep '$read_chain' task.folded | grep -q 'read'"
deferstack report -i task.data --text > report.txt 2>/dev/null
deferstack report -i task.data --svg flamegraph.svg 2>/dev/null
check "flame graph written" "grep -q '<svg' flamegraph.svg && grep -q wl_read_leaf flamegraph.svg"
deferstack script -i task.data > script.txt 2>/dev/null
check "script shows cookies" "grep -qi cookie script.txt"

# System-wide: one event per CPU while the workload runs.
# The workload outlives the recording by far: the CLI's start (kallsyms,
# one event per CPU) is slow under emulation.
/tests/example_workload 6000 $rd > /dev/null &
wl=$!
deferstack record --mode defer -a -d 2 -F 1000 -o system.data 2> record-system.log
rc=$?
wait $wl
sed 's/^/# /' record-system.log
check "record --mode defer -a exits 0" "[ $rc -eq 0 ]"
deferstack report -i system.data --folded > system.folded 2> report-system.log
sed 's/^/# /' report-system.log
check "system-wide profile has the stitched read chain" "grep -q '$read_chain' system.folded"
check "system-wide profile has the stitched spin chain" "grep -q '$spin_chain' system.folded"

# System-wide across CPU hotplug: CPU 1 goes offline and comes back during
# the recording. Its events are closed, then opened again (the kernel
# detaches an offline CPU's events for good), and the workload, run on CPU 1
# only once it is back, is in the profile with its stitched chains.
if [ -w /sys/devices/system/cpu/cpu1/online ]; then
	deferstack record --mode defer -a -F 1000 -o hotplug.data 2> record-hotplug.log &
	rp=$!
	# the file is there once the events are: then they are enabled
	n=0
	while [ ! -s hotplug.data ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
	sleep 1
	echo 0 > /sys/devices/system/cpu/cpu1/online
	off=$?
	sleep 2
	echo 1 > /sys/devices/system/cpu/cpu1/online
	on=$?
	# the recorder looks once a second; its events opened, it says so
	n=0
	while ! grep -q 'cpu 1 came online' record-hotplug.log && [ $n -lt 100 ]; do
		sleep 0.1; n=$((n + 1))
	done
	# 1 MiB reads: 8 MiB ones leave the spin rounds few samples on the debug kernel
	taskset -c 1 /tests/example_workload 2000 1048576 > /dev/null
	kill -INT $rp
	wait $rp
	rc=$?
	sed 's/^/# /' record-hotplug.log
	check "record -a across CPU 1 offline ($off) and online ($on) exits 0" "[ $rc -eq 0 ] && [ $off -eq 0 ] && [ $on -eq 0 ]"
	check "it closed CPU 1's events and opened them again" \
		"grep -q 'cpu 1 went offline' record-hotplug.log && grep -q 'cpu 1 came online' record-hotplug.log"
	deferstack script -i hotplug.data > hotplug.script 2> /dev/null
	cpu1=$(grep -c '^ *example_workloa.* \[001\] ' hotplug.script)
	cpu0=$(grep -c '^ *example_workloa.* \[000\] ' hotplug.script)
	check "the workload's samples on CPU 1 after it came back ($cpu1; on CPU 0: $cpu0)" \
		"[ ${cpu1:-0} -ge 20 ] && [ ${cpu0:-0} -eq 0 ]"
	deferstack report -i hotplug.data --folded > hotplug.folded 2> report-hotplug.log
	sed 's/^/# /' report-hotplug.log
	check "their stacks stitched: the read and spin chains" \
		"grep -q '$read_chain' hotplug.folded && grep -q '$spin_chain' hotplug.folded"
	# the workload's heaviest stacks, and its first sample on CPU 1
	grep '^example_workloa' hotplug.folded | sort -t' ' -k2 -rn | head -3 | cut -c1-300 |
		sed 's/^/#   /'
	grep -m1 -A8 '^ *example_workloa.* \[001\] ' hotplug.script | sed 's/^/#   /'
else
	echo "# hotplug: SKIP: CPU 1 cannot go offline here"
fi

# Always-on: -a in windows, switched by SIGUSR2 (a timed window may outlast
# its time while the emulated machine is slow). Each window is a complete
# recording, and a deferred record goes to its sample's window, so each
# stitches on its own.
/tests/example_workload 20000 $rd > /dev/null &
wl=$!
deferstack record --mode defer -a -F 1000 --switch-output -o win.data 2> record-win.log &
rec=$!
windows_made() {
	n=0
	for f in win.data.[0-9]*; do
		case $f in *.kallsyms|*.vdso|*.perf-maps|*.folded|*.log) ;; *) [ -e "$f" ] && n=$((n + 1)) ;; esac
	done
	echo $n
}
# Each signal once the window before it is open (a switch synthesizes every
# process again: seconds on the debug kernel).
for want in 1 2 3; do
	i=0
	while [ $i -lt 600 ] && [ "$(windows_made)" -lt $want ]; do
		sleep 0.1
		i=$((i + 1))
	done
	sleep 1.5
	if [ $want -lt 3 ]; then kill -USR2 $rec; else kill -INT $rec; fi
done
wait $rec
rc=$?
kill $wl 2> /dev/null
wait $wl 2> /dev/null
sed 's/^/# /' record-win.log
check "record -a --switch-output, two SIGUSR2 and a SIGINT: exits 0" "[ $rc -eq 0 ]"
windows=0 unread=0 stitched=0 unmatched=0
for w in win.data.[0-9]*; do
	case $w in *.kallsyms|*.vdso|*.perf-maps|*.folded|*.log) continue ;; esac
	windows=$((windows + 1))
	deferstack report -i "$w" --folded > "$w.folded" 2> "$w.log" || unread=$((unread + 1))
	sed "s|^|# $w: |" "$w.log"
	s=$(sed -n 's/.* \([0-9][0-9]*\) stitched.*/\1/p' "$w.log" | head -1)
	u=$(sed -n 's/.* \([0-9][0-9]*\) unmatched.*/\1/p' "$w.log" | head -1)
	stitched=$((stitched + ${s:-0}))
	unmatched=$((unmatched + ${u:-0}))
done
check "at least 3 windows ($windows), each read by report ($unread not)" \
	"[ $windows -ge 3 ] && [ $unread -eq 0 ]"
check "windows together have the stitched read and spin chains" \
	"cat win.data.*.folded | grep -q '$read_chain' && cat win.data.*.folded | grep -q '$spin_chain'"
check "window boundaries leave few samples unstitched ($unmatched of $((stitched + unmatched)))" \
	"[ $stitched -ge 100 ] && [ $((unmatched * 20)) -le $stitched ]"

# Off-CPU: every context switch of a shell that sleeps, with deferred stacks.
deferstack record --mode defer -e context-switches -o cs.data -- \
	sh -c 'for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do sleep 0.02; done' \
	2> record-cs.log
rc=$?
sed 's/^/# /' record-cs.log
check "record -e context-switches exits 0" "[ $rc -eq 0 ]"
deferstack report -i cs.data --folded > cs.folded 2> report-cs.log
sed 's/^/# /' report-cs.log
stitched=$(sed -n 's/.* \([0-9][0-9]*\) stitched.*/\1/p' report-cs.log | head -1)
unmatched=$(sed -n 's/.* \([0-9][0-9]*\) unmatched.*/\1/p' report-cs.log | head -1)
check "off-CPU samples stitched (${stitched:-none})" "[ ${stitched:-0} -ge 20 ]"
check "no off-CPU sample left unstitched (${unmatched:-?})" "[ \"${unmatched:-x}\" = 0 ]"
check "off-CPU profile shows the scheduler" "grep -q schedule cs.folded"

# Without frame pointers: the same workload built by other means, its
# flame graph checked to the last sample. whole_check TAG BINARY: record it,
# write TAG.folded and flamegraph-TAG.svg, check every sample in the
# workload's functions (wl_*) has them in call order, called by
# workload_run called by main.
whole_check() {
	tag=$1 bin=$2 what=$3
	deferstack record --mode defer -F 2000 -o $tag.data -- $bin 2000 $rd \
		2> record-$tag.log
	rc=$?
	sed 's/^/# /' record-$tag.log
	check "$what: record exits 0" "[ $rc -eq 0 ]"
	deferstack report -i $tag.data --folded > $tag.folded 2> report-$tag.log
	deferstack report -i $tag.data --svg flamegraph-$tag.svg 2>/dev/null
	check "$what: the read chain from main" \
		"grep -q 'main;workload_run;$read_chain' $tag.folded"
	check "$what: the spin chain from main" \
		"grep -q 'main;workload_run;$spin_chain' $tag.folded"
	set -- $(awk '{
		n = $NF; stack = $0; sub(/ [0-9]+$/, "", stack); k = split(stack, f, ";")
		first = 0
		for (i = 1; i <= k; i++) if (f[i] ~ /^wl_/) { first = i; break }
		if (!first) next
		total += n
		if (first < 3 || f[first - 1] != "workload_run" || f[first - 2] != "main") next
		if (f[first] == "wl_read_top") split("wl_read_top wl_read_mid wl_read_leaf wl_syscall3", e, " ")
		else if (f[first] == "wl_spin_top") split("wl_spin_top wl_spin_mid wl_spin_leaf", e, " ")
		else next
		ok = 1
		for (j = first; j <= k && f[j] ~ /^wl_/; j++) if (f[j] != e[j - first + 1]) ok = 0
		if (ok) whole += n
	} END { print whole + 0, total + 0 }' $tag.folded)
	whole=$1 total=$2
	check "$what: every sample in the workload's functions has its whole chain (period $whole of $total ns)" \
		"[ $total -ge 100 ] && [ $whole -eq $total ]"
	check "$what: flame graph written" "grep -q wl_read_leaf flamegraph-$tag.svg"
}

# Built by sid's gcc without frame pointers and with SFrame tables
# (guest/build-sframe-workloads.sh). Our kernel walks it by SFrame; mainline
# has no SFrame walk of user stacks, so it is ours only.
stats=/sys/kernel/debug/unwind_user/stats
nofp=/opt/sframe/example_workload_nofp
if [ -x $nofp ] && [ -e $stats ]; then
	whole_check nofp $nofp "no frame pointers"
else
	echo "# no-frame-pointer variant skipped: no SFrame workloads or no SFrame walk"
fi
# Built as Debian builds (gcc -O2, no frame pointers, no SFrame), dynamic, on
# Debian's own libc (tests/guest/Makefile): walked by .eh_frame.
debian=/opt/debian/example_workload_debian
if [ -x $debian ] && grep -q frames_ehframe $stats 2>/dev/null; then
	whole_check debian $debian "built as Debian builds"
else
	echo "# Debian-built variant skipped: no such build or no .eh_frame walk"
fi
exit $fail
