#!/bin/sh
# Debian's trinity, a syscall fuzzer no one here wrote, on the perf system
# calls and what surrounds an event's life: perf_event_open, ioctl, mmap,
# munmap, read, close, prctl, fork, execve, exit. Two runs of SECONDS each:
# as root (--dangerous), then as nobody. trinity_count.so counts its
# perf_event_open calls, the events they opened and how many of those
# carried the defer bits (it sets defer_callchain on 3 attrs in 4: trinity
# 2023 predates the bits).
#
#   trinity.sh [SECONDS [any]]      (default 60 s)
#
# The debug kernel's checkers (KASAN, lockdep, kmemleak) are what make the
# run worth its time: elsewhere it skips, saying so, unless "any" is given.
# Fails when trinity did not run, made no perf_event_open call, opened no
# event, opened 8 or more and none with defer_callchain (1 chance in 65,536
# by luck), or did not stop when told to. The kernel's health is the
# harness's: a splat on the console fails the run, and on the debug kernel
# kmemleak_check.sh follows.
secs=${1:-60}
if [ ! -e /sys/kernel/debug/kmemleak ] && [ "${2:-}" != any ]; then
	echo "# SKIP: not the debug kernel (no kmemleak); trinity.sh $secs any runs it anyway"
	exit 0
fi
T=/opt/trinity/trinity
LD=/opt/debian/lib/ld-linux-x86-64.so.2
PRELOAD=/opt/debian/trinity_count.so
[ -x $T ] && [ -e $PRELOAD ] || { echo "# FAIL: no trinity in the initramfs"; exit 1; }
mkdir -p /etc
grep -qs '^nobody:' /etc/passwd || {
	echo 'root:x:0:0:root:/:/bin/sh' > /etc/passwd
	echo 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' >> /etc/passwd
	printf 'root:x:0:\nnogroup:x:65534:\n' > /etc/group
}
# perf_event_open, ioctl, mmap, munmap, read, close, prctl, fork, execve, exit
calls=""
for c in perf_event_open ioctl mmap munmap read close prctl fork execve exit; do
	calls="$calls -c $c"
done
echo "# trinity: $secs s as root, then $secs s as nobody; perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid)"
fail=0
n=0
for who in root nobody; do
	n=$((n + 1))
	dir=/tmp/trinity-$who
	mkdir -p $dir && chmod 777 $dir
	: > $dir/count && chmod 666 $dir/count
	extra=0
	[ $who = root ] && extra=10
	t0=$(cut -d' ' -f1 /proc/uptime)
	# SIGINT after SECONDS (root: plus trinity's 10 s warning countdown):
	# trinity stops its children and prints its totals; SIGKILL 60 s
	# later if it has not.
	run="cd $dir && TRINITY_COUNT=$dir/count TRINITY_DEFER=1 \
		exec timeout -s KILL $((secs + extra + 60)) timeout -s INT $((secs + extra)) \
		$LD --library-path /opt/debian/lib --preload $PRELOAD \
		$T -q -l off --stats -C 4 -s $n $calls --enable-fds=perf,pipes,eventfd,testfile,memfd"
	if [ $who = root ]; then
		sh -c "$run --dangerous" > $dir/out 2>&1
	else
		su -s /bin/sh nobody -c "$run" > $dir/out 2>&1
	fi
	rc=$?
	t1=$(cut -d' ' -f1 /proc/uptime)
	grep -v -e futex: -e Marking $dir/out | sed "s/^/# $who: /" | tail -60
	c=$(tr -cd c < $dir/count | wc -c)
	o=$(tr -cd o < $dir/count | wc -c)
	d=$(tr -cd d < $dir/count | wc -c)
	D=$(tr -cd D < $dir/count | wc -c)
	total=$(sed -n 's/.*[Rr]an \([0-9]*\) syscalls.*/\1/p' $dir/out | tail -1)
	echo "# $who: ${total:-?} calls in $(awk "BEGIN{print $t1 - $t0}") s (exit $rc); perf_event_open: $c calls, $o events opened, $d with defer_callchain, $D with defer_output"
	if [ "$rc" -eq 137 ]; then
		echo "# FAIL: $who: trinity did not stop on SIGINT; its last lines:"
		grep -v futex: $dir/out | tail -15 | sed "s/^/#   /"
		fail=1
	fi
	[ "$c" -gt 0 ] || { echo "# FAIL: $who: no perf_event_open call"; fail=1; }
	[ "$o" -gt 0 ] || { echo "# FAIL: $who: no event opened"; fail=1; }
	if [ "$o" -ge 8 ] && [ "$d" -eq 0 ]; then
		echo "# FAIL: $who: $o events opened, none with defer_callchain"
		fail=1
	fi
	if grep -q 'tainted' $dir/out; then
		echo "# FAIL: $who: trinity saw the kernel tainted"
		fail=1
	fi
done
exit $fail
