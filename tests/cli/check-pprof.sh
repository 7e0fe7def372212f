# Sourced by tests/run-checks.sh (uses DS, DSAN, OUT, T, check/ok/bad/skp and
# $T/m.data, $T/flame.ks): report --pprof writes a gzipped profile.proto that
# Go's own `go tool pprof` reads, with the same functions and shares as
# report --text.

# "name flat%" per function with self samples, from --text --sort sym and
# from pprof -top, sorted (shares as numbers, so 100% = 100.00%)
text_self() {
	"$DSAN" report -i "$1" -k "$2" --text --sort sym --top 1000000 2>/dev/null |
		awk '/^ +[0-9.]+% +[0-9.]+%  \[[k.]\] / { s = $2; sub(/%/, "", s); if (s + 0 > 0) { $1 = $2 = $3 = ""; sub(/^ +/, ""); printf "%s %.2f\n", $0, s } }' |
		sort
}
pprof_self() {
	HOME="$T" timeout 300 go tool pprof -top -symbolize=none -nodefraction=0 \
		-nodecount=1000000 "$1" 2>"$T/pprof.err" |
		awk 'go && $2 ~ /%$/ { s = $2; sub(/%/, "", s); if (s + 0 > 0) { for (i = 1; i <= 5; i++) $i = ""; sub(/^ +/, ""); printf "%s %.2f\n", $0, s } } / flat +flat% +sum%/ { go = 1 }' |
		sort
}
if ! command -v go > /dev/null; then
	skp "pprof read by go tool pprof: skipped: golang-go not installed"
else
	"$DSAN" report -i "$T/m.data" -k "$T/flame.ks" --pprof "$T/m.pb.gz" 2>/dev/null
	check "report --pprof: a gzip file" bash -c "[ \"\$(head -c 2 '$T/m.pb.gz' | od -An -tx1 | tr -d ' ')\" = 1f8b ]"
	text_self "$T/m.data" "$T/flame.ks" > "$T/m.text-self"
	pprof_self "$T/m.pb.gz" > "$T/m.pprof-self"
	check "go tool pprof -top reads it: the same functions and shares as --text (6 of 16.67%)" \
		bash -c "[ \$(grep -c ' 16.67$' '$T/m.pprof-self') -eq 6 ] && cmp '$T/m.text-self' '$T/m.pprof-self'"
	check "pprof: samples keep the comm and pid labels" \
		bash -c "HOME='$T' go tool pprof -raw -symbolize=none '$T/m.pb.gz' 2>/dev/null | grep -q 'comm:\[beta\]'"
	# pprof reads its first mapping as the main binary: ours, not the
	# kernel's, although the first sample begins with kernel frames
	burn_abs="$(cd "$OUT/tests" && pwd)/burn"
	"$OUT/tests/mkdata" "$T/pmap.data" "$burn_abs" || bad "mkdata with a mapped file"
	"$DSAN" report -i "$T/pmap.data" -k "$T/flame.ks" --pprof "$T/pmap.pb.gz" 2>/dev/null
	check "pprof: the main binary is the first mapping (File: burn, its build-id)" \
		bash -c "HOME='$T' go tool pprof -top -symbolize=none '$T/pmap.pb.gz' 2>/dev/null | head -2 | tr '\n' ' ' |
			grep -q '^File: burn Build ID: $(readelf -n "$burn_abs" | awk '/Build ID/ { print $3 }') '"
	expect_usage "--pprof and --svg are mutually exclusive" report --pprof "$T/x.pb.gz" --svg "$T/x.svg" -i "$T/m.data"
	expect_werr "report --pprof /dev/full" 'writing /dev/full: No space left on device' \
		"$DSAN" report -i "$T/m.data" -k /dev/null --pprof /dev/full
	if [ "$(id -u)" = 0 ] || [ "$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 3)" -le 1 ]; then
		"$DS" record -F 999 -o "$T/pp.data" -- "$OUT/tests/burn" 0.5 2>/dev/null
		"$DSAN" report -i "$T/pp.data" --pprof "$T/pp.pb.gz" 2>/dev/null
		text_self "$T/pp.data" "$T/pp.data.kallsyms" > "$T/pp.text-self"
		pprof_self "$T/pp.pb.gz" > "$T/pp.pprof-self"
		check "go tool pprof on a recording of burn: same top functions as --text ($(sort -k2 -nr "$T/pp.pprof-self" | head -3 | awk '{ printf "%s %s%%; ", $1, $2 }'))" \
			bash -c "[ -s '$T/pp.text-self' ] && cmp '$T/pp.text-self' '$T/pp.pprof-self' && grep -q '^burn_leaf ' '$T/pp.pprof-self'"
		bid=$(readelf -n "$OUT/tests/burn" | awk '/Build ID/ { print $3 }')
		check "pprof: the mapping of burn carries its build-id" \
			bash -c "HOME='$T' go tool pprof -top -symbolize=none '$T/pp.pb.gz' 2>/dev/null | grep -q 'Build ID: $bid'"
	fi
fi
