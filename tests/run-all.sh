#!/usr/bin/env bash
# Every test of the project, as README's test command and CI run it:
#   1. user space: unit, golden, CLI and end-to-end tests (ASan+UBSan), fuzzing
#      for a bounded time; the fresh-machine check (the install step in a
#      minimal bookworm root, every command the scripts call resolves there);
#      the Debian packages (make deb) installed with dpkg -i in such a root
#      and tested from the installed files;
#   2. the kernel series builds with clang (LLVM=1) as well as gcc, and as a
#      Debian package (make bindeb-pkg, on the small guest config), every patch
#      is checkpatch --strict clean, the files it touches build W=1-clean, in
#      the guest's configuration and in Debian's own (plus PREEMPT_RT,
#      PREEMPT_NONE, !SMP and 32-bit variants);
#   3. (in the guest-suites stage) the harness self-test (a failing test, a
#      panic and a hang each fail);
#   4. the guest tests on our 6.12 kernel, fast and debug (lockdep, KASAN...);
#   5. the guest tests on Debian sid's stock 7.x kernel, the differential
#      comparison of record layouts between it and ours, and our UAPI header
#      against sid's 7.x linux-libc-dev;
#   6. (in the guest-suites stage) upstream perf 7.x
#      (Debian sid's linux-perf) records with --call-graph
#      fp,defer on our kernel and on the reference, and reads our CLI's files;
#   7. (in the guest-suites stage) every command of
#      docs/own-machine.md: the packages built, installed in
#      a fresh root, the guest booted from the installed kernel package runs
#      the guide's record commands (deferstack and perf 7.x), uninstalled.
# Installs what it needs (Debian packages, linux-source-6.12). The kernels,
# the reference kernel, perf 7.x and the sid chroots are made in the
# background from the first stage on (bg_chain below). Ends with
# "N passed, N failed" over the stages and exits non-zero if any failed.
#
# DS_SKIP="kernel-clang guest-debug guest-ref fuzz perf7" skips stages (quick local runs);
# guest-fast, guest-debug and guest-ref are the three suites of the guest-suites stage;
# guest-pprof (tests/pprof-two-boots.sh: two boots' windows merged), perf7,
# harness-selftest and own-machine run with them (a guest each, and both CPUs
# are taken by two guests at a time).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/guest/lib.sh"

pass=0 fail=0 failed=()
mkdir -p "$DS_BUILD/logs" && : > "$DS_BUILD/stage-times"

skipped() { case " ${DS_SKIP:-} " in *" $1 "*) return 0 ;; esac; return 1; }

stage() {
	local name=$1
	shift
	if skipped "$name"; then
		echo "=== $name: skipped (DS_SKIP)"
		return
	fi
	echo "=== $name"
	# Each stage's output also goes to a file: the summary at the end
	# repeats what a failed stage said (CI shows only the end of the run).
	local rc
	ds_stage "$name" "$@" &> >(tee "$DS_BUILD/logs/stage-$name.out")
	rc=$?
	wait $!
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1))
		echo "=== $name: PASS"
	else
		fail=$((fail + 1))
		failed+=("$name")
		echo "=== $name: FAIL"
	fi
}

# make check runs in the fresh root (stage fresh-root), in a root that has
# only what the install step installs; here only when that stage is skipped.
userspace() {
	make -s -C "$root" -j"$DS_JOBS" all static || return 1
	skipped fresh-root || return 0
	make -s -C "$root" check
}
fuzz() { make -s -C "$root" fuzz FUZZ_TIME="${DS_FUZZ_TIME:-30}"; }
# No guest boots a clang kernel: clang compiles what the series touches.
kernel_clang() { DS_KERNEL_OBJECTS=touched "$root/guest/build-kernel.sh" fast clang >/dev/null; }
guest() { "$root/guest/run-guest.sh" -k "$1" -s "${2:-all}"; }
differential() {
	"$root/tests/differential.sh" "$DS_BUILD/logs/fast-all.log" "$DS_BUILD/logs/ref-ref.log"
}

