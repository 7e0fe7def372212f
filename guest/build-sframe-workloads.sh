#!/usr/bin/env bash
# Build the SFrame workloads of the sframe_stack guest test with Debian sid's
# toolchain (gcc 16, binutils >= 2.46: "as --gsframe" writes SFrame V3 and
# ld a PT_GNU_SFRAME segment; bookworm's binutils 2.40 cannot). The sid
# system is guest/fetch-perf7.sh's debootstrap chroot, with gcc added.
#
#   guest/build-sframe-workloads.sh   -> prints the directory to put at /opt/sframe
#
# The directory holds sf_static (static), sf_dyn with its loader and C
# library (its interpreter is /opt/sframe/lib/ld-linux-x86-64.so.2), and two
# copies of the plugin sf_plug (libsfplug.so, libsfplug2.so), and the
# library sf_dyn is linked with (libsflink.so, with a tail call); the
# main job's example workload without frame pointers (example_workload_nofp);
# and the two builds of bench/guest/sframe_bench.c's workload sf_depth.c:
# sf_depth (static, no frame pointers, SFrame tables, like sf_static) and
# sf_depth_fp (static, frame pointers in every function, leaves too, and no
# SFrame tables: no -Wa,--gsframe). Exit 3 when sid cannot be downloaded
# (as fetch-perf7.sh). For sframe_stress: sf_multi (static) and the objects it
# maps by itself: libsfhop.so (one function, no relocations) and libsfbig.so
# (the same with 180,000 more tiny functions: a .sframe section over 4 MiB).
# And eh_work_sid: tests/guest/ehframe/eh_work.c built as Debian builds its
# packages, by sid's gcc (no frame pointers, no SFrame: .eh_frame only),
# against sid's libc.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

root=$DS_BUILD/perf7-root
src=$DS_ROOT/tests/guest/sframe
out=$DS_BUILD/sframe-bin

"$DS_ROOT/guest/fetch-perf7.sh" > /dev/null || exit $?
if [ ! -e "$root/.sframe-toolchain" ]; then
	ds_log "installing gcc and libc6-dev in the sid chroot"
	chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 ||
		{ ds_log "apt-get update in the chroot failed"; exit 3; }
	chroot "$root" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends gcc libc6-dev \
		> "$DS_BUILD/sframe-toolchain.log" 2>&1 ||
		ds_die "apt-get install gcc in the chroot failed (log: $DS_BUILD/sframe-toolchain.log)"
	chroot "$root" apt-get clean
	touch "$root/.sframe-toolchain"
fi

# Rebuild when a source or this script is newer than the last build.
# The main job's example workload, built the same way (no frame pointers).
example=("$DS_ROOT/tests/guest/example_workload.c" "$DS_ROOT/tests/guest/workload.c" "$DS_ROOT/tests/guest/workload.h")
ehwork=$DS_ROOT/tests/guest/ehframe/eh_work.c
if [ -e "$out/.done" ] && [ -z "$(find "$src" "${example[@]}" "$ehwork" "$0" -newer "$out/.done" -print -quit)" ]; then
	echo "$out"
	exit 0
