#!/usr/bin/env bash
# Boot a kernel with the test initramfs in QEMU (software emulation, 2 vCPUs),
# run one guest suite and turn what the serial console shows into an exit code.
#
#   guest/run-guest.sh [-k fast|debug|ref|BZIMAGE] [-s SUITE] [-t SECONDS] [-o DIR]
#
# Pass (exit 0) needs all of: the closing "DEFERSTACK-RESULT: N passed, 0 failed"
# line with N > 0, the guest's "done" line, and no kernel splat anywhere on the
# console. A timeout, a panic, a missing result or any splat is a failure.
# With -o, the guest's /out is copied back into DIR through a scratch disk.
# Any suite name that is a program in the guest's /tests runs as one test;
# NAME:ARG:ARG passes it arguments (guest/run-suite).
set -uo pipefail
. "$(dirname "$0")/lib.sh"

kernel=fast suite=all timeout= outdir=
while getopts "k:s:t:o:" opt; do
	case $opt in
	k) kernel=$OPTARG ;;
	s) suite=$OPTARG ;;
	t) timeout=$OPTARG ;;
	o) outdir=$OPTARG ;;
	*) exit 2 ;;
	esac
done

case $kernel in
fast|debug|ref) image=$(ds_guest_image "$kernel") || exit 1 ;;
*) image=$kernel; kernel=$(basename "$kernel") ;;
esac
# Software emulation: the debug kernel (KASAN, lockdep) boots and runs slowly.
[ -n "$timeout" ] || case $kernel in debug) timeout=2400 ;; *) timeout=900 ;; esac
# and samples less often, or the sampling interrupts eat the emulated CPUs.
scale=1
[ "$kernel" = debug ] && scale=${DS_DEBUG_PERIOD_SCALE:-4}

ds_need_pkgs "${DS_GUEST_PKGS[@]}"
# DS_INITRD: an initramfs built already (runs at once must not rebuild it).
initrd=${DS_INITRD:-}
[ -n "$initrd" ] || initrd=$("$DS_ROOT/guest/make-initramfs.sh") || exit 1
# DS_INITRD_EXTRA: more files for this boot, as a cpio.gz appended to ours
# (the kernel unpacks concatenated archives in order). One file per run: a
# run starting at the same time would rewrite it under this one's QEMU.
extra=
if [ -n "${DS_INITRD_EXTRA:-}" ]; then
	extra=$DS_BUILD/initramfs-extra.$$.cpio.gz
	cat "$initrd" "$DS_INITRD_EXTRA" > "$extra"
	initrd=$extra
