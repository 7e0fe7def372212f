#!/bin/sh
# Sourced (never run) by the guest tests of perf 7.x (perf7_e2e.sh,
# stock_stacks.sh): P the perf packed by guest/fetch-perf7.sh, perf's own
# config, and the check helpers. Needs out (the directory the test writes to);
# a test whose initramfs has no perf 7.x skips (exits 0).
P=/opt/perf7/perf
if [ ! -x "$P" ]; then
	echo "# SKIP: perf 7.x not in this initramfs"
	exit 0
fi
mkdir -p "$out"
cd "$out" || exit 1
# perf's own config: resolve source lines/inlines with the linked libdw; the
# default style runs binutils' addr2line, which the guest lacks (perf script then
# dies of SIGPIPE with "addr2line configuration failed").
export HOME=/tmp/perf7home PAGER=cat
mkdir -p "$HOME"
printf '[addr2line]\n\tstyle = libdw\n' > "$HOME/.perfconfig"
fail=0
check() {
	if eval "$2"; then echo "#   ok: $1"; else echo "# FAIL: $1"; fail=1; fi
}
# show FILE [N]: the first N lines of FILE as diagnostics.
show() { head -n "${2:-20}" "$1" | sed 's/^/#     /'; }
# pct PART WHOLE: PART as a whole percentage of WHOLE, 0 when WHOLE is 0
# (busybox sh evaluates both arms of ?:, so "$((w ? 100 * p / w : 0))"
# dies of a division by zero).
pct() { [ "$2" -gt 0 ] && echo $(( 100 * $1 / $2 )) || echo 0; }
