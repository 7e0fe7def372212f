#!/usr/bin/env bash
# Windows of two machines merged as a continuous-profiling server merges
# them (issue 24): the fast kernel booted twice, each boot recording the
# whole guest in three windows with --pprof-dir (tests/guest/windows_defer.sh
# pprof, deferred callchains); then go tool pprof -proto merges the six
# profiles and the merged profile must hold every sample of each, name the
# example workload's functions at its top, and keep the labels and build-ids
# a server groups by.
#
#   tests/pprof-two-boots.sh       (a lane of tests/run-all.sh's guest-suites)
#   env: DS_INITRD (an initramfs built already), DS_PPROF_KERNEL (fast)
set -uo pipefail
. "$(dirname "$0")/../guest/lib.sh"
ds_need_pkgs golang-go
kernel=${DS_PPROF_KERNEL:-fast}
dir=$DS_BUILD/pprof-two-boots
rm -rf "$dir"
mkdir -p "$dir"
fail=0
ok() { echo "ok - $1"; }
bad() { echo "not ok - $1"; fail=1; }
check() {
	local what=$1
	shift
	if "$@"; then ok "$what"; else bad "$what"; fi
}
gopprof() { HOME=$dir timeout 300 go tool pprof "$@"; }
# the samples of a profile: the first value of each sample, summed
pp_samples() {
	gopprof -raw -symbolize=none "$1" 2> /dev/null |
		awk '/^Samples:/ { go = 1; next } /^Locations/ { go = 0 }
			go && $1 ~ /^[0-9]+$/ && NF > 2 { s += $1 } END { print s + 0 }'
}

for b in 1 2; do
	DS_RUN_TAG=boot$b "$DS_ROOT/guest/run-guest.sh" -k "$kernel" -s windows_defer.sh:pprof:guest$b \
		-o "$dir/boot$b" > "$dir/boot$b.out" 2>&1
	rc=$?
	n=$(ls "$dir/boot$b/pprof/"*.pb.gz 2> /dev/null | wc -l)
	check "boot $b: the guest recorded 3 windows with a profile each ($n)" \
		test $rc -eq 0 -a "$n" -eq 3 || tail -5 "$dir/boot$b.out"
done
profiles=("$dir"/boot[12]/pprof/*.pb.gz)
[ ${#profiles[@]} -ge 2 ] || { echo "no profiles to merge"; exit 1; }

sum=0
for p in "${profiles[@]}"; do
	sum=$((sum + $(pp_samples "$p")))
done
gopprof -proto "${profiles[@]}" > "$dir/merged.pb.gz" 2> "$dir/merged.err"
rc=$?
merged=$(pp_samples "$dir/merged.pb.gz")
check "go tool pprof -proto merges the ${#profiles[@]} windows of two boots ($merged samples = $sum)" \
	test $rc -eq 0 -a "$merged" -gt 0 -a "$merged" -eq "$sum" || cat "$dir/merged.err"

# The top of the merged profile by self time, and by time under each
# function: the workload's spin leaf and its read chain, as in each window.
gopprof -top -nodecount=15 -symbolize=none "$dir/merged.pb.gz" > "$dir/top" 2>&1
gopprof -top -cum -nodecount=40 -symbolize=none "$dir/merged.pb.gz" > "$dir/topcum" 2>&1
sed 's/^/# /' "$dir/top"
check "the merged profile's top functions (self) have the workload's wl_spin_leaf" \
	grep -qw wl_spin_leaf "$dir/top"
check "the merged profile's top functions (cumulative) have the workload's read chain" \
	bash -c "grep -qw wl_read_top '$dir/topcum' && grep -qw wl_read_leaf '$dir/topcum'"
gopprof -tags -symbolize=none "$dir/merged.pb.gz" > "$dir/tags" 2>&1
check "the merged profile keeps the comm, pid, cpu, hostname and kernel_release labels, both hosts" \
	bash -c "for k in comm pid cpu hostname kernel_release; do grep -q \"^ *\$k:\" '$dir/tags' || exit 1; done &&
		grep -A3 '^ *comm:' '$dir/tags' | grep -q example_workloa &&
		grep -A3 '^ *hostname:' '$dir/tags' | grep -q guest1 &&
		grep -A3 '^ *hostname:' '$dir/tags' | grep -q guest2 || { cat '$dir/tags'; false; }"
gopprof -raw -symbolize=none "$dir/merged.pb.gz" > "$dir/raw" 2>&1
check "the merged profile's mappings carry build-ids (the workload's and the kernel's)" \
	bash -c "grep -A1000 '^Mappings' '$dir/raw' | grep example_workload | grep -qE '[0-9a-f]{40}' &&
		grep -A1000 '^Mappings' '$dir/raw' | grep -F '[kernel.kallsyms]' | grep -qE '[0-9a-f]{40}'"
# pprof keeps the earliest start and stretches the duration over all
# windows: longer than any one boot's windows together.
d1=$(for p in "$dir"/boot1/pprof/*.pb.gz; do gopprof -raw -symbolize=none "$p" 2> /dev/null |
	sed -n 's/^Duration: \([0-9.]*\).*/\1/p'; done | awk '{ s += $1 } END { print s + 0 }')
dm=$(sed -n 's/^Duration: \([0-9.]*\).*/\1/p' "$dir/raw")
check "the merged profile spans both boots (${dm:-none} s, one boot's windows ${d1} s)" \
	awk -v m="${dm:-0}" -v a="$d1" 'BEGIN { exit !(m > a && a > 0) }'

echo "$([ $fail -eq 0 ] && echo PASS || echo FAIL): pprof-two-boots (in $dir)"
exit $fail
