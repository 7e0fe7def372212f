#!/usr/bin/env bash
# Is every step of the series a kernel that builds? Applies kernel/patches/
# (then kernel/test-patches/) one patch at a time on Debian's source and
# builds the fast guest configuration (gcc, ccache) after each, as `git
# bisect` would meet them.
#
#   tests/bisect-series.sh [FIRST [LAST]]     (patch numbers, default all)
#
# Works in its own tree and build directory (build/bisect-linux,
# build/obj-bisect), so build/linux and its builds stay as they are. Each
# step rebuilds what its patch touches; a patch that changes a widely
# included header (sched.h, perf_event.h, mm_types.h) rebuilds most of the
# kernel, so a cold run takes about as long as a dozen kernel builds: this is
# run by hand before the series is sent, not in CI. Prints one TAP line per
# patch and "N passed, N failed"; exits 1 if a step does not build.
set -uo pipefail
. "$(dirname "$0")/../guest/lib.sh"
. "$DS_ROOT/guest/kernel-lib.sh"

first=${1:-1}
last=${2:-9999}
src=$DS_BUILD/bisect-linux
obj=$DS_BUILD/obj-bisect
mk=(ARCH=x86_64 CC="ccache gcc")

ds_need_pkgs "${DS_KERNEL_PKGS[@]}"
ds_extract_source
mapfile -t patches < <(ds_series_files)
if [ ! -d "$src/.git" ] && [ ! -f "$src/.git" ]; then
	git -C "$DS_SRC" worktree add -q --detach "$src" debian-base ||
		ds_die "cannot make the worktree $src"
fi
git -C "$src" checkout -q -f --detach debian-base || ds_die "cannot reset $src"

mkdir -p "$obj"
make -s -C "$src" O="$obj" "${mk[@]}" tinyconfig >/dev/null

pass=0 fail=0 n=0
for p in "${patches[@]}"; do
	n=$((n + 1))
	name=$(basename "$p")
	if ! git -C "$src" -c user.name=deferstack -c user.email=ci@deferstack.invalid \
		am -q --keep-cr "$p"; then
		git -C "$src" am --abort
		echo "not ok $n - $name does not apply"
		fail=$((fail + 1))
		break
	fi
	[ "$n" -lt "$first" ] && continue
	[ "$n" -gt "$last" ] && break
	t0=$(date +%s)
	# The fragment again at each step: symbols a patch adds get their
	# value once they exist.
	(cd "$obj" && "$src/scripts/kconfig/merge_config.sh" -m -O "$obj" .config \
		"$DS_ROOT/kernel/config/base.config" >/dev/null 2>&1)
	make -s -C "$src" O="$obj" "${mk[@]}" olddefconfig >/dev/null
	log=$obj/step-$n.log
	if make -s -C "$src" O="$obj" "${mk[@]}" -j"$DS_JOBS" bzImage > "$log" 2>&1; then
		warn=$(grep -c 'warning:' "$log")
		echo "ok $n - $name ($(( $(date +%s) - t0 ))s, $warn warnings)"
		pass=$((pass + 1))
	else
		grep -m5 -E 'error|Error' "$log" | sed 's/^/#   /'
		echo "not ok $n - $name does not build (log: $log)"
		fail=$((fail + 1))
	fi
done
echo "bisect-series: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
