// SPDX-License-Identifier: GPL-2.0
/*
 * Workload of bench/guest/sframe_bench.c: CALLS system calls made from the
 * bottom of a stack DEPTH frames deep, timed by itself.
 *
 *   sf_depth DEPTH CALLS     -> "ns=T calls=N" on stdout
 *
 * main calls sf_drec, a recursion DEPTH frames deep whose frames are
 * variable-sized (as sf_static's sf_rec: the CFA then follows rbp), without
 * tail calls; its innermost frame calls sf_dleaf, which reads
 * CLOCK_MONOTONIC, makes CALLS getppid() straight from itself (inline asm
 * "syscall", as sf_static's sf_leaf: no C library frame below it), reads
 * the clock again and returns the difference. The user stack at each of
 * those system calls is sf_dleaf <- sf_drec x DEPTH <- main (DEPTH + 2
 * frames) <- the C library's start code.
 *
 * guest/build-sframe-workloads.sh builds it twice: sf_depth without frame
 * pointers and with SFrame tables, sf_depth_fp with frame pointers (leaf
 * functions too) and no SFrame tables. Under QEMU -icount (shift 0) the
 * time is the guest's instruction count, kernel side included.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define noinline __attribute__((noinline))

volatile unsigned long sf_sink;

noinline long sf_dleaf(unsigned long calls, unsigned long x)
{
	volatile unsigned long pad[3] = { x, x + 1, x + 2 };
	struct timespec t0, t1;
	long ret, sum = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long i = 0; i < calls; i++) {
		/* getppid, straight from here: its stack is this function's. */
		__asm__ volatile("syscall" : "=a"(ret) : "a"(110L) : "rcx", "r11", "memory");
		sum += ret;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	sf_sink += (unsigned long)sum + pad[1];
	return (t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec);
}

/* @depth frames of this function, the innermost calling sf_dleaf. */
noinline long sf_drec(unsigned long depth, unsigned long calls, unsigned long x)
{
	volatile unsigned long pad[depth % 3 + 1];
	long r;

	pad[0] = x;
	if (depth <= 1)
		r = sf_dleaf(calls, x + pad[0]);
	else
		r = sf_drec(depth - 1, calls, x + pad[0]);
	__asm__ volatile("" ::: "memory");	/* no tail call */
	return r;
}

int main(int argc, char **argv)
{
	long depth = argc > 1 ? atol(argv[1]) : 1;
	long calls = argc > 2 ? atol(argv[2]) : 1000;
	long ns;

	if (argc != 3 || depth < 1 || calls < 1) {
		fprintf(stderr, "usage: sf_depth DEPTH CALLS (DEPTH, CALLS >= 1)\n");
		return 2;
	}
	ns = sf_drec((unsigned long)depth, (unsigned long)calls, (unsigned long)argc);
	printf("ns=%ld calls=%ld\n", ns, calls);
	return 0;
}
