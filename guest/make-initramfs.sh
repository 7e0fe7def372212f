#!/usr/bin/env bash
# Build the guest's initramfs: busybox, /init, the static test programs,
# the SFrame workloads (/opt/sframe) and, when it builds, the static
# deferstack CLI.
#
#   guest/make-initramfs.sh      -> prints the path of build/initramfs.cpio.gz
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# The test programs link libdw statically (lzma, bz2, zstd, libstdc++) and
# compat_workload is built with -m32 (gcc-multilib).
# patch and nm (binutils): the hostile .eh_frame variants of eh_work below.
ds_need_pkgs "${DS_GUEST_PKGS[@]}" gcc g++ gcc-multilib clang libelf-dev libdw-dev zlib1g-dev \
	liblzma-dev libbz2-dev libzstd-dev make patch binutils
bin=$DS_BUILD/guest-bin
root=$DS_BUILD/initramfs
out=$DS_BUILD/initramfs.cpio.gz

make -s -C "$DS_ROOT/tests/guest" OUT="$bin" >&2
rm -rf "$root"
mkdir -p "$root"/{bin,proc,sys,dev,tmp,out,tests} "$root/sys/kernel/debug"
cp /bin/busybox "$root/bin/busybox"
install -m 755 "$DS_ROOT/guest/init" "$root/init"
install -m 755 "$DS_ROOT/guest/run-suite" "$root/tests/run-suite"
install -m 644 "$DS_ROOT/tests/guest/suite.list" "$DS_ROOT/tests/guest/suite-ref.list" \
	"$root/tests/"
for f in "$DS_ROOT"/tests/guest/*.sh "$DS_ROOT"/bench/guest/*.sh; do
	[ -e "$f" ] && install -m 755 "$f" "$root/tests/"
done
find "$bin" -maxdepth 1 -type f -perm -u+x -exec cp {} "$root/tests/" \;
# Debian's own C library and loader, for eh_work (built as Debian builds).
mkdir -p "$root/opt/debian/lib"
cp -L /lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/libc.so.6 "$root/opt/debian/lib/"
mv "$root/tests/eh_work" "$root/tests/eh_work_lazy" "$root/tests/sf_depth_eh" \
	"$root/tests/example_workload_debian" \
	"$root/opt/debian/"
# eh_work with each hostile .eh_frame variant of the decoder's host harness
# (tests/unit/ehframe: truncated header, FDE outside the section, CIE loop,
# remember_state cycle, huge augmentation, random bytes...), aimed at main's
# FDE, which every sampled stack goes through: sframe_stack runs them all.
ehcheck=$DS_BUILD/unit-ehframe/ehcheck
make -s -C "$DS_ROOT/tests/unit/ehframe" OUT="$DS_BUILD/unit-ehframe" "$ehcheck" >&2
mkdir -p "$root/opt/debian/eh_hostile"
"$ehcheck" variants "$root/opt/debian/eh_work" "$root/opt/debian/eh_hostile" \
	"$(nm "$root/opt/debian/eh_work" | awk '$3 == "main" { print $1 }')" >&2
# Debian's trinity (trinity.sh) runs on that libc too, with its counter.
mv "$root/tests/trinity_count.so" "$root/opt/debian/"
mkdir -p "$root/opt/trinity" && cp /usr/bin/trinity "$root/opt/trinity/"
# The CLI is optional here: the main job needs it, the kernel tests do not.
if make -s -C "$DS_ROOT" static >&2 && [ -x "$DS_ROOT/out/static/deferstack" ]; then
	cp "$DS_ROOT/out/static/deferstack" "$root/bin/"
else
	ds_log "warning: the static deferstack CLI did not build; guest CLI tests will fail"
fi
# SFrame workloads, built with Debian sid's toolchain (sframe_stack test).
sfrc=0
sframe=$("$DS_ROOT/guest/build-sframe-workloads.sh") || sfrc=$?
if [ $sfrc -eq 0 ]; then
	mkdir -p "$root/opt"
	cp -a "$sframe" "$root/opt/sframe"
elif [ $sfrc -eq 3 ]; then
	ds_log "warning: no Debian sid mirror: sframe_stack will skip"
	echo "no Debian sid mirror to build the SFrame workloads" > "$root/tests/sframe-missing"
else
	ds_die "building the SFrame workloads failed"
fi
(cd "$root" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --quiet --reproducible) | gzip -1 > "$out"
echo "$out"
