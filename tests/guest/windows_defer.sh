#!/bin/sh
# record --switch-output in defer mode, on a kernel that defers: every
# sample in exactly one window, every deferred record in its sample's window
# (so each window stitches on its own), SIGHUP and SIGTERM in the middle of a
# slow switch, and one pprof profile per window. tests/cli/check-windows.sh
# and check-winrobust.sh check the same on the host, in classic mode only:
# the host's kernel does not defer.
#
#   windows_defer.sh         the checks
#   windows_defer.sh pprof [HOST]
#                            only -a windows with --pprof-dir /out/pprof, for
#                            tests/pprof-two-boots.sh (merges two boots), the
#                            guest named HOST first (a machine of a fleet)
mode=${1:-checks}
# Its kernel paths are cli_e2e's (which runs on every kernel); what it adds
# is the CLI's windows, and on the debug kernel its minutes would push the
# suite past its time limit: it runs on the other kernels.
if [ "$mode" = checks ] && [ -e /sys/kernel/debug/kmemleak ]; then
	echo "# SKIP: the debug kernel (kmemleak): windows_defer runs on the fast kernel"
	exit 0
fi
wd=/tmp/windows_defer
rm -rf "$wd"
mkdir -p "$wd"
cd "$wd" || exit 1
fail=0
check() {
	if eval "$2"; then echo "#   ok: $1"; else echo "# FAIL: $1"; fail=1; fi
}
# the windows of FILE, oldest first
windows() { ls "$1".* 2> /dev/null | grep -E "^$1\.[0-9]{16}\$"; }
nwin() { windows "$1" | wc -l; }
# wait_windows FILE N: until N windows of FILE are open (a switch
# synthesizes every process again: seconds on the debug kernel)
wait_windows() {
	i=0
	while [ $i -lt 900 ] && [ "$(nwin "$1")" -lt "$2" ]; do
		sleep 0.1
		i=$((i + 1))
	done
}
# num WORD: the figure before the first word starting with WORD on the
# first line of stdin that has one (summary lines of record and report)
num() {
	awk -v w="$1" '{ for (i = 2; i <= NF; i++) if (index($i, w) == 1 && $(i - 1) ~ /^[0-9]+$/) {
		print $(i - 1); exit } }'
}
# said WORD LOG: the recorder's "summary of all windows" figure
said() { grep '^deferstack: summary of all windows:' "$2" | num "$1"; }
# field WORD FILE: the figure of report's summary line
field() { v=$(grep '^summary:' "$2" | num "$1"); echo "${v:-0}"; }
# read_windows FILE: report of each window into W.folded / W.err; sums in
# $samples $deferred $stitched $end (records not in the sample's window)
# $unfinished (windows our report calls not finished) $unread
read_windows() {
	samples=0 deferred=0 stitched=0 end=0 unfinished=0 unread=0
	for w in $(windows "$1"); do
		deferstack report -i "$w" --folded > "$w.folded" 2> "$w.err" || unread=$((unread + 1))
		grep -q 'not finished' "$w.err" && unfinished=$((unfinished + 1))
		grep '^summary:' "$w.err" | sed "s|^|# $w: |"
		samples=$((samples + $(field sample "$w.err")))
		deferred=$((deferred + $(field deferred "$w.err")))
		stitched=$((stitched + $(field stitched "$w.err")))
		e=$(sed -n 's/^summary: .* end \([0-9][0-9]*\),.*/\1/p' "$w.err" | head -1)
		end=$((end + ${e:-0}))
	done
}
# sums_match WHAT LOG: the samples and deferred records of all windows
# (read_windows' sums) are the recorder's, from its summary in LOG
sums_match() {
	s_said=$(said sample "$2")
	d_said=$(said deferred "$2")
	check "$1: samples of all windows ($samples) = the recorder's (${s_said:-none})" \
		"[ $samples -eq ${s_said:--1} ]"
	check "$1: deferred records of all windows ($deferred) = the recorder's (${d_said:-none})" \
		"[ $deferred -eq ${d_said:--1} ] && [ $deferred -gt 0 ]"
}
read_chain='wl_read_top;wl_read_mid;wl_read_leaf;wl_syscall3'
spin_chain='wl_spin_top;wl_spin_mid;wl_spin_leaf'

