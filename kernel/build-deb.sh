#!/usr/bin/env bash
# Installable Debian packages (linux-image, linux-headers) of Debian's
# linux-source-6.12 with kernel/patches/series, from your configuration.
#
#   kernel/build-deb.sh [--config FILE] [--localmodconfig [--lsmod FILE]]
#                       [--localversion SUFFIX] [--debug-info] [--configure-only]
#                       [-O OBJDIR] [-o OUTDIR]
#
# --config FILE      the configuration to start from (may be .gz or .xz);
#                    default /boot/config-$(uname -r) (DS_KDEB_CONFIG overrides
#                    the default, for tests)
# --localmodconfig   keep only the modules loaded now (lsmod), or those listed
#                    in --lsmod FILE (lsmod's output format; DS_KDEB_LSMOD
#                    gives a default, for tests)
# --localversion S   appended to the release (default -deferstack), so the
#                    kernel installs beside the distribution's
# --debug-info       keep the configuration's debug info (DWARF, BTF): by
#                    default it is turned off, which saves about 15 % of the
#                    compile time, BTF for every module and the large
#                    linux-image-*-dbg package (BPF CO-RE tools need BTF: use
#                    --debug-info for them)
# --configure-only   stop after writing OBJDIR/.config
# -O OBJDIR          build directory, kept for incremental rebuilds (default
#                    build/obj-deb-HASH, HASH of the final .config: another
#                    configuration does not undo this one's build, the same
#                    one reached another way reuses it)
# -o OUTDIR          where the .debs go (default out/kernel-deb)
#
# The source is build/linux (guest/kernel-lib.sh: extracted once, series
# applied with git am, then kernel/test-patches/, the guest tests' NMI test
# PMU and test hooks, which a distribution configuration leaves off: one tree
# serves every kernel the harness builds). The configuration gets kernel/config/feature.config
# (what the feature needs) merged on top, must keep it (else the script
# fails), and is built out of tree with ccache by `make bindeb-pkg`.
# Debian configurations name signing certificates that only Debian's build
# has: missing trusted/revocation key files are dropped and the module
# signing key is generated (certs/signing_key.pem). linux-libc-dev, which
# bindeb-pkg always builds, is not kept: it would replace the distribution's
# kernel headers for user space. Prints the .deb paths.
set -euo pipefail
. "$(dirname "$0")/../guest/lib.sh"
. "$DS_ROOT/guest/kernel-lib.sh"

config= localmod=0 lsmod_file=${DS_KDEB_LSMOD:-} suffix=-deferstack debuginfo=0 configure_only=0
obj= outdir=$DS_ROOT/out/kernel-deb
usage() { sed -n '5,7p' "$0" | sed 's/^# *//' >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--config) config=${2:?--config FILE}; shift ;;
	--localmodconfig) localmod=1 ;;
	--lsmod) lsmod_file=${2:?--lsmod FILE}; localmod=1; shift ;;
	--localversion) suffix=${2?--localversion SUFFIX}; shift ;;
	--debug-info) debuginfo=1 ;;
	--configure-only) configure_only=1 ;;
	-O) obj=${2:?-O OBJDIR}; shift ;;
	-o) outdir=${2:?-o OUTDIR}; shift ;;
	-h|--help) usage ;;
	*) ds_log "unknown option $1"; usage ;;
	esac
	shift
done
[ -n "$config" ] || config=${DS_KDEB_CONFIG:-/boot/config-$(uname -r)}
[ -f "$config" ] || ds_die "no configuration $config (give one with --config FILE; \
/proc/config.gz or Debian's /usr/src/linux-config-6.12/config.amd64_none_amd64.xz are others)"
case $suffix in ''|-*) ;; *) suffix=-$suffix ;; esac
# The configuration is made in OBJDIR, or without -O in a scratch directory
# and then moved to the build directory of its hash. make -C runs in the
# source: the directories must be absolute.
if [ -n "$obj" ]; then
	obj=$(realpath -m "$obj")
	kdir=$obj
