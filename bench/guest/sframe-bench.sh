#!/bin/sh
# In the guest (suite sframe-bench.sh:REPS:CALLS, bench/run-all.sh): what one
# user frame costs the kernel's deferred stack walk with SFrame tables,
# against frame pointers. Figures only; exits non-zero only when a
# configuration could not be measured at all.
#
#   REPS   repetitions per configuration (default 5)
#   CALLS  system calls per run of the workload (default 3000: 0.4 s of guest
#          time for the slowest configuration, sf_depth deferred at depth 100,
#          under -icount shift=0 on our kernel; 0.1 s for sf_depth_fp's)
#
# sframe_bench runs /opt/sframe/sf_depth (no frame pointers, SFrame tables)
# and sf_depth_fp (frame pointers, no tables), each at depth 1 and 100
# (DEPTH + 2 user frames at each system call), with no event, a classic
# callchain (frame pointers, walked in the system call) and a deferred one
# (walked on the way back to user space: SFrame where there is a table)
# sampled at every raw_syscalls:sys_enter.
#
# Lines for the host: "sfcost: ..." (sframe_bench, one per repetition),
# then the medians: "sfsum: ..." per configuration (ns_per_call: the
# workload's time per system call; over_none: that minus the same binary
# and depth without an event, i.e. what one sample costs) and "sfframe: ..."
# per walk method (per_frame = (over_none at depth 100 - at depth 1) /
# (frames at 100 - frames at 1), frames being the most common number of user
# frames of a walk, the loop's: DEPTH + 3 with the C library's start code
# when the walk is right); walk100 = 100 x per_frame, the part of a
# sample's cost that walking a 100-frame stack takes). Under QEMU -icount shift=0 ns are guest
# instructions. On a kernel without the SFrame walker (mainline: no
# <debugfs>/unwind_user/stats), sf_depth's deferred walk is a frame-pointer
# walk of code built without frame pointers (sf_drec keeps rbp as a frame
# pointer for its variable-sized frame, sf_dleaf does not): its rows are
# printed as that, labelled method=fp-nofp, not sframe. sf_depth_eh is the
# same code built as Debian builds (gcc -O2, no frame pointers, no SFrame,
# dynamic, on Debian's libc: /opt/debian): on a kernel that walks .eh_frame
# (patch 0030) its deferred row, method=ehframe, is the cost of a frame
# stepped by .eh_frame. Everything else is "# " diagnostics.
reps=${1:-5}
calls=${2:-3000}
D=/opt/sframe
STATS=/sys/kernel/debug/unwind_user/stats
out=/tmp/sfcost.txt
fail=0

if [ ! -x $D/sf_depth ] || [ ! -x $D/sf_depth_fp ]; then
	echo "# sframe-bench: skipped: no $D/sf_depth or sf_depth_fp in this initramfs" \
		"($(cat /tests/sframe-missing 2>/dev/null || echo 'guest/build-sframe-workloads.sh'))"
	exit 0
fi
walker=sframe
[ -r $STATS ] || walker=fp-nofp
echo "# sframe-bench: kernel $(uname -r), reps $reps, calls $calls," \
	"unwind stats $([ -r $STATS ] && echo present || echo 'absent: no SFrame walker'), clocksource" \
	"$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"

rm -f $out
for bin in sf_depth_fp sf_depth sf_depth_eh; do
	path=$D/$bin
	# Built as Debian builds (tests/guest/Makefile), on Debian's libc.
	[ $bin = sf_depth_eh ] && path=/opt/debian/$bin
	for depth in 1 100; do
		for m in none classic deferred; do
			/tests/sframe_bench $path $depth $m "$reps" "$calls" > /tmp/sfcost.one ||
				{ echo "# FAIL: sframe_bench $bin $depth $m"; fail=1; }
			cat /tmp/sfcost.one
			cat /tmp/sfcost.one >> $out
		done
	done
done

