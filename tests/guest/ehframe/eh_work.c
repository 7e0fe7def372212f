// SPDX-License-Identifier: GPL-2.0
/*
 * A program built the way Debian builds its packages (gcc -O2, no frame
 * pointers, no SFrame, hardening flags) and run against Debian's own C
 * library, for sframe_stack's .eh_frame checks: every frame of its stacks
 * can only be walked with .eh_frame. Each mode runs MSEC:
 *
 *   cmp	qsort() with a comparator: eh_cmp_leaf <- eh_cmp <- qsort's
 *		frames <- eh_sort <- main
 *   read	read() through libc's wrapper: read <- eh_read <- main
 *   deep	a recursion DEEP frames deep: eh_deep_leaf <- eh_deep x DEEP
 *		<- main
 *   signal	main spins 2 ms, then sends itself SIGUSR1 with kill(); the
 *		handler spins about as long: eh_sig_leaf <- eh_on_signal <-
 *		libc's signal return <- kill() <- main. Sent, not from a
 *		timer: on the debug kernel under deferred profiling a timer's
 *		signals came late and few, 0 to 6 of ~300 records in the
 *		handler.
 *   bsearch	bsearch() with a comparator: eh_bs_leaf <- eh_bcmp <- (glibc's
 *		inline bsearch) <- eh_search <- main
 *   malloc	malloc() and free() of 64 blocks of 16 to 4,000 bytes at a
 *		time: libc's allocator <- eh_alloc <- main
 *   thread	two threads from pthread_create(): eh_thr_leaf <- eh_thr_start
 *		<- libc's start_thread <- clone3 (the thread's outermost frame)
 *
 * It prints "round 1", where its functions lie ("name start end", from
 * dladdr1(): linked with -rdynamic), then the executable segments of the
 * program ("prog"), of libc ("libc") and of the loader ("ld.so"), each
 * after its load address ("libc.base BASE BASE").
 *
 *   eh_work MSEC MODE...
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../sframe/where.h"

#define noinline __attribute__((noinline))
#define DEEP 40

volatile long eh_sink;
extern char _start[];	/* the program's entry (crt1.o), the outermost frame */
static volatile sig_atomic_t eh_signals;

static long usec_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000000 + (t.tv_nsec - t0->tv_nsec) / 1000;
}

static long msec_since(const struct timespec *t0)
{
	return usec_since(t0) / 1000;
}

noinline long eh_cmp_leaf(long x)
{
	long r = x;

	for (int i = 0; i < 50; i++)
		r = r * 31 + i;
	return r;
}

noinline int eh_cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	eh_sink += eh_cmp_leaf(x ^ y);
	return (x > y) - (x < y);
}

noinline void eh_sort(long *v, int n)
{
	for (int i = 0; i < n; i++)
		v[i] = (i * 7919L) % n;
	qsort(v, n, sizeof(v[0]), eh_cmp);
	/* Not a tail call: eh_sort stays on the stack. */
	eh_sink += v[0];
}

noinline long eh_read(int fd)
{
	char c;

	return read(fd, &c, 1);
}

noinline long eh_deep_leaf(long x)
{
	for (int i = 0; i < 2000; i++)
		x = x * 17 + i;
	return x;
}

noinline long eh_deep(int n)
{
	long r;

	if (!n)
		r = eh_deep_leaf(n);
	else
		r = eh_deep(n - 1);
	/* Not a tail call, nor a loop: gcc keeps the frame. */
	__asm__ volatile("" : "+r"(r));
	return r + n;
}

noinline long eh_sig_leaf(long x)
{
	for (int i = 0; i < 20000; i++)
		x = x * 13 + i;
	return x;
}

/*
 * A fixed amount of work, no clock: under deferred profiling the debug
 * kernel spends most of the time walking stacks, and a handler timed by
 * the clock got almost no samples of its own.
 */
noinline void eh_on_signal(int sig)
{
	for (int i = 0; i < 24; i++)
		eh_sink += eh_sig_leaf(sig + i);
	eh_signals++;
}

noinline long eh_bs_leaf(long x)
{
	long r = x;

	for (int i = 0; i < 50; i++)
		r = r * 29 + i;
	return r;
}

noinline int eh_bcmp(const void *key, const void *elem)
{
	long k = *(const long *)key, e = *(const long *)elem;

	eh_sink += eh_bs_leaf(k ^ e);
	return (k > e) - (k < e);
}

noinline long eh_search(const long *v, long n)
{
	long hits = 0;

	for (long k = 0; k < n; k++)
		hits += bsearch(&k, v, (size_t)n, sizeof(v[0]), eh_bcmp) != NULL;
	/* Not a tail call: eh_search stays on the stack. */
	__asm__ volatile("" : "+r"(hits));
	return hits;
}

