#!/usr/bin/env bash
# kernel/build-deb.sh, checked without the hours a distribution configuration
# takes to build:
#   1. the packages of the small guest configuration (guest/build-kernel.sh
#      fast's .config): make bindeb-pkg for real, timed; linux-image-6.12.N-
#      deferstack holds /boot/vmlinuz-6.12.N-deferstack and a config with the
#      feature (kernel/config/feature.config), lintian finds no error or
#      warning in it;
#   2. Debian's own amd64 configuration (linux-config-6.12), configured only
#      (--configure-only): the feature sticks, debug info is off, Debian's
#      certificate files are dropped, the release is 6.12.N-deferstack; with
#      --localmodconfig and a module list, only those modules stay;
#   3. a file that is not a configuration is refused.
# tests/own-machine.sh boots the package's kernel. Ends with
# "kernel-deb: N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/../guest/lib.sh"

pass=0 fail=0
ok()  { pass=$((pass + 1)); echo "ok - $1"; }
bad() { fail=$((fail + 1)); echo "not ok - $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; return 1; fi; }
T=$(mktemp -d /tmp/ds-kdeb.XXXXXX)
trap 'rm -rf "$T"' EXIT
log=$DS_BUILD/logs/kernel-deb
mkdir -p "$log"

# 1. the small guest configuration, built and packaged
"$DS_ROOT/guest/build-kernel.sh" fast > /dev/null 2> "$log/build-kernel.log" ||
	{ tail -5 "$log/build-kernel.log"; bad "guest/build-kernel.sh fast"; }
t0=$(date +%s)
if "$DS_ROOT/kernel/build-deb.sh" --config "$DS_BUILD/obj-fast/.config" -o "$T/debs" \
	> "$T/debs.txt" 2> "$log/fast.log"; then
	ok "kernel/build-deb.sh on the fast guest config: make bindeb-pkg $(grep -o 'built in [0-9]*s' "$log/fast.log"), $(( $(date +%s) - t0 ))s in all"
else
	tail -5 "$log/fast.log"
	bad "kernel/build-deb.sh on the fast guest config (log: $log/fast.log)"
fi
ver=$(dpkg-query -W -f='${Version}' linux-source-6.12)
ver=${ver%%-*}
krel=$ver-deferstack
image=$(grep "/linux-image-${krel}_" "$T/debs.txt" || true)
check "linux-image-$krel package: $(basename "${image:-none}") ($(du -k "${image:-/dev/null}" | cut -f1) KiB)" \
	bash -c "[ -f '$image' ] && [ \"\$(dpkg-deb -f '$image' Package)\" = 'linux-image-$krel' ]"
if [ -f "$image" ]; then
	dpkg-deb -x "$image" "$T/image"
	check "it holds /boot/vmlinuz-$krel, a bzImage" \
		bash -c "file -b '$T/image/boot/vmlinuz-$krel' | grep -q 'Linux kernel x86 boot executable bzImage'"
	check "its /boot/config-$krel has the feature" \
		bash -c "grep -qx CONFIG_UNWIND_USER=y '$T/image/boot/config-$krel' && grep -qx CONFIG_PERF_EVENTS=y '$T/image/boot/config-$krel'"
	check "no linux-libc-dev kept" bash -c "! grep -q linux-libc-dev '$T/debs.txt'"
	# initial-upload-closes-no-bugs: the changelog is the kernel's own
	# (scripts/package/mkdebian) for a local package, never an archive
	# upload closing an ITP bug
	lintian --fail-on error,warning --suppress-tags initial-upload-closes-no-bugs "$image" > "$T/lintian.txt" 2>&1
	rc=$?
	check "lintian: no error, no warning ($(grep -c '^[EWI]:' "$T/lintian.txt") tags)" test $rc -eq 0 ||
		cat "$T/lintian.txt"
fi

# 2. Debian's configuration, configured only
debcfg=/usr/src/linux-config-6.12/config.amd64_none_amd64.xz
obj=$DS_BUILD/obj-deb-check
if "$DS_ROOT/kernel/build-deb.sh" --config "$debcfg" --configure-only -O "$obj" \
	> /dev/null 2> "$log/debian.log"; then
	c=$obj/.config
	check "Debian's config: feature on, debug info and BTF off" \
		bash -c "grep -qx CONFIG_UNWIND_USER=y '$c' && grep -qx CONFIG_DEBUG_INFO_NONE=y '$c' && ! grep -q '^CONFIG_DEBUG_INFO_BTF=y' '$c'"
	check "Debian's config: no certificate file of Debian's build named" \
		bash -c "grep -qx 'CONFIG_SYSTEM_TRUSTED_KEYS=\"\"' '$c' && grep -qx 'CONFIG_MODULE_SIG_KEY=\"certs/signing_key.pem\"' '$c'"
	check "Debian's config: release $krel" \
		grep -q "^\[.*\] $krel: .* modules" "$log/debian.log"
	full_mods=$(grep -c '=m$' "$c")
	printf 'Module Size Used by\next4 1 1\nvirtio_net 1 0\ne1000e 1 0\nsnd_hda_intel 1 0\n' > "$T/lsmod"
	"$DS_ROOT/kernel/build-deb.sh" --config "$debcfg" --localmodconfig --lsmod "$T/lsmod" \
		--configure-only -O "$obj" > /dev/null 2> "$log/localmod.log"
	mods=$(grep -c '=m$' "$c")
	check "--localmodconfig with 4 modules loaded: $mods of $full_mods modules left, those 4 among them" \
		bash -c "[ $mods -lt 100 ] && grep -qx CONFIG_EXT4_FS=m '$c' && grep -qx CONFIG_VIRTIO_NET=m '$c' && grep -qx CONFIG_E1000E=m '$c' && grep -qx CONFIG_SND_HDA_INTEL=m '$c' && grep -qx CONFIG_UNWIND_USER=y '$c'"
else
	tail -5 "$log/debian.log"
	bad "kernel/build-deb.sh --configure-only on Debian's config (log: $log/debian.log)"
fi

# 3. not a configuration
echo 'hello' > "$T/notconfig"
"$DS_ROOT/kernel/build-deb.sh" --config "$T/notconfig" --configure-only -O "$T/obj" > /dev/null 2> "$T/nc.err"
rc=$?
check "a file that is not a configuration: refused" \
	bash -c "[ $rc -ne 0 ] && grep -q 'is not a kernel configuration' '$T/nc.err'"

echo "kernel-deb: $pass passed, $fail failed"
[ $fail -eq 0 ]
