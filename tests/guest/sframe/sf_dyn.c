// SPDX-License-Identifier: GPL-2.0
/*
 * Dynamic workload of the sframe_stack test: loads a plugin with dlopen()
 * (an object the kernel learns about only when a walk first meets it) and
 * calls it from dy_call <- main, all built without frame pointers and with
 * SFrame tables. For each plugin path given it: dlopen, print where its
 * functions and ours lie ("name start end" lines on stdout, for the test to
 * name the ips), run MSEC, dlclose. A second plugin file (a copy: another
 * inode) is mapped where the first was, so the kernel must drop what it
 * cached for the first.
 *
 * With "link" instead of plugins, it calls link_top of the library it is
 * linked with (libsflink.so, through the PLT), which tail-calls link_tail:
 * link_leaf <- link_tail <- dy_link <- main.
 *
 * With "unmap", a second thread unmaps the page of plug_leaf while the first
 * calls the plugin in a loop, MSEC/2 in: walks meet the mapping shrinking
 * and gone, and the process dies of SIGSEGV when it runs into the hole.
 *
 *   sf_dyn MSEC PLUGIN...
 *   sf_dyn MSEC link
 * With "plt", calls to next-to-empty functions of libsflink.so, so that
 * samples land in the PLT stubs on the way: link_nop through a lazy .plt
 * entry (dy_plt <- main), then link_nop_got, whose address is taken too,
 * through .plt.got (dy_plt_got <- main), MSEC each. It prints where its
 * .plt and .plt.got lie, and the entries of link_nop and link_nop_got.
 *
 * With "plt-signal", dy_plt_got's calls through .plt.got while an interval
 * timer sends SIGALRM every 100 us; when the signal comes with the task on
 * link_nop_got's .plt.got entry, the handler spins in dy_sig_leaf, so that
 * samples there are walked through the signal frame into the entry:
 * dy_sig_leaf <- dy_on_signal <- signal return <- link_nop_got@plt <-
 * dy_plt_got <- main. It runs until 100 signals came there, or 4 x MSEC.
 *
 * With "rewrite", the plugin file PATH is written over between rounds
 * while nothing maps it, and loaded again, most likely at the same address:
 * round 1 copies A to PATH, round 2 writes B over it in place (O_TRUNC: the
 * same inode), round 3 unlinks PATH and writes A as a new file, round 4
 * writes B in place again and splits the text mapping of its plug_leaf
 * (madvise(MADV_DONTFORK) on its page). In round 3 the page of the
 * plugin's ELF header is dropped from the page tables (MADV_DONTNEED)
 * before it runs. A and B are builds of sf_plug.c
 * with the same names and other frame sizes: an unwind table kept from an
 * earlier round would walk the code of this one wrongly. With C (a build
 * with frame pointers and no table), round 5 writes C in place and round 6
 * B again: a mapping remembered as one without a table from round 5 would
 * have round 6's frames walked by frame pointers. Between rounds it
 * calls dy_mark for MSEC/4, so that records can be told apart by round;
 * "# rewrite round N: base ADDR inode INO" says where each round's plugin
 * was.
 *
 * With "libc", stacks that cross the C library (no SFrame table, no frame
 * pointers in Debian's build): a qsort() comparator that makes getppid()
 * (dy_cmp_leaf <- dy_cmp <- qsort's frames <- dy_sort <- main), and read()
 * through its libc wrapper (read <- dy_read <- main), MSEC each.
 *
 *   sf_dyn MSEC PLUGIN...
 *   sf_dyn MSEC link
 *   sf_dyn MSEC unmap PLUGIN
 *   sf_dyn MSEC libc
 *   sf_dyn MSEC rewrite PATH A B [C]
 *   sf_dyn MSEC plt
 *   sf_dyn MSEC plt-signal
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
#include <sys/stat.h>
#include <sys/time.h>
#include <ucontext.h>
#include <time.h>
#include <unistd.h>

#include "where.h"

#define noinline __attribute__((noinline))

typedef long (*plug_fn)(unsigned long);

/* libsflink.so */
long link_leaf(unsigned long x);
long link_tail(unsigned long x);
long link_top(unsigned long x);
long link_nop(unsigned long x);
long link_nop_got(unsigned long x);

volatile unsigned long dy_sink;

noinline long dy_call(plug_fn fn, unsigned long x)
{
	volatile unsigned long pad[9];
	long r;

	pad[x % 9] = x;
	r = fn(x + pad[x % 9]);
	__asm__ volatile("" ::: "memory");	/* no tail call */
	return r;
}

