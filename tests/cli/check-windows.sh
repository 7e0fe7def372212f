# Sourced by tests/run-checks.sh (uses DS, DSAN, OUT, T, check/ok/bad/skp):
# record --switch-output: time and size windows, each a whole recording
# that our report and perf 6.1 read (the maps of a process started before
# the window included), no sample lost or counted twice at a boundary,
# --keep / --switch-max-files / --max-size, SIGHUP and SIGUSR2 start a
# window, SIGTERM closes the last one.  On this host: classic callchains.

WD="$T/win"
mkdir -p "$WD"
WBURN="$OUT/tests/burn"
# the windows of FILE, oldest first
windows() { ls "$1".* 2> /dev/null | grep -E "^$1\.[0-9]{16}\$"; }
nwin() { windows "$1" | wc -l; }
# samples of a window by our report's summary
wsamples() {
	"$DS" report -i "$1" --folded 2>&1 > /dev/null |
		sed -n 's/^summary: \([0-9]*\) samples.*/\1/p'
}
# FILE: each window read by our report (its folded stacks name burn_leaf,
# no warning about an unfinished file) and, when installed, by perf report
# (burn_leaf too); the last window may be a few samples long: read only
windows_read() {
	local w n=0 last
	last=$(windows "$1" | tail -1)
	for w in $(windows "$1"); do
		n=$((n + 1))
		"$DSAN" report -i "$w" --folded > "$w.folded" 2> "$w.err" &&
			{ [ "$w" = "$last" ] || grep -q 'burn_leaf' "$w.folded"; } &&
			! grep -q 'not finished\|Sanitizer\|runtime error' "$w.err" ||
			{ echo "report $w:"; cat "$w.err"; return 1; }
		if command -v perf > /dev/null; then
			perf report -i "$w" --stdio > "$w.perf" 2>&1 &&
				{ [ "$w" = "$last" ] || grep -q burn_leaf "$w.perf"; } ||
				{ echo "perf report $w:"; tail -5 "$w.perf"; return 1; }
		fi
	done
	[ $n -gt 0 ]
}
# (time, tid, leaf address) of every sample of the windows of FILE
sample_keys() {
	local w
	for w in $(windows "$1"); do
		"$DS" script -i "$w" 2> /dev/null |
			awk '/^[^\t]/ && NF { k = $2 " " $4; next } k != "" { print k, $1; k = "" }'
	done
}

# --- defer mode at a boundary, by hand-made records (no deferring kernel
# here): a deferred record read after the switch goes to its sample's
# window; each window stitches every sample it has
mkdir -p "$WD/carry"
"$OUT/tests/wincarry" "$WD/carry" 2> "$WD/carry.err"
rc=$?
check "defer mode: a record read after the switch goes to its sample's window (wincarry)" \
	bash -c "[ $rc -eq 0 ] && grep -q '^deferstack: window A: 2 samples, 1 deferred records' '$WD/carry.err' || { cat '$WD/carry.err'; false; }"
for f in A B; do
	"$DSAN" script -i "$WD/carry/$f" -k /dev/null > /dev/null 2> "$WD/carry/$f.err"
	check "defer mode: window $f stitches both its samples" \
		grep -q '^summary: 2 samples, 2 deferred records, 2 stitched (0 record-first), 0 complete, 0 unmatched' "$WD/carry/$f.err"
done

# --- the mappings carried to later windows for processes whose maps the
# recorder may not read, fed out of order as the CPUs' rings give them: an
# exec, a pid used again, a mapping over part of another (mapcarry)
check "the mappings carried between windows follow exec, fork, exit and mmap in time order (mapcarry)" \
	bash -c "'$OUT/tests/mapcarry' > '$WD/mapcarry.out' 2>&1 || { cat '$WD/mapcarry.out'; false; }"

paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 3)
if [ "$(id -u)" != 0 ] && [ "$paranoid" -gt 1 ]; then
	skp "record --switch-output (needs root or perf_event_paranoid <= 1)"
