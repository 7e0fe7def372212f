# Sourced by tests/run-checks.sh (uses DS, DSAN, OUT, T, check/ok/bad/skp):
# record and the file writers under SIGXFSZ (ulimit -f), SIGPIPE (a reader
# that exits) and SIGHUP.  No `trap '' XFSZ` here: deferstack itself must
# turn the signals into write errors.  Each case checks the exit code, the
# one line on stderr, that the command record started is gone (it writes
# its pid to a file; kill -0 must fail), that the partial recording reads
# back (or is refused cleanly) and that no temp file is left.

SG="$T/sig"
mkdir -p "$SG"
SBURN="$OUT/tests/burn"
# the command (sh work.sh PIDFILE SECONDS): its pid to a file, then burn
# (exec: the same pid)
printf 'echo $$ > "$1"\nexec "%s" "$2"\n' "$SBURN" > "$SG/work.sh"
# stderr without the kernel's fallback note and the reader's warnings
sig_lines() { grep -v 'falling back to classic callchains\|: warning: ' "$1"; }
gone() { [ -s "$1" ] && ! kill -0 "$(cat "$1")" 2> /dev/null; }
# a recording that ended early: read back, or refused with a message
readable() {
	timeout 60 "$DSAN" report -i "$1" --folded > "$1.folded" 2> "$1.err"
	local rc=$?
	! grep -q 'Sanitizer\|runtime error' "$1.err" &&
		{ [ $rc -eq 0 ] || { [ $rc -eq 1 ] && [ -s "$1.err" ]; }; } ||
		{ echo "report rc=$rc"; cat "$1.err"; false; }
}
readable_burn() { readable "$1" && grep -q burn "$1.folded"; }
# FILE PATTERN: PATTERN is the only line (besides the note and warnings)
one_line() {
	[ "$(sig_lines "$1" | wc -l)" -eq 1 ] && grep -q "$2" "$1" || { cat "$1"; false; }
}

paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 3)
if [ "$(id -u)" != 0 ] && [ "$paranoid" -gt 1 ]; then
	skp "record under SIGXFSZ/SIGPIPE/SIGHUP (needs root or perf_event_paranoid <= 1)"
else
	# --- SIGXFSZ: ulimit -f while recording to a file
	(ulimit -f 20; exec timeout 60 "$DS" record -o "$SG/f.data" -- sh "$SG/work.sh" "$SG/f.pid" 5) 2> "$SG/f.err"
	rc=$?
	check "record over ulimit -f: exit 1 (was: killed by SIGXFSZ, 153)" test $rc -eq 1
	check "record over ulimit -f: one line, output, reason, command stopped" one_line "$SG/f.err" \
		"^deferstack: writing $SG/f.data: File too large (file size limit, ulimit -f): recording stopped, stopping 'sh' (pid [0-9]*)\$"
	check "record over ulimit -f: the command is not left running" gone "$SG/f.pid"
	check "record over ulimit -f: the partial recording reads back" \
		readable_burn "$SG/f.data"

	# --- SIGPIPE: record -o - into a reader that exits
	timeout 60 "$DS" record -o - -- sh "$SG/work.sh" "$SG/p.pid" 5 2> "$SG/p.err" | head -c 100 > /dev/null
	rc=${PIPESTATUS[0]}
	check "record -o - | head -c 100: exit 1 (was: killed by SIGPIPE, 141)" test $rc -eq 1
	check "record -o - | head -c 100: one line, reason, command stopped" one_line "$SG/p.err" \
		"^deferstack: writing standard output: Broken pipe (the reader closed the pipe): recording stopped, stopping 'sh' (pid [0-9]*)\$"
	check "record -o - | head -c 100: the command is not left running" gone "$SG/p.pid"

	# --- SIGHUP: the recording is written, the command stopped (SIGTERM: 143)
	# (not under timeout(1): it would pass the SIGHUP on to the command too)
	"$DS" record -o "$SG/h.data" -- sh "$SG/work.sh" "$SG/h.pid" 10 2> "$SG/h.err" & rp=$!
	for _ in $(seq 50); do [ -s "$SG/h.pid" ] && break; sleep 0.1; done
	sleep 0.5
	kill -HUP $rp
	wait $rp
	rc=$?
	check "record, SIGHUP: exit 143 (the command stopped with SIGTERM; was: 129, orphan)" test $rc -eq 143
	check "record, SIGHUP: one line says so, then the recording is written" \
		bash -c "grep -q '^deferstack: hangup (SIGHUP): recording stopped, stopping the command\$' '$SG/h.err' &&
			grep -q '^deferstack: wrote $SG/h.data' '$SG/h.err' || { cat '$SG/h.err'; false; }"
	check "record, SIGHUP: the command is not left running" gone "$SG/h.pid"
	check "record, SIGHUP: the recording is complete" \
		bash -c "$(declare -f readable readable_burn); DSAN='$DSAN'; readable_burn '$SG/h.data' &&
			! grep -q 'not finished' '$SG/h.data.err'"

	# --- -p: over ulimit -f, the attached process is left running
	"$SBURN" 10 & bp=$!
	(ulimit -f 20; exec timeout 60 "$DS" record -p $bp -o "$SG/a.data") 2> "$SG/a.err"
	rc=$?
	check "record -p over ulimit -f: exit 1 (was: 153)" test $rc -eq 1
	check "record -p over ulimit -f: one line, the process left running" one_line "$SG/a.err" \
		"^deferstack: writing $SG/a.data: File too large (file size limit, ulimit -f): recording stopped, the attached process left running\$"
	check "record -p over ulimit -f: the attached process still runs" kill -0 $bp
	kill $bp 2> /dev/null; wait $bp 2> /dev/null

	# --- the command runs with SIGPIPE and SIGXFSZ as deferstack got them
	"$DS" record -o "$SG/i.data" -- sh -c "grep '^SigIgn:' /proc/\$\$/status > '$SG/i.txt'" 2> /dev/null
	check "record: the command does not inherit ignored SIGPIPE/SIGXFSZ" \
		bash -c "m=\$(awk '{ print \$2 }' '$SG/i.txt') && [ -n \"\$m\" ] &&
			[ \$(( 0x\$m & 0x1001000 )) -eq 0 ] || { cat '$SG/i.txt'; false; }"
fi

# --- report/convert outputs (temp + rename) over ulimit -f 1 (1 KiB: room
# for the message on stderr, a file here): an error, no
# temp file (was: killed by SIGXFSZ, 153, .NAME.XXXXXX left)
mkdir -p "$SG/out"
for c in "report -k /dev/null --svg $SG/out/o.svg" "convert -o $SG/out/o.data"; do
	(ulimit -f 1; exec timeout 60 "$DSAN" $c -i "$T/m.data") 2> "$SG/o.err"
	rc=$?
	check "$c over ulimit -f: exit 1, 'File too large', no output or temp file" \
		bash -c "[ $rc -eq 1 ] && grep -q '^deferstack: writing $SG/out/o\.[a-z.]*: File too large' '$SG/o.err' &&
			! grep -q 'Sanitizer\|runtime error' '$SG/o.err' && [ -z \"\$(ls -A '$SG/out')\" ] ||
			{ echo rc=$rc; cat '$SG/o.err'; ls -A '$SG/out'; false; }"
done
