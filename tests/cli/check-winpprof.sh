# Sourced by tests/run-checks.sh (uses DS, DSAN, OUT, T, check/ok/bad/skp):
# record --switch-output --pprof-dir DIR: a gzipped pprof profile of each
# closed window, DIR/<window>.pb.gz, that go tool pprof reads and merges,
# with the labels and window times a server needs; retention removes it with
# its window; a pprof that cannot be written is said once per window and
# the recording goes on.  On this host: classic callchains.

PD="$T/winpprof"
mkdir -p "$PD"
PBURN="$OUT/tests/burn"
pwindows() { ls "$1".* 2> /dev/null | grep -E "^$1\.[0-9]{16}\$"; }
gopprof() { HOME="$T" timeout 300 go tool pprof "$@"; }
# the samples of a pprof profile (the first value of its samples)
pp_samples() {
	gopprof -raw -symbolize=none "$1" 2> /dev/null |
		awk '/^Samples:/ { go = 1; next } /^Locations/ { go = 0 } go && $1 ~ /^[0-9]+$/ && NF > 2 { s += $1 } END { print s + 0 }'
}

expect_usage "need --switch-output" record --pprof-dir "$PD/none" -o "$PD/none" -- /bin/true
: > "$PD/afile"
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 3)
if [ "$(id -u)" != 0 ] && [ "$paranoid" -gt 1 ]; then
	skp "record --pprof-dir (needs root or perf_event_paranoid <= 1)"
elif ! command -v go > /dev/null; then
	skp "record --pprof-dir read by go tool pprof: skipped: golang-go not installed"