# Medians per configuration, then the cost per frame of each walk method.
awk -v walker=$walker '
function median(s,    a, n, i, j, t) {
	n = split(s, a, " ")
	if (!n)
		return ""
	for (i = 2; i <= n; i++) {
		t = a[i] + 0
		for (j = i - 1; j >= 1 && a[j] + 0 > t; j--)
			a[j + 1] = a[j]
		a[j + 1] = t
	}
	return n % 2 ? a[(n + 1) / 2] + 0 : (a[n / 2] + a[n / 2 + 1]) / 2
}
/^sfcost: / {
	delete f
	for (i = 2; i <= NF; i++) {
		split($i, kv, "=")
		f[kv[1]] = kv[2]
	}
	k = f["bin"] " " f["depth"] " " f["mode"]
	if (!(k in nreps))
		order[++nk] = k
	nreps[k]++
	ns[k] = ns[k] " " f["ns"] / f["calls"]
	fr[k] = fr[k] " " f["frames"]
	fm[k] = fm[k] " " ("frames_mode" in f ? f["frames_mode"] : f["frames"])
	sa[k] = sa[k] " " f["samples"]
	re[k] = re[k] " " f["records"]
	walks = f["mode"] == "deferred" ? f["records"] : f["samples"]
	sf[k] = sf[k] " " (walks ? f["sframe_frames"] / walks : 0)
	fp[k] = fp[k] " " (walks ? f["fp_frames"] / walks : 0)
	eh[k] = eh[k] " " (walks ? f["eh_frames"] / walks : 0)
	lost[k] += f["lost"]
}
END {
	for (i = 1; i <= nk; i++) {
		k = order[i]
		split(k, p, " ")
		med[k] = median(ns[k])
		frm[k] = median(fm[k])
	}
	for (i = 1; i <= nk; i++) {
		k = order[i]
		split(k, p, " ")
		base = p[1] " " p[2] " none"
		over[k] = (base in med) && p[3] != "none" ? med[k] - med[base] : ""
		printf "sfsum: bin=%s depth=%s mode=%s reps=%d ns_per_call=%.1f over_none=%s " \
			"frames=%.2f frames_mode=%d sframe_per_walk=%.2f fp_per_walk=%.2f eh_per_walk=%.2f samples=%d records=%d lost=%d\n",
			p[1], p[2], p[3], nreps[k], med[k],
			over[k] == "" ? "-" : sprintf("%.1f", over[k]), median(fr[k]), frm[k],
			median(sf[k]), median(fp[k]), median(eh[k]), median(sa[k]), median(re[k]), lost[k]
		ehw[k] = median(eh[k])
	}
	# sf_depth_eh (no frame pointers, no SFrame): by .eh_frame on a kernel
	# that walks it, else the deferred walk stops at its first frames.
	ehm = ehw["sf_depth_eh 100 deferred"] > 50 ? "ehframe" : "fp-noeh"
	n = split("sf_depth deferred " walker " sf_depth_fp deferred fp sf_depth_fp classic fp-classic " \
		  "sf_depth classic fp-classic-nofp sf_depth_eh deferred " ehm, m, " ")
	for (i = 1; i + 2 <= n; i += 3) {
		a = m[i] " 1 " m[i + 1]
		b = m[i] " 100 " m[i + 1]
		if (over[a] == "" || over[b] == "")
			continue
		df = frm[b] - frm[a]
		pf = df > 0 ? (over[b] - over[a]) / df : 0
		per[m[i + 2]] = pf
		printf "sfframe: method=%s bin=%s mode=%s cost1=%.1f cost100=%.1f frames1=%.2f " \
			"frames100=%.2f per_frame=%s walk100=%s\n", m[i + 2], m[i], m[i + 1],
			over[a], over[b], frm[a], frm[b], (df > 0 ? sprintf("%.1f", pf) : "-"),
			(df > 0 ? sprintf("%.0f", 100 * pf) : "-")
	}
	if (per[walker] && per["fp"])
		printf "# per frame: %s / deferred frame pointers = %.2f\n", walker, per[walker] / per["fp"]
	if (per[walker] && per["ehframe"])
		printf "# per frame: .eh_frame / %s = %.2f\n", walker, per["ehframe"] / per[walker]
	if (per["ehframe"] && per["fp-classic"])
		printf "# per frame: .eh_frame / classic frame pointers = %.2f\n",
			per["ehframe"] / per["fp-classic"]
	if (per[walker] && per["fp-classic"])
		printf "# per frame: %s / classic frame pointers = %.2f\n", walker,
			per[walker] / per["fp-classic"]
	if (per["fp"] && per["fp-classic"])
		printf "# per frame: deferred / classic frame pointers = %.2f\n", per["fp"] / per["fp-classic"]
}' $out
exit $fail
