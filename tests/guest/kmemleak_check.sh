#!/bin/sh
# Last test of a run on the debug kernel: ask kmemleak for a scan and fail on
# any leak whose allocation went through the unwinder or perf. Kernels without
# kmemleak (fast, reference) skip it, saying so.
k=/sys/kernel/debug/kmemleak
if [ ! -e $k ]; then
	echo "# SKIP: no kmemleak in this kernel"
	exit 0
fi
echo scan > $k
sleep 5
echo scan > $k
leaks=$(grep -c '^unreferenced object' $k)
ours=$(awk '/^unreferenced object/ { n++ } /unwind|perf_defer|perf_event|perf_/ { hit[n] = 1 }
	END { c = 0; for (i in hit) c++; print c }' $k)
echo "# kmemleak: $leaks suspected leaks, $ours through unwind/perf"
[ "$ours" -eq 0 ] || { cat $k | head -60 | sed 's/^/# /'; exit 1; }