else
	"$DSAN" record -a --switch-output=1s --pprof-dir "$PD/afile" -o "$PD/bad.data" \
		> /dev/null 2> "$PD/afile.err"
	rc=$?
	check "--pprof-dir on a regular file: refused at the start, exit 1" \
		bash -c "[ $rc -eq 1 ] && grep -q 'pprof-dir .*afile: ' '$PD/afile.err' && [ -z '$(pwindows "$PD/bad.data")' ]"

	# an earlier run's window and its pprof: --keep removes both
	mkdir -p "$PD/pp"
	: > "$PD/p.data.2001010100000000"
	: > "$PD/pp/p.data.2001010100000000.pb.gz"
	: > "$PD/pp/other.pb.gz"
	"$PBURN" 6 & pbp=$!
	sleep 0.3
	"$DSAN" record -a -F 199 --switch-output=1s --keep 3 --pprof-dir "$PD/pp" -d 3.5 \
		-o "$PD/p.data" 2> "$PD/p.err"
	rc=$?
	kill $pbp 2> /dev/null; wait $pbp 2> /dev/null
	wins=$(pwindows "$PD/p.data" | tr '\n' ' ')
	npb=0
	for w in $wins; do
		[ -s "$PD/pp/${w##*/}.pb.gz" ] && npb=$((npb + 1))
	done
	check "record -a --switch-output=1s --keep 3 --pprof-dir: exit 0, 3 windows, a .pb.gz each ($npb), no other" \
		bash -c "[ $rc -eq 0 ] && [ \$(echo $wins | wc -w) -eq 3 ] && [ $npb -eq 3 ] &&
			[ \$(ls '$PD/pp' | wc -l) -eq 4 ] && [ -e '$PD/pp/other.pb.gz' ] &&
			! grep -q 'Sanitizer\|runtime error\|pb\.gz' '$PD/p.err' || { ls '$PD' '$PD/pp'; cat '$PD/p.err'; false; }"
	n=0
	for w in $wins; do
		pb="$PD/pp/$(basename "$w").pb.gz"
		gopprof -top -symbolize=none "$pb" > "$pb.top" 2> "$pb.toperr" && n=$((n + 1))
		pbl=$pb
	done
	check "go tool pprof -top reads each window's pprof ($n of 3), burn_leaf named" \
		bash -c "[ $n -eq 3 ] && cat '$PD'/pp/*.top | grep -q burn_leaf ||
			{ ls -l '$PD/pp'; tail -n 5 '$PD'/pp/*.toperr '$PD'/pp/*.top; false; }"
	# the samples of a window's pprof = those of its report
	w1=$(echo $wins | cut -d' ' -f1)
	s1=$("$DS" report -i "$w1" --folded 2>&1 > /dev/null | sed -n 's/^summary: \([0-9]*\) samples.*/\1/p')
	p1=$(pp_samples "$PD/pp/$(basename "$w1").pb.gz")
	check "a window's pprof has its samples ($p1 = report's ${s1:-none})" test "$p1" = "${s1:--1}"
	gopprof -raw -symbolize=none "$pbl" > "$PD/raw" 2>&1
	check "the pprof carries the window's time, duration and hostname/kernel comments" \
		bash -c "grep -q '^Time: ' '$PD/raw' && grep -q '^Duration: [0-9]' '$PD/raw' &&
			grep -q '^Comment: hostname: $(uname -n)\$' '$PD/raw' &&
			grep -q '^Comment: kernel_release: $(uname -r)\$' '$PD/raw' || { head '$PD/raw'; false; }"
	check "the pprof's mappings carry build-ids (burn's)" \
		bash -c "grep -A1000 '^Mappings' '$PD/raw' | grep 'burn' | grep -qE '[0-9a-f]{40}'"
	if grep -qa GNU /sys/kernel/notes 2> /dev/null; then
		check "the pprof's kernel mapping carries the recorded kernel build-id" \
			bash -c "grep -A1000 '^Mappings' '$PD/raw' | grep -F '[kernel.kallsyms]' | grep -qE '[0-9a-f]{40}'"
	fi
	gopprof -tags -symbolize=none "$pbl" > "$PD/tags" 2>&1
	check "go tool pprof -tags: comm, pid, cpu, hostname, kernel_release labels" \
		bash -c "for k in comm pid cpu hostname kernel_release; do grep -q \"^ *\$k:\" '$PD/tags' || exit 1; done &&
			grep -A3 '^ *hostname:' '$PD/tags' | grep -q '$(uname -n)' || { cat '$PD/tags'; false; }"
	read -r w1 w2 _ <<< "$wins"
	gopprof -proto "$PD/pp/$(basename "$w1").pb.gz" "$PD/pp/$(basename "$w2").pb.gz" \
		> "$PD/merged.pb.gz" 2> "$PD/merged.err"
	rc=$?
	m=$(pp_samples "$PD/merged.pb.gz")
	a=$(pp_samples "$PD/pp/$(basename "$w1").pb.gz")
	b=$(pp_samples "$PD/pp/$(basename "$w2").pb.gz")
	check "go tool pprof -proto merges two windows ($a + $b = $m samples)" \
		bash -c "[ $rc -eq 0 ] && [ $m -gt 0 ] && [ $m -eq \$(($a + $b)) ] || { cat '$PD/merged.err'; false; }"

	# the directory gone while recording: one line per window, recording
	# goes on, the windows are whole
	mkdir -p "$PD/gone"
	"$DSAN" record -F 199 --switch-output=1s --pprof-dir "$PD/gone" -o "$PD/g.data" \
		-- "$PBURN" 2.5 2> "$PD/g.err" & rp=$!
	sleep 0.3
	rmdir "$PD/gone"
	wait $rp
	rc=$?
	nw=$(pwindows "$PD/g.data" | wc -l)
	ne=$(grep -c 'gone/g.data.[0-9]*.pb.gz' "$PD/g.err")
	check "pprof not written, its directory gone: exit 0, $nw windows, one line each: $ne" \
		bash -c "[ $rc -eq 0 ] && [ $nw -ge 2 ] && [ $ne -eq $nw ] &&
			grep -q '^deferstack: summary of all windows: [1-9]' '$PD/g.err' &&
			! grep -q 'Sanitizer\|runtime error' '$PD/g.err' || { cat '$PD/g.err'; false; }"
fi
