#!/usr/bin/env bash
# The main job: build the patched 6.12 kernel, boot it in QEMU, profile the
# bundled example workload with deferred callchains using the deferstack CLI
# (per task and system-wide) and leave the results on the host:
#   out/main-job/report.txt       top functions and stacks
#   out/main-job/flamegraph.svg   flame graph (open in a browser)
#   out/main-job/task.folded      folded stacks (FlameGraph, speedscope)
#   out/main-job/script.txt       every sample with cookie and stitch status
#   out/main-job/task.data        perf.data (raw deferred records; perf 7.x)
#   out/main-job/flamegraph-nofp.svg, nofp.folded: the same workload built
#                                 without frame pointers, walked by SFrame
#   out/main-job/flamegraph-debian.svg, debian.folded: built as Debian
#                                 builds, on Debian's libc: by .eh_frame
# Installs what it needs on first use.
#
#   guest/profile-example.sh [-k fast|debug|ref]
set -uo pipefail
. "$(dirname "$0")/lib.sh"

kernel=fast
while getopts "k:" opt; do
	case $opt in
	k) kernel=$OPTARG ;;
	*) exit 2 ;;
	esac
done
out=$DS_ROOT/out/main-job
rm -rf "$out"
ds_install_all
"$DS_ROOT/guest/run-guest.sh" -k "$kernel" -s main -o "$out"
rc=$?
if [ -f "$out/report.txt" ]; then
	echo
	head -40 "$out/report.txt"
	echo
	ds_log "results in $out: report.txt flamegraph.svg task.folded script.txt task.data flamegraph-nofp.svg flamegraph-debian.svg"
fi
exit $rc