else
	kdir=$DS_BUILD/obj-deb-config
fi
outdir=$(realpath -m "$outdir")

ds_need_pkgs "${DS_KERNEL_PKGS[@]}" "${DS_KDEB_PKGS[@]}"
mkdir -p "$DS_BUILD"
ds_kernel_tree

# ccache, but not for sources that .incbin a file (guest/kcc: a bzImage
# could get another build's compressed kernel)
mk=(ARCH=x86_64 CC="$DS_ROOT/guest/kcc gcc" LOCALVERSION="$suffix")
kmake() { make -s -C "$DS_SRC" O="$kdir" "${mk[@]}" "$@" < /dev/null; }
cfg() { "$DS_SRC/scripts/config" --file "$kdir/.config" "$@"; }
# cfg_str SYM: the value of a string option, without quotes
cfg_str() { sed -n "s/^CONFIG_$1=\"\(.*\)\"$/\1/p" "$kdir/.config"; }

mkdir -p "$kdir"
case $config in
*.xz) xz -dc "$config" > "$kdir/.config.base" ;;
*.gz) gzip -dc "$config" > "$kdir/.config.base" ;;
*) cp "$config" "$kdir/.config.base" ;;
esac
grep -q '^CONFIG_' "$kdir/.config.base" || ds_die "$config is not a kernel configuration"
# OBJDIR's .config is only replaced if it changes (a new time stamp alone
# makes Kbuild redo its configuration steps)
if [ "$kdir" = "$obj" ] && [ -f "$kdir/.config" ]; then
	cp -p "$kdir/.config" "$kdir/.config.old-build"
else
	rm -f "$kdir/.config.old-build"
fi
cp "$kdir/.config.base" "$kdir/.config"

# Certificates of the distribution's own build are not in the source.
for sym in SYSTEM_TRUSTED_KEYS SYSTEM_REVOCATION_KEYS; do
	f=$(cfg_str "$sym")
	if [ -n "$f" ] && [ ! -f "$f" ] && [ ! -f "$DS_SRC/$f" ]; then
		ds_log "CONFIG_$sym: $f is not here, set to \"\""
		cfg --set-str "$sym" ""
	fi
done
f=$(cfg_str MODULE_SIG_KEY)
if [ -n "$f" ] && [ "$f" != certs/signing_key.pem ] && [ ! -f "$f" ]; then
	ds_log "CONFIG_MODULE_SIG_KEY: $f is not here, a key is generated instead"
	cfg --set-str MODULE_SIG_KEY certs/signing_key.pem
fi
# The release is exactly 6.12.N$suffix: no git hash of build/linux.
cfg --disable LOCALVERSION_AUTO --set-str LOCALVERSION ""
if [ $debuginfo -eq 0 ] && grep -q '^CONFIG_DEBUG_INFO=y' "$kdir/.config"; then
	ds_log "debug info off (--debug-info keeps it)"
	cfg --enable DEBUG_INFO_NONE --disable DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT \
		--disable DEBUG_INFO_DWARF4 --disable DEBUG_INFO_DWARF5 --disable DEBUG_INFO
fi
# New symbols of 6.12 get their defaults first, so that localmodconfig's
# oldconfig has nothing to ask.
kmake olddefconfig > /dev/null
if [ $localmod -eq 1 ]; then
	if [ -z "$lsmod_file" ]; then
		lsmod_file=$kdir/lsmod
		lsmod > "$lsmod_file" || ds_die "lsmod failed (a kernel without loadable modules?)"
	fi
	ds_log "localmodconfig: keeping the $(($(wc -l < "$lsmod_file") - 1)) modules of $lsmod_file"
	kmake LSMOD="$(realpath "$lsmod_file")" localmodconfig > "$kdir/localmodconfig.log" 2>&1 ||
		{ tail -5 "$kdir/localmodconfig.log" >&2; ds_die "localmodconfig failed"; }
