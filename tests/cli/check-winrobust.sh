# Sourced by tests/run-checks.sh (uses DS, DSAN, OUT, T, check/ok/bad/skp):
# record -a --switch-output when the machine makes it hard: a slow window
# switch with small rings (the rings are read during the switch: LOST with
# and without that, printed), a full disk (ENOSPC on a 2 MiB tmpfs: the
# oldest window dropped with --keep, else recording paused until space is
# free; every window left read by report, no cut side file), a fork/exec
# and thread storm (no crash, every window read, the recorder's peak RSS
# printed and under 64 MiB), SIGHUP and SIGTERM system-wide, the SIGTERM
# in the middle of a slow switch.  Needs root
# (system-wide, mount); on this host: classic callchains.

RD="$T/winrobust"
mkdir -p "$RD"
CHURN="$OUT/tests/churn"
rwindows() { ls "$1".* 2> /dev/null | grep -E "^$1\.[0-9]{16}\$"; }
# the LOST count of the recorder's summary line in FILE
rlost() { sed -n 's/^deferstack: summary of all windows: .* \([0-9]*\) lost$/\1/p' "$1"; }
rsamples() { sed -n 's/^deferstack: summary of all windows: \([0-9]*\) samples.*/\1/p' "$1"; }
# every window of FILE read by our report: exit 0, no sanitizer report;
# the samples of all of them into $RD/sum. With a second argument, a
# window left unfinished (on a full disk: as at its last round) may exit 1
# as an incomplete input, saying so last.
rwindows_read() {
	local w s rc sum=0
	for w in $(rwindows "$1"); do
		"$DSAN" report -i "$w" --folded > "$RD/read.folded" 2> "$RD/read.err"
		rc=$?
		{ [ $rc -eq 0 ] || { [ $# -gt 1 ] && [ $rc -eq 1 ] &&
			[ "$(tail -1 "$RD/read.err")" = "deferstack: $w is incomplete (the recording was not finished): the output ends where the file ends" ]; }; } &&
			! grep -q 'Sanitizer\|runtime error' "$RD/read.err" ||
			{ echo "report $w: exit $rc"; cat "$RD/read.err"; return 1; }
		s=$(sed -n 's/^summary: \([0-9]*\) samples.*/\1/p' "$RD/read.err")
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
			[ ${lb:-0} -gt 0 ] && [ $((${la:-999999999} * 4)) -lt ${lb:-0} ] ||
			{ cat '$RD/nodrain.err' '$RD/drain.err'; false; }"
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

	# --- a full disk: a 2 MiB tmpfs, windows of 100 KiB at 4 kHz
	FD="$RD/full"
	mkdir -p "$FD"
	if ! mount -t tmpfs -o size=2m tmpfs "$FD" 2> "$RD/mount.err"; then
		skp "record --switch-output on a full disk: cannot mount a tmpfs ($(cat "$RD/mount.err"))"
	else
		# every window of FILE read (one left unfinished by the full disk:
		# exit 1, see rwindows_read), every vDSO image whole (none cut)
		full_read() {
			local v
			rwindows_read "$1" unfinished-ok || return 1
			for v in "$1".*.vdso; do
				[ -e "$v" ] || continue
				[ "$(stat -c %s "$v")" -eq "$(stat -c %s "$RD/vdso.ref")" ] ||
					{ echo "cut vDSO image $v"; return 1; }
			done
		}
		"$DS" record -o "$RD/vdso.ref" -- /bin/true 2> /dev/null
		mv "$RD/vdso.ref.vdso" "$RD/vdso.ref"
		# with --keep: the oldest windows go to make room, recording goes on
		"$CHURN" 8 2 0 > /dev/null & cp=$!
		timeout 120 "$DS" record -a -F 4000 --switch-output=100K --keep 1000 -d 6 \
			-o "$FD/k.data" 2> "$RD/k.err"
		rc=$?
		kill $cp 2> /dev/null; wait $cp 2> /dev/null
		nrm=$(grep -c '^deferstack: disk full: removed the oldest window ' "$RD/k.err")
		check "full disk, --keep: exit 0, $nrm oldest windows removed to make room, $(rwindows "$FD/k.data" | wc -l) left, recording not stopped" \
			bash -c "[ $rc -eq 0 ] && [ $nrm -ge 1 ] && ! grep -q 'recording stopped\|recording paused' '$RD/k.err' ||
				{ cat '$RD/k.err'; false; }"
		check "full disk, --keep: every window left is read by report, no cut vDSO image" full_read "$FD/k.data"
		rm -f "$FD"/*
		# without retention: paused (one message), resumed once space is free
		head -c 1200K /dev/zero > "$FD/filler"
		"$CHURN" 20 2 0 > /dev/null & cp=$!
		timeout 120 "$DS" record -a -F 4000 --switch-output=100K -o "$FD/p.data" 2> "$RD/p.err" & rp=$!
		for i in $(seq 100); do grep -q 'recording paused' "$RD/p.err" && break; sleep 0.1; done
		sleep 1
		rm -f "$FD/filler"
		for i in $(seq 100); do grep -q 'recording resumed' "$RD/p.err" && break; sleep 0.1; done
		sleep 0.5
		kill -TERM $rp; wait $rp
		rc=$?
		kill $cp 2> /dev/null; wait $cp 2> /dev/null
		# One message per pause: a slow machine may fill the disk again
		# between the resume and the SIGTERM (-F 4000 writes ~1 MiB/s).
		np=$(grep -c 'No space left on device (disk full): recording paused until' "$RD/p.err")
		ns=$(sed -n 's/^deferstack: disk full: \([0-9]*\) pauses\{0,1\},.*/\1/p' "$RD/p.err")
		check "full disk, no retention: exit 0, one 'recording paused' message per pause ($np, ${ns:-no} pauses), resumed once space is free, not stopped" \
			bash -c "[ $rc -eq 0 ] && [ $np -ge 1 ] && [ '$np' = '$ns' ] &&
				grep -q 'recording resumed in window' '$RD/p.err' &&
				! grep -q 'recording stopped' '$RD/p.err' || { cat '$RD/p.err'; false; }"
		check "full disk, no retention: every window ($(rwindows "$FD/p.data" | wc -l)) is read by report, no cut vDSO image" \
			full_read "$FD/p.data"
		rm -f "$FD"/*
		umount "$FD"
	fi

	# --- a fork/exec and thread storm: 3,000 /bin/true from a shell loop
	# and two threads starting and joining threads, during 1 s windows;
	# the recorder's peak RSS (VmHWM) read while it runs
	"$CHURN" 7 0 2 > "$RD/storm.threads" & cp=$!
	"$DS" record -a -F 999 --switch-output=1s -d 7 -o "$RD/storm.data" 2> "$RD/storm.err" & rp=$!
	( for i in $(seq 3000); do /bin/true; done ) & lp=$!
	hwm=0
	while kill -0 $rp 2> /dev/null; do
		h=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' /proc/$rp/status 2> /dev/null)
		[ -n "$h" ] && hwm=$h
		sleep 0.3
	done
	wait $rp
	rc=$?
	wait $lp
	wait $cp 2> /dev/null
	nth=$(sed -n 's/^\([0-9]*\) threads started/\1/p' "$RD/storm.threads")
	nw=$(rwindows "$RD/storm.data" | wc -l)
	echo "fork/exec storm: 3000 processes, ${nth:-?} threads, $nw windows, recorder's peak RSS $((hwm / 1024)) MiB ($hwm kB)"
	check "fork/exec storm (3000 processes, ${nth:-?} threads): exit 0, $nw windows (>= 5), a summary" \
		bash -c "[ $rc -eq 0 ] && [ $nw -ge 5 ] && grep -q '^deferstack: summary of all windows: [1-9]' '$RD/storm.err' ||
			{ cat '$RD/storm.err'; false; }"
	check "fork/exec storm: every window read by report" rwindows_read "$RD/storm.data"
	check "fork/exec storm: the recorder's peak RSS $((hwm / 1024)) MiB (< 64 MiB)" \
		bash -c "[ $hwm -gt 0 ] && [ $hwm -lt 65536 ]"
	# the same storm under ASan and UBSan (the sanitized CLI), shorter
	"$CHURN" 4 0 2 > /dev/null & cp=$!
	"$DSAN" record -a -F 499 --switch-output=1s -d 3.5 -o "$RD/sstorm.data" 2> "$RD/sstorm.err" & rp=$!
	( for i in $(seq 1000); do /bin/true; done ) & lp=$!
	wait $rp
	rc=$?
	wait $lp
	wait $cp 2> /dev/null
	sstorm_ok() {
		[ $rc -eq 0 ] && ! grep -q 'Sanitizer\|runtime error' "$RD/sstorm.err" &&
			rwindows_read "$RD/sstorm.data" || { cat "$RD/sstorm.err"; false; }
	}
	check "fork/exec storm, the recorder under ASan/UBSan: exit 0, no sanitizer report, $(rwindows "$RD/sstorm.data" | wc -l) windows read" \
		sstorm_ok

	# --- signals, system-wide, as a service manager sends them: SIGHUP
	# starts a window (log rotation), SIGTERM closes the last one readable,
	# here in the middle of a switch made slow (1 s): the switch finishes,
	# then the last window is closed, each sample in one window
	"$CHURN" 8 1 0 > /dev/null & cp=$!
	DEFERSTACK_TEST_SWITCH_DELAY=1 "$DS" record -a -F 499 --switch-output -o "$RD/sig.data" 2> "$RD/sig.err" & rp=$!
	sleep 1; kill -HUP $rp; sleep 2; kill -HUP $rp; sleep 0.4; kill -TERM $rp
	wait $rp
	rc=$?
	kill $cp 2> /dev/null; wait $cp 2> /dev/null
	rwindows_read "$RD/sig.data"
	rrc=$?
	sum=$(cat "$RD/sum")
	said=$(rsamples "$RD/sig.err")
	check "record -a --switch-output: SIGHUP, SIGHUP, SIGTERM mid-switch: exit 0, 3 windows, each read ($sum samples = the recorder's ${said:-none})" \
		bash -c "[ $rc -eq 0 ] && [ $rrc -eq 0 ] && [ $(rwindows "$RD/sig.data" | wc -l) -eq 3 ] && [ $sum -eq ${said:--1} ] &&
			[ \$(grep -c '^deferstack: window ' '$RD/sig.err') -eq 3 ] || { cat '$RD/sig.err'; false; }"
	check "record -a --switch-output, SIGTERM mid-switch: no window left unfinished" \
		bash -c "for w in $(rwindows "$RD/sig.data" | tr '\n' ' '); do '$DS' report -i \$w --folded 2>&1 > /dev/null | grep -q 'not finished' && exit 1; done; true"
fi