else
	# --- bad values: perf's syntax (m minutes, M megabytes), a message, exit 2
	for v in 10 10x 0s -5s 1.5s 10ms 0M ''; do
		expect_usage "bad --switch-output '$v'" record --switch-output="$v" -o "$WD/none" -- /bin/true
	done
	expect_usage "bad --max-size '10'" record --switch-output=1s --max-size 10 -o "$WD/none" -- /bin/true
	expect_usage "bad --keep '0'" record --switch-output=1s --keep 0 -o "$WD/none" -- /bin/true
	expect_usage "need --switch-output" record --keep 3 -o "$WD/none" -- /bin/true
	expect_usage "not with -o -" record --switch-output=1s -o - -- /bin/true
	expect_usage "exclude each other" record --switch-output --stitched -o "$WD/none" -- /bin/true

	# --- time windows, system-wide: a process started before the
	# recording is named in every window (its maps synthesized again)
	"$WBURN" 6 & wbp=$!
	sleep 0.3
	"$DS" record -a -F 199 --switch-output=1s -d 3.5 -o "$WD/a.data" 2> "$WD/a.err"
	rc=$?
	kill $wbp 2> /dev/null; wait $wbp 2> /dev/null
	check "record -a --switch-output=1s -d 3.5: exit 0, at least 3 windows ($(nwin "$WD/a.data"))" \
		bash -c "[ $rc -eq 0 ] && [ $(nwin "$WD/a.data") -ge 3 ] && [ ! -e '$WD/a.data' ] || { cat '$WD/a.err'; false; }"
	check "record -a --switch-output: each window has its kallsyms and vDSO files" \
		bash -c "for w in $(windows "$WD/a.data" | tr '\n' ' '); do [ -s \$w.kallsyms ] && [ -s \$w.vdso ] || exit 1; done"
	check "record -a --switch-output: each window read by our report and perf report (burn named)" \
		windows_read "$WD/a.data"
	check "record -a --switch-output: a line per window, a summary of all" \
		bash -c "[ \$(grep -c '^deferstack: window $WD/a.data.[0-9]\{16\}: [0-9]* samples' '$WD/a.err') -eq $(nwin "$WD/a.data") ] &&
			grep -q '^deferstack: summary of all windows: [1-9][0-9]* samples' '$WD/a.err'"

	# --- the boundaries: per task, every sample in exactly one window
	"$DS" record -F 499 --switch-output=1s -o "$WD/t.data" -- "$WBURN" 3.5 2> "$WD/t.err"
	rc=$?
	said=$(sed -n 's/^deferstack: summary of all windows: \([0-9]*\) samples.*/\1/p' "$WD/t.err")
	sum=0
	for w in $(windows "$WD/t.data"); do sum=$((sum + $(wsamples "$w"))); done
	sample_keys "$WD/t.data" > "$WD/t.keys"
	check "per task, 1 s windows: exit 0, $(nwin "$WD/t.data") windows (>= 3)" \
		bash -c "[ $rc -eq 0 ] && [ $(nwin "$WD/t.data") -ge 3 ] || { cat '$WD/t.err'; false; }"
	check "per task, 1 s windows: samples of all windows ($sum) = the recorder's summary (${said:-none})" \
		test "$sum" -eq "${said:--1}"
	check "per task, 1 s windows: no sample in two windows, each listed once ($(wc -l < "$WD/t.keys") listed)" \
		bash -c "[ -z \"\$(sort '$WD/t.keys' | uniq -d)\" ] && [ \$(wc -l < '$WD/t.keys') -eq $sum ]"
	# the same fixed work (every page fault: about the same count each
	# run, whatever the machine's load) in 1 s windows and in one file
	printf 'i=0; while [ $i -lt 30 ]; do head -c 1M /dev/zero > /dev/null; sleep 0.08; i=$((i + 1)); done\n' > "$WD/faults.sh"
	"$DS" record -e page-faults -c 1 --switch-output=1s -o "$WD/f.data" -- sh "$WD/faults.sh" 2> "$WD/f.err"
	fsum=0
	for w in $(windows "$WD/f.data"); do fsum=$((fsum + $(wsamples "$w"))); done
	"$DS" record -e page-faults -c 1 -o "$WD/one.data" -- sh "$WD/faults.sh" 2> "$WD/one.err"
	one=$(wsamples "$WD/one.data")
	check "every page fault of the same work: $(nwin "$WD/f.data") windows ($fsum samples) = one file (${one:-none}) within 5 %" \
		bash -c "[ $(nwin "$WD/f.data") -ge 2 ] && [ $fsum -gt 0 ] && [ \$(( ($fsum - ${one:-0}) * 100 / $fsum )) -le 5 ] &&
			[ \$(( (${one:-0} - $fsum) * 100 / $fsum )) -le 5 ] || { cat '$WD/f.err'; false; }"

	# --- size windows (burn runs 4 s: on a loaded machine 2 s filled only two)
	"$DS" record -F 999 --switch-output=40K -o "$WD/s.data" -- "$WBURN" 4 2> "$WD/s.err"
	rc=$?
	check "--switch-output=40K: exit 0, $(nwin "$WD/s.data") windows (>= 3)" \
		bash -c "[ $rc -eq 0 ] && [ $(nwin "$WD/s.data") -ge 3 ] || { cat '$WD/s.err'; false; }"
	check "--switch-output=40K: each window read by our report and perf report" \
		windows_read "$WD/s.data"
	check "--switch-output=40K: no window but the last far beyond 40 KiB" \
		bash -c "for w in $(windows "$WD/s.data" | head -n -1 | tr '\n' ' '); do [ \$(stat -c %s \$w) -lt 200000 ] || exit 1; done"

	# --- retention: --keep 2 (an earlier run's window goes too), the
	# perf name --switch-max-files, --max-size
	: > "$WD/k.data.2001010100000000"
	: > "$WD/k.data.2001010100000000.kallsyms"
	: > "$WD/k.data.keep-me"
	"$DS" record -F 499 --switch-output=1s --keep 2 -o "$WD/k.data" -- "$WBURN" 3.5 2> "$WD/k.err"
	rc=$?
	check "--keep 2: exit 0, 2 windows left with their side files, nothing else removed" \
		bash -c "[ $rc -eq 0 ] && [ $(nwin "$WD/k.data") -eq 2 ] && [ \$(ls '$WD'/k.data.*.kallsyms | wc -l) -eq 2 ] &&
			[ \$(ls -d '$WD'/k.data.*.vdso | wc -l) -eq 2 ] && [ -e '$WD/k.data.keep-me' ] &&
			[ \$(grep -c '^deferstack: window ' '$WD/k.err') -ge 3 ] || { ls '$WD'; cat '$WD/k.err'; false; }"
	check "--keep 2: the windows left are read" windows_read "$WD/k.data"
	"$DS" record -F 499 --switch-output=1s --switch-max-files=1 -o "$WD/m.data" -- "$WBURN" 2.5 2> "$WD/m.err"
	check "--switch-max-files=1 (perf's name): 1 window left" test "$(nwin "$WD/m.data")" -eq 1
	"$DS" record -F 999 --switch-output=40K --max-size 60K -o "$WD/x.data" -- "$WBURN" 2.5 2> "$WD/x.err"
	rc=$?
	xs=$(for w in $(windows "$WD/x.data"); do stat -c %s "$w" "$w.kallsyms" "$w.vdso"; done | awk '{ s += $1 } END { print s + 0 }')
	check "--max-size 60K: $(nwin "$WD/x.data") windows left, $xs bytes (<= 60 KiB or the newest alone)" \
		bash -c "[ $rc -eq 0 ] && [ $(nwin "$WD/x.data") -ge 1 ] &&
			{ [ $xs -le 61440 ] || [ $(nwin "$WD/x.data") -eq 1 ]; } &&
			[ \$(grep -c '^deferstack: window ' '$WD/x.err') -gt $(nwin "$WD/x.data") ] || { cat '$WD/x.err'; false; }"

	# --- signals: SIGHUP and SIGUSR2 start a window (SIGUSR2: perf's
	# --switch-output=signal, the default), SIGTERM closes the last one
	"$DS" record -F 499 --switch-output -o "$WD/h.data" -- "$WBURN" 3 2> "$WD/h.err" & rp=$!
	sleep 1; kill -HUP $rp; sleep 1; kill -USR2 $rp
	wait $rp
	rc=$?
	check "--switch-output, SIGHUP then SIGUSR2: exit 0, 3 windows, each read" \
		bash -c "[ $rc -eq 0 ] && [ $(nwin "$WD/h.data") -eq 3 ] || { cat '$WD/h.err'; false; }"
	check "--switch-output, SIGHUP then SIGUSR2: the windows are read" windows_read "$WD/h.data"
	"$WBURN" 5 & wbp=$!
	"$DS" record -a -F 199 --switch-output=1h -o "$WD/e.data" 2> "$WD/e.err" & rp=$!
	sleep 1.5; kill -TERM $rp
	wait $rp
	rc=$?
	kill $wbp 2> /dev/null; wait $wbp 2> /dev/null
	check "record -a --switch-output=1h, SIGTERM: exit 0, 1 window, complete and read" \
		bash -c "[ $rc -eq 0 ] && [ $(nwin "$WD/e.data") -eq 1 ] || { cat '$WD/e.err'; false; }"
	check "record -a --switch-output=1h, SIGTERM: the window is read" windows_read "$WD/e.data"
fi