noinline long dy_link(unsigned long x)
{
	volatile unsigned long pad[3];
	long r;

	pad[x % 3] = x;
	r = link_top(x + pad[x % 3]);
	__asm__ volatile("" ::: "memory");	/* no tail call */
	return r;
}

/* Through the lazy PLT: link_nop's address is never taken here. */
noinline long dy_plt(unsigned long x)
{
	long r = link_nop(x);

	__asm__ volatile("" ::: "memory");	/* no tail call */
	return r;
}

/* Through .plt.got: link_nop_got's address is taken (run_plt). */
noinline long dy_plt_got(unsigned long x)
{
	long r = link_nop_got(x);

	__asm__ volatile("" ::: "memory");	/* no tail call */
	return r;
}

noinline long dy_cmp_leaf(long x)
{
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(110L) : "rcx", "r11", "memory");
	return ret + x;
}

noinline int dy_cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	dy_sink += dy_cmp_leaf(x);
	return x < y ? -1 : x > y;
}

noinline void dy_sort(unsigned long seed)
{
	long v[64];

	for (int i = 0; i < 64; i++)
		v[i] = (long)((seed + (unsigned long)i) * 2654435761UL % 1000);
	qsort(v, 64, sizeof(v[0]), dy_cmp);
	__asm__ volatile("" ::: "memory");	/* no tail call */
}

noinline long dy_read(int fd)
{
	char buf[64];
	long r = read(fd, buf, sizeof(buf));

	__asm__ volatile("" ::: "memory");	/* no tail call */
	return r;
}

static long elapsed_ms(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

int main(int argc, char **argv);

static int run_libc(long msec)
{
	int fd = open("/dev/zero", O_RDONLY);
	struct timespec t0;

	if (fd < 0)
		return 2;
	printf("round 1\n");
	where("dy_cmp_leaf", (void *)dy_cmp_leaf);
	where("dy_cmp", (void *)dy_cmp);
	where("dy_sort", (void *)dy_sort);
	where("dy_read", (void *)dy_read);
	where("main", (void *)main);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long i = 0; elapsed_ms(&t0) < msec; i++)
		dy_sort(i);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long i = 0; i % 64 || elapsed_ms(&t0) < msec; i++)
		dy_sink += dy_read(fd);
	printf("done\n");
	return 0;
}

extern const ElfW(Ehdr) __ehdr_start;

/* Print where section @name of this executable lies ("name start end"). */
static int where_section(const char *name)
{
	const ElfW(Ehdr) *eh = &__ehdr_start;
	ElfW(Shdr) sh[64];
	char names[4096];
	int fd = open("/proc/self/exe", O_RDONLY);
	int ret = -1;

	if (fd < 0)
		return -1;
	if (eh->e_shnum <= 64 && eh->e_shstrndx < eh->e_shnum &&
	    pread(fd, sh, eh->e_shnum * sizeof(sh[0]), (off_t)eh->e_shoff) ==
		    (ssize_t)(eh->e_shnum * sizeof(sh[0])) &&
	    pread(fd, names, sizeof(names) - 1, (off_t)sh[eh->e_shstrndx].sh_offset) > 0) {
		names[sizeof(names) - 1] = 0;
		for (int i = 0; i < eh->e_shnum; i++) {
			if (sh[i].sh_name < sizeof(names) && !strcmp(names + sh[i].sh_name, name)) {
				unsigned long start = (unsigned long)eh + sh[i].sh_addr;

				printf("%s %#lx %#lx\n", name, start, start + sh[i].sh_size);
				ret = 0;
			}
		}
	}
	close(fd);
	return ret;
}

/*
 * Print where the PLT entry that @fn calls first lies: the target of its
 * first "call rel32" (e8), an entry of @size bytes.
 */
static unsigned long where_call(const char *name, const unsigned char *fn, unsigned long size)
{
	for (int i = 0; i < 16; i++) {
		unsigned long to;
		int rel;

		if (fn[i] != 0xe8)
			continue;
		memcpy(&rel, fn + i + 1, sizeof(rel));
		to = (unsigned long)(fn + i + 5) + rel;
		printf("%s %#lx %#lx\n", name, to, to + size);
		return to;
	}
	return 0;
}

