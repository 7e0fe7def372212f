#!/usr/bin/env bash
# Build the guest kernel from Debian's linux-source-6.12 with kernel/patches/.
#
#   guest/build-kernel.sh FLAVOUR [gcc|clang]
#
# FLAVOUR is "fast" or "debug" (lockdep, PROVE_RCU, KASAN, ...). The source is
# extracted once into build/linux (a git tree, tag "debian-base"), the series is
# applied with git am whenever kernel/patches/ changes, and the kernel is built
# out of tree in build/obj-FLAVOUR[-clang] with ccache. Prints the bzImage path.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

flavour=${1:?usage: build-kernel.sh fast|debug [gcc|clang]}
cc=${2:-gcc}
case $flavour in fast|debug) ;; *) ds_die "unknown flavour $flavour" ;; esac
case $cc in gcc|clang) ;; *) ds_die "unknown compiler $cc" ;; esac

ds_need_pkgs "${DS_KERNEL_PKGS[@]}"
mkdir -p "$DS_BUILD"

extract_source() {
	local tarball=/usr/src/linux-source-6.12.tar.xz
	[ -d "$DS_SRC/.git" ] && git -C "$DS_SRC" rev-parse -q --verify debian-base >/dev/null &&
		return 0
	[ -f "$tarball" ] || ds_die "$tarball missing (linux-source-6.12)"
	rm -rf "$DS_SRC" "$DS_BUILD/linux-source-6.12"
	tar -C "$DS_BUILD" -xf "$tarball"
	mv "$DS_BUILD/linux-source-6.12" "$DS_SRC"
	# Debian's .gitignore ignores the whole top level; track everything.
	git -C "$DS_SRC" init -q
	git -C "$DS_SRC" add -A -f
	git -C "$DS_SRC" -c user.name=deferstack -c user.email=ci@deferstack.invalid \
		commit -q -m "Debian linux-source-6.12 $(dpkg-query -W -f='${Version}' linux-source-6.12)"
	git -C "$DS_SRC" tag debian-base
}

apply_series() {
	local stamp want
	want=$( (cd "$DS_ROOT/kernel/patches" && cat series $(grep -v '^#' series 2>/dev/null)) |
		sha256sum | cut -d' ' -f1)
	stamp=$(cat "$DS_SRC/.git/deferstack-series" 2>/dev/null || true)
	[ "$stamp" = "$want" ] && return 0
	if [ -n "$(git -C "$DS_SRC" status --porcelain --untracked-files=no)" ] &&
	   [ -z "${DS_FORCE:-}" ]; then
		ds_die "$DS_SRC has uncommitted changes; commit them or set DS_FORCE=1"
	fi
	git -C "$DS_SRC" checkout -q -f -B series debian-base
	local p n=0
	while read -r p; do
		case $p in ''|'#'*) continue ;; esac
		git -C "$DS_SRC" -c user.name=deferstack -c user.email=ci@deferstack.invalid \
			am -q --keep-cr "$DS_ROOT/kernel/patches/$p" ||
			{ git -C "$DS_SRC" am --abort; ds_die "patch $p does not apply"; }
		n=$((n + 1))
	done < "$DS_ROOT/kernel/patches/series"
	echo "$want" > "$DS_SRC/.git/deferstack-series"
	ds_log "applied $n patches"
}

configure() {
	local obj=$1 frags=("$DS_ROOT/kernel/config/base.config") stamp want f
	[ "$flavour" = debug ] && frags+=("$DS_ROOT/kernel/config/debug.config")
	want=$(cat "${frags[@]}" "$DS_ROOT/guest/build-kernel.sh" | sha256sum | cut -d' ' -f1)
	want="$want $(git -C "$DS_SRC" rev-parse HEAD)"
	stamp=$(cat "$obj/.deferstack-config" 2>/dev/null || true)
	[ "$stamp" = "$want" ] && [ -f "$obj/.config" ] && return 0
	mkdir -p "$obj"
	make -s -C "$DS_SRC" O="$obj" "${mk[@]}" tinyconfig >/dev/null
	(cd "$obj" && "$DS_SRC/scripts/kconfig/merge_config.sh" -m -O "$obj" .config \
		"${frags[@]}" >/dev/null)
	make -s -C "$DS_SRC" O="$obj" "${mk[@]}" olddefconfig >/dev/null
	# merge_config drops symbols whose dependencies are unmet: make that loud.
	local line sym val bad=0
	for f in "${frags[@]}"; do
		while read -r line; do
			case $line in CONFIG_*=*) ;; *) continue ;; esac
			sym=${line%%=*}
			val=${line#*=}
			if [ "$val" = n ]; then
				grep -q "^$sym=" "$obj/.config" && { ds_log "$sym should be unset"; bad=1; }
			else
				grep -qx "$line" "$obj/.config" || { ds_log "$line did not stick"; bad=1; }
			fi
		done < "$f"
	done
	[ $bad -eq 0 ] || ds_die "config fragments did not apply cleanly"
	echo "$want" > "$obj/.deferstack-config"
}

mk=(ARCH=x86_64)
if [ "$cc" = clang ]; then
	mk+=(LLVM=1 CC="ccache clang")
	obj=$DS_BUILD/obj-$flavour-clang
else
	mk+=(CC="ccache gcc")
	obj=$DS_BUILD/obj-$flavour
fi

extract_source
apply_series
configure "$obj"
make -s -C "$DS_SRC" O="$obj" "${mk[@]}" -j"$DS_JOBS" ${DS_KMAKE_EXTRA:-} bzImage >&2
echo "$obj/arch/x86/boot/bzImage"
