// SPDX-License-Identifier: GPL-2.0
/*
 * Preloaded into Debian's trinity (trinity.sh): counts what its
 * perf_event_open() calls did, and sets the defer bits on some of them.
 *
 * trinity 2023 knows nothing of defer_callchain and defer_output (bits 38
 * and 39 of the attr's flags word, after sigtrap): without help none of its
 * events would ever defer. With TRINITY_DEFER=1, 3 attrs in 4 that it passes
 * get defer_callchain and, of those, half defer_output; everything else in
 * the attr stays trinity's. Its calls go through libc's syscall(), which is
 * what this library replaces.
 *
 * Each call appends one letter per fact to TRINITY_COUNT (c: a call, o: it
 * opened an event, d: that event has defer_callchain, D: defer_output),
 * opening the file each time: trinity's children close and unmap at random,
 * so nothing may be kept open or mapped across calls.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FLAGS_OFFSET 40 /* struct perf_event_attr: type, size, config, period, sample_type, read_format */
#define DEFER_CALLCHAIN (1ULL << 38)
#define DEFER_OUTPUT (1ULL << 39)

typedef long (*syscall_fn)(long, ...);

static long raw6(long nr, long a, long b, long c, long d, long e, long f)
{
	static syscall_fn next;

	if (!next)
		next = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
	return next(nr, a, b, c, d, e, f);
}

/* Our own coin, not random(): trinity replays its runs from random()'s seed. */
static unsigned int coin(void)
{
	static uint64_t x;

	if (!x)
		x = ((uint64_t)raw6(SYS_getpid, 0, 0, 0, 0, 0, 0) << 32) ^ (uintptr_t)&x ^ 0x9e3779b97f4a7c15ULL;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x & 1;
}

/*
 * Read (or write) the attr's flags word through a pipe: a bad address fails
 * with EFAULT where a plain access would kill the child on trinity's
 * deliberately bad pointers. (process_vm_readv would do, but the guest
 * kernels are built without CROSS_MEMORY_ATTACH.)
 */
static int attr_flags(uintptr_t attr, uint64_t *flags, int write)
{
	void *where = (void *)(attr + FLAGS_OFFSET);
	void *from = write ? (void *)flags : where;
	void *to = write ? where : (void *)flags;
	int fds[2], ok = 0;

	if (raw6(SYS_pipe2, (long)fds, O_CLOEXEC, 0, 0, 0, 0))
		return -1;
	if (raw6(SYS_write, fds[1], (long)from, sizeof(*flags), 0, 0, 0) == sizeof(*flags) &&
	    raw6(SYS_read, fds[0], (long)to, sizeof(*flags), 0, 0, 0) == sizeof(*flags))
		ok = 1;
	raw6(SYS_close, fds[0], 0, 0, 0, 0, 0);
	raw6(SYS_close, fds[1], 0, 0, 0, 0, 0);
	return ok ? 0 : -1;
}

static void note(const char *facts, size_t len)
{
	const char *path = getenv("TRINITY_COUNT");
	long fd;

	if (!path || !len)
		return;
	fd = raw6(SYS_open, (long)path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666, 0, 0, 0);
	if (fd < 0)
		return;
	raw6(SYS_write, fd, (long)facts, (long)len, 0, 0, 0);
	raw6(SYS_close, fd, 0, 0, 0, 0, 0);
}

long syscall(long nr, ...)
{
	long a[6], ret;
	const char *steer = getenv("TRINITY_DEFER");
	char facts[4];
	size_t n = 0;
	uint64_t flags;
	va_list ap;
	int i, err;

	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr != SYS_perf_event_open)
		return raw6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);

	if (steer && *steer == '1' && (coin() | coin()) &&
	    !attr_flags((uintptr_t)a[0], &flags, 0)) {
		flags |= DEFER_CALLCHAIN;
		if (coin())
			flags |= DEFER_OUTPUT;
		attr_flags((uintptr_t)a[0], &flags, 1);
	}
	ret = raw6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	err = errno; /* trinity reads it after we return */
	facts[n++] = 'c';
	if (ret >= 0) {
		facts[n++] = 'o';
		if (!attr_flags((uintptr_t)a[0], &flags, 0)) {
			if (flags & DEFER_CALLCHAIN)
				facts[n++] = 'd';
			if (flags & DEFER_OUTPUT)
				facts[n++] = 'D';
		}
	}
	note(facts, n);
	errno = err;
	return ret;
}
