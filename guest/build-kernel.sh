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

series_files() {
	local p
	while read -r p; do
		case $p in ''|'#'*) continue ;; esac
		echo "$DS_ROOT/kernel/patches/$p"
	done < "$DS_ROOT/kernel/patches/series"
}

# Bring build/linux to debian-base + kernel/patches/series. A tree whose
# commits already are the series (a developer's tree the patches were
# exported from) is left alone, so that its build stays warm.
apply_series() {
	local want have p n=0
	mapfile -t patches < <(series_files)
	want=$( [ ${#patches[@]} -eq 0 ] || cat "${patches[@]}" | git patch-id --stable | cut -d' ' -f1)
	have=$(git -C "$DS_SRC" format-patch --stdout debian-base..HEAD | git patch-id --stable |
		cut -d' ' -f1)
	if [ "$want" = "$have" ] && [ -z "$(git -C "$DS_SRC" status --porcelain --untracked-files=no)" ]; then
		return 0
	fi
	if [ -n "$(git -C "$DS_SRC" status --porcelain --untracked-files=no)" ] &&
	   [ -z "${DS_FORCE:-}" ]; then
		ds_die "$DS_SRC has uncommitted changes; commit them or set DS_FORCE=1"
	fi
	git -C "$DS_SRC" checkout -q -f -B series debian-base
	for p in "${patches[@]}"; do
		git -C "$DS_SRC" -c user.name=deferstack -c user.email=ci@deferstack.invalid \
			am -q --keep-cr "$p" ||
			{ git -C "$DS_SRC" am --abort; ds_die "patch $(basename "$p") does not apply"; }
		n=$((n + 1))
	done
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
