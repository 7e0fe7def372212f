#!/usr/bin/env bash
# The series adds no compiler warnings: every .c file it touches is rebuilt
# with W=1, with gcc and with clang (LLVM=1), in the builds of
# guest/build-kernel.sh, and any warning that names a file the series touches
# fails the check.
#
#   tests/kernel-warnings.sh [gcc|clang ...]     (default: gcc clang)
set -uo pipefail
. "$(dirname "$0")/../guest/lib.sh"

compilers=("$@")
[ ${#compilers[@]} -gt 0 ] || compilers=(gcc clang)
mapfile -t files < <(git -C "$DS_SRC" diff --name-only debian-base..HEAD -- '*.c' '*.h')
mapfile -t objs < <(printf '%s\n' "${files[@]}" | sed -n 's/\.c$/.o/p')
[ ${#objs[@]} -gt 0 ] || ds_die "the series touches no .c file?"
pass=0 fail=0
for cc in "${compilers[@]}"; do
	# gcc's is the guests' kernel; clang's only compiles what the series touches.
	if [ "$cc" = clang ]; then
		DS_KERNEL_OBJECTS=touched "$DS_ROOT/guest/build-kernel.sh" fast clang >/dev/null
	else
		"$DS_ROOT/guest/build-kernel.sh" fast "$cc" >/dev/null
	fi || { fail=$((fail + 1)); continue; }
	obj=$DS_BUILD/obj-fast
	mk=(ARCH=x86_64 CC="ccache gcc")
	if [ "$cc" = clang ]; then
		obj=$DS_BUILD/obj-fast-clang
		mk=(ARCH=x86_64 LLVM=1 CC="ccache clang")
	fi
	# Rebuild the touched .c files (not the headers: that would be everything).
	# Objects the configuration does not build are skipped by make -k.
	for f in "${files[@]}"; do
		case $f in *.c) touch "$DS_SRC/$f" ;; esac
	done
	log=$DS_BUILD/logs/warnings-$cc.log
	mkdir -p "$DS_BUILD/logs"
	make -k -s -C "$DS_SRC" O="$obj" "${mk[@]}" W=1 -j"$DS_JOBS" "${objs[@]}" > "$log" 2>&1
	pattern=$(printf '%s\n' "${files[@]}" | sed 's/[.]/\\./g' | paste -sd'|')
	if grep -E "($pattern):[0-9]+:[0-9]+: (warning|error)" "$log"; then
		fail=$((fail + 1))
		echo "not ok - $cc W=1: warnings in files the series touches (log: $log)"
	else
		pass=$((pass + 1))
		echo "ok - $cc W=1: ${#objs[@]} touched files, no warnings in them"
	fi
done
echo "kernel-warnings: $pass passed, $fail failed"
[ $fail -eq 0 ]
