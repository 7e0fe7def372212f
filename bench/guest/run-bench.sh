#!/bin/sh
# In the guest: give it swap (zram, if the kernel has it) so that anonymous
# stack pages can be paged out, then run the benchmark.
if [ -e /sys/block/zram0 ] || modprobe zram 2>/dev/null; then
	echo 256M > /sys/block/zram0/disksize && mkswap /dev/zram0 >/dev/null &&
		swapon /dev/zram0 && echo "bench: zram swap on"
else
	echo "bench: no zram: stack pages cannot be paged out on this kernel"
fi
/tests/defer_bench
/tests/delivery_bench
grep -E "SwapTotal|SwapFree" /proc/meminfo | sed "s/^/bench: /"
