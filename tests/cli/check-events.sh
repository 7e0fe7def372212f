# Sourced by tests/run-checks.sh (uses DS, DSAN, OUT, T, check/ok/bad/skp):
# record -e in perf's syntax.  Software events, several events (one -e with
# commas, repeated -e), the :u modifier, a tracepoint (tracefs mounted, or
# mounted in a private mount namespace of our own), a hardware event (works
# or is refused by name), and each file read by our script and report and
# by perf.  On a kernel without deferred callchains the classic fallback
# records; the events and their names are the same.

EV="$T/ev"
mkdir -p "$EV"
EBURN="$OUT/tests/burn"
# NAME RECORD-ARGS...: record burn into $EV/NAME.data (rc in $EV/NAME.rc,
# stderr in $EV/NAME.err), our script of it into $EV/NAME.script
ev_record() {
	local name=$1; shift
	"$DSAN" record "$@" -o "$EV/$name.data" -- "$EBURN" 0.3 2> "$EV/$name.err"
	echo $? > "$EV/$name.rc"
	"$DSAN" script -i "$EV/$name.data" > "$EV/$name.script" 2> /dev/null
}
# NAME EVENT: our script shows samples of EVENT (perf's "EVENT:" column)
ev_has() { grep -qE "^\S.* [0-9]+ $2: " "$EV/$1.script" || { cat "$EV/$1.err"; false; }; }
ev_ok() { [ "$(cat "$EV/$1.rc")" = 0 ] || { cat "$EV/$1.err"; false; }; }
# NAME EVENT: perf script and perf report name EVENT too
ev_perf() {
	perf script -i "$EV/$1.data" 2> /dev/null | grep -q " $2: " &&
		perf report -i "$EV/$1.data" --stdio 2> /dev/null | grep -q "of event '$2'"
}
have_perf=$(command -v perf > /dev/null && echo 1)

paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 3)
if [ "$(id -u)" != 0 ] && [ "$paranoid" -gt 1 ]; then
	skp "record -e events (needs root or perf_event_paranoid <= 1)"
else
	ev_record pf -e page-faults
	check "record -e page-faults: exit 0, page-faults samples" \
		bash -c "$(declare -f ev_ok ev_has); EV='$EV'; ev_ok pf && ev_has pf page-faults"

	ev_record two -e cpu-clock,page-faults
	check "record -e cpu-clock,page-faults: samples of both in script" \
		bash -c "$(declare -f ev_ok ev_has); EV='$EV'; ev_ok two && ev_has two cpu-clock && ev_has two page-faults"
	"$DSAN" report -i "$EV/two.data" > "$EV/two.report" 2> /dev/null
	check "record -e cpu-clock,page-faults: report has a section per event" \
		bash -c "grep -q \"^# ======== event 'cpu-clock'\" '$EV/two.report' && grep -q \"^# ======== event 'page-faults'\" '$EV/two.report'"
	[ -n "$have_perf" ] && check "record -e cpu-clock,page-faults: perf script and report read both" \
		bash -c "$(declare -f ev_perf); EV='$EV'; ev_perf two cpu-clock && ev_perf two page-faults"

	ev_record rep -e cpu-clock -e task-clock
	check "record -e cpu-clock -e task-clock: both recorded (not the last one only)" \
		bash -c "$(declare -f ev_ok ev_has); EV='$EV'; ev_ok rep && ev_has rep cpu-clock && ev_has rep task-clock"

	ev_record u -e cpu-clock:u
	check "record -e cpu-clock:u: named cpu-clock:u, user frames only" \
		bash -c "$(declare -f ev_ok ev_has); EV='$EV'; ev_ok u && ev_has u cpu-clock:u && ! grep -q 'kernel.kallsyms' '$EV/u.script'"

	# a hardware event: recorded where the PMU has it, else refused by name
	ev_record cyc -e cycles
	rc=$(cat "$EV/cyc.rc")
	if [ "$rc" = 0 ]; then
		check "record -e cycles: cycles samples" \
			bash -c "$(declare -f ev_has); EV='$EV'; ev_has cyc cycles"
	else
		check "record -e cycles: exit 1, the event named with the reason ($(head -1 "$EV/cyc.err"))" \
			bash -c "[ $rc = 1 ] && grep -q '^deferstack: cycles: .*PMU' '$EV/cyc.err'"
	fi

	# a tracepoint: its id from tracefs; perf needs its format in the file
	tp_run() {
		"$DSAN" record -e sched:sched_switch -e cpu-clock -o "$EV/tp.data" -- \
			sh -c "sleep 0.05; sleep 0.05; exec '$EBURN' 0.1" 2> "$EV/tp.err"
		echo $? > "$EV/tp.rc"
		"$DSAN" record -e sched:sched_switch -o - -- sh -c 'sleep 0.05' \
			2> /dev/null > "$EV/tpp.data"
	}
	tp_where=
	if [ -d /sys/kernel/tracing/events ] || [ -d /sys/kernel/debug/tracing/events ]; then
		tp_run
		tp_where="tracefs mounted"
	elif [ "$(id -u)" = 0 ] && command -v unshare > /dev/null &&
		unshare -m sh -c 'mount -t tracefs nodev /sys/kernel/tracing' 2> /dev/null; then
		# not mounted here: mounted in a mount namespace of our own only
		export -f tp_run
		EV="$EV" DSAN="$DSAN" EBURN="$EBURN" unshare -m bash -c \
			'mount -t tracefs nodev /sys/kernel/tracing && tp_run'
		tp_where="tracefs mounted in a private mount namespace"
	fi
	if [ -n "$tp_where" ]; then
		"$DSAN" script -i "$EV/tp.data" > "$EV/tp.script" 2> /dev/null
		check "record -e sched:sched_switch -e cpu-clock ($tp_where): both in script" \
			bash -c "$(declare -f ev_ok ev_has); EV='$EV'; ev_ok tp && ev_has tp sched:sched_switch && ev_has tp cpu-clock"
		[ -n "$have_perf" ] && check "record -e sched:sched_switch: perf script and report read it (tracing data)" \
			bash -c "$(declare -f ev_perf); EV='$EV'; ev_perf tp sched:sched_switch"
		[ -n "$have_perf" ] && check "record -e sched:sched_switch -o -: perf script reads the stream" \
			bash -c "perf script -i - < '$EV/tpp.data' 2> /dev/null | grep -q ' sched:sched_switch: '"
		check "record -e sched:sched_switch -o -: report -i - reads the stream" \
			bash -c "'$DSAN' report -i - < '$EV/tpp.data' 2> /dev/null | grep -q \"event 'sched:sched_switch'\""
		# convert carries the formats on, from a file and from a stream
		"$DSAN" convert -i "$EV/tp.data" -o "$EV/tp.conv" 2> /dev/null
		"$DSAN" convert -i - -o "$EV/tpp.conv" < "$EV/tpp.data" 2> /dev/null
		[ -n "$have_perf" ] && check "convert of a tracepoint recording (file, stream): perf script reads it" \
			bash -c "perf script -i '$EV/tp.conv' 2> /dev/null | grep -q ' sched:sched_switch: ' &&
				perf script -i '$EV/tpp.conv' 2> /dev/null | grep -q ' sched:sched_switch: '"
	else
		skp "record -e sched:sched_switch (no tracefs mounted, and none can be mounted here)"
	fi
fi
