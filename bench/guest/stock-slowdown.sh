#!/bin/sh
# In the guest, under -icount (suite stock-slowdown.sh[:REPS], by hand):
# what profiling costs sid's stock programs (guest/pack-stock.sh: no frame
# pointers, no SFrame, .eh_frame only). Each program runs unprofiled, then
# under perf 7.x record -e cpu-clock -F 499 with --call-graph fp (classic),
# fp,defer and dwarf,65528 (dwarf and classic fp only on our kernel: on the
# stock kernel fp,defer is the one of interest), REPS times each (default 3).
# The program's own time is taken by busybox time inside the recording
# (elapsed, user, system: perf's start-up and its build-id pass are not
# in it); under -icount shift=0 a guest second is 10^9 instructions.
# Figures only: never fails on a number.
#
#   DS_QEMU_ICOUNT=0 DS_INITRD_EXTRA=build/perf7-stock.cpio.gz \
#     guest/run-guest.sh -k fast -s stock-slowdown.sh:3 -t 3000
#
# Lines: "stockslow: prog=P mode=M rep=R elapsed=S user=S sys=S bytes=B
# samples=N", then "stocksum: prog=P mode=M elapsed=MEDIAN ratio=X
# bytes_per_sample=B" (ratio: against the same program unprofiled).
reps=${1:-3}
P=/opt/perf7/perf
if [ ! -x "$P" ] || [ ! -x /usr/bin/perl ]; then
	echo "# SKIP: perf 7.x or the stock programs are not in this initramfs"
	exit 0
fi
export HOME=/tmp/perf7home PAGER=cat
mkdir -p "$HOME" /tmp/slow && cd /tmp/slow || exit 1
printf '[addr2line]\n\tstyle = libdw\n' > "$HOME/.perfconfig"
seq 1 600000 > /tmp/stock.txt
modes="none fp,defer"
[ -e /sys/kernel/debug/unwind_user/stats ] && modes="none fp fp,defer dwarf,65528"

# run NAME CMD...: every mode, REPS times
run() {
	name=$1
	shift
	for mode in $modes; do
		r=1
		while [ $r -le "$reps" ]; do
			if [ "$mode" = none ]; then
				busybox time -f "%e %U %S" -o t.txt "$@" > /dev/null 2>&1
				bytes=0
				n=0
			else
				"$P" record -q -B -e cpu-clock -F 499 --call-graph "$mode" -o s.data -- \
					busybox time -f "%e %U %S" -o t.txt "$@" > /dev/null 2>&1
				bytes=$(stat -c %s s.data)
				n=$("$P" report --stats -i s.data 2> /dev/null |
					awk '$1 == "SAMPLE" && $2 == "events:" { print $3; exit }')
				rm -f s.data
			fi
			read -r e u s < t.txt
			echo "stockslow: prog=$name mode=$mode rep=$r elapsed=$e user=$u sys=$s bytes=$bytes samples=$n"
			r=$((r + 1))
		done
	done
}

{
	run perl /usr/bin/perl -e 'my $s = 0; for my $i (1 .. 1500000) { $s += ($i * 7) % 13 } print "$s\n"'
	run python3 /usr/bin/python3 -S -I -c 'def f(n):
    s = 0
    for i in range(n):
        s += i * 7 % 13
    return s
print(f(1000000))'
	run gzip /usr/bin/gzip -c -6 /tmp/stock.txt
	run xz /usr/bin/xz -c -0 -T1 /tmp/stock.txt
	run sort /usr/bin/sort --parallel=1 -r /tmp/stock.txt
} | tee /tmp/slow/lines

# medians per program and mode, ratios against unprofiled
awk '
	function val(s, k) { sub(".*" k "=", "", s); sub(/ .*/, "", s); return s }
	/^stockslow:/ {
		p = val($0, "prog"); m = val($0, "mode")
		key = p " " m
		if (!(key in n)) order[++nk] = key
		e[key, ++n[key]] = val($0, "elapsed") + 0
		b[key] += val($0, "bytes"); c[key] += val($0, "samples")
	}
	function median(key,    i, j, t, a) {
		for (i = 1; i <= n[key]; i++) a[i] = e[key, i]
		for (i = 1; i <= n[key]; i++)
			for (j = i + 1; j <= n[key]; j++)
				if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return a[int((n[key] + 1) / 2)]
	}
	END {
		for (i = 1; i <= nk; i++) {
			split(order[i], pm, " ")
			med = median(order[i]); base = median(pm[1] " none")
			ratio = base > 0 ? med / base : 0
			per = c[order[i]] ? b[order[i]] / c[order[i]] : 0
			printf "stocksum: prog=%s mode=%s elapsed=%.2f ratio=%.3f bytes_per_sample=%d\n",
			       pm[1], pm[2], med, ratio, per
		}
	}' /tmp/slow/lines
rm -f /tmp/stock.txt
exit 0
