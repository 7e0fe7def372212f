#!/bin/bash
# make check driver: cmocka unit + golden tests, CLI tests (help, golden
# script output, bad input), host end-to-end record/report, perf interop.
# Ends with "N passed, N failed, N skipped" and exits non-zero on failure.
set -u
OUT=${1:?usage: run-checks.sh OUTDIR UNIT_BIN...}
shift
DS="$OUT/deferstack"          # optimized CLI (for recording)
DSAN="$OUT/san/deferstack"    # ASan+UBSan CLI (for parsing bad input)
T=$(mktemp -d /tmp/ds-check.XXXXXX)
trap 'rm -rf "$T"' EXIT
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
unset DEBUGINFOD_URLS	# libdwfl: local debug files only, no network
# perf's build-id cache (~/.debug: perf record in these tests fills it)
# would name rebuilt workloads: an empty one, the tests that use it set it
export PERF_BUILDID_DIR="$T/no-buildid-cache"
pass=0 fail=0 skip=0

ok()   { pass=$((pass + 1)); echo "PASS: $1"; }
bad()  { fail=$((fail + 1)); echo "FAIL: $1"; }
skp()  { skip=$((skip + 1)); echo "SKIP: $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }

# --- cmocka unit and golden tests
for t in "$@"; do
	if "$t" > "$T/unit.log" 2>&1; then
		n=$(grep -c '^\[       OK \]' "$T/unit.log")
		ok "$(basename "$t") ($n cmocka tests)"
	else
		cat "$T/unit.log"
		bad "$(basename "$t")"
	fi
done

# --- an object's symbol table (lib/symtab.c) answers as libdwfl's
# dwfl_module_addrinfo() does, at every symbol and section bound and across
# the text: libc (with its libc6-dbg debug file when installed), the CLI,
# and libLLVM (45 k symbols) when installed
libc=$(ldd "$DS" | awk '/libc\.so\.6/ { print $3 }')
llvm=$(ls /usr/lib/llvm-*/lib/libLLVM*.so* 2> /dev/null | head -1)
nobj=2
[ -n "$llvm" ] && llvm=$(readlink -f "$llvm") && nobj=3
check "symbol tables = dwfl_module_addrinfo (libc, the CLI${llvm:+, libLLVM})" \
	bash -c "'$OUT/tests/symcmp' -n 1500 '$libc' '$DS' > '$T/symcmp.log' &&
		{ [ -z '$llvm' ] || '$OUT/tests/symcmp' -n 300 '$llvm' >> '$T/symcmp.log'; } &&
		[ \$(grep -c ', 0 differ\$' '$T/symcmp.log') -eq $nobj ] || { cat '$T/symcmp.log'; false; }"

# --- help for every subcommand
for c in record report script convert; do
	check "$c --help" bash -c "'$DS' $c --help | grep -q 'usage: deferstack $c'"
done
check "top-level --help" bash -c "'$DS' --help | grep -q 'commands:'"
check "--version prints the Makefile's VERSION" \
	bash -c "[ \"\$('$DS' --version)\" = \"deferstack \$(sed -n 's/^VERSION := //p' Makefile)\" ]"
check "unknown command fails" bash -c "! '$DS' frobnicate 2>/dev/null"
if command -v groff >/dev/null; then
	check "man page renders" bash -c "groff -man -Tutf8 -ww -z man/deferstack.1 2>&1 | (! grep -q .) && groff -man -Tutf8 man/deferstack.1 | grep -q 'deferstack record'"
else
	check "man page present" grep -q '^\.TH DEFERSTACK 1' man/deferstack.1
fi

# --- bad option values and conflicting outputs: a message, exit 2
expect_usage() { # pattern args...
	local pat=$1 rc; shift
	timeout 30 "$DSAN" "$@" > /dev/null 2> "$T/usage.err"
	rc=$?
	if [ $rc -eq 2 ] && grep -q -- "$pat" "$T/usage.err"; then
		ok "rejected: $* ($(head -1 "$T/usage.err"))"
	else
		echo "rc=$rc"; cat "$T/usage.err"; bad "rejected: $*"
	fi
}
for v in abc -1 0 ' 5' 99999999999999999999999; do
	expect_usage "bad --top '$v'" report --top "$v" -i "$T/none"
done
for v in nan inf -1 0 1e300 abc ''; do
	expect_usage "bad -d '$v'" record -d "$v" -o "$T/none" -- /bin/true
done
for v in abc -5 ' 5' 0 99999999999; do
	expect_usage "bad -F '$v'" record -F "$v" -o "$T/none" -- /bin/true
done
expect_usage "bad -p '4294967297'" record -p 4294967297 -o "$T/none"
expect_usage "bad -p '-3'" record -p -3 -o "$T/none"
expect_usage "bad -m '3' (a power of two)" record -m 3 -o "$T/none" -- /bin/true
# -e: perf's syntax; anything else refused by name
expect_usage "unknown event 'foo'" record -e foo -o "$T/none" -- /bin/true
expect_usage "unknown event 'frobs'" record -e cpu-clock,frobs -o "$T/none" -- /bin/true
expect_usage "unknown event 'nosys:noevent'" record -e nosys:noevent -o "$T/none" -- /bin/true
expect_usage "event 'cpu-clock:p': unknown modifier 'p'" record -e cpu-clock:p -o "$T/none" -- /bin/true
expect_usage "bad -e 'cpu-clock,': an empty event" record -e cpu-clock, -o "$T/none" -- /bin/true
expect_usage "bad -c '0'" record -e context-switches -c 0 -o "$T/none" -- /bin/true
expect_usage "-F and -c exclude each other" record -F 99 -c 10 -o "$T/none" -- /bin/true
expect_usage "--folded and --svg are mutually exclusive" report --folded --svg "$T/x.svg" -i "$T/none"
expect_usage "--text and --folded are mutually exclusive" report --text --folded -i "$T/none"
expect_usage "--svg and --text are mutually exclusive" report --svg "$T/x.svg" --text -i "$T/none"

# --- hand-built raw deferred stream through the CLI
"$OUT/tests/mkdata" "$T/m.data" || bad "mkdata"
check "the bundled tests/cli/data/deferred.data is what mkdata writes" cmp -s "$T/m.data" tests/cli/data/deferred.data
check "report --folded of the bundled recording = tests/cli/data/deferred.folded" \
	bash -c "'$DS' report -i tests/cli/data/deferred.data -k tests/cli/data/deferred.ks --folded 2>/dev/null | cmp -s - tests/cli/data/deferred.folded"
"$DSAN" script -i "$T/m.data" -k /dev/null > "$T/script.txt" 2> "$T/script.err"
check "script exit 0" test $? -eq 0
check "script: 4 stitched" test "$(grep -c ': stitched cookie' "$T/script.txt")" -eq 4
check "script: record-first marked" grep -q 'stitched cookie=0x100000001 (record before sample)' "$T/script.txt"
check "script: lost -> kernel-only" grep -q 'kernel-only cookie=0x200000001 (user stack not stitched: cookie-changed)' "$T/script.txt"
check "script: end -> kernel-only" grep -q 'kernel-only cookie=0x300000001 (user stack not stitched: end-of-data)' "$T/script.txt"
check "script: summary" grep -q 'summary: 6 samples, 2 deferred records, 4 stitched (1 record-first), 0 complete, 2 unmatched' "$T/script.err"
"$DSAN" report -i "$T/m.data" -k /dev/null --folded > "$T/m.folded" 2>/dev/null
check "report --folded on raw stream" grep -q '^alpha;\[user stack not stitched\];' "$T/m.folded"
check "convert raw -> classic" "$DSAN" convert -i "$T/m.data" -o "$T/m.classic" 2>/dev/null
"$DSAN" script -i "$T/m.classic" -k /dev/null > "$T/classic.txt" 2>/dev/null
check "converted file: all complete" test "$(grep -c ': complete' "$T/classic.txt")" -eq 6
if command -v perf >/dev/null; then
	check "perf script reads converted file" bash -c "perf script -i '$T/m.classic' 2>&1 | grep -q 'cpu-clock'"
else
	skp "perf not installed"
fi

# --- several events (perf 6.x layout: PERF_SAMPLE_ID, no IDENTIFIER): one
# profile per event, weighted by period (cpu-clock: 3 samples of kfunc_a at
# period 100, 1 of kfunc_b at 700 -> kfunc_b 70 %)
"$OUT/tests/mkdata" --multi "$T/multi.data" || bad "mkdata --multi"
printf 'ffffffff81000000 T _text\nffffffff81000000 T kfunc_a\nffffffff81000100 T kfunc_b\nffffffff81000200 T kfunc_pf\n' > "$T/multi.ks"
"$DSAN" report -i "$T/multi.data" -k "$T/multi.ks" > "$T/multi.txt" 2> "$T/multi.err"
check "several events: report exit 0" test $? -eq 0
check "several events: a section per event" bash -c "grep -A1 \"^# ======== event 'cpu-clock'\$\" '$T/multi.txt' | grep -q '^# Samples: 4  Total period: 1000\$' && grep -A1 \"^# ======== event 'page-faults:u'\$\" '$T/multi.txt' | grep -q '^# Samples: 2  Total period: 2\$'"
check "several events: weighted by period (kfunc_b 70%)" bash -c "sed -n '/event .cpu-clock/,/event .page-faults/p' '$T/multi.txt' | grep -qE '^ +70\.00% +70\.00%  multi +\[kernel\.kallsyms\] +\[k\] kfunc_b\$'"
check "several events: events not mixed" bash -c "! sed -n '/event .cpu-clock/,/event .page-faults/p' '$T/multi.txt' | grep -q kfunc_pf"
"$DSAN" report -i "$T/multi.data" -k "$T/multi.ks" --folded --event page-faults > "$T/multi.pf" 2>/dev/null
check "--event page-faults (matches page-faults:u): its stacks only" bash -c "[ \"\$(cat '$T/multi.pf')\" = 'multi;kfunc_pf 2' ]"
"$DSAN" report -i "$T/multi.data" -k "$T/multi.ks" --folded > "$T/multi.f" 2> "$T/multi.ferr"
check "--folded of several events: the first, with a note" bash -c "grep -qx 'multi;kfunc_b 700' '$T/multi.f' && ! grep -q kfunc_pf '$T/multi.f' && grep -q 'samples of 2 events; --folded shows .cpu-clock.' '$T/multi.ferr'"
"$DSAN" report -i "$T/multi.data" -k /dev/null --event cycles > /dev/null 2> "$T/multi.nerr"
rc=$?
check "--event not in the file: exit 1, names the events" bash -c "[ $rc -eq 1 ] && grep -q \"no event 'cycles' in the recording (events: cpu-clock, page-faults:u)\" '$T/multi.nerr'"

# --- report --text is linear in the stack depth: 200 distinct stacks of
# 8,000 distinct frames (the quadratic version took 19 s here under ASan).
# CPU time, not wall time: a loaded machine (guests running beside) made
# the wall time 7 s once.
"$OUT/tests/mkdata" --deep "$T/deep.data" "$T/deep.ks" 200 8000 || bad "mkdata --deep"
timeout 60 /usr/bin/time -f '%U %S' -o "$T/deep.time" \
	"$DSAN" report -i "$T/deep.data" -k "$T/deep.ks" --text --children --sort sym --top 3 > "$T/deep.txt" 2>/dev/null
rc=$?
ms=$(awk '{ printf "%d", ($1 + $2) * 1000 }' "$T/deep.time" 2>/dev/null)
ms=${ms:-99999}
check "report --text of 200 x 8,000 frames: ${ms} ms of CPU under ASan (< 5 s)" \
	bash -c "[ $rc -eq 0 ] && [ $ms -lt 5000 ] && grep -qE '^ +100\.00% +0\.00%  \[k\] deep_fn_1\$' '$T/deep.txt'"

# --- pipe mode (perf's record -o - format): a reader over standard input
"$DSAN" convert -i "$T/m.data" -o - 2> "$T/pconv.err" | "$DSAN" script -i - -k /dev/null > "$T/pipe.txt" 2> "$T/pipe.err"
check "convert -o - | script -i -: pipe-mode stream read from a pipe (6 samples)" \
	bash -c "[ \$(grep -c ': complete' '$T/pipe.txt') -eq 6 ] && ! grep -q 'Sanitizer\|runtime error' '$T/pipe.err' '$T/pconv.err'"
"$DSAN" convert -i "$T/m.data" -o - > "$T/m.pipe" 2>/dev/null
check "a pipe-mode file reads like the original" \
	bash -c "'$DSAN' script -i '$T/m.pipe' -k /dev/null 2>/dev/null | grep -c ': complete' | grep -qx 6"
check "report -i - < FILE: a file-mode recording on a seekable standard input" \
	bash -c "'$DSAN' report -i - --folded -k /dev/null < '$T/m.data' 2>/dev/null | grep -q '^alpha;'"
cat "$T/m.data" | "$DSAN" report -i - -k /dev/null > /dev/null 2> "$T/pfile.err"
rc=$?
check "file-mode recording through a pipe: exit 1, says to give the file" \
	bash -c "[ $rc -eq 1 ] && grep -q 'standard input: a perf.data in file mode cannot be read from a pipe' '$T/pfile.err'"
head -c $(($(wc -c < "$T/m.pipe") - 20)) "$T/m.pipe" | "$DSAN" script -i - -k /dev/null > "$T/pcut.txt" 2> "$T/pcut.err"
rc=$?
# (exit 1: an incomplete input, issue 23; perf exits 0 there, but a cut
# stream lost a record as a cut file does)
check "a cut pipe-mode stream: exit 1, the records before the cut, a warning" \
	bash -c "[ $rc -eq 1 ] && grep -q 'complete' '$T/pcut.txt' && grep -q 'last record is cut off' '$T/pcut.err' &&
		tail -1 '$T/pcut.err' | grep -qx 'deferstack: standard input is incomplete (its last record is cut off): the output ends before it'"
printf 'PERFILE2\020\0\0\0\0\0\0\0' | cat - "$T/m.data" | "$DSAN" report -i - -k /dev/null > /dev/null 2> "$T/pjunk.err"
rc=$?
check "pipe-mode garbage: exit 1, one clear line, no sanitizer report" \
	bash -c "[ $rc -eq 1 ] && [ \$(wc -l < '$T/pjunk.err') -eq 1 ] && grep -q '^deferstack: standard input: ' '$T/pjunk.err' && ! grep -q 'Sanitizer\|runtime error' '$T/pjunk.err'"

# --- the library as others use it: make install (PREFIX, DESTDIR), the
# versioned shared library exporting exactly its API, pkg-config
I="$T/inst"
make -s --no-print-directory install OUT="$OUT" DESTDIR="$I" PREFIX=/usr > "$T/inst.log" 2>&1
check "make install DESTDIR=... PREFIX=/usr" bash -c "[ -x '$I/usr/bin/deferstack' ] && [ -f '$I/usr/lib/libdeferstack.a' ] && [ -L '$I/usr/lib/libdeferstack.so' ] && [ -f '$I/usr/include/deferstack/deferstack.h' ] && [ -f '$I/usr/include/deferstack/perf_abi.h' ] && [ -f '$I/usr/lib/pkgconfig/deferstack.pc' ] && [ -f '$I/usr/share/man/man1/deferstack.1' ]" || cat "$T/inst.log"
check "libdeferstack.so: soname libdeferstack.so.$(sed -n 's/^SOVERSION := //p' Makefile)" bash -c "readelf -d '$I/usr/lib/libdeferstack.so' | grep -q 'SONAME.*\[libdeferstack.so.$(sed -n 's/^SOVERSION := //p' Makefile)\]'"
grep -o '^DS_API [^(]*(' include/deferstack/deferstack.h | sed 's/.*[^a-z0-9_]\(ds_[a-z0-9_]*\)($/\1/' | sort > "$T/api.hdr"
sed -n 's/^[[:space:]]*\(ds_[a-z0-9_]*\);/\1/p' lib/libdeferstack.map | sort > "$T/api.map"
nm -D --defined-only "$I/usr/lib/libdeferstack.so" | awk '$2 == "T" { print $3 }' > "$T/api.so.v"
sed 's/@.*//' "$T/api.so.v" | sort > "$T/api.so"
check "exports = DS_API declarations = lib/libdeferstack.map ($(wc -l < "$T/api.so") functions)" \
	bash -c "[ -s '$T/api.so' ] && cmp -s '$T/api.hdr' '$T/api.map' && cmp -s '$T/api.map' '$T/api.so'" || diff "$T/api.hdr" "$T/api.so"
sed -n 's/^ \(ds_[a-z0-9_]*\)@DEFERSTACK_0\.[0-9]* .*/\1/p' debian/libdeferstack1.symbols | sort > "$T/api.deb"
check "debian/libdeferstack1.symbols lists the same exports" cmp -s "$T/api.deb" "$T/api.so" || diff "$T/api.deb" "$T/api.so"
# the packaged CLI links the shared library: it may use exported API only
check "CLI linked against libdeferstack.so (make dyn) runs" \
	bash -c "make -s --no-print-directory dyn OUT='$OUT' > '$T/dyn.log' 2>&1 && LD_LIBRARY_PATH='$OUT' '$OUT/dyn/deferstack' --version > /dev/null" || cat "$T/dyn.log"
# ... the CLI's objects reference no ds_* symbol but the exported ones,
# and the dyn CLI defines none of its own (no private copy of a lib/ object)
for o in "$OUT"/obj/tools/*.o; do nm -u "$o"; done | awk '$2 ~ /^ds_/ { print $2 }' | sort -u > "$T/cli.u"
comm -23 "$T/cli.u" "$T/api.map" > "$T/cli.hidden"
check "the CLI uses only exported ds_* symbols ($(wc -l < "$T/cli.u") of them)" \
	bash -c "[ -s '$T/cli.u' ] && [ \$(ls '$OUT'/obj/tools/*.o | wc -l) -eq $(ls tools/*.c | wc -l) ] && [ ! -s '$T/cli.hidden' ]" || cat "$T/cli.hidden"
check "make dyn: the CLI defines no ds_* symbol (links libdeferstack.so only)" \
	bash -c "! nm --defined-only '$OUT/dyn/deferstack' | grep -q ' ds_'"
# each export in the version node the map gives it (0.2, or the release that added it)
awk '/^DEFERSTACK_/ { v = $1 } /^[[:space:]]*ds_[a-z0-9_]*;/ { s = $1; sub(/;/, "", s); print s "@@" v }' lib/libdeferstack.map | sort > "$T/api.map.v"
check "exports are versioned as lib/libdeferstack.map says (DEFERSTACK_0.2 to _0.6), internals hidden" \
	bash -c "sort '$T/api.so.v' | cmp -s - '$T/api.map.v' && ! nm -D '$I/usr/lib/libdeferstack.so' | grep -q 'ds_htab\|ds_open_regular'"
# no two modules of the library call each other, directly or round a
# circle (buildid.c and symbols.c did): the graph of which object uses a
# symbol another defines sorts topologically
( cd "$OUT/obj/lib" && for o in *.o; do nm --defined-only "$o" | awk -v o="$o" '$2 ~ /[TDBR]/ { print $3, o }'; done | sort > "$T/lib.defs" &&
  for o in *.o; do nm -u "$o" | awk -v o="$o" '{ print $2, o }'; done | sort > "$T/lib.uses" )
join "$T/lib.uses" "$T/lib.defs" | awk '$2 != $3 { print $2, $3 }' | sort -u > "$T/lib.edges"
check "lib/: no circular dependency between modules ($(wc -l < "$T/lib.edges") uses; buildid.o uses no symbols.o)" \
	bash -c "[ -s '$T/lib.edges' ] && tsort '$T/lib.edges' > /dev/null 2>&1 && ! grep -q '^buildid.o symbols.o\$' '$T/lib.edges'"
PC="env PKG_CONFIG_PATH=$I/usr/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$I pkg-config"
check "pkg-config deferstack: version, flags" \
	bash -c "[ \"\$($PC --modversion deferstack)\" = \"\$(sed -n 's/^VERSION := //p' Makefile)\" ] && $PC --libs deferstack | grep -q -- '-L$I/usr/lib -ldeferstack'"
pc_cflags=$($PC --cflags deferstack)
pc_libs=$($PC --libs deferstack)
pc_static=$($PC --static --libs-only-l deferstack | sed 's/-ldeferstack//')
cc -std=c11 -Wall -Wextra -Werror $pc_cflags tests/cli/so_consumer.c \
	-o "$T/so_consumer" $pc_libs 2> "$T/soc.err"
check "a program built with pkg-config's flags links the .so" \
	bash -c "readelf -d '$T/so_consumer' | grep -q 'NEEDED.*libdeferstack.so.1'" || cat "$T/soc.err"
check "... and runs with it (public API only, through ds_pipeline): 6 samples, 4 stitched, 6 profiled" \
	bash -c "LD_LIBRARY_PATH='$I/usr/lib' '$T/so_consumer' '$T/m.data' | grep -qx 'samples=6 stitched=4 kernel_only=2 profiled=6'"
cc -std=c11 $pc_cflags tests/cli/so_consumer.c -o "$T/so_static" \
	"$I/usr/lib/libdeferstack.a" $pc_static 2> "$T/sos.err"
check "... and statically with the installed .a" \
	bash -c "'$T/so_static' - < '$T/m.data' | grep -qx 'samples=6 stitched=4 kernel_only=2 profiled=6'" || cat "$T/sos.err"

# the public headers are C++ too: a C++ program against the installed
# headers (-Wpedantic), linked with the .so, calling the API
CXX=${CXX:-g++}
for std in c++11 c++17; do
	rm -f "$T/cxx_consumer"
	$CXX -std=$std -Wall -Wextra -Wpedantic -Werror $pc_cflags tests/cli/cxx_consumer.cc \
		-o "$T/cxx_consumer" $pc_libs > "$T/cxxc.err" 2>&1
	check "a C++ ($std) program includes deferstack/deferstack.h and links the .so" \
		test -x "$T/cxx_consumer" || cat "$T/cxxc.err"
done
LD_LIBRARY_PATH="$I/usr/lib" "$T/cxx_consumer" "$T/m.data" > "$T/cxxc.out" 2>&1
check "... and runs with it: event=cpu-clock samples=6 stitched=4 folded=6" \
	grep -qx 'event=cpu-clock samples=6 stitched=4 folded=6' "$T/cxxc.out"
check "... through the options structs (ds_fold_chain_opts, ds_profile_sample) and sz'd structs: profiled=6 leaves=6" \
	grep -qx 'profiled=6 leaves=6 stats_sz_ok=1' "$T/cxxc.out" || cat "$T/cxxc.out"
check "... and through ds_pipeline (read, merge, stitch, symbols in one object): 6 samples, 4 stitched" \
	grep -qx 'pipeline samples=6 stitched=4 kernel_only=2 outputs=6 summary_sz_ok=1' "$T/cxxc.out" || cat "$T/cxxc.out"

# --- bad input: clear one-line error, non-zero exit, no sanitizer report
put_u64() { # file offset value
	local v=$3 s="" i
	for i in 0 1 2 3 4 5 6 7; do s="$s$(printf '\\x%02x' $(((v >> (8 * i)) & 255)))"; done
	printf "$s" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
put_u16() {
	printf "$(printf '\\x%02x\\x%02x' $(($3 & 255)) $((($3 >> 8) & 255)))" |
		dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
expect_error() { # name file pattern
	local name=$1 f=$2 pat=$3 rc
	timeout 30 "$DSAN" report -i "$f" -k /dev/null > /dev/null 2> "$T/err.txt"
	rc=$?
	if [ $rc -eq 1 ] && grep -q "$pat" "$T/err.txt" &&
	   ! grep -q 'Sanitizer\|runtime error' "$T/err.txt"; then
		ok "bad input: $name ($(head -1 "$T/err.txt"))"
	else
		echo "rc=$rc"; cat "$T/err.txt"
		bad "bad input: $name"
	fi
}
printf 'NOTAPERFFILE-----' > "$T/magic"; expect_error "wrong magic" "$T/magic" "bad magic"
: > "$T/empty"; expect_error "empty file" "$T/empty" "too short"
head -c 50 "$T/m.data" > "$T/trunc_hdr"; expect_error "truncated header" "$T/trunc_hdr" "truncated header"
cp "$T/m.data" "$T/attrsz"; put_u64 "$T/attrsz" 16 $((1 << 40))
expect_error "absurd attr_size" "$T/attrsz" "bad attr section"
cp "$T/m.data" "$T/datasz"; put_u64 "$T/datasz" 40 $((1 << 50))
expect_error "absurd data offset" "$T/datasz" "past end of file"
DOFF=$(od -An -t u8 -j 40 -N 8 "$T/m.data" | tr -d ' ')
DSIZE=$(od -An -t u8 -j 48 -N 8 "$T/m.data" | tr -d ' ')
cp "$T/m.data" "$T/size0"; put_u16 "$T/size0" $((DOFF + 6)) 0
expect_error "record size 0" "$T/size0" "record of size 0"
cp "$T/m.data" "$T/bigrec"; put_u16 "$T/bigrec" $((DOFF + 6)) 65528
expect_error "record larger than data" "$T/bigrec" "runs past the data section"
# the first sample follows two 64-byte COMM records; its callchain nr is at +56
cp "$T/m.data" "$T/nr"; put_u64 "$T/nr" $((DOFF + 128 + 56)) 1000
expect_error "callchain nr larger than record" "$T/nr" "nr larger than the record"
cp "$T/m.data" "$T/dnr"; put_u64 "$T/dnr" $((DOFF + 128 + 3 * 104 + 8 + 16)) 99999
expect_error "deferred nr larger than record" "$T/dnr" "malformed CALLCHAIN_DEFERRED"
expect_error "missing file" "$T/nope" "cannot open"
mkfifo "$T/fifo"
expect_error "directory as input" "$T" "is a directory, not a perf.data file"
expect_error "FIFO as input" "$T/fifo" "is a FIFO (read a pipe as standard input: -i -), not a perf.data file"
expect_error "device as input" /dev/zero "is a device, not a perf.data file"
# an MMAP record naming a FIFO must not hang report; a FIFO as -k neither
"$OUT/tests/mkdata" "$T/mfifo.data" "$T/fifo" || bad "mkdata with a mapped FIFO"
timeout 30 "$DSAN" report -i "$T/mfifo.data" -k /dev/null --folded > "$T/mfifo.folded" 2>/dev/null
rc=$?
check "report: MMAP of a FIFO does not hang (exit $rc)" bash -c "[ $rc -eq 0 ] && grep -q '^alpha;\[fifo+0x' '$T/mfifo.folded'"
timeout 30 "$DSAN" report -i "$T/m.data" -k "$T/fifo" --folded > /dev/null 2> "$T/kfifo.err"
rc=$?
check "report -k FIFO: does not hang, an error (exit $rc)" bash -c "[ $rc -eq 1 ] && grep -q 'cannot read kallsyms .*: not a regular file' '$T/kfifo.err'"

# a recording whose recorder was killed: header with data size 0 and no
# features, the last record cut; read to the end of the file, with
# warnings, exit 1 (an incomplete input, issue 23: perf script exits 255)
cp "$T/m.data" "$T/unfin"; put_u64 "$T/unfin" 48 0
for o in 72 80 88 96; do put_u64 "$T/unfin" $o 0; done
head -c $((DOFF + DSIZE - 12)) "$T/unfin" > "$T/unfin.cut"
"$DSAN" script -i "$T/unfin.cut" -k /dev/null > "$T/unfin.txt" 2> "$T/unfin.err"
rc=$?
check "unfinished file: script exit 1, all 6 samples" \
	bash -c "[ $rc -eq 1 ] && [ \$(grep -c 'cookie=' '$T/unfin.txt') -eq 6 ]"
check "unfinished file: warns it was not finished" grep -q 'recording was not finished' "$T/unfin.err"
check "unfinished file: warns about the cut last record" grep -q 'last record is cut off (60 bytes' "$T/unfin.err"
check "unfinished file: report --folded reads its samples" \
	bash -c "'$DSAN' report -i '$T/unfin.cut' -k /dev/null --folded 2>/dev/null | grep -q '^beta;'"

# convert onto its own input: refused (by st_dev/st_ino, not by name)
mkdir -p "$T/cv"; cp "$T/m.data" "$T/cv/a.data"; ln -s a.data "$T/cv/sym.data"; ln "$T/cv/a.data" "$T/cv/hard.data"
for o in a.data sym.data hard.data ./../cv/a.data; do
	"$DSAN" convert -i "$T/cv/a.data" -o "$T/cv/$o" > /dev/null 2> "$T/cv.err"
	rc=$?
	check "convert -o $o (the input): exit 1, clear message, input intact" \
		bash -c "[ $rc -eq 1 ] && grep -q 'are the same file' '$T/cv.err' && cmp -s '$T/m.data' '$T/cv/a.data'"
done
# a failed convert leaves an existing output alone and no temp file behind
echo KEEP > "$T/cv/out.data"
"$DSAN" convert -i "$T/size0" -o "$T/cv/out.data" > /dev/null 2>&1
check "failed convert: existing output untouched" grep -qx KEEP "$T/cv/out.data"
"$DSAN" convert -i "$T/cv/a.data" -o "$T/cv/new.data" 2>/dev/null
check "convert: output renamed into place, no temp files left" \
	bash -c "[ -s '$T/cv/new.data' ] && [ \$(ls -A '$T/cv' | grep -c '^\\.') -eq 0 ]"

# --- write errors: the real errno with the output's name, exit 1
expect_werr() { # name pattern command...
	local name=$1 pat=$2 rc; shift 2
	"$@" > /dev/null 2> "$T/werr.txt"
	rc=$?
	if [ $rc -eq 1 ] && grep -q "$pat" "$T/werr.txt" && ! grep -q 'processing failed\|Sanitizer\|runtime error' "$T/werr.txt"; then
		ok "write error: $name ($(grep -m1 "$pat" "$T/werr.txt"))"
	else
		echo "rc=$rc"; cat "$T/werr.txt"; bad "write error: $name"
	fi
}
for a in "report --folded" "report --text" "script" "script -a"; do
	expect_werr "$a > /dev/full" 'writing standard output: No space left on device' \
		bash -c "'$DSAN' $a -i '$T/m.data' -k /dev/null > /dev/full"
done
expect_werr "report --svg /dev/full" 'writing /dev/full: No space left on device' \
	"$DSAN" report -i "$T/m.data" -k /dev/null --svg /dev/full
expect_werr "convert -o /dev/full" 'writing /dev/full: No space left on device' \
	"$DSAN" convert -i "$T/m.data" -o /dev/full
mkdir -p "$T/fsz"
expect_werr "convert over the file size limit" "writing $T/fsz/big.data: File too large" \
	bash -c "ulimit -f 1; trap '' XFSZ; exec '$DSAN' convert -i '$T/m.data' -o '$T/fsz/big.data'"
expect_werr "report --svg over the file size limit" "writing $T/fsz/big.svg: File too large" \
	bash -c "ulimit -f 1; trap '' XFSZ; exec '$DSAN' report -i '$T/m.data' -k /dev/null --svg '$T/fsz/big.svg'"
check "failed writes leave no output and no temp file" test -z "$(ls -A "$T/fsz")"

# --- outputs: flame graph in a browser, symbols and debug files, report
# --text and script, pprof (tests/cli/check-*.sh, sourced in name order)
for f in tests/cli/check-*.sh; do
	. "$f"
done

# --- host end-to-end: record (auto: defer or fallback), report, perf 6.1 reads it
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 3)
if [ "$(id -u)" != 0 ] && [ "$paranoid" -gt 1 ]; then
	skp "host end-to-end (needs root or perf_event_paranoid <= 1)"
else
	BURN="$OUT/tests/burn"
	"$DS" record --mode auto -F 499 -o "$T/e2e.data" -- "$BURN" 1 2> "$T/rec.err"
	rc=$?
	cat "$T/rec.err"
	check "record --mode auto -- burn: exit 0" test $rc -eq 0
	if grep -q 'falling back to classic' "$T/rec.err"; then
		ok "auto mode: one-line fallback notice on a kernel without defer"
		"$DS" record --mode defer -o "$T/defer.data" -- /bin/true 2> "$T/defer.err"
		rc=$?
		check "record --mode defer fails clearly without kernel support" \
			bash -c "[ $rc -eq 1 ] && grep -q 'does not support deferred user callchains' '$T/defer.err'"
	else
		skp "fallback notice (kernel supports deferred callchains)"
	fi
	# off-CPU: context switches of a sleeping shell (classic chains here)
	"$DS" record -e context-switches -o "$T/cs.data" -- sh -c 'sleep 0.05; sleep 0.05' \
		2> "$T/cs.err"
	check "record -e context-switches: exit 0" test $? -eq 0
	if command -v perf > /dev/null; then
		check "record -e context-switches: perf names the event" \
			bash -c "perf script -i '$T/cs.data' 2>/dev/null | grep -q context-switches"
	fi
	check "record -e context-switches: samples" \
		bash -c "'$DS' report -i '$T/cs.data' --folded 2>/dev/null | grep -q schedule"
	# an EINVAL from the user's own options is not "no deferred callchains"
	maxr=$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null || echo 100000)
	if [ "$maxr" -lt 5000000 ]; then
		for m in defer auto; do
			"$DS" record --mode $m -F $((maxr * 2)) -o "$T/f.data" -- /bin/true 2> "$T/f.err"
			rc=$?
			check "record --mode $m -F above the kernel's limit: says so" \
				bash -c "[ $rc -eq 1 ] && grep -q \"F $((maxr * 2)) is above the kernel's limit\" '$T/f.err' && ! grep -q 'deferred\|falling back' '$T/f.err'"
		done
	else
		skp "-F above the kernel's limit (perf_event_max_sample_rate=$maxr)"
	fi
	check "record summary printed" grep -q 'summary: [1-9][0-9]* samples' "$T/rec.err"
	check "kallsyms saved next to the data" test -s "$T/e2e.data.kallsyms"
	# only the kernel symbols that cover sampled addresses, not a 5 MB copy;
	# the report names the same kernel functions as with /proc/kallsyms
	ks_all=$(wc -c < /proc/kallsyms); ks_rec=$(wc -c < "$T/e2e.data.kallsyms")
	check "FILE.kallsyms holds the sampled symbols only ($ks_rec of $ks_all bytes)" \
		test $((ks_rec * 50)) -lt "$ks_all"
	"$DSAN" report -i "$T/e2e.data" -k /proc/kallsyms --folded > "$T/e2e.full.folded" 2>/dev/null
	"$DSAN" report -i "$T/e2e.data" -k "$T/e2e.data.kallsyms" --folded > "$T/e2e.sub.folded" 2>/dev/null
	check "report with FILE.kallsyms = report with /proc/kallsyms" \
		bash -c "grep -q do_syscall_64 '$T/e2e.sub.folded' && cmp -s '$T/e2e.full.folded' '$T/e2e.sub.folded'"
	"$DSAN" report -i "$T/e2e.data" --folded > "$T/e2e.folded" 2>/dev/null
	for fn in burn_leaf burn_middle burn_outer syscall_loop main; do
		check "report --folded has $fn" grep -q "^burn;.*$fn" "$T/e2e.folded"
	done
	check "folded format: 'frames count'" bash -c "grep -qE '^[^ ].*;burn_leaf [0-9]+$' '$T/e2e.folded'"
	check "report --folded has kernel frames under write" grep -qE ';(__GI___libc_|__)?write;.*(do_syscall_64|entry_SYSCALL)' "$T/e2e.folded"
	"$DSAN" report -i "$T/e2e.data" --text > "$T/e2e.txt" 2>/dev/null
	check "report --text top functions" grep -q 'burn_leaf' "$T/e2e.txt"
	"$DSAN" report -i "$T/e2e.data" --svg "$T/e2e.svg" 2>/dev/null
	check "report --svg writes a flame graph" bash -c "grep -q '</svg>' '$T/e2e.svg' && grep -q 'burn_leaf' '$T/e2e.svg'"
	"$DSAN" script -i "$T/e2e.data" > "$T/e2e.script" 2>/dev/null
	check "script shows frames" grep -q 'burn_leaf' "$T/e2e.script"
	# a stripped binary (no symbol table, no defined dynamic symbols)
	if command -v strip >/dev/null; then
		strip -o "$T/burn-stripped" "$BURN"
		"$DS" record -o "$T/strip.data" -- "$T/burn-stripped" 0.3 2>/dev/null
		"$DSAN" report -i "$T/strip.data" --folded > "$T/strip.folded" 2> "$T/strip.err"
		rc=$?
		check "report on a stripped binary: per-address [burn-stripped+0xOFF] frames, no UBSan report" \
			bash -c "[ $rc -eq 0 ] && [ \$(grep -o '\[burn-stripped+0x[0-9a-f]*\]' '$T/strip.folded' | sort -u | wc -l) -ge 3 ] && ! grep -q 'runtime error' '$T/strip.err'"
		# the same stripped binary with its debug file through .gnu_debuglink
		objcopy --only-keep-debug "$BURN" "$T/burn.dbg"
		objcopy --add-gnu-debuglink="$T/burn.dbg" "$T/burn-stripped" "$T/burn-dl"
		"$DS" record -o "$T/dl.data" -- "$T/burn-dl" 0.3 2>/dev/null
		check "report on a stripped binary with a .gnu_debuglink debug file: functions named" \
			bash -c "'$DSAN' report -i '$T/dl.data' --folded 2>/dev/null | grep -q '^burn-dl;.*main;burn_outer;burn_middle;burn_leaf '"
	else
		skp "stripped binary (strip not installed)"
	fi
	# C++: demangled names; libc's internal functions named from libc6-dbg
	"$DS" record -F 499 -o "$T/cxx.data" -- "$OUT/tests/cxxburn" 0.3 2>/dev/null
	"$DSAN" report -i "$T/cxx.data" --folded > "$T/cxx.folded" 2>/dev/null
	check "report on a C++ workload: demangled names, as perf's (no parameters)" \
		grep -q '^cxxburn;.*main;work::churn;work::Spinner<long>::spin ' "$T/cxx.folded"
	"$DSAN" report -i "$T/cxx.data" --folded --full-names > "$T/cxxf.folded" 2>/dev/null
	check "report --full-names on a C++ workload: whole signatures" \
		grep -q '^cxxburn;.*main;work::churn(int, double);work::Spinner<long>::spin(long) ' "$T/cxxf.folded"
	"$DSAN" script -i "$T/cxx.data" --full-names 2>/dev/null | grep -q 'work::churn(int, double)+0x' &&
		"$DSAN" script -i "$T/cxx.data" 2>/dev/null | grep -q 'work::churn+0x'
	check "script: C++ names as perf script's, whole with --full-names" test $? -eq 0
	if command -v perf > /dev/null; then
		# the C++ names perf script prints, frame by frame
		pnames() { grep -P '^\t' | sed -E 's/^\s+[0-9a-f]+ //; s/\+0x[0-9a-f]+ \(.*$//' | grep '::' | sort -u; }
		perf script -i "$T/cxx.data" 2>/dev/null | pnames > "$T/cxx.perf.names"
		"$DSAN" script -i "$T/cxx.data" 2>/dev/null | pnames > "$T/cxx.ds.names"
		# perf 6.1 names a sample on the first PLT stub (just after PLT0)
		# "_init+0x30", where we give the stub's name: a name only we print
		# may be a @plt stub; every name perf prints must be ours as well.
		check "C++ names = perf script's ($(wc -l < "$T/cxx.perf.names") names, templates and @plt stubs among them)" \
			bash -c "grep -q '^work::sorted<std::' '$T/cxx.perf.names' &&
				[ -z \"\$(comm -23 '$T/cxx.perf.names' '$T/cxx.ds.names')\" ] &&
				[ -z \"\$(comm -13 '$T/cxx.perf.names' '$T/cxx.ds.names' | grep -v '@plt\$')\" ]" ||
			diff "$T/cxx.perf.names" "$T/cxx.ds.names"
	fi
	if dpkg-query -W -f='${Status}' libc6-dbg 2>/dev/null | grep -q 'ok installed'; then
		check "report: libc's internal __libc_start_call_main below main (libc6-dbg)" \
			grep -q '^cxxburn;__libc_start_call_main;main;' "$T/cxx.folded"
	else
		skp "libc internal functions in a recording (libc6-dbg not installed)"
	fi
	# build-ids: recorded for every mapped ELF object (perf's HEADER_BUILD_ID);
	# a workload rebuilt after the recording is not symbolized with the old
	# addresses (one warning, addresses), unless --force-symbols. "Named":
	# main's callees (burn_leaf has ~5 % of burn's samples: none, now and
	# then, on a loaded machine)
	mkdir -p "$T/bid"; cp "$BURN" "$T/bid/burn"
	"$DS" record -o "$T/bid.data" -- "$T/bid/burn" 0.3 2>/dev/null
	bid=$(readelf -n "$T/bid/burn" | sed -n 's/.*Build ID: *//p')
	if command -v perf > /dev/null; then
		check "record: perf buildid-list -i lists the workload's build-id" \
			bash -c "perf buildid-list -i '$T/bid.data' 2>/dev/null | grep -qx '$bid $T/bid/burn'"
	fi
	"$DSAN" report -i "$T/bid.data" --folded > "$T/bid1.folded" 2> "$T/bid1.err"
	check "build-id unchanged: symbolized, no warning" \
		bash -c "grep -qE ';main;(burn_outer|syscall_loop)' '$T/bid1.folded' && ! grep -q 'changed since' '$T/bid1.err'"
	cc -O2 -fno-omit-frame-pointer -o "$T/bid/burn" tests/workload/burn.c
	"$DSAN" report -i "$T/bid.data" --folded > "$T/bid2.folded" 2> "$T/bid2.err"
	rc=$?
	check "rebuilt workload: exit 0, one warning naming it" \
		bash -c "[ $rc -eq 0 ] && [ \$(grep -c '$T/bid/burn has changed since the recording' '$T/bid2.err') -eq 1 ]"
	check "rebuilt workload: no (wrong) names from it, addresses instead" \
		bash -c "! grep -qE 'burn_|syscall_loop|;main;' '$T/bid2.folded' && grep -q '\[burn+0x' '$T/bid2.folded'"
	"$DSAN" report -i "$T/bid.data" --folded --force-symbols > "$T/bid3.folded" 2>/dev/null
	check "rebuilt workload with --force-symbols: symbolized anyway (fewer addresses)" \
		bash -c "[ -s '$T/bid3.folded' ] && [ \$(grep -o '\[burn+0x' '$T/bid3.folded' | wc -l) -lt \$(grep -o '\[burn+0x' '$T/bid2.folded' | wc -l) ]"
	# perf's build-id cache holds the recorded version: its names, no warning
	mkdir -p "$T/bidc/.build-id/${bid:0:2}/${bid:2}"
	cp "$BURN" "$T/bidc/.build-id/${bid:0:2}/${bid:2}/elf"
	PERF_BUILDID_DIR="$T/bidc" "$DSAN" report -i "$T/bid.data" --folded > "$T/bid4.folded" 2> "$T/bid4.err"
	check "rebuilt workload, the recorded version in perf's build-id cache: its names, no warning" \
		bash -c "grep -qE '^burn;.*;main;(burn_outer|syscall_loop)' '$T/bid4.folded' && ! grep -q 'changed since' '$T/bid4.err'"
	"$DS" convert -i "$T/bid.data" -o "$T/bid.conv" 2>/dev/null
	check "convert keeps the build-ids" \
		bash -c "'$DSAN' report -i '$T/bid.conv' --folded 2>&1 >/dev/null | grep -q 'changed since the recording'"
	# a recorder killed with SIGKILL leaves a file that report reads, then
	# exits 1: an incomplete input (issue 23; perf script: 255)
	"$DS" record -F 999 -o "$T/killed.data" -- "$BURN" 2 2>/dev/null & rp=$!
	sleep 1.2
	kill -KILL $rp; wait $rp 2>/dev/null
	sleep 1
	"$DSAN" report -i "$T/killed.data" --folded > "$T/killed.folded" 2> "$T/killed.err"
	rc=$?
	check "SIGKILLed recorder: report reads the samples, exit 1 (not finished)" \
		bash -c "[ $rc -eq 1 ] && grep -q 'burn_leaf' '$T/killed.folded' && grep -q 'not finished' '$T/killed.err' &&
			tail -1 '$T/killed.err' | grep -qx 'deferstack: $T/killed.data is incomplete (the recording was not finished): the output ends where the file ends'" ||
		cat "$T/killed.err"
	expect_werr "script (many samples) > /dev/full" 'writing standard output: No space left on device' \
		bash -c "'$DSAN' script -i '$T/e2e.data' > /dev/full"
	expect_werr "record -o /dev/full" 'writing /dev/full: No space left on device' \
		"$DS" record -o /dev/full -- "$BURN" 0.3
	mkdir -p "$T/rfsz"
	expect_werr "record over the file size limit" 'writing .*: File too large' \
		bash -c "ulimit -f 8; trap '' XFSZ; exec '$DS' record -o '$T/rfsz/r.data' -- '$BURN' 0.3"
	if command -v perf >/dev/null; then
		pv=$(perf --version | sed 's/[^0-9]*\([0-9]*\).*/\1/')
		if grep -q 'falling back to classic' "$T/rec.err" || [ "${pv:-0}" -ge 7 ]; then
			perf report -i "$T/e2e.data" --stdio > "$T/perf.txt" 2>&1
			check "perf $pv report reads the recorded file" bash -c "grep -q 'burn_leaf' '$T/perf.txt'"
			check "perf $pv script reads the recorded file" bash -c "perf script -i '$T/e2e.data' 2>/dev/null | grep -q burn_leaf"
		fi
		"$DS" record --mode auto --stitched -F 499 -o "$T/st.data" -- "$BURN" 0.5 2>/dev/null
		check "record --stitched: perf $pv report reads it" bash -c "perf report -i '$T/st.data' --stdio 2>&1 | grep -q burn_leaf"
		perf record -q -e cpu-clock,page-faults -g -o "$T/pmulti.data" -- "$BURN" 0.3 > /dev/null 2>&1
		"$DSAN" report -i "$T/pmulti.data" > "$T/pmulti.txt" 2>/dev/null
		check "perf record -e cpu-clock,page-faults: a section per event" \
			bash -c "grep -q \"event 'cpu-clock'\" '$T/pmulti.txt' && grep -q \"event 'page-faults'\" '$T/pmulti.txt'"
		# --call-graph dwarf: no user part in the chains; the user ip of the
		# sample (or of its user registers) is the first user frame
		perf record -q --call-graph dwarf -o "$T/dwarf.data" -- "$BURN" 0.3 > /dev/null 2>&1
		"$DSAN" report -i "$T/dwarf.data" --folded > "$T/dwarf.folded" 2>/dev/null
		check "perf --call-graph dwarf file: user frames kept (burn_leaf, syscall_loop)" \
			bash -c "grep -q '^burn;burn_leaf ' '$T/dwarf.folded' && grep -q '^burn;syscall_loop ' '$T/dwarf.folded'"
		check "perf --call-graph dwarf file: kernel samples get their user frame" \
			grep -qE '^burn;(__GI___libc_|__)?write;entry_SYSCALL' "$T/dwarf.folded"
		# perf record -z: the records come in PERF_RECORD_COMPRESSED (zstd)
		# records; read and decompressed, as many samples as perf counts
		perf record -q -z -g -F 2000 -o "$T/z.data" -- "$BURN" 0.5 > "$T/z.err" 2>&1
		zc=$(perf report -i "$T/z.data" --stats 2>/dev/null | awk '/ COMPRESSED events:/ { print $3; exit }')
		if [ "${zc:-0}" -gt 0 ] 2>/dev/null; then
			zs=$(perf report -i "$T/z.data" --stats 2>/dev/null | awk '/ SAMPLE events:/ { print $3; exit }')
			zw=$(perf script -F comm -i "$T/z.data" 2>/dev/null | wc -l)
			"$DSAN" report -i "$T/z.data" --folded > "$T/z.folded" 2> "$T/z.rerr"
			rc=$?
			check "perf record -z file ($zc compressed records): $zs samples as perf report --stats and perf script count ($zw), burn's stacks" \
				bash -c "[ $rc -eq 0 ] && [ '$zs' = '$zw' ] && grep -q '^summary: $zs samples' '$T/z.rerr' && grep -q 'burn_middle;burn_leaf' '$T/z.folded' && ! grep -q 'Sanitizer\|runtime error' '$T/z.rerr'" ||
				cat "$T/z.rerr"
		else
			skp "perf record -z: perf could not record a compressed file ($(tail -1 "$T/z.err"))"
		fi
		if [ "${pv:-0}" -ge 7 ]; then
			check "perf $pv reads raw deferred file" bash -c "perf report -i '$T/m.data' --stdio >/dev/null 2>&1"
		else
			skp "raw deferred file read by perf >= 7 (installed perf version $pv < 7)"
		fi
	else
		skp "perf interop (perf not installed)"
	fi
	# unprivileged (perf_event_paranoid=2): no kernel sampling allowed, so
	# user space only (exclude_kernel) with a one-line note, as perf does
	if [ "$(id -u)" = 0 ] && [ "$paranoid" -eq 2 ] && command -v setpriv > /dev/null &&
	   id nobody > /dev/null 2>&1; then
		U="$T/unpriv"; mkdir -p "$U"; chmod 755 "$T"; chmod 1777 "$U"
		cp "$DS" "$BURN" "$U/"
		(cd "$U" && setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups -- \
			./deferstack record -o "$U/u.data" -- ./burn 0.3) > /dev/null 2> "$U/u.err"
		rc=$?
		cat "$U/u.err"
		check "unprivileged record (paranoid 2): exit 0, one-line user-space-only note" \
			bash -c "[ $rc -eq 0 ] && [ \$(grep -c 'recording user space only (exclude_kernel)' '$U/u.err') -eq 1 ]"
		"$DSAN" report -i "$U/u.data" > "$U/u.txt" 2>/dev/null
		"$DSAN" report -i "$U/u.data" --folded > "$U/u.folded" 2>/dev/null
		check "unprivileged record: user stacks, no kernel frames, event cpu-clock:u" \
			bash -c "grep -q 'burn_outer;burn_middle;burn_leaf' '$U/u.folded' && ! grep -qE 'do_syscall_64|entry_SYSCALL' '$U/u.folded' && grep -q \"event 'cpu-clock:u'\" '$U/u.txt'"
		chmod 700 "$T"
	else
		skp "unprivileged fallback (needs root to run as nobody, setpriv and kernel.perf_event_paranoid=2; it is $paranoid)"
	fi
	# record -o - | report -i -, and perf's pipe mode both ways
	"$DS" record -o - -- "$BURN" 0.3 2> "$T/prec.err" | "$DSAN" report -i - --folded > "$T/pipe.folded" 2>/dev/null
	check "record -o - | report -i -" bash -c "grep -q 'burn_outer;burn_middle;burn_leaf' '$T/pipe.folded' && grep -q 'wrote standard output (pipe mode' '$T/prec.err'"
	"$DS" record --stitched -o - -- "$BURN" 0.3 2>/dev/null | "$DSAN" report -i - --folded > "$T/pipest.folded" 2>/dev/null
	check "record --stitched -o - | report -i -" grep -q 'burn_leaf' "$T/pipest.folded"
	"$DS" record -o - -- sh -c "echo the-command-says-hi; exec '$BURN' 0.5" 2> "$T/pout.err" |
		"$DSAN" report -i - --folded > "$T/pout.folded" 2> "$T/pout.rerr"
	check "record -o - -- CMD: the command's output goes to stderr, the stream stays clean" \
		bash -c "grep -q burn_leaf '$T/pout.folded' && grep -q the-command-says-hi '$T/pout.err' ||
			{ cat '$T/pout.err' '$T/pout.rerr'; head -5 '$T/pout.folded'; false; }"
	if command -v perf > /dev/null; then
		check "record -o - | perf report -i -" \
			bash -c "'$DS' record -o - -- '$BURN' 0.3 2>/dev/null | perf report -i - --stdio 2>/dev/null | grep -q burn_leaf"
		check "perf record -o - | report -i -" \
			bash -c "perf record -q -g -o - -- '$BURN' 0.3 2>/dev/null | '$DSAN' report -i - --folded 2>/dev/null | grep -q 'burn_middle;burn_leaf'"
	fi
	# -p PID and -a
	"$BURN" 3 & bp=$!
	sleep 0.2
	"$DS" record -p $bp -d 1 -o "$T/pid.data" 2> "$T/pid.err"
	check "record -p PID" bash -c "'$DS' report -i '$T/pid.data' --folded 2>/dev/null | grep -q burn_leaf"
	"$DS" record -a -d 1 -o "$T/all.data" 2> "$T/all.err"
	check "record -a" bash -c "'$DS' report -i '$T/all.data' --folded 2>/dev/null | grep -q 'burn;.*burn_leaf'"
	kill $bp 2>/dev/null; wait $bp 2>/dev/null
	# side data: record saves FILE.vdso and the perf maps of processes with
	# anonymous memory (FILE.perf-maps/perf-PID.map); report names a JIT
	# function and the vDSO's from them (tests/workload/jitmap.c)
	cc -O1 -fno-omit-frame-pointer -o "$T/jitmap" tests/workload/jitmap.c
	mkdir -p "$T/side"
	"$DS" record -F 999 -o "$T/side/j.data" -- \
		sh -c "echo \$\$ > '$T/side/pid'; exec '$T/jitmap' 1" > /dev/null 2>&1
	[ -s "$T/side/pid" ] && rm -f "/tmp/perf-$(cat "$T/side/pid").map"	# the JIT's map
	if [ -e "$T/side/j.data.vdso" ]; then
		"$DSAN" report -i "$T/side/j.data" --folded > "$T/side/j.folded" 2>/dev/null
		check "record's side data: the JIT's jit_spin and the vDSO's __vdso_clock_gettime named" \
			bash -c "grep -q ';jit_spin ' '$T/side/j.folded' && grep -q ';__vdso_clock_gettime ' '$T/side/j.folded'" ||
			cat "$T/side/j.folded"
	else
		skp "record's side data: record does not save FILE.vdso yet (tools/record.c: side_note_mmap, side_save)"
	fi
	# an existing recording and its side file become .old (like perf), even
	# when the command cannot be run; a stale .old.kallsyms is removed
	echo OLDDATA > "$T/o.data"; echo OLDKS > "$T/o.data.kallsyms"
	echo OLDVDSO > "$T/o.data.vdso"; mkdir -p "$T/o.data.perf-maps"
	echo '1000 10 oldjit' > "$T/o.data.perf-maps/perf-1.map"
	"$DS" record -o "$T/o.data" -- /nonexistent/cmd 2>/dev/null
	check "record: existing output kept as .old" grep -qx OLDDATA "$T/o.data.old"
	check "record: existing kallsyms kept as .old.kallsyms" grep -qx OLDKS "$T/o.data.old.kallsyms"
	check "record: existing vDSO image and perf maps kept as .old.vdso, .old.perf-maps/" \
		bash -c "grep -qx OLDVDSO '$T/o.data.old.vdso' && grep -q oldjit '$T/o.data.old.perf-maps/perf-1.map' &&
			! grep -qs OLDVDSO '$T/o.data.vdso' && [ ! -e '$T/o.data.perf-maps/perf-1.map' ]"
	check "record: new output is a new recording" bash -c "! grep -q OLDDATA '$T/o.data'"
	echo OLD2 > "$T/o.data"; rm -rf "$T/o.data.kallsyms" "$T/o.data.vdso" "$T/o.data.perf-maps"; echo STALE > "$T/o.data.old.kallsyms"
	"$DS" record -o "$T/o.data" -- /bin/true 2>/dev/null
	check "record: second rotation replaces .old" grep -qx OLD2 "$T/o.data.old"
	check "record: stale .old.kallsyms removed" test ! -e "$T/o.data.old.kallsyms"
	check "record: stale .old.vdso and .old.perf-maps/ removed" \
		bash -c "[ ! -e '$T/o.data.old.vdso' ] && [ ! -e '$T/o.data.old.perf-maps' ]"
	# the command's exit status is passed on; "cannot run" only when exec failed
	rstatus() { "$DS" record -o "$T/st.data" -- "$@" 2> "$T/st.err"; echo $?; }
	check "record -- cmd exiting 3: exit 3" test "$(rstatus sh -c 'exit 3')" -eq 3
	check "record -- cmd exiting 127: exit 127, not 'cannot run'" \
		bash -c "[ \$('$DS' record -o '$T/st.data' -- sh -c 'exit 127' 2> '$T/st.err'; echo \$?) -eq 127 ] && ! grep -q 'run' '$T/st.err'"
	check "record -- cmd killed by SIGUSR1: exit 128+10" test "$(rstatus sh -c 'kill -USR1 $$')" -eq 138
	check "record -- missing command: exit 127 with the exec error" \
		bash -c "[ \$('$DS' record -o '$T/st.data' -- /nonexistent/cmd 2> '$T/st.err'; echo \$?) -eq 127 ] && grep -q \"cannot run '/nonexistent/cmd': No such file or directory\" '$T/st.err'"
	check "record -- non-executable file: exit 126" test "$(rstatus "$T/m.data")" -eq 126
	check "record without target fails" bash -c "! '$DS' record -o '$T/x.data' 2>/dev/null"
	check "record of a missing command fails" bash -c "! '$DS' record -o '$T/x.data' -- /nonexistent/cmd 2>/dev/null"
fi

echo
echo "check: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