fi
mkdir -p "$DS_BUILD/logs"
# DS_RUN_TAG: a suffix for this run's files, so that two runs of one kernel
# and suite can go at once (bench/emulator-compare.sh).
log=$DS_BUILD/logs/$kernel-$suite${DS_RUN_TAG:+.$DS_RUN_TAG}.log
disk=$DS_BUILD/logs/$kernel-$suite${DS_RUN_TAG:+.$DS_RUN_TAG}.disk
# QEMU's -drive splits its value at commas: a suite of several tests has them.
disk=${disk//,/_}
drive=() irqargs=
if [ -n "$outdir" ]; then
	truncate -s 0 "$disk" && truncate -s 256M "$disk"
	drive=(-drive "file=$disk,format=raw,if=virtio")
	# The disk's interrupt is a PCI INTx line (the guest configs have no
	# MSI). ACPI's _PRT method routes it; on the debug kernel, under
	# emulation, the AML interpreter runs past ACPICA's 30 s loop limit,
	# the line gets no GSI and the boot hangs at the disk's first read.
	# acpi=noirq routes it by the BIOS's $PIR table instead (there only:
	# the other kernels route it through ACPI in time).
	if [ "$kernel" = debug ]; then irqargs=" acpi=noirq"; fi
fi

# DS_QEMU_ICOUNT=N (opt-in, benchmarks): -icount shift=N,sleep=off, so the
# guest's clocks follow its instruction count (2^N ns each), not the host's
# time: cpu-clock periods and clock_gettime() become deterministic figures.
icount=()
[ -n "${DS_QEMU_ICOUNT:-}" ] && icount=(-icount "shift=$DS_QEMU_ICOUNT,sleep=off")
# DS_QEMU_EXTRA: more QEMU arguments, split at spaces (bench/qemu-plugin/
# profile.sh loads its instruction-counting plugin this way).
# shellcheck disable=SC2206
qemu_extra=(${DS_QEMU_EXTRA:-})

# One TCG thread for both vCPUs, on every kernel: under QEMU 7.2's
# multi-threaded TCG, a static key or static call flipped by text_poke_bp()
# while the other vCPU runs through the site now and then ends in "Oops:
# int3" or a hang, on Debian's stock 7.2 as on ours (docs/kernel.md,
# "Emulator"). With one thread the vCPUs take turns and perf_fuzz passes
# (bench/emulator-compare.sh). A guest then takes one host CPU, so two can
# run at once (tests/run-all.sh). DS_QEMU_TCG_THREAD=multi gives a thread
# per vCPU back (real parallelism in the guest; the emulator's race too).
tcg_thread=${DS_QEMU_TCG_THREAD:-single}
accel=(-accel "tcg,thread=$tcg_thread")

# tsc=reliable: with the vCPUs taking turns, the clocksource watchdog's
# read-back of the TSC can wait for the other vCPU's time slice; it then
# marks the TSC unstable and every clock_gettime() becomes a system call
# (seen on debug: a test's hits on its expected path fell under half). The
# emulated TSC follows the host's monotonic clock.
ds_log "booting $kernel ($image), suite $suite, timeout ${timeout}s${accel[*]:+, ${accel[*]}}${icount[*]:+, ${icount[*]}}, console $log"
start=$(date +%s)
timeout -k 10 "$timeout" qemu-system-x86_64 -M pc "${accel[@]}" -cpu max -smp 2 -m 2048 "${icount[@]}" "${qemu_extra[@]}" \
	-kernel "$image" -initrd "$initrd" "${drive[@]}" \
	-append "console=ttyS0 panic=-1 loglevel=6 tsc=reliable ds.suite=$suite ds.period_scale=$scale${DS_TEST_BUDGET:+ ds.test_budget=$DS_TEST_BUDGET}$irqargs" \
	-display none -monitor none -serial stdio -no-reboot < /dev/null > "$log" 2>&1 &
tpid=$!
# What the host gave the emulator, every 10 s, for a run that is slower
# than its peers (a debug suite took 1.5x as long in one cold run, cause
# unknown): the QEMU process's RSS and how much of it is in transparent
# huge pages (TCG's guest memory accesses miss the host's TLB less in
# them), the host's load and free memory. One line at the end.
sampler=$log.host
: > "$sampler"
# (awk programs built one line at a time: tests/list-commands.py reads a
# script line by line)
sample_awk='/^Rss:/ { r = int($2 / 1024) } /^AnonHugePages:/ { h = int($2 / 1024) }'
sample_awk+=' END { if (r) print t, r, h, load, free }'
sum_awk='NR == 1 { lo = hi = $3; ll = lh = $4 } { r = $2; f = $5 }'
sum_awk+=' { if ($3 < lo) lo = $3; if ($3 > hi) hi = $3; if ($4 < ll) ll = $4; if ($4 > lh) lh = $4 }'
sum_awk+=' END { if (NR) printf "QEMU RSS %d MB, in huge pages %d-%d MB, host load %s-%s, free %d MB (%d samples)", r, lo, hi, ll, lh, f, NR }'
(
	while sleep 10 && kill -0 "$tpid" 2>/dev/null; do
		q=$(cut -d' ' -f1 "/proc/$tpid/task/$tpid/children" 2>/dev/null)
		if [ -n "$q" ] && [ -r "/proc/$q/smaps_rollup" ]; then
			awk -v t=$(( $(date +%s) - start )) -v load="$(cut -d' ' -f1 /proc/loadavg)" \
				-v free="$(awk '/^MemFree:/ { print int($2 / 1024) }' /proc/meminfo)" \
				"$sample_awk" "/proc/$q/smaps_rollup" >> "$sampler"
		fi
	done
) &
spid=$!
wait "$tpid"
qrc=$?
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
elapsed=$(( $(date +%s) - start ))
host_line=$(awk "$sum_awk" "$sampler")
[ -z "$extra" ] || rm -f "$extra"
# $log is the latest run's console; each run's is also kept, under its time,
# the last 10 per kernel and suite, so that a rerun loses no failure's log.
hist=$DS_BUILD/logs/history/$kernel-$suite.$(date +%Y%m%dT%H%M%S).$$.log
mkdir -p "${hist%/*}" && cp "$log" "$hist"
find "${hist%/*}" -maxdepth 1 -name "$kernel-$suite.*.log" -printf '%T@ %p\n' | sort -rn |
	tail -n +11 | cut -d' ' -f2- | xargs -r rm -f
echo "boot+$suite@$kernel $elapsed" >> "$DS_BUILD/stage-times"

# Show the test output (not the boot noise) on the host.
grep -aE '^(ok|not ok|#|1\.\.|DEFERSTACK)' "$log" | sed 's/\r$//'

fail=0
if [ $qrc -eq 124 ] || [ $qrc -eq 137 ]; then
	ds_log "FAIL: guest timed out after ${timeout}s"
	fail=1
fi
if grep -aqE "$DS_SPLAT_RE" "$log"; then
	ds_log "FAIL: kernel splat on the console:"
	grep -anE "$DS_SPLAT_RE" "$log" | head -20 >&2
	fail=1
fi
result=$(grep -aoE 'DEFERSTACK-RESULT: [0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
if [ -z "$result" ]; then
	ds_log "FAIL: no result line from the guest (panic, hang or crash); last lines:"
	tail -15 "$log" >&2
	fail=1
else
	read -r passed failed < <(echo "$result" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1 \2/')
	if [ "$failed" -ne 0 ] || [ "$passed" -eq 0 ]; then
		ds_log "FAIL: $result"
		# The failed checks again, last: CI shows only the tail of a long suite.
		sed 's/\r$//' "$log" | awk '/^# --- /{t=$0} /^# FAIL/{if(t!=""){print t; t=""} print}
			/^not ok/{print}' | head -40 >&2
		fail=1
	fi
	grep -aq 'DEFERSTACK-GUEST: done' "$log" || { ds_log "FAIL: guest did not finish"; fail=1; }
fi
if [ -n "$outdir" ]; then
	mkdir -p "$outdir"
	tar -xf "$disk" -C "$outdir" 2>/dev/null || ds_log "no output archive from the guest"
	rm -f "$disk"
fi
[ -z "$host_line" ] || ds_log "$kernel/$suite: host: $host_line"
ds_log "$kernel/$suite: ${result:-no result} in ${elapsed}s -> $([ $fail -eq 0 ] && echo PASS || echo "FAIL (console: $hist)")"
exit $fail
