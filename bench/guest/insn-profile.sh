#!/bin/sh
# In the guest (suite insn-profile.sh:WORKLOAD:REPS, bench/qemu-plugin/
# profile.sh): cost_bench WORKLOAD in modes none, classic and deferred,
# each run twice, with 10 and with 10 + REPS repetitions, every run
# between two runs of sync, whose ksys_sync the host's QEMU plugin
# (bench/qemu-plugin/insn_profile.c) takes as the marks of its windows.
# The difference of a mode's two windows is REPS repetitions of the
# workload alone: the process's start and exit cancel out. Figures only.
wl=${1:-short}
reps=${2:-100}
fail=0

echo "# insn-profile: kernel $(uname -r), workload $wl, reps 10 and $((reps + 10))"
sync
for m in none classic deferred; do
	for r in 10 $((reps + 10)); do
		echo "# insn-profile: window $m $r"
		/tests/cost_bench "$wl" "$m" "$r" 50000 || { echo "# FAIL: cost_bench $wl $m"; fail=1; }
		sync
	done
done
exit $fail