# Kernels and downloads in the background from the first stage on. On a
# fresh machine the fast and debug kernels take both CPUs for about 20
# minutes, and the reference kernel, perf 7.x and the sid chroots wait
# mostly on the network and the disk: run one after the other, they left a
# CPU idle for half the run. Two chains: the kernel builds, and the
# downloads and sid chroot work (fetch-reference, perf 7.x with the stock
# programs, the SFrame workloads); a stage that needs a step waits for it
# (bg_wait), which also shows the step's output. Each step's output is in
# build/logs/bg-STEP.log, its time in build/stage-times.
bg_pids=()
bg_step() {
	local name=$1 t0 rc
	shift
	t0=$(date +%s)
	"$@" > "$DS_BUILD/logs/bg-$name.log" 2>&1
	rc=$?
	echo "bg-$name $(( $(date +%s) - t0 ))" >> "$DS_BUILD/stage-times"
	echo $rc > "$DS_BUILD/logs/bg-$name.rc"
}
# bg_chain STEP:COMMAND...: the steps in order, in the background
bg_chain() {
	local s
	for s; do
		rm -f "$DS_BUILD/logs/bg-${s%%:*}.rc"
		: > "$DS_BUILD/logs/bg-${s%%:*}.log"
	done
	(
		for s; do
			# shellcheck disable=SC2086
			bg_step "${s%%:*}" ${s#*:}
		done
	) &
	bg_pids+=($!)
}
# bg_wait STEP...: wait for the steps (those not started pass), show their
# output; fails if one failed.
bg_wait() {
	local n p alive rc=0 r
	for n; do
		[ -f "$DS_BUILD/logs/bg-$n.log" ] || continue
		while [ ! -f "$DS_BUILD/logs/bg-$n.rc" ]; do
			alive=0
			for p in "${bg_pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
			[ $alive -eq 1 ] || break
			sleep 2
		done
		r=$(cat "$DS_BUILD/logs/bg-$n.rc" 2>/dev/null || echo 1)
		echo "--- $n (in the background, log build/logs/bg-$n.log): exit $r"
		cat "$DS_BUILD/logs/bg-$n.log"
		[ "$r" -eq 0 ] || rc=1
	done
	return $rc
}
trap '[ ${#bg_pids[@]} -eq 0 ] || kill "${bg_pids[@]}" 2>/dev/null' EXIT

stage install ds_install_all
rm -f "$DS_BUILD"/logs/bg-*
kchain=("fast:$root/guest/build-kernel.sh fast")
skipped guest-debug || kchain+=("debug:$root/guest/build-kernel.sh debug")
nchain=()
skipped guest-ref && skipped perf7 || nchain+=("ref:$root/guest/fetch-reference.sh")
skipped perf7 || nchain+=("perf7:$root/tests/perf7.sh --prepare")
nchain+=("sframe:$root/guest/build-sframe-workloads.sh")
bg_chain "${kchain[@]}"
bg_chain "${nchain[@]}"
stage userspace userspace
stage fresh-root "$root/tests/fresh-root.sh"
stage deb-install "$root/tests/deb-install.sh"
stage fuzz fuzz
stage kernel-fast bg_wait fast
stage kernel-clang kernel_clang
stage kernel-deb "$root/tests/kernel-deb.sh"
stage checkpatch "$root/tests/checkpatch.sh"
stage kernel-warnings "$root/tests/kernel-warnings.sh"
stage config-compile "$root/tests/config-compile.sh"
# The guest suites two at a time: each guest runs its two vCPUs on one TCG
# thread (guest/run-guest.sh), so each takes one host CPU. Two workers take
# the next job from one queue, longest first: the debug suite, the fast
# suite, upstream perf 7.x's two boots (perf7), the guide's commands
# (own-machine), the reference's suite, the harness self-test and the
# two-boot pprof merge (guest-pprof). A fixed split into two lanes left one
# CPU idle for 8 minutes whenever the debug suite ran faster or slower than
# the rest (1,230 to 1,540 s in passing runs, once 2,036 s in a cold root).
# Each job's output is shown whole after all; any failing fails the stage.
guest_suites() {
	local k rc=0 run=() pa pb q=$DS_BUILD/logs/guest-queue
	for k in debug fast perf7 own-machine ref harness-selftest pprof; do
		case $k in
		perf7|harness-selftest|own-machine) skipped "$k" || run+=("$k") ;;
		*) skipped "guest-$k" || run+=("$k") ;;
		esac
	done
	# Every kernel (and the initramfs, perf 7.x's archive) before any
	# boots: the builds take both CPUs, and two runs must not rebuild one
	# file. The background steps made them; the calls below find them
	# built (or say why not).
	bg_wait debug ref perf7 sframe || rc=1
	for k in "${run[@]}"; do
		case $k in
		pprof|harness-selftest|own-machine) ds_guest_image fast >/dev/null || return 1 ;;
		perf7) ds_guest_image fast >/dev/null && ds_guest_image ref >/dev/null || return 1
			# A failure here is the job's to report, not the suites'.
			"$root/tests/perf7.sh" --prepare || ds_log "perf7: preparation failed" ;;
		*) ds_guest_image "$k" >/dev/null || return 1 ;;
		esac
	done
	DS_INITRD=$("$root/guest/make-initramfs.sh") || return 1
	export DS_INITRD
	rm -f "$DS_BUILD"/logs/guest-*.rc
	printf '%s\n' "${run[@]}" > "$q"
	# next_job: the first job of the queue, taken off it (empty: none left)
	pop_job() { head -n 1 "$q" && sed -i 1d "$q"; }
	next_job() { ds_locked "$q.lock" pop_job; }
	worker() {
		local k
		while k=$(next_job) && [ -n "$k" ]; do
			case $k in
			ref) guest ref ref ;;
			pprof) "$root/tests/pprof-two-boots.sh" ;;
			perf7) "$root/tests/perf7.sh" ;;
			harness-selftest|own-machine) "$root/tests/$k.sh" ;;
			*) guest "$k" ;;
			esac > "$DS_BUILD/logs/guest-$k.out" 2>&1
			echo $? > "$DS_BUILD/logs/guest-$k.rc"
		done
	}
	worker &
	pa=$!
	worker &
	pb=$!
	wait $pa $pb
	for k in "${run[@]}"; do
		local r
		r=$(cat "$DS_BUILD/logs/guest-$k.rc" 2>/dev/null || echo 1)
		case $k in fast|debug|ref|pprof) echo -n "--- guest-$k: " ;; *) echo -n "--- $k: " ;; esac
		[ "$r" -eq 0 ] && echo PASS || echo FAIL
		cat "$DS_BUILD/logs/guest-$k.out"
		[ "$r" -eq 0 ] || rc=1
	done
	unset DS_INITRD
	return $rc
}
stage guest-suites guest_suites
skipped guest-ref || stage differential differential
skipped guest-ref || stage uapi "$root/tests/uapi-compat.sh"

# Why each failed stage failed, last of all (CI shows the end of the run):
# a stage's last lines, then every failure line it printed.
why_failed() {
	local out="$DS_BUILD/logs/stage-$1.out"
	echo
	echo "--- why $1 failed ($out):"
	[ -f "$out" ] || return 0
	echo "    its last lines:"
	tail -n 12 "$out" | sed 's/^/    /'
	echo "    its failure lines:"
	grep -aE '^# FAIL|^not ok|(^|[^a-z])FAIL(:|$)|[Ee]rror[: ]|splat|panic|Oops' "$out" |
		grep -av -- '-> PASS' | head -30 | sed 's/^/    /'
}

echo
echo "stage times (s):"
sed 's/^/  /' "$DS_BUILD/stage-times"
for f in "${failed[@]}"; do why_failed "$f"; done
[ ${#failed[@]} -eq 0 ] || echo "failed stages: ${failed[*]}"
echo "deferstack: $pass passed, $fail failed"
[ $fail -eq 0 ]
