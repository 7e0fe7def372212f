# Sourced by tests/run-checks.sh (uses DS, DSAN, OUT, T, check/ok/bad/skp):
# record -a --switch-output when the machine makes it hard: a slow window
# switch with small rings (the rings are read during the switch: LOST with
# and without that, printed).  Needs root (system-wide); on this host:
# classic callchains.

RD="$T/winrobust"
mkdir -p "$RD"
CHURN="$OUT/tests/churn"
rwindows() { ls "$1".* 2> /dev/null | grep -E "^$1\.[0-9]{16}\$"; }
# the LOST count of the recorder's summary line in FILE
rlost() { sed -n 's/^deferstack: summary of all windows: .* \([0-9]*\) lost$/\1/p' "$1"; }
rsamples() { sed -n 's/^deferstack: summary of all windows: \([0-9]*\) samples.*/\1/p' "$1"; }
# every window of FILE read by our report: exit 0, no sanitizer report;
# the samples of all of them into $RD/sum
rwindows_read() {
	local w s sum=0
	for w in $(rwindows "$1"); do
		"$DSAN" report -i "$w" --folded > "$w.folded" 2> "$w.err" &&
			! grep -q 'Sanitizer\|runtime error' "$w.err" ||
			{ echo "report $w:"; cat "$w.err"; return 1; }
		s=$(sed -n 's/^summary: \([0-9]*\) samples.*/\1/p' "$w.err")
		sum=$((sum + ${s:-0}))
	done
	echo $sum > "$RD/sum"
	[ -n "$(rwindows "$1")" ]
}

paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 3)
if [ "$(id -u)" != 0 ] && [ "$paranoid" -gt 1 ]; then
	skp "record -a --switch-output robustness (needs root or perf_event_paranoid <= 1)"
else
	# --- a slow switch (0.5 s of work made on purpose by the test hook
	# DEFERSTACK_TEST_SWITCH_DELAY, as build-ids, kallsyms and the maps
	# of every process take on a big machine or a debug kernel), 16-page
	# rings at 4 kHz on two busy threads: the rings fill in tens of ms.
	# DEFERSTACK_TEST_SWITCH_NODRAIN: the rings wait for the switch, as
	# they did before
	for m in nodrain drain; do
		"$CHURN" 6 2 0 > /dev/null & cp=$!
		if [ $m = nodrain ]; then
			DEFERSTACK_TEST_SWITCH_NODRAIN=1 DEFERSTACK_TEST_SWITCH_DELAY=0.5 \
				"$DS" record -a -F 4000 -m 16 --switch-output=1s -d 4.5 -o "$RD/$m.data" 2> "$RD/$m.err"
		else
			DEFERSTACK_TEST_SWITCH_DELAY=0.5 \
				"$DS" record -a -F 4000 -m 16 --switch-output=1s -d 4.5 -o "$RD/$m.data" 2> "$RD/$m.err"
		fi
		echo $? > "$RD/$m.rc"
		kill $cp 2> /dev/null; wait $cp 2> /dev/null
	done
	lb=$(rlost "$RD/nodrain.err") la=$(rlost "$RD/drain.err")
	echo "slow window switch: LOST ${lb:-?} with the rings waiting for the switch, ${la:-?} with them read during it"
	check "slow switch, -m 16 -F 4000: LOST ${lb:-?} -> ${la:-?} when the rings are read during the switch (< 1/4)" \
		bash -c "[ \$(cat '$RD/nodrain.rc') -eq 0 ] && [ \$(cat '$RD/drain.rc') -eq 0 ] &&
			[ ${lb:-0} -gt 0 ] && [ $((${la:-999999999} * 4)) -lt ${lb:-0} ]" ||
		{ cat "$RD/nodrain.err" "$RD/drain.err"; }
	rwindows_read "$RD/drain.data"
	rc=$?
	sum=$(cat "$RD/sum")
	said=$(rsamples "$RD/drain.err")
	for w in $(rwindows "$RD/drain.data"); do
		"$DS" script -i "$w" 2> /dev/null |
			awk '/^[^\t]/ && NF { k = $2 " " $4; next } k != "" { print k, $1; k = "" }'
	done > "$RD/drain.keys"
	check "slow switch: $(rwindows "$RD/drain.data" | wc -l) windows read, their samples ($sum) = the recorder's (${said:-none}), none in two windows" \
		bash -c "[ $rc -eq 0 ] && [ $sum -eq ${said:--1} ] && [ -z \"\$(sort '$RD/drain.keys' | uniq -d)\" ] &&
			[ \$(wc -l < '$RD/drain.keys') -eq $sum ]"
fi
