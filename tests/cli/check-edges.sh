# shellcheck shell=bash
# Sourced by tests/run-checks.sh (OUT, DS, DSAN, T, DOFF, DSIZE, check,
# skp; $T/m.data, $T/m.classic): the CLI's edges (issue 23): '-' as the
# file of --svg and --pprof, the summary once, counts in the singular, a -k
# file that cannot be read, a data section cut short, record -o /dev/null.
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

# -k FILE that cannot be read: an error, as perf's "Invalid file"
for c in report script; do
	"$DSAN" $c -i "$T/m.data" -k "$E/nonexist" > /dev/null 2> "$E/k.err"
	rc=$?
	check "$c -k MISSING: exit 1, cannot read it" \
		bash -c "[ $rc -eq 1 ] && grep -qx 'deferstack: cannot read kallsyms $E/nonexist: No such file or directory' '$E/k.err'"
done

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