if [ "$mode" = pprof ]; then
	# A few windows of the whole machine, each with its profile, for the
	# host to merge with another boot's.
	mkdir -p /out/pprof
	[ -n "${2:-}" ] && echo "$2" > /proc/sys/kernel/hostname
	/tests/example_workload 60000 8388608 > /dev/null &
	wl=$!
	deferstack record --mode defer -a -F 499 --switch-output --pprof-dir /out/pprof \
		-o pp.data 2> pp.err &
	rec=$!
	for want in 1 2 3; do
		wait_windows pp.data $want
		sleep 2
		if [ $want -lt 3 ]; then kill -USR2 $rec; else kill -INT $rec; fi
	done
	wait $rec
	rc=$?
	kill $wl 2> /dev/null
	wait $wl 2> /dev/null
	sed 's/^/# /' pp.err
	n=$(ls /out/pprof/*.pb.gz 2> /dev/null | wc -l)
	check "record -a --pprof-dir, two SIGUSR2 and a SIGINT: exit 0, 3 profiles ($n)" \
		"[ $rc -eq 0 ] && [ $n -eq 3 ]"
	exit $fail
fi

# --- per task, 1 s windows: each sample in one window, each window's
# samples stitched by the deferred records in that same window
# A switch saves the window's kernel symbols and build-ids: seconds on the
# debug kernel, hence the workload's time scaled by the kernel's slowness.
deferstack record --mode defer -F 499 --switch-output=1s -o t.data -- \
	/tests/example_workload $((6000 * ${DS_PERIOD_SCALE:-1})) 8388608 > /dev/null 2> t.log
rc=$?
sed 's/^/# /' t.log
check "per task, defer mode, 1 s windows: exit 0, $(nwin t.data) windows (>= 3)" \
	"[ $rc -eq 0 ] && [ $(nwin t.data) -ge 3 ]"
read_windows t.data
check "per task: every window read, none unfinished ($unread, $unfinished)" \
	"[ $unread -eq 0 ] && [ $unfinished -eq 0 ]"
sums_match "per task" t.log
# A record read after its window closed is written to that window, so no
# window ends with a sample waiting for its record, unless the task stays
# in the kernel longer than the old window waits for it (1 s): a few 8 MiB
# reads on the debug kernel do.
check "per task: the deferred records in their sample's window ($end samples without, $stitched stitched)" \
	"[ $stitched -ge 100 ] && [ $((end * 100)) -le $stitched ]"
for w in $(windows t.data); do
	deferstack script -i "$w" 2> /dev/null |
		awk '/^[^\t]/ && NF { k = $2 " " $4; next } k != "" { print k, $1; k = "" }'
done > t.keys
check "per task: no sample in two windows ($(wc -l < t.keys) listed, $samples counted)" \
	"[ -z \"\$(sort t.keys | uniq -d)\" ] && [ $(wc -l < t.keys) -eq $samples ]"
check "per task: the windows together have the stitched read and spin chains" \
	"cat t.data.*.folded | grep -q '$read_chain' && cat t.data.*.folded | grep -q '$spin_chain'"

# --- system-wide, signals as a service manager sends them, each switch
# made slow (1 s) by the test hook: SIGHUP starts a window, SIGTERM in the
# middle of the second switch closes the last one; each window whole
/tests/example_workload 60000 8388608 > /dev/null &
wl=$!
DEFERSTACK_TEST_SWITCH_DELAY=1 DEFERSTACK_TEST_KALLSYMS_READS=1 \
	deferstack record --mode defer -a -F 499 --switch-output -o sig.data 2> sig.log &
rec=$!
wait_windows sig.data 1
sleep 1
kill -HUP $rec
# the second SIGHUP once the first switch is over (the recorder says it
# closed the first window): one that comes during a switch is that switch
i=0
while [ $i -lt 1200 ] && [ "$(grep -c '^deferstack: window ' sig.log)" -lt 1 ]; do
	sleep 0.1
	i=$((i + 1))
done
wait_windows sig.data 2
sleep 1
kill -HUP $rec
sleep 0.4
kill -TERM $rec
wait $rec
rc=$?
kill $wl 2> /dev/null
wait $wl 2> /dev/null
sed 's/^/# /' sig.log
read_windows sig.data
check "-a, SIGHUP, SIGHUP, SIGTERM mid-switch: exit 0, 3 windows ($(nwin sig.data)), each read, none unfinished" \
	"[ $rc -eq 0 ] && [ $(nwin sig.data) -eq 3 ] && [ $unread -eq 0 ] && [ $unfinished -eq 0 ]"
sums_match "-a" sig.log
# -a: a task sampled just before a switch may return to user space only
# after the old window's wait (1 s): a few may miss their record.
check "-a: few samples without their record at a boundary ($end of $stitched stitched)" \
	"[ $stitched -ge 100 ] && [ $((end * 20)) -le $stitched ]"
check "-a: the windows together have the stitched read and spin chains" \
	"cat sig.data.*.folded | grep -q '$read_chain' && cat sig.data.*.folded | grep -q '$spin_chain'"
# A window whose sampled kernel addresses are all in the kernel's own text
# (no modules here) takes its kernel symbols from the first read of
# /proc/kallsyms: each window names the kernel's read path all the same.
reads=$(sed -n 's/^deferstack: \/proc\/kallsyms read \([0-9]*\) times$/\1/p' sig.log)
named=0
for w in $(windows sig.data); do
	grep -q 'wl_syscall3;.*\(read_zero\|vfs_read\|ksys_read\)' "$w.folded" && named=$((named + 1))
done
check "-a: /proc/kallsyms read once for 3 windows (${reads:-?}), each window's kernel read path named ($named)" \
	"[ '${reads:-0}' -eq 1 ] && [ $named -eq 3 ]"

# --- as deferstack-profiler.service runs it: user nobody, CAP_PERFMON
# only (tests/guest/as_service.c), its command with the unit's defaults.
# Programs of root's, whose maps it may not read (no CAP_SYS_PTRACE):
# - cost_bench started before the recorder: unnamed, said once;
# - the example workload started once the first window is open: named in
#   every window, the later ones from the maps the recording saw
#   (tools/record-maps.c). Either of its chains counts: the spin chain
#   alone has a handful of samples in a 2 s window, and none in one CI run;
# - a shell started with it that execs cost_bench 2.5 s later, in the
#   second window: the carried maps of that pid change from busybox's to
#   cost_bench's, and the third window, from them, names bench_root.
svc=$wd/svc
mkdir -p $svc && chmod 777 $svc
/tests/cost_bench cpu none 100000 > /dev/null &
early=$!
/tests/as_service deferstack record -a -F 99 -e cpu-clock --switch-output --keep 60 \
	--pprof-dir $svc/pprof -o $svc/w.data 2> svc.log &
rec=$!
wait_windows $svc/w.data 1
sleep 1
/tests/example_workload 60000 8388608 > /dev/null &
wl=$!
sh -c 'sleep 2.5; exec /tests/cost_bench cpu none 100000' > /dev/null &
late=$!
sleep 2
kill -USR2 $rec
wait_windows $svc/w.data 2
sleep 2
kill -USR2 $rec
wait_windows $svc/w.data 3
sleep 2
kill -TERM $rec
wait $rec
rc=$?
kill $wl $early $late 2> /dev/null
wait $wl $early $late 2> /dev/null
sed 's/^/# /' svc.log
read_windows $svc/w.data
check "as the service (nobody, CAP_PERFMON): exit 0, 3 windows, each read, their pprof" \
	"[ $rc -eq 0 ] && [ $(nwin $svc/w.data) -eq 3 ] && [ $unread -eq 0 ] && [ $(ls $svc/pprof | wc -l) -eq 3 ]"
for w in $(windows $svc/w.data); do
	echo "# $w: the later workload's read or spin chain in $(grep -c -e "$read_chain" -e "$spin_chain" "$w.folded") stacks," \
		"cost_bench's bench_root in $(grep -c bench_root "$w.folded")," \
		"$([ -e "$w.kallsyms" ] && echo "kernel symbols saved" || echo "no kernel symbols saved")"
done
check "as the service: a process of root's started after it named in every window" \
	"( for w in $(windows $svc/w.data | tr '\n' ' '); do grep -q -e '$read_chain' -e '$spin_chain' \$w.folded || exit 1; done )"
last=$(windows $svc/w.data | tail -n 1)
check "as the service: a process of root's that exec'd cost_bench a window before named in the last window" \
	"grep -q bench_root $last.folded"
check "as the service: the processes whose maps it cannot read said once" \
	"[ \$(grep -c '^deferstack: note: the maps of [0-9]* process.* of other users cannot be read' svc.log) -eq 1 ]"

[ $fail -eq 0 ] && echo "# windows_defer: all checks passed"
exit $fail
