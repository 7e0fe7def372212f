# shellcheck shell=bash
# Sourced by tests/run-checks.sh (OUT, DS, DSAN, T, DOFF, DSIZE, check,
# skp; $T/m.data, $T/m.classic): the CLI's edges (issue 23): '-' as the
# file of --svg and --pprof, the summary once, counts in the singular, a -k
# file that cannot be read, a data section cut short, the exit status of
# report, script and convert on bad and incomplete input, record -o
# /dev/null.
E="$T/edges"
mkdir -p "$E/cwd"
DSA=$(readlink -f "$DSAN")

# --svg - and --pprof -: standard output, as -o - elsewhere; no file "-"
(cd "$E/cwd" && "$DSA" report -i "$T/m.data" -k /dev/null --svg - > "$E/svg.out" 2> "$E/svg.err")
rc=$?
check "report --svg -: the flame graph on standard output, no file named '-'" \
	bash -c "[ $rc -eq 0 ] && grep -q '</svg>' '$E/svg.out' && [ -z \"\$(ls -A '$E/cwd')\" ]"
(cd "$E/cwd" && "$DSA" report -i "$T/m.data" -k /dev/null --pprof - > "$E/pprof.out" 2>/dev/null)
rc=$?
"$DSAN" report -i "$T/m.data" -k /dev/null --pprof "$E/p.pb.gz" 2>/dev/null
check "report --pprof -: the gzipped profile on standard output (= --pprof FILE), no file '-'" \
	bash -c "[ $rc -eq 0 ] && gzip -t '$E/pprof.out' && cmp -s '$E/p.pb.gz' '$E/pprof.out' && [ -z \"\$(ls -A '$E/cwd')\" ]"
if command -v script > /dev/null; then
	script -qec "'$DSAN' report -i '$T/m.data' -k /dev/null --pprof -; echo rc=\$?" /dev/null \
		> "$E/tty.out" 2>&1
	check "report --pprof - on a terminal: refused, says why, exit 1" \
		bash -c "grep -q 'not writing a gzipped profile to a terminal' '$E/tty.out' && grep -q 'rc=1' '$E/tty.out'"
else
	skp "report --pprof - on a terminal (script(1) not installed)"
fi

# the summary: once; one line for a file without deferred callchains
"$DSAN" report -i "$T/m.data" -k /dev/null > "$E/text.out" 2> "$E/text.err"
check "report --text: the summary once (ends the report, not on stderr too)" \
	bash -c "[ \$(cat '$E/text.out' '$E/text.err' | grep -c 'summary:') -eq 1 ] && tail -1 '$E/text.out' | grep -q '^summary: 6 samples, 2 deferred records'"
"$DSAN" report -i "$T/m.classic" -k /dev/null --folded > /dev/null 2> "$E/cl.err"
check "a file without deferred callchains: one summary line that says so" \
	bash -c "[ \$(grep -c . '$E/cl.err') -eq 1 ] && grep -qx 'summary: 6 samples, classic callchains (no deferred ones to stitch), lost 3 events in 1 LOST record, 0 lost samples' '$E/cl.err'"

