# Sourced by tests/run-checks.sh (uses OUT, T, DSAN, check/ok/bad/skp): the
# names perf gives beyond symbol tables: PLT stubs (rand@plt), JIT code
# named by a perf map (perf-PID.map), the vDSO's functions from its image,
# and a rebuilt object's recorded version from perf's build-id cache.
RES="$OUT/tests/resolve"
N="$T/names"
mkdir -p "$N"
# address of a stub (objdump's "<NAME>:" label in section SEC) in FILE
stub() { objdump -d -j "$2" "$1" | awk -v n="<$3>:" '$2 == n { print $1; exit }'; }

# --- PLT stubs: .plt, .plt.got, and with IBT .plt.sec + lazy .plt stubs
printf '#include <stdio.h>\n#include <stdlib.h>\nint main(void) { printf("%%d\\n", rand()); return 0; }\n' > "$N/plt.c"
cc -O1 -o "$N/plt" "$N/plt.c"
cc -O1 -fcf-protection=full -Wl,-z,ibtplt -o "$N/plt-ibt" "$N/plt.c"
strip -o "$N/plt-s" "$N/plt"
a=$(stub "$N/plt" .plt 'rand@plt') g=$(stub "$N/plt" .plt.got '__cxa_finalize@plt')
check "PLT: an address in rand's .plt stub is rand@plt (and .plt.got's __cxa_finalize@plt)" \
	bash -c "[ -n '$a' ] && [ -n '$g' ] && '$RES' '$N/plt' $a $g > '$N/plt.txt' &&
		grep -qx 'rand@plt +0x1 plt [0-9a-f]*' '$N/plt.txt' &&
		grep -qx '__cxa_finalize@plt +0x1 plt [0-9a-f]*' '$N/plt.txt'" || cat "$N/plt.txt"
check "PLT: a stripped binary's stubs are named too (.rela.plt and .dynsym stay)" \
	bash -c "'$RES' '$N/plt-s' $a | grep -qx 'rand@plt +0x1 plt-s [0-9a-f]*'"
