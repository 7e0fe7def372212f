#!/usr/bin/env bash
# Runs every command of docs/own-machine.md ("Profile your own machine"), each
# command block where its <!-- run: ... --> mark says (the guide's "Tested how"
# section explains the marks):
#   host    in the repository here, with DS_KDEB_CONFIG = the fast guest
#           config and DS_KDEB_LSMOD = an empty module list;
#   root    as root in a fresh bookworm root holding a copy of the repository
#           with its out/ and build/perf7.cpio.gz; the blocks before the last
#           guest block run before the boot, the others after it;
#   reboot  not run: QEMU boots the vmlinuz the kernel package installed
#           into that root's /boot;
#   guest   in that guest, with the root's /usr/bin/deferstack and its
#           libraries, /opt/perf7, and the example workload running;
#   perf7   (with another mark) skipped when sid's perf cannot be downloaded;
#   systemd not run: no systemd runs in the root or the guest (make check
#           tests deferstack-profiler.service: tests/cli/check-unit.sh).
# A ```sh block without a mark fails the test. The guest checks what the
# blocks printed and wrote (release, defer mode, stitched stacks of the
# workload in deferstack's and perf's profiles); after the uninstall block
# nothing of the packages may be left in the root.
#
#   tests/own-machine.sh         (ends with "own-machine: N passed, N failed")
set -uo pipefail
. "$(dirname "$0")/../guest/lib.sh"
. "$DS_ROOT/guest/chroot-lib.sh"

guide=$DS_ROOT/docs/own-machine.md
work=$DS_BUILD/own-machine
root=$DS_BUILD/own-machine-root
pass=0 fail=0 skip=0
ok()  { pass=$((pass + 1)); echo "ok - $1"; }
bad() { fail=$((fail + 1)); echo "not ok - $1"; }
skp() { skip=$((skip + 1)); echo "ok - SKIP $1"; }
finish() {
	echo "own-machine: $pass passed, $fail failed, $skip skipped"
	[ $fail -eq 0 ]
	exit
}
in_root() { ds_in_root "$root" "$1"; }
# show FILE: a block's output, indented
show() { sed 's/^/#   /' "$1" | tail -"${2:-15}"; }

rm -rf "$work"
mkdir -p "$work/blocks"
# The blocks: block-NN.sh, and "NN<TAB>marks" lines in blocks.txt.
awk -v dir="$work/blocks" -f "$DS_ROOT/tests/guide-blocks.awk" "$guide" > "$work/blocks.txt" 2> "$work/parse.err"
if [ $? -ne 0 ] || [ ! -s "$work/blocks.txt" ]; then
	cat "$work/parse.err"
	bad "every sh block of docs/own-machine.md has a run mark"
	finish
fi
ok "docs/own-machine.md: $(wc -l < "$work/blocks.txt") command blocks, all marked"
last_guest=$(awk -F'\t' '$2 ~ /(^| )guest( |$)/ { n = $1 } END { print n }' "$work/blocks.txt")
marks() { awk -F'\t' -v n="$1" '$1 == n { print $2 }' "$work/blocks.txt"; }
has() { case " $(marks "$1") " in *" $2 "*) return 0 ;; esac; return 1; }

# ---- host blocks
if ! "$DS_ROOT/guest/build-kernel.sh" fast > /dev/null 2> "$work/build-kernel.log"; then
	tail -5 "$work/build-kernel.log"
	bad "guest/build-kernel.sh fast (its .config stands in for /boot/config-*)"
	finish
fi
printf 'Module                  Size  Used by\n' > "$work/lsmod"
perf7=1
while IFS=$'\t' read -r n m; do
	has "$n" host || continue
	if has "$n" perf7 && [ $perf7 -eq 0 ]; then skp "block $n ($m): no perf 7.x"; continue; fi
	t0=$(date +%s)
	(cd "$DS_ROOT" && DS_KDEB_CONFIG=$DS_BUILD/obj-fast/.config DS_KDEB_LSMOD=$work/lsmod \
		exec bash -euo pipefail "$work/blocks/block-$n.sh" > "$work/block-$n.log" 2>&1)
	rc=$?
	what=$(tr '\n' ';' < "$work/blocks/block-$n.sh")
	if [ $rc -eq 0 ]; then
		ok "host block $n ($what): $(( $(date +%s) - t0 ))s"
	elif [ $rc -eq 3 ] && has "$n" perf7; then
		perf7=0
		skp "host block $n ($what): sid's perf 7.x cannot be downloaded"
	else
		show "$work/block-$n.log"
		bad "host block $n ($what): exit $rc (log: $work/block-$n.log)"
		finish
	fi
