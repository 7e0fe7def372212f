#!/usr/bin/env bash
# The fresh-machine check: does the project install everything it calls?
#
#   tests/fresh-root.sh            quick check (a few minutes; run-all's stage)
#   tests/fresh-root.sh --full     README's two commands inside the fresh root
#   tests/fresh-root.sh --tests    README's test command alone, right after
#                                  the root is made (its install stage
#                                  included): what CI's limit is measured on
#
# A minimal Debian bookworm root (debootstrap --variant=minbase, cached as a
# tarball in build/fresh-root/) is unpacked anew, given the host's apt sources
# and nothing else, and the project's own install step (ds_install_all from
# guest/lib.sh) runs inside it. Then, inside the root:
#   - every external command that a host-side script or the Makefile calls
#     (tests/list-commands.py), and every command the kernel build calls
#     indirectly (below), must resolve;
#   - the user space builds and `make check` passes, and the fuzz target and
#     the static guest tests link.
# With --full it then runs guest/profile-example.sh and tests/run-all.sh there
# (QEMU included) and prints how long each took: the pre-release run.
# A package dropped from the install step fails the quick check.
set -uo pipefail
. "$(dirname "$0")/../guest/lib.sh"
. "$DS_ROOT/guest/chroot-lib.sh"

full=0 cmds=()
case ${1:-} in
--full) full=1 cmds=(guest/profile-example.sh tests/run-all.sh) ;;
--tests) full=1 cmds=(tests/run-all.sh) ;;
esac
dir=$DS_BUILD/fresh-root
root=$dir/root

# Commands that no script names but that the builds call: Kbuild (compiler,
# binutils, lexer and parser generators, bc for timeconst, perl and python3
# for its scripts, rsync for headers_install, xz to unpack the source), the
# clang build (LLVM=1), ccache, and what the harness copies rather than runs;
# make bindeb-pkg (kernel/build-deb.sh): dpkg-buildpackage, the dh_* commands
# of the kernel's debian/rules, openssl for the module signing key, pahole for
# BTF.
INDIRECT_CMDS=(gcc as ld ld.lld llvm-ar llvm-nm llvm-objcopy llvm-strip flex bison bc
	perl python3 rsync xz ccache busybox gzip cpio bash
	dpkg-buildpackage dh_testdir dh_builddeb openssl pahole)
INDIRECT_FILES=(/usr/src/linux-source-6.12.tar.xz /bin/busybox)

trap 'ds_root_umount "$root"' EXIT
in_root() { ds_in_root "$root" "$1"; }

ds_need_pkgs debootstrap debian-archive-keyring python3
# A new root every run: what an earlier run installed must not hide a gap.
ds_root_new "$root"
# The project as a clone has it (.git included) plus the working tree's
# changes, without build/ and out/.
mkdir -p "$root/src"
(cd "$DS_ROOT" && { git ls-files -z --cached --others --exclude-standard; printf '.git\0'; } |
	tar --null -T - -cf -) | tar -C "$root/src" -xf - || ds_die "cannot copy the tree"
python3 "$DS_ROOT/tests/list-commands.py" "$DS_ROOT" > "$dir/commands.txt" ||
	ds_die "list-commands.py failed"

pass=0 fail=0
# run_full: the commands of --full or --tests in the root, timed
run_full() {
	local cmd t0 rc
	for cmd in "${cmds[@]}"; do
		t0=$(date +%s)
		in_root "cd /src && ./$cmd" > "$dir/full-$(basename "$cmd").log" 2>&1
		rc=$?
		echo "# $cmd in the fresh root: $(( $(date +%s) - t0 ))s, exit $rc" \
			"(log: $dir/full-$(basename "$cmd").log)"
		if [ $rc -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
	done
}
if [ "${1:-}" = --tests ]; then
	run_full
	echo "fresh-root: $pass passed, $fail failed"
	[ $fail -eq 0 ]
	exit
fi

t0=$(date +%s)
ds_log "install step inside the fresh root (ds_install_all)"
in_root '. /src/guest/lib.sh && ds_install_all' > "$dir/install.log" 2>&1
rc=$?
ds_log "install step: $(( $(date +%s) - t0 ))s (rc=$rc)"
if [ $rc -ne 0 ]; then
	tail -20 "$dir/install.log" >&2
	echo "fresh-root: install step failed"
	echo "fresh-root: 0 passed, 1 failed"
	exit 1
fi

missing=()
while IFS=$'\t' read -r cmd where; do
	if in_root "command -v '$cmd'" > /dev/null; then
		pass=$((pass + 1))
	else
		missing+=("$cmd (called in $where)")
	fi
done < <(cat "$dir/commands.txt"; printf '%s\tindirect (kernel build, harness)\n' "${INDIRECT_CMDS[@]}")
for f in "${INDIRECT_FILES[@]}"; do
	if [ -e "$root$f" ]; then pass=$((pass + 1)); else missing+=("file $f"); fi
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "ok - all $pass commands and files resolve after the install step"
else
	fail=$((fail + 1))
	echo "not ok - after the install step, not found in a fresh root:"
	printf '    %s\n' "${missing[@]}"
	echo "    (add the package that provides it to guest/lib.sh)"
fi

t0=$(date +%s)
if in_root 'cd /src && make -s -j"$(nproc)" all static && make -s check' \
	> "$dir/check.log" 2>&1; then
	pass=$((pass + 1))
	echo "ok - user space builds and make check passes in the fresh root ($(( $(date +%s) - t0 ))s)"
else
	fail=$((fail + 1))
	grep -E '^(FAIL|SKIP)|rror' "$dir/check.log" | head -20
	echo "not ok - make check in the fresh root (log: $dir/check.log)"
fi
# What the other stages link: the libFuzzer target (clang's runtimes) and the
# static guest tests (static libelf, zlib, zstd).
t0=$(date +%s)
if in_root 'cd /src && make -s out/fuzz/fuzz_perfdata &&
		make -s -C tests/guest OUT=/tmp/guest-bin -j"$(nproc)"' > "$dir/link.log" 2>&1; then
	pass=$((pass + 1))
	echo "ok - fuzz target and static guest tests link in the fresh root ($(( $(date +%s) - t0 ))s)"
else
	fail=$((fail + 1))
	grep -E 'rror|cannot find' "$dir/link.log" | head -10
	echo "not ok - fuzz target or static guest tests do not link (log: $dir/link.log)"
fi
# A check skipped for a missing tool means the install step lacks a package.
if grep -q '^SKIP:.*not installed' "$dir/check.log"; then
	fail=$((fail + 1))
	echo "not ok - make check skipped checks in the fresh root for want of a tool:"
	grep '^SKIP:.*not installed' "$dir/check.log" | sed 's/^/    /'
fi

[ $full -eq 0 ] || run_full
echo "fresh-root: $pass passed, $fail failed"
[ $fail -eq 0 ]
