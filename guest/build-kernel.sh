#!/usr/bin/env bash
# Build the guest kernel from Debian's linux-source-6.12 with kernel/patches/.
#
#   guest/build-kernel.sh FLAVOUR [gcc|clang]
#
# FLAVOUR is "fast" or "debug" (lockdep, PROVE_RCU, KASAN, ...). The source is
# extracted once into build/linux (a git tree, tag "debian-base"), the series is
# applied with git am whenever kernel/patches/ changes, and the kernel is built
# out of tree in build/obj-FLAVOUR[-clang] with ccache. Prints the bzImage path.
# DS_KERNEL_OBJECTS=touched: only the objects of the .c files the series
# touches (a compile check), and prints the build directory.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$DS_ROOT/guest/kernel-lib.sh"

flavour=${1:?usage: build-kernel.sh fast|debug [gcc|clang]}
cc=${2:-gcc}
case $flavour in fast|debug) ;; *) ds_die "unknown flavour $flavour" ;; esac
case $cc in gcc|clang) ;; *) ds_die "unknown compiler $cc" ;; esac

ds_need_pkgs "${DS_KERNEL_PKGS[@]}"
mkdir -p "$DS_BUILD"

configure() {
	local obj=$1 frags=("$DS_ROOT/kernel/config/base.config") stamp want f
	[ "$flavour" = debug ] && frags+=("$DS_ROOT/kernel/config/debug.config")
	want=$(cat "${frags[@]}" "$DS_ROOT/guest/build-kernel.sh" "$DS_ROOT/guest/kernel-lib.sh" |
		sha256sum | cut -d' ' -f1)
	want="$want $(git -C "$DS_SRC" rev-parse HEAD)"
	stamp=$(cat "$obj/.deferstack-config" 2>/dev/null || true)
	[ "$stamp" = "$want" ] && [ -f "$obj/.config" ] && return 0
	mkdir -p "$obj"
	make -s -C "$DS_SRC" O="$obj" "${mk[@]}" tinyconfig >/dev/null
	(cd "$obj" && "$DS_SRC/scripts/kconfig/merge_config.sh" -m -O "$obj" .config \
		"${frags[@]}" >/dev/null)
	make -s -C "$DS_SRC" O="$obj" "${mk[@]}" olddefconfig >/dev/null
	ds_config_check "$obj/.config" "${frags[@]}" || ds_die "config fragments did not apply cleanly"
	echo "$want" > "$obj/.deferstack-config"
}

# ccache, but not for sources that .incbin a file (guest/kcc: the compressed
# kernel in piggy.o)
mk=(ARCH=x86_64)
if [ "$cc" = clang ]; then
	mk+=(LLVM=1 CC="$DS_ROOT/guest/kcc clang")
	obj=$DS_BUILD/obj-$flavour-clang
else
	mk+=(CC="$DS_ROOT/guest/kcc gcc")
	obj=$DS_BUILD/obj-$flavour
fi

ds_kernel_tree
configure "$obj"
if [ "${DS_KERNEL_OBJECTS:-}" = touched ]; then
	# A compile check of what the series touches, no image: no guest boots
	# a clang kernel (tests/run-all.sh's kernel-clang, kernel-warnings).
	mapfile -t objs < <(git -C "$DS_SRC" diff --name-only debian-base..HEAD -- '*.c' |
		sed -n 's/\.c$/.o/p')
	make -s -C "$DS_SRC" O="$obj" "${mk[@]}" -j"$DS_JOBS" prepare >&2
	log=$obj/touched-objects.log
	make -k -s -C "$DS_SRC" O="$obj" "${mk[@]}" -j"$DS_JOBS" ${DS_KMAKE_EXTRA:-} \
		"${objs[@]}" > "$log" 2>&1 || true
	# make -k: objects this configuration does not build fail to make; an
	# error in a file the series touches fails the build.
	pattern=$(printf '%s\n' "${objs[@]}" | sed 's/\.o$/.c/; s/[.]/\\./g' | paste -sd'|')
	if grep -E "($pattern):[0-9]+:[0-9]+: error" "$log" >&2; then
		ds_die "the series' files do not compile with $cc (log: $log)"
	fi
	echo "$obj"
	exit 0
fi
make -s -C "$DS_SRC" O="$obj" "${mk[@]}" -j"$DS_JOBS" ${DS_KMAKE_EXTRA:-} bzImage >&2
echo "$obj/arch/x86/boot/bzImage"