done < "$work/blocks.txt"
image=$(ls "$DS_ROOT"/out/kernel-deb/linux-image-*-deferstack_*.deb 2>/dev/null | head -1)
[ -n "$image" ] || { bad "no linux-image-*-deferstack package in out/kernel-deb"; finish; }
krel=$(dpkg-deb -f "$image" Package)
krel=${krel#linux-image-}

# ---- root blocks before the boot
trap 'ds_root_umount "$root"' EXIT
t0=$(date +%s)
ds_root_new "$root"
mkdir -p "$root/src/build" "$root/src/out"
(cd "$DS_ROOT" && git ls-files -z --cached --others --exclude-standard |
	tar --null --ignore-failed-read -T - -cf -) | tar -C "$root/src" -xf - ||
	ds_die "cannot copy the tree"
cp -r "$DS_ROOT/out/deb" "$DS_ROOT/out/kernel-deb" "$root/src/out/"
[ $perf7 -eq 0 ] || cp "$DS_BUILD/perf7.cpio.gz" "$root/src/build/"
# The guide's apt-get asks before it installs; the test answers yes.
echo 'APT::Get::Assume-Yes "true";' > "$root/etc/apt/apt.conf.d/99assume-yes"
if ! in_root 'apt-get update -qq' > "$work/apt-update.log" 2>&1; then
	show "$work/apt-update.log"
	bad "apt-get update in the fresh root"
	finish
fi
run_root() { # N: run block N in the root, in /src
	local n=$1 what rc
	what=$(tr '\n' ';' < "$work/blocks/block-$n.sh")
	cp "$work/blocks/block-$n.sh" "$root/tmp/block-$n.sh"
	in_root "cd /src && DEBIAN_FRONTEND=noninteractive bash -euo pipefail /tmp/block-$n.sh" \
		> "$work/block-$n.log" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		ok "root block $n ($what)"
	else
		show "$work/block-$n.log"
		bad "root block $n ($what): exit $rc (log: $work/block-$n.log)"
	fi
	return $rc
}
while IFS=$'\t' read -r n m; do
	has "$n" root && [ "$n" -lt "$last_guest" ] || continue
	if has "$n" perf7 && [ $perf7 -eq 0 ]; then skp "block $n ($m): no perf 7.x"; continue; fi
	run_root "$n" || finish
done < "$work/blocks.txt"
ds_log "root: installed in $(( $(date +%s) - t0 ))s"
if in_root "[ -f /boot/vmlinuz-$krel ] && [ -x /usr/bin/deferstack ] && dpkg-query -W -f='\${Status}' linux-image-$krel | grep -q 'ok installed'"; then
	ok "installed: linux-image-$krel (/boot/vmlinuz-$krel), /usr/bin/deferstack"
else
	bad "linux-image-$krel or deferstack not installed in the root"
	finish
fi

# ---- the boot: the installed vmlinuz, the guest blocks
g=$work/guest
mkdir -p "$g/tests/guide" "$g/usr/bin" "$g/lib64"
cp "$root/boot/vmlinuz-$krel" "$work/vmlinuz-$krel"
# the package's CLI with the libraries it loads, where the root has them
in_root 'ldd /usr/bin/deferstack' > "$work/ldd.txt" 2>&1 || { cat "$work/ldd.txt"; bad "ldd /usr/bin/deferstack"; finish; }
cp "$root/usr/bin/deferstack" "$g/usr/bin/"
for lib in $(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' "$work/ldd.txt"); do
	mkdir -p "$g$(dirname "$lib")"
	cp -L "$root$lib" "$g$lib" || { bad "cannot copy $lib from the root"; finish; }
done
guest_blocks=()
while IFS=$'\t' read -r n m; do
	has "$n" guest || continue
	if has "$n" perf7 && [ $perf7 -eq 0 ]; then skp "block $n ($m): no perf 7.x"; continue; fi
	cp "$work/blocks/block-$n.sh" "$g/tests/guide/"
	guest_blocks+=("$n")
done < "$work/blocks.txt"
cat > "$g/tests/own_machine.sh" <<EOF
#!/bin/sh
# Generated by tests/own-machine.sh: the guest blocks of docs/own-machine.md
# (${guest_blocks[*]}), each with sh -e in /out/guide, while the example
# workload runs, then checks of what they printed and wrote.
export PATH=/usr/bin:/bin:/tests HOME=/tmp/home PAGER=cat
# perf resolves source lines with libdw, not binutils' addr2line (not here)
mkdir -p "\$HOME" /out/guide
printf '[addr2line]\n\tstyle = libdw\n' > "\$HOME/.perfconfig"
cd /out/guide || exit 1
fail=0
check() {
	if eval "\$2"; then echo "#   ok: \$1"; else echo "# FAIL: \$1"; fail=1; fi
}
/tests/example_workload 600000 8388608 > /dev/null &
wl=\$!
for n in ${guest_blocks[*]}; do
	echo "# --- guide block \$n:"
	sed 's/^/#   \$ /' /tests/guide/block-\$n.sh
	sh -e /tests/guide/block-\$n.sh > block-\$n.out 2>&1
	rc=\$?
	tail -25 block-\$n.out | sed 's/^/#     /'
	check "block \$n exits 0 (\$rc)" "[ \$rc -eq 0 ]"
done
kill \$wl
wait \$wl 2> /dev/null
check "deferstack is the package's (\$(command -v deferstack))" \
	"[ \"\$(command -v deferstack)\" = /usr/bin/deferstack ]"
check "uname -r printed $krel" "grep -qx '$krel' block-*.out"
check "record --mode defer wrote its check file in defer mode" \
	"grep -q 'wrote /tmp/check.data (defer mode' block-*.out"
deferstack report -i system.data --folded > system.folded 2> system.err
sed 's/^/#   /' system.err
check "system-wide profile: the workload's stitched read chain" \
	"grep -q '^example_workloa;.*wl_read_top;wl_read_mid;wl_read_leaf;wl_syscall3;.*read' system.folded"
check "system-wide profile: the workload's stitched spin chain" \
	"grep -q 'wl_spin_top;wl_spin_mid;wl_spin_leaf' system.folded"
check "flame graph written" "grep -q '<svg' system.svg && grep -q wl_read_leaf system.svg"
if [ -x /opt/perf7/perf ]; then
	check "perf 7.x report shows the workload's functions" "grep -q wl_spin_leaf block-*.out"
	/opt/perf7/perf script -i perf7.data > perf7.script 2> /dev/null
	check "perf 7.x script: a sample with the read chain and kernel frames" \
		"awk 'BEGIN { RS = \"\" } /wl_read_leaf/ && /wl_read_top/ && /kernel\\.kallsyms/ { f = 1 } END { exit !f }' perf7.script"
	check "deferstack reads perf's file: the stitched read chain" \
		"grep -q 'wl_read_top;wl_read_mid;wl_read_leaf;wl_syscall3;.*read' perf7.folded"
fi
exit \$fail
EOF
chmod 755 "$g/tests/own_machine.sh"
(cd "$g" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) |
	gzip -1 > "$work/guest.cpio.gz"
extra=$work/guest.cpio.gz
if [ $perf7 -eq 1 ]; then
	cat "$DS_BUILD/perf7.cpio.gz" "$work/guest.cpio.gz" > "$work/extra.cpio.gz"
	extra=$work/extra.cpio.gz
fi
t0=$(date +%s)
if DS_INITRD_EXTRA=$extra "$DS_ROOT/guest/run-guest.sh" -k "$work/vmlinuz-$krel" \
	-s own_machine.sh -o "$work/out" > "$work/guest.log" 2>&1; then
	ok "guest booted from the package's /boot/vmlinuz-$krel: blocks ${guest_blocks[*]} and their checks ($(( $(date +%s) - t0 ))s)"
else
	grep -E '^(# FAIL|# ---|# block|not ok)|FAIL' "$work/guest.log" | head -30
	bad "guest: blocks ${guest_blocks[*]} (log: $work/guest.log, files: $work/out)"
fi
grep -E '^#   ok:' "$work/guest.log" | sed 's/^#   ok: /    guest: /'

# ---- root blocks after the boot: the uninstall
while IFS=$'\t' read -r n m; do
	has "$n" root && [ "$n" -gt "$last_guest" ] || continue
	run_root "$n"
done < "$work/blocks.txt"
left=$(in_root "dpkg-query -W -f='\${Package} \${Status}\n' 'linux-*-deferstack' 'deferstack' 'libdeferstack*' 2>/dev/null |
	grep ' installed\$'; ls -d /boot/*-$krel /lib/modules/$krel /usr/bin/deferstack /opt/perf7 2>/dev/null" || true)
if [ -z "$left" ]; then
	ok "after the uninstall block: no package, no /boot file, no /opt/perf7 left"
else
	bad "after the uninstall block, left: $(echo "$left" | tr '\n' ' ')"
fi
finish
