// SPDX-License-Identifier: GPL-2.0
/*
 * The 32-bit (IA32 emulation) workload of compat_stack: nested functions
 * built with frame pointers; the innermost makes getppid() with "int $0x80"
 * itself, so that the user stack at the system call is c32_leaf <- c32_mid
 * <- c32_top <- main. Built with -m32 -static.
 *
 *   compat_workload MSEC
 */
#include <stdlib.h>
#include <time.h>

#define noinline __attribute__((noinline))

static volatile unsigned long sink;

noinline long c32_leaf(unsigned long x)
{
	long ret;

	/* getppid is system call 64 on i386. */
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(64L) : "memory");
	sink += x;
	return ret;
}

noinline long c32_mid(unsigned long x)
{
	long r = c32_leaf(x + 1);

	__asm__ volatile("" ::: "memory");	/* no tail call */
	return r;
}

noinline long c32_top(unsigned long x)
{
	long r = c32_mid(x * 2);

	__asm__ volatile("" ::: "memory");
	return r;
}

int main(int argc, char **argv)
{
	long msec = argc > 1 ? atol(argv[1]) : 1000;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long i = 0;; i++) {
		c32_top(i);
		if (i % 64)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= msec)
			break;
	}
	return 0;
}
