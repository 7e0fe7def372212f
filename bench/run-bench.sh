#!/usr/bin/env bash
# Deferred vs classic callchains, in one boot, on our 6.12 kernel and on the
# stock 7.x reference: bytes per sample, user unwinds per sample, complete user
# stacks with paged-out stack pages, slowdown at a high sampling rate. Prints
# figures only; never fails on a number. Also runs the library's stitch
# benchmark (make bench).
#
#   bench/run-bench.sh [fast|ref ...]     (default: fast ref)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kernels=("$@")
[ ${#kernels[@]} -gt 0 ] || kernels=(fast ref)
for k in "${kernels[@]}"; do
	echo "=== kernel: $k"
	"$root/guest/run-guest.sh" -k "$k" -s bench 2>&1 | grep -a '^bench:' | sed 's/^bench: /  /'
done
echo "=== stitch throughput (library, host)"
make -s -C "$root" bench
