# Sourced by tests/run-checks.sh (uses OUT, T, check/ok/bad/skp): symbols
# through libdwfl, as an MMAP2 record of each file would give them
# (out/tests/resolve): the file's own symtab, C++ demangled, a stripped copy
# per address, its debug file through .gnu_debuglink, MiniDebugInfo, and
# libc's internal functions from libc6-dbg (build-id path).
RES="$OUT/tests/resolve"
B=$(cd "$OUT/tests" && pwd)
mkdir -p "$T/dbg"
va() { nm "$B/burn" | awk -v s="$1" '$3 == s { print $1 }'; }
check "symbols: a function of an unstripped binary" \
	bash -c "'$RES' '$B/burn' burn_leaf | grep -q '^burn_leaf +0x1 burn [0-9a-f]\{40\}$'"
check "symbols: C++ names demangled, as perf names them (no parameters)" \
	bash -c "'$RES' '$B/cxxburn' _ZN4work7SpinnerIlE4spinEl _ZN4work5churnEid > '$T/dbg/cxx.txt' &&
		grep -qx 'work::Spinner<long>::spin +0x1 cxxburn [0-9a-f]*' '$T/dbg/cxx.txt' &&
		grep -qx 'work::churn +0x1 cxxburn [0-9a-f]*' '$T/dbg/cxx.txt'"
check "symbols: C++ names with full_names: the whole signature" \
	bash -c "'$RES' --full-names '$B/cxxburn' _ZN4work7SpinnerIlE4spinEl _ZN4work5churnEid > '$T/dbg/cxxf.txt' &&
		grep -qx 'work::Spinner<long>::spin(long) +0x1 cxxburn [0-9a-f]*' '$T/dbg/cxxf.txt' &&
		grep -qx 'work::churn(int, double) +0x1 cxxburn [0-9a-f]*' '$T/dbg/cxxf.txt'"
strip --strip-all -o "$T/dbg/burn-s" "$B/burn"
"$RES" "$T/dbg/burn-s" "$(va burn_leaf)" "$(va burn_middle)" > "$T/dbg/strip.txt"
check "symbols: a stripped binary per address, like perf ([burn-s+0xOFF], one per function)" \
	bash -c "[ \$(grep -c '^\[burn-s+0x[0-9a-f]*\] ' '$T/dbg/strip.txt') -eq 2 ] &&
		[ \$(sort -u '$T/dbg/strip.txt' | wc -l) -eq 2 ]"
objcopy --only-keep-debug "$B/burn" "$T/dbg/burn.debug"
objcopy --add-gnu-debuglink="$T/dbg/burn.debug" "$T/dbg/burn-s" "$T/dbg/burn-dl"
check "symbols: stripped binary + separate debug file through .gnu_debuglink" \
	bash -c "'$RES' '$T/dbg/burn-dl' $(va burn_leaf) | grep -q '^burn_leaf +0x1 burn-dl '"
# the other places libdwfl's search by name looks (the library skips that
# search when none of its files exists: these must still be found)
mkdir -p "$T/dbg/sub/.debug" "$T/dbg/ln"
cp "$T/dbg/burn-dl" "$T/dbg/sub/burn-dl2"
cp "$T/dbg/burn.debug" "$T/dbg/sub/.debug/burn.debug"
check "symbols: debug file through .gnu_debuglink in .debug/ beside the binary" \
	bash -c "'$RES' '$T/dbg/sub/burn-dl2' $(va burn_leaf) | grep -q '^burn_leaf +0x1 burn-dl2 '"
ln -sf "$T/dbg/sub/burn-dl2" "$T/dbg/ln/burn-ln"
check "symbols: a symlink's target's debug file (.gnu_debuglink, .debug/ beside the target)" \
	bash -c "'$RES' '$T/dbg/ln/burn-ln' $(va burn_leaf) | grep -q '^burn_leaf +0x1 burn-ln '"
