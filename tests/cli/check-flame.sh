# Sourced by tests/run-checks.sh (uses DSAN, OUT, T, check/ok/bad/skp and
# $T/m.data): the interactive SVG flame graph in headless Chromium.  A search
# from the URL fragment must highlight the matching frames and print the
# matched share that the folded stacks give; a zoom must widen the frame.

# kernel symbols for mkdata's KADDR(0..11): kfunc0..kfunc11
{ echo "ffffffff81000000 T _text"
  for i in $(seq 0 11); do printf 'ffffffff810000%02x T kfunc%d\n' "$i" "$i"; done
} > "$T/flame.ks"
"$DSAN" report -i "$T/m.data" -k "$T/flame.ks" --folded > "$T/flame.folded" 2>/dev/null
"$DSAN" report -i "$T/m.data" -k "$T/flame.ks" --svg "$T/flame.svg" 2>/dev/null
check "report --svg: interactive flame graph (script, search, zoom)" \
	bash -c "grep -q '<script' '$T/flame.svg' && grep -q 'id=\"search\"' '$T/flame.svg' && grep -q 'id=\"unzoom\"' '$T/flame.svg'"
if ! command -v chromium > /dev/null; then
	skp "flame graph in a browser: skipped: chromium not installed"
else
	chrome() { # chromium's own chatter (dbus, GPU) goes to a log
		timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
			--user-data-dir="$T/chromium" --window-size=1200,240 "$@" 2>> "$T/chromium.log"
	}
	re='^kfunc(1|5|10)$'
	# expected, from script's samples: the share of the period of the samples
	# with a frame matching, and how many samples they are
	"$DSAN" script -i "$T/m.data" -k "$T/flame.ks" > "$T/flame.script" 2>/dev/null
	want=$(awk -v re="$re" '/^[^\t]/ && NF >= 6 { ins = 1; w = $5; hit = 0 } /^\t/ { s = $2; sub(/\+0x[0-9a-f]+$/, "", s); if (s ~ re) hit = 1 } /^$/ { if (ins) { t += w; n++; if (hit) { m += w; k++ } } ins = 0 } END { printf "Matched: %.2f%% (%d of %d samples", 100 * m / t, k, n }' "$T/flame.script")
	url="file://$T/flame.svg"
	chrome --dump-dom "$url#search=$(printf %s "$re" | sed 's/|/%7C/g')" > "$T/flame.dom"
	check "chromium: search from the URL gives '$want'" grep -qF "$want" "$T/flame.dom"
	check "chromium: 3 matching frames highlighted" \
		test "$(grep -c 'fill="rgb(230,0,230)"[^>]*class="match"' "$T/flame.dom")" -eq 3
	check "chromium: the search button turned into 'Reset Search'" \
		grep -q '>Reset Search</text>' "$T/flame.dom"
	chrome --dump-dom "$url#zoom=^beta\$" > "$T/flame-zoom.dom"
	check "chromium: zoom on 'beta' widens it to the full width, others hidden" \
		bash -c "grep -q '<title>beta (2 samples[^<]*</title><rect x=\"10.00\" [^>]*width=\"1180.00\"' '$T/flame-zoom.dom' &&
			grep -q '<g [^>]*class=\"hide\"><title>alpha ' '$T/flame-zoom.dom' &&
			grep -q 'id=\"unzoom\" class=\"btn\"' '$T/flame-zoom.dom'"
	# weighted by period: cpu-clock of --multi, kfunc_b 1 sample of 4 but
	# 700 of the period 1000
	"$DSAN" report -i "$T/multi.data" -k "$T/multi.ks" --svg "$T/flame-multi.svg" 2>/dev/null
	chrome --dump-dom "file://$T/flame-multi.svg#search=kfunc_b" > "$T/flame-multi.dom"
	check "chromium: the flame graph is weighted by period (kfunc_b: 70% of the period, 1 of 4 samples)" \
		bash -c "grep -qF 'Matched: 70.00% (1 of 4 samples, 1 frame)' '$T/flame-multi.dom' &&
			grep -q '<title>kfunc_b (1 sample, 70.00%)</title>' '$T/flame-multi.dom'"
	chrome --screenshot="$T/plain.png" "$url" > /dev/null
	chrome --screenshot="$T/search.png" "$url#search=kfunc" > /dev/null
	plain=$(python3 tests/cli/png_count.py "$T/plain.png" 230,0,230 2>&1)
	hits=$(python3 tests/cli/png_count.py "$T/search.png" 230,0,230 2>&1)
	check "chromium screenshot: no highlight before the search, highlight after ($plain -> $hits px)" \
		bash -c "[ '$plain' = 0 ] && [ '$hits' -gt 10000 ] 2>/dev/null"
fi