static int run_plt(long msec)
{
	long (*volatile taken)(unsigned long) = link_nop_got;
	struct timespec t0;

	printf("round 1\n");
	/* The entries first: a name is looked up in the order given. */
	if (!where_call("link_nop@plt", (const void *)dy_plt, 16) ||
	    !where_call("link_nop_got@plt", (const void *)dy_plt_got, 8) ||
	    where_section(".plt") || where_section(".plt.got"))
		return 2;
	where("dy_plt", (void *)dy_plt);
	where("dy_plt_got", (void *)dy_plt_got);
	where("main", (void *)main);
	dy_sink += taken(0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long i = 0; i % 256 || elapsed_ms(&t0) < msec; i++)
		dy_sink += dy_plt(i);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long i = 0; i % 256 || elapsed_ms(&t0) < msec; i++)
		dy_sink += dy_plt_got(i);
	printf("done\n");
	return 0;
}

static unsigned long dy_stub;		/* link_nop_got's .plt.got entry */
static volatile sig_atomic_t dy_signals, dy_stub_signals;

noinline long dy_sig_leaf(unsigned long x)
{
	volatile unsigned long acc = x;

	for (unsigned long i = 0; i < 10000; i++)
		acc += i ^ x;
	return (long)acc;
}

/* Spins (2 ms) only where the signal came on the entry's jump. */
noinline void dy_on_signal(int sig, siginfo_t *si, void *ctx)
{
	const ucontext_t *uc = ctx;
	struct timespec t0;

	(void)si;
	dy_signals++;
	if ((unsigned long)uc->uc_mcontext.gregs[REG_RIP] != dy_stub)
		return;
	dy_stub_signals++;
	clock_gettime(CLOCK_MONOTONIC, &t0);	/* async-signal-safe */
	do
		dy_sink += dy_sig_leaf((unsigned long)sig);
	while (elapsed_ms(&t0) < 2);
}

static int run_plt_signal(long msec)
{
	long (*volatile taken)(unsigned long) = link_nop_got;
	struct itimerval it = { { 0, 100 }, { 0, 100 } }, off = { { 0, 0 }, { 0, 0 } };
	struct sigaction sa;
	struct timespec t0;

	printf("round 1\n");
	dy_stub = where_call("link_nop_got@plt", (const void *)dy_plt_got, 8);
	if (!dy_stub)
		return 2;
	where("dy_sig_leaf", (void *)dy_sig_leaf);
	where("dy_on_signal", (void *)dy_on_signal);
	where("dy_plt_got", (void *)dy_plt_got);
	where("main", (void *)main);
	dy_sink += taken(0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = dy_on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	if (sigaction(SIGALRM, &sa, NULL) || setitimer(ITIMER_REAL, &it, NULL))
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long i = 0; i % 256 || (dy_stub_signals < 100 && elapsed_ms(&t0) < 4 * msec);
	     i++)
		dy_sink += dy_plt_got(i);
	setitimer(ITIMER_REAL, &off, NULL);
	printf("# plt-signal: %ld signals, %ld of them on the entry\n", (long)dy_signals, (long)dy_stub_signals);
	printf("done\n");
	return 0;
}

struct unmapper {
	void *page;
	long msec;
};

/* Calls of the plugin made so far (the unmapper waits for 200 of them). */
static volatile unsigned long unmap_calls;

static void *unmapper(void *arg)
{
	struct unmapper *u = arg;
	struct timespec ts = { u->msec / 1000, (u->msec % 1000) * 1000000 };
	struct timespec tick = { 0, 10 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	/* However slowly the guest runs (a debug kernel on a busy host). */
	for (int i = 0; unmap_calls < 200 && i < 10 * (u->msec / 10 + 1); i++)
		nanosleep(&tick, NULL);
	munmap(u->page, (size_t)sysconf(_SC_PAGESIZE));
	return NULL;
}

/* Call the plugin until a thread unmaps its leaf's page: never returns. */
static int run_unmap(long msec, const char *plugin)
{
	void *h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
	long page = sysconf(_SC_PAGESIZE);
	struct unmapper u;
	pthread_t t;
	plug_fn top;

	if (!h || !(top = (plug_fn)dlsym(h, "plug_top")))
		return 2;
	u.page = (void *)((unsigned long)dlsym(h, "plug_leaf") & ~(page - 1));
	u.msec = msec / 2;
	printf("round 1\n");
	where("plug_leaf", dlsym(h, "plug_leaf"));
	if (pthread_create(&t, NULL, unmapper, &u))
		return 2;
	for (unsigned long i = 0;; i++) {
		dy_sink += dy_call(top, i);
		unmap_calls = i + 1;
	}
}

noinline long dy_mark_leaf(unsigned long x)
{
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(110L) : "rcx", "r11", "memory");
	return ret + (long)x;
}

noinline long dy_mark(unsigned long x)
{
	long r = dy_mark_leaf(x);

	__asm__ volatile("" ::: "memory");	/* no tail call */
	return r;
}

