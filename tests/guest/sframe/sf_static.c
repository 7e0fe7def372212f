// SPDX-License-Identifier: GPL-2.0
/*
 * Workload of the sframe_stack test, built without frame pointers and with
 * SFrame tables (gcc -O2 -fomit-frame-pointer -Wa,--gsframe, static): the
 * stack at each getppid() is sf_leaf <- sf_mid <- sf_top <- main, and only
 * an SFrame walk can tell it. Each function keeps a different amount of
 * stack, and rbp is used as a plain register, so a frame-pointer walk goes
 * wrong at once. Every 16th round goes through sf_rec instead, a recursion
 * 100 deep whose frames are variable-sized (the CFA then follows rbp):
 * sf_leaf <- sf_rec x 101 <- main.
 *
 * With "signal", a timer's SIGALRM interrupts sf_spin and its
 * handler makes the calls instead: sf_leaf <- sf_mid <- sf_on_signal <-
 * the C library's signal return <- sf_spin <- main. Only a walk through
 * the signal frame gets from the handler to the code it interrupted.
 *
 *   sf_static MSEC [signal]
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define noinline __attribute__((noinline))

volatile unsigned long sf_sink;

noinline long sf_leaf(unsigned long x)
{
	volatile unsigned long pad[3] = { x, x + 1, x + 2 };
	long ret;

	/* getppid, straight from here: its stack is this function's. */
	__asm__ volatile("syscall" : "=a"(ret) : "a"(110L) : "rcx", "r11", "memory");
	return ret + (long)pad[1];
}

noinline long sf_mid(unsigned long x)
{
	volatile unsigned long pad[17];
	register unsigned long junk __asm__("rbp") = x * 0x9e3779b97f4a7c15UL;
	long r;

	pad[x % 17] = x;
	__asm__ volatile("" : "+r"(junk));	/* rbp is no frame pointer here */
	r = sf_leaf(x + pad[x % 17] + junk);
	__asm__ volatile("" ::: "memory");	/* no tail call */
	return r;
}

noinline long sf_top(unsigned long x)
{
	volatile unsigned long pad[5];
	long r;

	pad[x % 5] = x;
	r = sf_mid(x * 2 + pad[x % 5]);
	__asm__ volatile("" ::: "memory");
	return r;
}

noinline long sf_rec(unsigned long depth, unsigned long x)
{
	volatile unsigned long pad[depth % 3 + 1];
	long r;

	pad[0] = x;
	if (!depth)
		return sf_leaf(x + pad[0]);
	r = sf_rec(depth - 1, x + pad[0]);
	__asm__ volatile("" ::: "memory");	/* no tail call */
	return r;
}

static volatile sig_atomic_t sf_signals;

noinline void sf_on_signal(int sig)
{
	for (unsigned long i = 0; i < 8; i++)
		sf_sink += sf_mid(i + (unsigned long)sig);
	sf_signals++;
}

/*
 * Arm a one-shot timer and spin until its signal has been handled: the
 * signal comes here. One shot, armed again only here: a handler slower than
 * the timer's period (the debug kernel on a busy host, its getppid() calls)
 * would otherwise return into the next signal every time, and never to the
 * code the first one interrupted (1,768 of 1,768 records in setitimer()
 * once, with a 2 ms periodic timer).
 */
noinline void sf_spin(void)
{
	static const struct itimerval it = { { 0, 0 }, { 0, 2000 } };
	sig_atomic_t seen = sf_signals;
	unsigned long x = sf_sink;

	if (setitimer(ITIMER_REAL, &it, NULL))
		abort();
	while (sf_signals == seen)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sf_sink = x;
}

static int run_signal(long msec)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sf_on_signal;
	if (sigaction(SIGALRM, &sa, NULL))
		return 1;
	while (sf_signals < msec / 2)
		sf_spin();
	return 0;
}

int main(int argc, char **argv)
{
	long msec = argc > 1 ? atol(argv[1]) : 300, ms;
	struct timespec t0, t;

	if (argc > 2 && !strcmp(argv[2], "signal"))
		return run_signal(msec);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long i = 0;; i++) {
		sf_sink += i % 16 ? sf_top(i) : sf_rec(100, i);
		if (i % 64)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &t);
		/* At least 512 rounds (32 recursions), however slow the guest. */
		ms = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
		if ((ms >= msec && i >= 512) || ms >= 10 * msec)
			break;
	}
	return 0;
}