/* 64 blocks at a time, freed out of order: the allocator's slow paths too. */
noinline long eh_alloc(unsigned int *seed)
{
	void *p[64];
	long r = 0;

	for (int i = 0; i < 64; i++) {
		*seed = *seed * 1103515245u + 12345u;
		p[i] = malloc(16 + (*seed >> 16) % 4000);
		if (!p[i])
			abort();
		memset(p[i], i, 16);
		/* keeps gcc from pairing malloc with free away */
		__asm__ volatile("" : : "r"(p[i]) : "memory");
		r += ((volatile char *)p[i])[3];
	}
	for (int i = 63; i >= 0; i -= 2)
		free(p[i]);
	for (int i = 0; i < 64; i += 2)
		free(p[i]);
	return r;
}

noinline long eh_thr_leaf(long x)
{
	for (int i = 0; i < 3000; i++)
		x = x * 11 + i;
	return x;
}

noinline void *eh_thr_start(void *arg)
{
	long msec = (long)arg, r = 0;
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (msec_since(&t0) < msec)
		r += eh_thr_leaf(r);
	return (void *)r;
}

/* The executable segments of the program, libc and the loader. */
static int print_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *name = info->dlpi_name, *tag;

	(void)size;
	(void)arg;
	if (!name[0])
		tag = "prog";
	else if (strstr(name, "/libc.so.6"))
		tag = "libc";
	else if (strstr(name, "/ld-linux-x86-64.so.2"))
		tag = "ld.so";
	else
		return 0;
	/* an empty range: where its addresses are relative to, for messages */
	printf("%s.base %#lx %#lx\n", tag, (unsigned long)info->dlpi_addr,
	       (unsigned long)info->dlpi_addr);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
			printf("%s %#lx %#lx\n", tag, (unsigned long)(info->dlpi_addr + ph->p_vaddr),
			       (unsigned long)(info->dlpi_addr + ph->p_vaddr + ph->p_memsz));
	}
	return 0;
}

noinline long eh_spin(long x)
{
	for (int i = 0; i < 1000; i++)
		x = x * 7 + i;
	return x;
}

int main(int argc, char **argv)
{
	static long v[256];
	struct timespec t0;
	long msec;

	if (argc < 3) {
		fprintf(stderr, "usage: eh_work MSEC MODE...\n");
		return 2;
	}
	msec = atol(argv[1]);
	printf("round 1\n");
	where("main", (void *)main);
	where("eh_cmp_leaf", (void *)eh_cmp_leaf);
	where("eh_cmp", (void *)eh_cmp);
	where("eh_sort", (void *)eh_sort);
	where("eh_read", (void *)eh_read);
	where("eh_deep_leaf", (void *)eh_deep_leaf);
	where("eh_deep", (void *)eh_deep);
	where("eh_sig_leaf", (void *)eh_sig_leaf);
	where("eh_on_signal", (void *)eh_on_signal);
	where("eh_spin", (void *)eh_spin);
	where("eh_bs_leaf", (void *)eh_bs_leaf);
	where("eh_bcmp", (void *)eh_bcmp);
	where("eh_search", (void *)eh_search);
	where("eh_alloc", (void *)eh_alloc);
	where("eh_thr_leaf", (void *)eh_thr_leaf);
	where("eh_thr_start", (void *)eh_thr_start);
	where("_start", (void *)_start);
	/* last: a function's range is found before its object's */
	dl_iterate_phdr(print_object, NULL);
	fflush(stdout);

	for (int m = 2; m < argc; m++) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (!strcmp(argv[m], "cmp")) {
			while (msec_since(&t0) < msec)
				eh_sort(v, 256);
		} else if (!strcmp(argv[m], "read")) {
			int fd = open("/dev/zero", O_RDONLY);

			if (fd < 0)
				return 1;
			while (msec_since(&t0) < msec)
				eh_sink += eh_read(fd);
			close(fd);
		} else if (!strcmp(argv[m], "deep")) {
			while (msec_since(&t0) < msec)
				eh_sink += eh_deep(DEEP);
		} else if (!strcmp(argv[m], "signal")) {
			struct sigaction sa = { .sa_handler = eh_on_signal };

			sigemptyset(&sa.sa_mask);
			if (sigaction(SIGUSR1, &sa, NULL))
				return 1;
			while (msec_since(&t0) < msec) {
				struct timespec t1;

				clock_gettime(CLOCK_MONOTONIC, &t1);
				while (usec_since(&t1) < 2000)
					eh_sink += eh_spin(eh_sink);
				kill(getpid(), SIGUSR1);
			}
			printf("# eh_work: %d signals\n", (int)eh_signals);
		} else if (!strcmp(argv[m], "bsearch")) {
			for (long i = 0; i < 256; i++)
				v[i] = i;
			while (msec_since(&t0) < msec)
				eh_sink += eh_search(v, 256);
		} else if (!strcmp(argv[m], "malloc")) {
			unsigned int seed = 1;

			while (msec_since(&t0) < msec)
				eh_sink += eh_alloc(&seed);
		} else if (!strcmp(argv[m], "thread")) {
			pthread_t t[2];

			for (int i = 0; i < 2; i++)
				if (pthread_create(&t[i], NULL, eh_thr_start, (void *)msec))
					return 1;
			for (int i = 0; i < 2; i++)
				pthread_join(t[i], NULL);
		} else {
			fprintf(stderr, "eh_work: unknown mode %s\n", argv[m]);
			return 2;
		}
	}
	return 0;
}
