// SPDX-License-Identifier: GPL-2.0
/*
 * Example workload. Every function is noinline and built with frame pointers;
 * the read() system call is issued by our own wl_syscall3() rather than libc's
 * wrapper, which has no frame and would hide its caller from an FP unwinder.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

#define noinline __attribute__((noinline))

const char *const workload_read_chain[] = {
	"wl_syscall3", "wl_read_leaf", "wl_read_mid", "wl_read_top", "workload_run", NULL
};
const char *const workload_spin_chain[] = {
	"wl_spin_leaf", "wl_spin_mid", "wl_spin_top", "workload_run", NULL
};

noinline long wl_syscall3(long nr, long a, long b, long c)
{
	long ret;

	asm volatile("syscall"
		     : "=a"(ret)
		     : "a"(nr), "D"(a), "S"(b), "d"(c)
		     : "rcx", "r11", "memory");
	return ret;
}

noinline long wl_read_leaf(int fd, char *buf, size_t len)
{
	long ret = wl_syscall3(SYS_read, fd, (long)buf, (long)len);

	asm volatile("" ::: "memory");	/* keep the call from becoming a jump */
	return ret;
}

noinline long wl_read_mid(int fd, char *buf, size_t len)
{
	long ret = wl_read_leaf(fd, buf, len);

	asm volatile("" ::: "memory");
	return ret;
}

noinline long wl_read_top(int fd, char *buf, size_t len)
{
	long ret = wl_read_mid(fd, buf, len);

	asm volatile("" ::: "memory");
	return ret;
}

noinline unsigned long wl_spin_leaf(unsigned long seed)
{
	for (int i = 0; i < 200000; i++) {
		seed = seed * 6364136223846793005UL + 1442695040888963407UL;
		asm volatile("" : "+r"(seed));
	}
	return seed;
}

noinline unsigned long wl_spin_mid(unsigned long seed)
{
	unsigned long r = wl_spin_leaf(seed);

	asm volatile("" ::: "memory");
	return r;
}

noinline unsigned long wl_spin_top(unsigned long seed)
{
	unsigned long r = wl_spin_mid(seed);

	asm volatile("" ::: "memory");
	return r;
}

static unsigned long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000UL + ts.tv_nsec / 1000000;
}

noinline int workload_run(unsigned int msec, size_t read_size, const char *path,
			  struct workload_stats *st)
{
	unsigned long end = now_ms() + msec, seed = 1;
	char *buf = malloc(read_size);
	int fd = open(path, O_RDONLY);

	if (!buf || fd < 0) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	st->reads = st->spins = 0;
	while (now_ms() < end) {
		if (wl_read_top(fd, buf, read_size) < 0)
			break;
		st->reads++;
		seed = wl_spin_top(seed);
		st->spins++;
	}
	close(fd);
	free(buf);
	asm volatile("" ::: "memory");
	return 0;
}