# a data section cut short: its records up to the cut, one warning, then
# exit 1 with a closing line (issue 23: perf script exits non-zero, 234, on
# such a file; what could be read is still printed); the first sample
# (after two 64-byte COMM records, 104 bytes) and 20 bytes of the next one
# are left
head -c $((DOFF + 128 + 104 + 20)) "$T/m.data" > "$E/cut.data"
missing=$((DSIZE - 128 - 104 - 20))
cutline="deferstack: $E/cut.data is incomplete (its data section is cut short): the output ends at the cut"
"$DSAN" script -i "$E/cut.data" -k /dev/null > "$E/cut.txt" 2> "$E/cut.err"
rc=$?
check "data section cut short: script exit 1, the sample before the cut, one warning, 'is incomplete' last" \
	bash -c "[ $rc -eq 1 ] && [ \$(grep -c 'cookie=' '$E/cut.txt') -eq 1 ] && [ \$(grep -c warning '$E/cut.err') -eq 1 ] &&
		grep -qx 'deferstack: warning: $E/cut.data is truncated: $missing bytes of the data section missing; read up to there' '$E/cut.err' &&
		[ \"\$(tail -1 '$E/cut.err')\" = '$cutline' ]" ||
	cat "$E/cut.err"
"$DSAN" report -i "$E/cut.data" -k /dev/null --folded > "$E/cut.folded" 2>/dev/null
rc=$?
check "data section cut short: report --folded exit 1 with the sample" \
	bash -c "[ $rc -eq 1 ] && grep -q '^alpha;' '$E/cut.folded'"
# counts of one in the singular
check "one sample: 'summary: 1 sample, 0 deferred records'" \
	grep -q '^summary: 1 sample, 0 deferred records, 0 stitched' "$E/cut.err"
"$DSAN" report -i "$E/cut.data" -k /dev/null --sort comm > "$E/cut.rep" 2>/dev/null
check "one row: '1 of 1 entry'" grep -q '^# Overhead by self, 1 of 1 entry$' "$E/cut.rep"

# (-k FILE that cannot be read, an error as perf's "Invalid file": with the
# exit status below)

# --- the exit status of report, script and convert (issue 23; man page,
# EXIT STATUS). An input that cannot be read: exit 1, exactly the one line,
# nothing on standard output, no file written (perf script: 255 or 234).
# An incomplete input: read as far as it goes, output kept, exit 1, the
# last line says why (perf script: 234 or 255, with nothing printed).
mkdir -p "$E/dir.data"
: > "$E/empty.data"
printf 'NOTAPERFFILE-----' > "$E/magic.data"
head -c 50 "$T/m.data" > "$E/hdr.data"
# NAME LINE CMD...: exit 1, standard error LINE alone, standard output
# empty, no -o file $E/x.conv
expect_fail() {
	local name=$1 line=$2 rc; shift 2
	rm -f "$E/x.conv"
	timeout 60 "$@" > "$E/x.out" 2> "$E/x.err"
	rc=$?
	if [ $rc -eq 1 ] && [ "$(cat "$E/x.err")" = "$line" ] && [ ! -s "$E/x.out" ] &&
	   [ ! -e "$E/x.conv" ]; then
		ok "exit status: $name: 1, '$line'"
	else
		echo "rc=$rc, stdout $(wc -c < "$E/x.out") bytes"; cat "$E/x.err"; bad "exit status: $name"
	fi
}
for c in "report -k /dev/null" "script -k /dev/null" "convert -o $E/x.conv"; do
	cn=${c%% *}
	expect_fail "$cn, missing file" "deferstack: cannot open $E/nope.data: No such file or directory" \
		"$DSAN" $c -i "$E/nope.data"
	expect_fail "$cn, directory" "deferstack: $E/dir.data: is a directory, not a perf.data file" \
		"$DSAN" $c -i "$E/dir.data"
	expect_fail "$cn, empty file" "deferstack: $E/empty.data: not a perf.data file (too short)" \
		"$DSAN" $c -i "$E/empty.data"
	expect_fail "$cn, bad magic" "deferstack: $E/magic.data: bad magic, not a perf.data file" \
		"$DSAN" $c -i "$E/magic.data"
	expect_fail "$cn, truncated header" "deferstack: $E/hdr.data: truncated header" \
		"$DSAN" $c -i "$E/hdr.data"
done
for c in report script; do
	expect_fail "$c -k missing" "deferstack: cannot read kallsyms $E/nope.ks: No such file or directory" \
		"$DSAN" $c -i "$T/m.data" -k "$E/nope.ks"
	expect_fail "$c -k directory" "deferstack: cannot read kallsyms $E/dir.data: Is a directory" \
		"$DSAN" $c -i "$T/m.data" -k "$E/dir.data"
done
# -k unreadable: as a user who may not read it (root reads any file: as
# nobody then, in a directory nobody can enter)
U="$(mktemp -d /tmp/ds-noperm.XXXXXX)"
chmod 755 "$U"
cp "$T/m.data" "$U/m.data" && chmod 644 "$U/m.data"
cp tests/cli/data/deferred.ks "$U/noperm.ks" && chmod 000 "$U/noperm.ks"
as_user=()
if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null; then
	as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
if [ "$(id -u)" != 0 ] || [ ${#as_user[@]} -gt 0 ]; then
	for c in report script; do
		expect_fail "$c -k unreadable" "deferstack: cannot read kallsyms $U/noperm.ks: Permission denied" \
			"${as_user[@]}" "$DSA" $c -i "$U/m.data" -k "$U/noperm.ks"
	done
else
	skp "exit status: -k unreadable (root without setpriv reads any file)"
fi
rm -rf "$U"

# NAME LINE CMD...: exit 1, standard error ends with LINE (after the
# warnings and the summary), the output written ($E/x.conv for convert)
expect_incomplete() {
	local name=$1 line=$2 rc; shift 2
	rm -f "$E/x.conv"
	timeout 60 "$@" > "$E/x.out" 2> "$E/x.err"
	rc=$?
	if [ $rc -eq 1 ] && [ "$(tail -1 "$E/x.err")" = "$line" ] &&
	   grep -q '^deferstack: warning: ' "$E/x.err" && grep -q 'summary: ' "$E/x.err" &&
	   { [ -s "$E/x.out" ] || [ -s "$E/x.conv" ]; } &&
	   ! grep -q 'Sanitizer\|runtime error' "$E/x.err"; then
		ok "exit status: $name: 1 after the output, '$line'"
	else
		echo "rc=$rc"; cat "$E/x.err"; bad "exit status: $name"
	fi
}
head -c $(($(wc -c < "$T/m.pipe") - 20)) "$T/m.pipe" > "$E/cut.pipe"
for c in "report -k /dev/null --folded" "script -k /dev/null" "convert -o $E/x.conv"; do
	cn=${c%% *}
	expect_incomplete "$cn, data section cut short" "$cutline" "$DSAN" $c -i "$E/cut.data"
	expect_incomplete "$cn, recording not finished, last record cut" \
		"deferstack: $T/unfin.cut is incomplete (the recording was not finished): the output ends where the file ends" \
		"$DSAN" $c -i "$T/unfin.cut"
	expect_incomplete "$cn -i -, pipe-mode stream cut" \
		"deferstack: standard input is incomplete (its last record is cut off): the output ends before it" \
		bash -c '"$0" "$@" < "'"$E/cut.pipe"'"' "$DSAN" $c -i -
	# a whole file: 0, no such line
	timeout 60 "$DSAN" $c -i "$T/m.data" > /dev/null 2> "$E/x.err"
	rc=$?
	check "exit status: $cn, a whole file: 0, not incomplete" \
		bash -c "[ $rc -eq 0 ] && ! grep -q 'incomplete' '$E/x.err'"
done
# what was read is kept: --svg FILE from a cut file is written (and exits
# 1), convert's copy of it is a whole file that reads with exit 0
"$DSAN" report -i "$E/cut.data" -k /dev/null --svg "$E/cut.svg" 2> /dev/null
rc=$?
check "exit status: report --svg FILE of a cut file: 1, the flame graph written" \
	bash -c "[ $rc -eq 1 ] && grep -q '</svg>' '$E/cut.svg'"
"$DSAN" convert -i "$E/cut.data" -o "$E/cut.conv" 2> /dev/null
rc=$?
"$DSAN" script -i "$E/cut.conv" -k /dev/null > /dev/null 2> "$E/cutconv.err"
rc2=$?
check "exit status: convert of a cut file: 1; its output is whole (script: 0, the sample)" \
	bash -c "[ $rc -eq 1 ] && [ $rc2 -eq 0 ] && grep -qx 'summary: 1 sample, classic callchains (no deferred ones to stitch)' '$E/cutconv.err'"

# record -o /dev/null (measuring the overhead, as with perf): run, write,
# exit 0, nothing read back, no /dev/null.kallsyms, .vdso, .old, .raw.tmp
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 3)
if [ "$(id -u)" != 0 ] && [ "$paranoid" -gt 1 ]; then
	skp "record -o /dev/null (needs root or perf_event_paranoid <= 1)"
else
	for s in "" --stitched; do
		"$DS" record $s -o /dev/null -- "$OUT/tests/burn" 0.2 > /dev/null 2> "$E/null.err"
		rc=$?
		check "record $s -o /dev/null: exit 0, 'wrote /dev/null', no reading error, no side files" \
			bash -c "[ $rc -eq 0 ] && grep -q '^deferstack: wrote /dev/null (' '$E/null.err' &&
				! grep -q 'perf.data\|summary' '$E/null.err' && [ -z \"\$(ls -d /dev/null?* 2>/dev/null)\" ]" ||
			cat "$E/null.err"
	done
fi