cp "$T/dbg/burn-s" "$T/dbg/sub/burn-nl"
cp "$T/dbg/burn.debug" "$T/dbg/sub/.debug/burn-nl.debug"
check "symbols: no .gnu_debuglink: NAME.debug in .debug/ beside the binary" \
	bash -c "'$RES' '$T/dbg/sub/burn-nl' $(va burn_leaf) | grep -q '^burn_leaf +0x1 burn-nl '"
check "symbols: no debug file and no DEBUGINFOD_URLS: libdebuginfod not loaded (8 MB of RSS)" \
	bash -c "! env -u DEBUGINFOD_URLS LD_DEBUG=files '$RES' '$T/dbg/burn-s' $(va burn_leaf) 2>&1 |
		grep -q 'file=libdebuginfod'"
# perf's build-id cache holds a directory where the search by name looks
# (~/.debug/PATH/ for PATH): a directory is no debug file
mkdir -p "$T/dbg/home/.debug$T/dbg/burn-s/0123"
check "symbols: perf's build-id cache directory of the binary: libdebuginfod not loaded" \
	bash -c "! env -u DEBUGINFOD_URLS -u PERF_BUILDID_DIR HOME='$T/dbg/home' LD_DEBUG=files \
		'$RES' '$T/dbg/burn-s' $(va burn_leaf) 2>&1 | grep -q 'file=libdebuginfod'"
# a file of 4 MiB or more has its names read through a descriptor of its
# own, not in libelf's mapped image (lib/symbols.c read_name())
big=$(ls /usr/lib/llvm-*/lib/libLLVM*.so* 2> /dev/null | head -1)
if [ -n "$big" ]; then
	big=$(readlink -f "$big")
	nm -D --defined-only "$big" | awk '$2 == "T" && $3 ~ /^LLVM/ { sub(/@.*/, "", $3); print $1, $3 }' |
		sed -n '1p;$p' > "$T/dbg/big.syms"
	"$RES" "$big" $(awk '{ print $1 }' "$T/dbg/big.syms") > "$T/dbg/big.txt" 2>&1
	check "symbols: names of a big library read through a descriptor ($(basename "$big"))" \
		bash -c "[ \$(wc -l < '$T/dbg/big.syms') -eq 2 ] &&
			awk '{ print \$2 \" +0x1 $(basename "$big")\" }' '$T/dbg/big.syms' |
			cmp - <(cut -d' ' -f1-3 '$T/dbg/big.txt')" || cat "$T/dbg/big.syms" "$T/dbg/big.txt"
else
	skp "symbols: names of a big library: no libLLVM installed"
fi
# MiniDebugInfo: an xz-compressed ELF with .symtab in .gnu_debugdata
objcopy --only-keep-debug "$B/burn" "$T/dbg/mini"
strip --strip-debug "$T/dbg/mini"
xz -f "$T/dbg/mini"
objcopy --add-section .gnu_debugdata="$T/dbg/mini.xz" "$T/dbg/burn-s" "$T/dbg/burn-mini"
check "symbols: MiniDebugInfo (.gnu_debugdata)" \
	bash -c "'$RES' '$T/dbg/burn-mini' $(va burn_middle) | grep -q '^burn_middle +0x1 burn-mini '"
libc=$(readlink -f "$(ldd "$B/burn" | awk '/libc\.so\.6/ { print $3 }')")
bid=$(readelf -n "$libc" 2>/dev/null | awk '/Build ID/ { print $3 }')
dbg=/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug
if [ -n "$bid" ] && [ -f "$dbg" ]; then
	lva=$(nm "$dbg" | awk '$3 == "__libc_start_call_main" { print $1 }')
	check "symbols: libc internal function from libc6-dbg (build-id path)" \
		bash -c "'$RES' '$libc' '$lva' | grep -q '^__libc_start_call_main +0x1 libc.so.6 $bid$'"
else
	skp "libc internal functions: no debug file for $libc (libc6-dbg not installed)"
fi