fi
frag=$DS_ROOT/kernel/config/feature.config
(cd "$kdir" && "$DS_SRC/scripts/kconfig/merge_config.sh" -m -O "$kdir" .config "$frag" >/dev/null)
kmake olddefconfig > /dev/null
ds_config_check "$kdir/.config" "$frag" || ds_die "$config cannot have deferred callchains"
[ $debuginfo -eq 1 ] || ! grep -q '^CONFIG_DEBUG_INFO=y' "$kdir/.config" ||
	ds_die "debug info did not turn off"
krel=$(kmake kernelrelease)
if [ "$kdir" = "$obj" ]; then
	# keep the old time stamp when nothing changed
	if cmp -s "$kdir/.config" "$kdir/.config.old-build"; then
		mv "$kdir/.config.old-build" "$kdir/.config"
	fi
else
	obj=$DS_BUILD/obj-deb-$(sha256sum < "$kdir/.config" | cut -c1-10)
	mkdir -p "$obj"
	cmp -s "$kdir/.config" "$obj/.config" || cp "$kdir/.config" "$obj/.config"
	kdir=$obj
fi
rm -f "$obj/.config.old-build"
ds_log "$krel: $(grep -c '=y$' "$obj/.config") built-in options, $(grep -c '=m$' "$obj/.config") modules ($obj/.config)"
if [ $configure_only -eq 1 ]; then
	echo "$obj/.config"
	exit 0
fi

# The packages' Maintainer (mkdebian takes DEBFULLNAME and DEBEMAIL, else
# the user name at the host name): yours if set, else debian/control's.
maint=$(sed -n 's/^Maintainer: //p' "$DS_ROOT/debian/control")
export DEBFULLNAME=${DEBFULLNAME:-${maint% <*}}
maint=${maint#*<}
export DEBEMAIL=${DEBEMAIL:-${maint%>}}
# bindeb-pkg writes the packages into the build directory's parent.
parent=$(dirname "$obj")
rm -f "$parent"/linux-*"$krel"_*.deb "$parent"/linux-*"$krel"-dbg_*.deb
t0=$(date +%s)
ds_log "make bindeb-pkg, $DS_JOBS jobs (log: $obj/build-deb.log)"
if ! make -C "$DS_SRC" O="$obj" "${mk[@]}" -j"$DS_JOBS" bindeb-pkg \
	< /dev/null > "$obj/build-deb.log" 2>&1; then
	grep -E 'error|Error' "$obj/build-deb.log" | head -20 >&2
	tail -5 "$obj/build-deb.log" >&2
	ds_die "make bindeb-pkg failed (log: $obj/build-deb.log)"
fi
ds_log "built in $(( $(date +%s) - t0 ))s"

mkdir -p "$outdir"
rm -f "$outdir"/linux-*"$krel"_*.deb "$outdir"/linux-*"$krel"-dbg_*.deb
shopt -s nullglob
debs=("$parent"/linux-image-"$krel"_*.deb "$parent"/linux-headers-"$krel"_*.deb
	"$parent"/linux-image-"$krel"-dbg_*.deb)
[ ${#debs[@]} -gt 0 ] || ds_die "no linux-image-$krel package in $parent"
mv "${debs[@]}" "$outdir/"
# what bindeb-pkg also made: the user-space headers (not ours to replace)
# and the .changes/.buildinfo of the whole set
pkgver=${debs[0]##*/}
pkgver=${pkgver#linux-image-"$krel"_}
pkgver=${pkgver%%_*}
rm -f "$parent"/linux-libc-dev_"$pkgver"_*.deb "$parent"/linux-upstream_"$pkgver"_*.changes \
	"$parent"/linux-upstream_"$pkgver"_*.buildinfo
for f in "$outdir"/linux-*"$krel"_"$pkgver"_*.deb "$outdir"/linux-*"$krel"-dbg_"$pkgver"_*.deb; do
	ds_log "$(basename "$f"): $(du -k "$f" | cut -f1) KiB"
	echo "$f"
done