/* Copy @src to @dst: over the same inode (O_TRUNC), or as a new file. */
static int write_over(const char *src, const char *dst, int recreate)
{
	char buf[16384];
	int in, out, ok = 1;
	ssize_t n;

	if (recreate && unlink(dst))
		return -1;
	in = open(src, O_RDONLY);
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (in < 0 || out < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		ok &= write(out, buf, (size_t)n) == n;
	ok &= n == 0;
	close(in);
	return close(out) || !ok ? -1 : 0;
}

static int run_rewrite(long msec, const char *path, const char *a, const char *b,
		       const char *c)
{
	const char *src[6] = { a, b, a, b, c, b };
	long page = sysconf(_SC_PAGESIZE);

	for (int round = 1; round <= (c ? 6 : 4); round++) {
		struct timespec t0;
		struct stat sb;
		Dl_info info;
		plug_fn top;
		void *h, *leaf;

		if (round > 1) {
			clock_gettime(CLOCK_MONOTONIC, &t0);
			for (unsigned long i = 0; i % 64 || elapsed_ms(&t0) < msec / 4; i++)
				dy_sink += dy_mark(i);
		}
		if (write_over(src[round - 1], path, round == 3) || stat(path, &sb))
			return 2;
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!h || !(top = (plug_fn)dlsym(h, "plug_top")) ||
		    !(leaf = dlsym(h, "plug_leaf")) || !dladdr(leaf, &info))
			return 2;
		if (round == 4 &&
		    madvise((void *)((unsigned long)leaf & ~(page - 1)), page, MADV_DONTFORK))
			return 2;
		/*
		 * Round 3: the page of its ELF header is not mapped when a walk
		 * first meets the plugin, so the kernel reads the headers only
		 * after faulting it in.
		 */
		if (round == 3 && madvise(info.dli_fbase, page, MADV_DONTNEED))
			return 2;
		printf("# rewrite round %d: base %p inode %lu\n", round, info.dli_fbase,
		       (unsigned long)sb.st_ino);
		printf("round %d\n", round);
		where("plug_leaf", leaf);
		where("plug_mid", dlsym(h, "plug_mid"));
		where("plug_top", (void *)top);
		where("dy_call", (void *)dy_call);
		where("main", (void *)main);
		where("dy_mark_leaf", (void *)dy_mark_leaf);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (unsigned long i = 0; i % 64 || elapsed_ms(&t0) < msec; i++)
			dy_sink += dy_call(top, i);
		dlclose(h);
	}
	printf("done\n");
	return 0;
}

int main(int argc, char **argv)
{
	long msec = argc > 1 ? atol(argv[1]) : 300;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 2 && !strcmp(argv[2], "libc"))
		return run_libc(msec);
	if (argc > 2 && !strcmp(argv[2], "plt"))
		return run_plt(msec);
	if (argc > 2 && !strcmp(argv[2], "plt-signal"))
		return run_plt_signal(msec);
	if (argc > 3 && !strcmp(argv[2], "unmap"))
		return run_unmap(msec, argv[3]);
	if (argc > 5 && !strcmp(argv[2], "rewrite"))
		return run_rewrite(msec, argv[3], argv[4], argv[5], argc > 6 ? argv[6] : NULL);
	if (argc > 2 && !strcmp(argv[2], "link")) {
		struct timespec t0;

		printf("round 1\n");
		where("link_leaf", (void *)link_leaf);
		where("link_tail", (void *)link_tail);
		where("link_top", (void *)link_top);
		where("dy_link", (void *)dy_link);
		where("main", (void *)main);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (unsigned long i = 0; i % 64 || elapsed_ms(&t0) < msec; i++)
			dy_sink += dy_link(i);
		printf("done\n");
		return 0;
	}
	for (int p = 2; p < argc; p++) {
		void *h = dlopen(argv[p], RTLD_NOW | RTLD_LOCAL);
		plug_fn top;
		struct timespec t0;

		if (!h) {
			fprintf(stderr, "dlopen %s: %s\n", dlerror(), argv[p]);
			return 2;
		}
		top = (plug_fn)dlsym(h, "plug_top");
		if (!top)
			return 2;
		printf("round %d\n", p - 1);
		where("plug_leaf", dlsym(h, "plug_leaf"));
		where("plug_mid", dlsym(h, "plug_mid"));
		where("plug_top", (void *)top);
		where("dy_call", (void *)dy_call);
		where("main", (void *)main);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (unsigned long i = 0; i % 64 || elapsed_ms(&t0) < msec; i++)
			dy_sink += dy_call(top, i);
		dlclose(h);
	}
	printf("done\n");
	return 0;
}