if readelf -SW "$N/plt-ibt" | grep -q '\.plt\.sec'; then
	as=$(stub "$N/plt-ibt" .plt.sec 'rand@plt')
	al=$(objdump -d -j .plt "$N/plt-ibt" | awk '/push +\$0x0$/ { sub(":", "", $1); print $1; exit }')
	j0=$(readelf -rW "$N/plt-ibt" | awk '/R_X86_64_JUMP_SLOT/ { sub("@.*", "", $5); print $5; exit }')
	check "PLT with IBT: .plt.sec's stub is rand@plt, the lazy .plt one (push \$0) ${j0:-?}@plt" \
		bash -c "[ -n '$as' ] && [ -n '$al' ] && [ -n '$j0' ] && '$RES' '$N/plt-ibt' $as $al > '$N/ibt.txt' &&
			[ \"\$(cut -d' ' -f1 '$N/ibt.txt' | tr '\n' ' ')\" = 'rand@plt ${j0}@plt ' ]" || cat "$N/ibt.txt"
else
	skp "PLT with IBT: the linker made no .plt.sec"
fi

# --- JIT code named by a perf map, the vDSO by its image: a recording of
# task 4000123 ("jit") with a user stack vDSO <- JIT <- JIT, and what record
# saves beside it (FILE.vdso, FILE.perf-maps/perf-PID.map)
"$OUT/tests/mkdata" --vdso "$N/vdso.so" || bad "mkdata --vdso"
vo=$(nm -D "$N/vdso.so" | awk '$3 ~ /^__vdso_clock_gettime(@|$)/ { print $1; exit }')
"$OUT/tests/mkdata" --names "$N/n.data" 4000123 "${vo:-0}" || bad "mkdata --names"
"$DSAN" report -i "$N/n.data" -k /dev/null --folded > "$N/plain.folded" 2> "$N/plain.err"
check "without side data: anonymous memory by address, [vdso] as one name" \
	grep -qx 'jit;\[anon+0x7f0000000150\];\[anon+0x7f0000000010\];\[vdso\] 1000' "$N/plain.folded"
cp "$N/vdso.so" "$N/n.data.vdso"
mkdir -p "$N/n.data.perf-maps"
{
	printf '7f0000000100 100 py::outer:/app.py\n'
	printf '7f0000000000 80 py::inner\n'
	# not lines of a perf map: skipped, never a crash
	printf 'zzz\n7f0000001000 0 empty\nffffffffffffffff 10 wraps\n'
	printf '12345678901234567890 1 too-big\n7f0000002000 10\n7f0000002000 10 \001nul\0x\n\n'
	printf '7f0000003000 10 %s\n' "$(head -c 300000 /dev/zero | tr '\0' y)"
	printf '0x7f0000004000 0x10 hexprefix\n'
} > "$N/n.data.perf-maps/perf-4000123.map"
"$DSAN" report -i "$N/n.data" -k /dev/null --folded > "$N/n.folded" 2> "$N/n.err"
rc=$?
check "perf map + vDSO image: JIT frames and __vdso_clock_gettime named (exit $rc)" \
	bash -c "[ $rc -eq 0 ] && grep -qx 'jit;py::outer:/app.py;py::inner;__vdso_clock_gettime 1000' '$N/n.folded' &&
		! grep -q 'runtime error\|Sanitizer' '$N/n.err'" || cat "$N/n.folded" "$N/n.err"
"$DSAN" script -i "$N/n.data" -k /dev/null > "$N/n.script" 2>/dev/null
check "script: JIT frame's offset in its perf map line, the vDSO's object [vdso]" \
	bash -c "grep -q '7f0000000150 py::outer:/app.py+0x50 (.*perf-4000123.map)' '$N/n.script' &&
		grep -q '__vdso_clock_gettime+0x1 (\[vdso\])' '$N/n.script'"

# --- perf's build-id cache: the recorded version of a rebuilt file
bidof() { readelf -n "$1" | sed -n 's/.*Build ID: *//p'; }
printf 'int old_name(int x) { return x * 3; }\nint main(int c, char **v) { (void)v; return old_name(c); }\n' > "$N/v1.c"
printf 'int other(int x) { return x * 5 + 1; }\nint main(int c, char **v) { (void)v; return other(c); }\n' > "$N/v2.c"
cc -O1 -o "$N/prog" "$N/v1.c" && cp "$N/prog" "$N/prog.v1"
b1=$(bidof "$N/prog") va=$(nm "$N/prog" | awk '$3 == "old_name" { print $1 }')
cc -O1 -o "$N/prog" "$N/v2.c"
H="$N/home"
HOME="$H" PERF_BUILDID_DIR= "$RES" --build-id "$b1" "$N/prog" "$va" > "$N/bc0.txt" 2>&1
check "build-id cache empty: the rebuilt file's frame by address" grep -q '^\[prog+0x' "$N/bc0.txt"
bc_layout() { # NAME PATH-UNDER-CACHE-ROOT [debug: only the debug file]
	rm -rf "$H"; mkdir -p "$(dirname "$H/.debug/$2")"
	if [ "${3:-}" = debug ]; then
		objcopy --only-keep-debug "$N/prog.v1" "$H/.debug/$2"
	else
		cp "$N/prog.v1" "$H/.debug/$2"
	fi
	check "build-id cache ($1): the recorded version's names" \
		bash -c "HOME='$H' PERF_BUILDID_DIR= '$RES' --build-id $b1 '$N/prog' $va | grep -qx 'old_name +0x1 prog $b1'"
}
bc_layout ".build-id/XX/REST/elf" ".build-id/${b1:0:2}/${b1:2}/elf"
bc_layout ".build-id/XX/REST.debug" ".build-id/${b1:0:2}/${b1:2}.debug"
# a stripped file with the recorded build-id: its debug file from the cache
strip -o "$N/prog-s" "$N/prog.v1"
rm -rf "$H"; mkdir -p "$H/.debug/.build-id/${b1:0:2}"
HOME="$H" PERF_BUILDID_DIR= "$RES" --build-id "$b1" "$N/prog-s" "$va" > "$N/bcs.txt" 2>&1
objcopy --only-keep-debug "$N/prog.v1" "$H/.debug/.build-id/${b1:0:2}/${b1:2}.debug"
check "build-id cache: a stripped file named by its debug file (.build-id/XX/REST.debug)" \
	bash -c "grep -q '^\[prog-s+0x' '$N/bcs.txt' &&
		HOME='$H' PERF_BUILDID_DIR= '$RES' --build-id $b1 '$N/prog-s' $va | grep -qx 'old_name +0x1 prog-s $b1'"
bc_layout "PATH/BUILDID/elf" "$N/prog/$b1/elf"
mkdir -p "$N/pbd/.build-id/${b1:0:2}/${b1:2}"
cp "$N/prog.v1" "$N/pbd/.build-id/${b1:0:2}/${b1:2}/elf"
check "build-id cache in \$PERF_BUILDID_DIR" \
	bash -c "HOME=/nonexistent PERF_BUILDID_DIR='$N/pbd' '$RES' --build-id $b1 '$N/prog' $va | grep -qx 'old_name +0x1 prog $b1'"
cp "$N/prog" "$N/pbd/.build-id/${b1:0:2}/${b1:2}/elf"
check "build-id cache: a copy with another build-id is not taken" \
	bash -c "HOME=/nonexistent PERF_BUILDID_DIR='$N/pbd' '$RES' --build-id $b1 '$N/prog' $va | grep -q '^\[prog+0x'"
check "build-id cache: a file gone since the recording" \
	bash -c "HOME=/nonexistent PERF_BUILDID_DIR='$N/pbd' '$RES' --build-id $b1 --as '$N/gone/prog' '$N/prog.v1' $va | grep -q '^\[prog+0x' &&
		cp '$N/prog.v1' '$N/pbd/.build-id/${b1:0:2}/${b1:2}/elf' &&
		HOME=/nonexistent PERF_BUILDID_DIR='$N/pbd' '$RES' --build-id $b1 --as '$N/gone/prog' '$N/prog.v1' $va | grep -qx 'old_name +0x1 prog $b1'"