fi
rm -rf "$out" "$root/tmp/sframe-build"
mkdir -p "$out/lib" "$root/tmp/sframe-build"
cp "$src"/*.c "$src"/*.h "${example[@]}" "$root/tmp/sframe-build/"
# eh_work.c includes "../sframe/where.h"
mkdir -p "$root/tmp/sframe-build/ehframe" "$root/tmp/sframe-build/sframe"
cp "$ehwork" "$root/tmp/sframe-build/ehframe/"
cp "$src/where.h" "$root/tmp/sframe-build/sframe/"
# No frame pointers, SFrame tables; no inlining or sibling calls across the
# functions whose chain the test checks.
flags="-O2 -g -fomit-frame-pointer -fno-optimize-sibling-calls -Wa,--gsframe -Wall -Wextra -Werror"
# The frame-pointer twin of sf_depth: the same code, walked the other way.
# What sf_multi maps by itself: no C library, no relocations, hop() the entry.
hopflags="-fPIC -shared -nostdlib -fno-stack-protector -Wl,-e,hop"
fpflags="-O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls -Wall -Wextra -Werror"
# As Debian builds its packages (dpkg-buildflags' hardening), frame
# pointers off whatever gcc's default, against sid's own libc.
debflags="-g -O2 -fomit-frame-pointer -fstack-protector-strong -fstack-clash-protection -fcf-protection -Wall -Wextra -Werror -rdynamic -Wl,-z,relro -Wl,-z,now"
chroot "$root" sh -c "cd /tmp/sframe-build &&
	gcc $flags -static -o sf_static sf_static.c &&
	gcc $flags -static -o sf_depth sf_depth.c &&
	readelf -lW sf_depth | grep -q GNU_SFRAME &&
	gcc $fpflags -static -o sf_depth_fp sf_depth.c &&
	! readelf -lW sf_depth_fp | grep -q GNU_SFRAME &&
	gcc $flags -static -o example_workload_nofp example_workload.c workload.c &&
	readelf -lW example_workload_nofp | grep -q GNU_SFRAME &&
	gcc $flags -fPIC -shared -o libsfplug.so sf_plug.c &&
	gcc $flags -DPLUG_ALT -fPIC -shared -o libsfplug_alt.so sf_plug.c &&
	readelf -lW libsfplug_alt.so | grep -q GNU_SFRAME &&
	gcc $fpflags -DPLUG_FP -fPIC -shared -o libsfplug_fp.so sf_plug.c &&
	! readelf -lW libsfplug_fp.so | grep -q GNU_SFRAME &&
	gcc $flags -foptimize-sibling-calls -fPIC -shared -o libsflink.so sf_link.c &&
	objdump -d --no-show-raw-insn libsflink.so | grep -A8 '<link_top>:' | grep -q 'jmp.*<link_tail' &&
	gcc $flags -rdynamic -Wl,--dynamic-linker=/opt/sframe/lib/ld-linux-x86-64.so.2 \
		-Wl,-rpath,/opt/sframe/lib -o sf_dyn sf_dyn.c -L. -lsflink &&
	readelf -lW libsflink.so | grep -q GNU_SFRAME &&
	readelf -lW sf_static | grep -q GNU_SFRAME &&
	readelf -lW libsfplug.so | grep -q GNU_SFRAME &&
	readelf -lW sf_dyn | grep -q GNU_SFRAME &&
	gcc $flags -static -pthread -o sf_multi sf_multi.c &&
	gcc $flags $hopflags -o libsfhop.so sf_hop.c &&
	gcc $fpflags $hopflags -o libsfhop_fp.so sf_hop.c &&
	! readelf -lW libsfhop_fp.so | grep -q GNU_SFRAME &&
	awk 'BEGIN { for (i = 0; i < 180000; i++)
		printf \".Lpad%d:\\n.cfi_startproc\\npush %%rbx\\n.cfi_adjust_cfa_offset 8\\npop %%rbx\\n.cfi_adjust_cfa_offset -8\\nret\\n.cfi_endproc\\n\", i }' > pad.s &&
	gcc $flags $hopflags -o libsfbig.so sf_hop.c pad.s &&
	readelf -lW libsfhop.so | grep -q GNU_SFRAME &&
	readelf -rW libsfhop.so | grep -q 'no relocations' &&
	gcc $debflags -Wl,--dynamic-linker=/opt/sframe/lib/ld-linux-x86-64.so.2 \
		-Wl,-rpath,/opt/sframe/lib -o eh_work_sid ehframe/eh_work.c &&
	! readelf -lW eh_work_sid | grep -q GNU_SFRAME &&
	readelf -lW eh_work_sid | grep -q GNU_EH_FRAME" >&2 ||
	ds_die "building the SFrame workloads failed (no PT_GNU_SFRAME from sid's toolchain, or one in sf_depth_fp?)"
b=$root/tmp/sframe-build
install -m 755 "$b/sf_static" "$b/sf_dyn" "$b/example_workload_nofp" "$b/sf_depth" \
	"$b/sf_depth_fp" "$b/eh_work_sid" "$out/"
sframe_size=$(readelf -SW "$b/libsfbig.so" | awk '{ sub(/^.*\] */, ""); if ($1 == ".sframe") print $5 }')
[ $((0x${sframe_size:-0})) -gt $((4 << 20)) ] ||
	ds_die "libsfbig.so: .sframe is ${sframe_size:-missing} bytes (hex), not over 4 MiB"
install -m 755 "$b/sf_multi" "$out/"
install -m 644 "$b/libsfhop.so" "$b/libsfhop_fp.so" "$b/libsfbig.so" "$out/lib/"
install -m 644 "$b/libsfplug.so" "$out/lib/libsfplug.so"
install -m 644 "$b/libsfplug.so" "$out/lib/libsfplug2.so"
install -m 644 "$b/libsfplug_alt.so" "$out/lib/libsfplug_alt.so"
install -m 644 "$b/libsfplug_fp.so" "$out/lib/libsfplug_fp.so"
install -m 644 "$b/libsflink.so" "$out/lib/libsflink.so"
for lib in /lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/libc.so.6; do
	cp -L "$root$lib" "$out/lib/$(basename "$lib")"
done
touch "$out/.done"
ds_log "$out: SFrame workloads ($(du -sk "$out" | cut -f1) KiB)"
echo "$out"
