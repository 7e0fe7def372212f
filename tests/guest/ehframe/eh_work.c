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
 *   clock	clock_gettime() over and over: the vDSO's __vdso_clock_gettime
 *		<- libc's clock_gettime <- eh_clock <- main
 *   plt	rand_r() through the program's lazy .plt entry, which is never
 *		bound: while the part runs, .plt's first entry jumps to
 *		eh_fake_resolve rather than to the loader (the program's
 *		GOT[2], writable without -z now), which drops the two words
 *		the entries pushed and goes to eh_plt_callee. Every call thus
 *		runs the entry's jump, its push, its jump to the first entry
 *		and that entry's push and jump, all described by ld's CFI:
 *		.plt <- eh_plt <- main. Only in a build without -z now
 *		(eh_work_lazy), and only as the first part that calls rand_r.
 *
 * It prints "round 1", where its functions lie ("name start end", from
 * dladdr1(): linked with -rdynamic), then the executable segments of the
 * program ("prog"), of libc ("libc"), of the loader ("ld.so") and of the
 * vDSO ("vdso"), each after its load address ("libc.base BASE BASE"), and
 * the program's .plt section ("plt", from its section headers), before them.
 *
 *   eh_work MSEC MODE...
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/* Sixteen reads of the clock: about half of the time in the vDSO. */
noinline long eh_clock(void)
{
	struct timespec t;
	long r = 0;

	for (int i = 0; i < 16; i++) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		r += t.tv_nsec;
	}
	/* Not a tail call: eh_clock stays on the stack. */
	__asm__ volatile("" : "+r"(r));
	return r;
}

/* Where the calls of rand_r() go in the plt part: a step of the same LCG. */
noinline int eh_plt_callee(unsigned int *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return (int)(*seed >> 16);
}

/*
 * The plt part's stand-in for the loader's _dl_runtime_resolve: entered by
 * .plt's first entry with the link map and the relocation index pushed over
 * the return address into eh_plt; drops them and goes to eh_plt_callee with
 * the arguments of rand_r().
 */
void eh_fake_resolve(void);
__asm__(
"	.text\n"
"	.globl eh_fake_resolve\n"
"	.type eh_fake_resolve, @function\n"
"eh_fake_resolve:\n"
"	.cfi_startproc\n"
"	.cfi_def_cfa_offset 24\n"
"	endbr64\n"
"	add $16, %rsp\n"
"	.cfi_def_cfa_offset 8\n"
"	jmp eh_plt_callee\n"
"	.cfi_endproc\n"
"	.size eh_fake_resolve, .-eh_fake_resolve\n");

/* Sixteen calls through the lazy .plt entry of rand_r(). */
noinline long eh_plt(unsigned int *seed)
{
	long r = 0;

	for (int i = 0; i < 16; i++)
		r += rand_r(seed);
	/* Not a tail call: eh_plt stays on the stack. */
	__asm__ volatile("" : "+r"(r));
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

/* The program's load address, from its program headers. */
static int prog_base(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	if (info->dlpi_name[0])
		return 0;
	*(unsigned long *)arg = info->dlpi_addr;
	return 1;
}

/* The address of the program's section @want (0: none), from its headers. */
static unsigned long section_addr(const char *want, unsigned long *size)
{
	unsigned long base = 0, addr = 0;
	Elf64_Ehdr eh;
	Elf64_Shdr str, sh;
	char name[16];
	int fd = open("/proc/self/exe", O_RDONLY);

	dl_iterate_phdr(prog_base, &base);
	if (fd < 0 || pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    pread(fd, &str, sizeof(str), eh.e_shoff + (off_t)eh.e_shstrndx * sizeof(str)) !=
	    sizeof(str))
		goto out;
	for (int i = 0; i < eh.e_shnum; i++) {
		ssize_t n;

		if (pread(fd, &sh, sizeof(sh), eh.e_shoff + (off_t)i * sizeof(sh)) != sizeof(sh))
			break;
		/* the last name may end less than 16 bytes before the file does */
		n = pread(fd, name, sizeof(name) - 1, str.sh_offset + sh.sh_name);
		if (n <= 0)
			break;
		name[n] = 0;
		if (!strcmp(name, want)) {
			addr = base + sh.sh_addr;
			*size = sh.sh_size;
			break;
		}
	}
out:
	if (fd >= 0)
		close(fd);
	return addr;
}

/*
 * The plt part: .plt's first entry sent to eh_fake_resolve for @msec. No
 * other call may need the loader meanwhile: every other function the part
 * calls (clock_gettime()) was bound by the caller's first call of it.
 */
static int plt_part(long msec, const struct timespec *t0)
{
	unsigned long size, got = section_addr(".got.plt", &size), *resolve, saved;
	unsigned int seed = 1;
	void *page;

	if (!got || size < 24) {
		fprintf(stderr, "eh_work: no .got.plt\n");
		return 1;
	}
	resolve = (unsigned long *)got + 2;
	/* GOT[2] lies in the part of .got.plt that RELRO made read-only */
	page = (void *)((unsigned long)resolve & ~4095UL);
	if (mprotect(page, 4096, PROT_READ | PROT_WRITE)) {
		perror("eh_work: mprotect");
		return 1;
	}
	saved = *resolve;
	*resolve = (unsigned long)eh_fake_resolve;
	while (msec_since(t0) < msec)
		eh_sink += eh_plt(&seed);
	/* The page stays writable: it may hold writable entries too. */
	*resolve = saved;
	return 0;
}

/* The executable segments of the program, libc, the loader and the vDSO. */
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
	else if (strstr(name, "linux-vdso.so"))
		tag = "vdso";
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
	where("eh_clock", (void *)eh_clock);
	where("eh_plt", (void *)eh_plt);
	where("eh_plt_callee", (void *)eh_plt_callee);
	where("eh_fake_resolve", (void *)eh_fake_resolve);
	{
		unsigned long size, plt = section_addr(".plt", &size);

		if (plt)
			printf("plt %#lx %#lx\n", plt, plt + size);
	}
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
		} else if (!strcmp(argv[m], "clock")) {
			while (msec_since(&t0) < msec)
				eh_sink += eh_clock();
		} else if (!strcmp(argv[m], "plt")) {
			if (plt_part(msec, &t0))
				return 1;
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
