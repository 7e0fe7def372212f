// SPDX-License-Identifier: GPL-2.0
/*
 * Stress workload of the sframe_stress test: stacks through many mappings
 * of one object, walked by many threads at once, through pages that are
 * served late (a userfaultfd handler, a slow FUSE daemon), and through an
 * object whose SFrame table is over 4 MiB. Static, built without frame
 * pointers and with SFrame tables, like the object it maps (sf_hop.c).
 *
 * The object is mapped COPIES times by this program itself, as a dynamic
 * loader would (its PT_LOAD segments from the file, the ELF header at file
 * offset 0 first), and run as a ring: hop() of copy i calls copy i + 1
 * (mod COPIES), DEPTH times, then a leaf of ours. A record of a hit in the
 * leaf holds leaf <- hop of copy k <- hop of copy k - 1 <- ... (DEPTH + 1
 * hops) <- run_chain. "copy K START END" lines on stdout say where the text
 * of each copy lies.
 *
 *   sf_multi ring OBJ COPIES DEPTH MSEC THREADS
 *	THREADS threads spin in spin_leaf under the ring for MSEC.
 *   sf_multi wake OBJ COPIES DEPTH ROUNDS THREADS
 *	THREADS threads block in wait_leaf (a futex) under the ring, are
 *	woken all at once, ROUNDS times.
 *   sf_multi uffd OBJ DEPTH ROUNDS
 *	A thread whose stack is registered with userfaultfd blocks in
 *	read_leaf (a pipe read) under the ring; while it is blocked its stack
 *	is copied away and dropped (MADV_DONTNEED), then it is woken: its
 *	return to user space meets a stack whose every page is missing, served
 *	again by a handler thread of this process. ROUNDS times.
 *   sf_multi fuse FAST SLOW DEPTH MSEC
 *	Thread "spinner" spins under the ring of FAST for MSEC; MSEC/4 in,
 *	thread "loader" maps SLOW (served by a slow FUSE daemon) and spins
 *	under it too. "# loaded SLOW in N ms" is printed once its first call
 *	returns.
 *   sf_multi swap FIRST THEN DEPTH MSEC
 *	Spins under one copy of FIRST for MSEC, unmaps it, maps THEN where
 *	it was and spins under that for MSEC: one "copy 0" line covering both
 *	texts, then "# swapped at ADDR". No other mapping without a table is
 *	met on the way (a static program, no C library mapping).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sf_hop.h"

#define noinline __attribute__((noinline))

static void die(const char *what)
{
	fprintf(stderr, "sf_multi: %s: %s\n", what, strerror(errno));
	exit(2);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* A system call from the leaf itself; the fourth argument (r10) is 0. */
static inline __attribute__((always_inline)) long raw_syscall3(long nr, long a, long b, long c)
{
	register long r10 __asm__("r10") = 0;
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

/*
 * Map the object at @path as the dynamic loader would, at @want if not 0
 * (or fail); returns the address of its entry point (hop) and where its
 * text lies, and in @at and @len (if not NULL) the whole mapping.
 */
static hop_fn map_object_at(const char *path, unsigned long want, unsigned long *text,
			    unsigned long *text_end, unsigned long *at, unsigned long *len)
{
	unsigned long lo = ULONG_MAX, hi = 0;
	Elf64_Phdr ph[16];
	Elf64_Ehdr eh;
	char *base;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die(path);
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || eh.e_phnum > 16 ||
	    pread(fd, ph, eh.e_phnum * sizeof(ph[0]), eh.e_phoff) !=
	    (ssize_t)(eh.e_phnum * sizeof(ph[0]))) {
		errno = ENOEXEC;
		die(path);
	}
	for (int i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		if (ph[i].p_vaddr < lo)
			lo = ph[i].p_vaddr & ~4095UL;
		if (ph[i].p_vaddr + ph[i].p_memsz > hi)
			hi = ph[i].p_vaddr + ph[i].p_memsz;
	}
	base = mmap((void *)want, hi - lo, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | (want ? MAP_FIXED_NOREPLACE : 0), -1, 0);
	if (base == MAP_FAILED)
		die("mmap");
	if (at) {
		*at = (unsigned long)base;
		*len = hi - lo;
	}
	base -= lo;
	for (int i = 0; i < eh.e_phnum; i++) {
		unsigned long va = ph[i].p_vaddr & ~4095UL, off = ph[i].p_offset & ~4095UL;
		int prot = (ph[i].p_flags & PF_R ? PROT_READ : 0) |
			   (ph[i].p_flags & PF_W ? PROT_WRITE : 0) |
			   (ph[i].p_flags & PF_X ? PROT_EXEC : 0);

		if (ph[i].p_type != PT_LOAD)
			continue;
		if (mmap(base + va, ph[i].p_offset + ph[i].p_filesz - off, prot,
			 MAP_PRIVATE | MAP_FIXED, fd, off) == MAP_FAILED)
			die("mmap segment");
		if (ph[i].p_flags & PF_X) {
			*text = (unsigned long)base + ph[i].p_vaddr;
			*text_end = *text + ph[i].p_memsz;
		}
	}
	close(fd);
	return (hop_fn)(base + eh.e_entry);
}

static hop_fn map_object(const char *path, unsigned long *text, unsigned long *text_end)
{
	return map_object_at(path, 0, text, text_end, NULL, NULL);
}

static void map_ring(struct hop_ring *r, const char *path, long copies, long first)
{
	unsigned long t, e;

	if (copies < 1 || copies > HOP_MAX_COPIES) {
		fprintf(stderr, "sf_multi: 1 to %d copies\n", HOP_MAX_COPIES);
		exit(2);
	}
	r->n = copies;
	for (long i = 0; i < copies; i++) {
		r->fn[i] = map_object(path, &t, &e);
		printf("copy %ld %#lx %#lx\n", first + i, t, e);
	}
	fflush(stdout);
}

volatile unsigned long sink;

noinline long spin_leaf(long i)
{
	for (int k = 0; k < 2000; k++)
		sink += k ^ i;
	return (long)sink;
}

static atomic_int gen, waiting;
static _Thread_local int seen_gen;

noinline long wait_leaf(long i)
{
	atomic_fetch_add(&waiting, 1);
	raw_syscall3(SYS_futex, (long)&gen, FUTEX_WAIT_PRIVATE, seen_gen);
	return i;
}

static int leaf_pipe[2];
static atomic_int reader_blocked;

noinline long read_leaf(long i)
{
	char c;

	atomic_store(&reader_blocked, 1);
	raw_syscall3(SYS_read, leaf_pipe[0], (long)&c, 1);
	return i + c;
}

noinline long run_chain(const struct hop_ring *r, long depth)
{
	long v = r->fn[0](depth, r, 0);

	__asm__ volatile("" ::: "memory");	/* no tail call */
	return v;
}

struct job {
	struct hop_ring ring;
	long depth, end_ms, rounds;
	const char *name, *slow_path;
	long delay_ms;
	pthread_t thread;
};

static void *spin_thread(void *arg)
{
	struct job *j = arg;

	if (j->name)
		prctl(PR_SET_NAME, j->name);
	if (j->slow_path) {
		long t0;

		sleep_ms(j->delay_ms);
		t0 = now_ms();
		map_ring(&j->ring, j->slow_path, 1, 1);
		j->ring.leaf = spin_leaf;
		run_chain(&j->ring, j->depth);
		printf("# loaded %s in %ld ms\n", j->slow_path, now_ms() - t0);
		fflush(stdout);
	}
	while (now_ms() < j->end_ms)
		run_chain(&j->ring, j->depth);
	return NULL;
}

static void *wait_thread(void *arg)
{
	struct job *j = arg;

	while ((seen_gen = atomic_load(&gen)) < j->rounds)
		run_chain(&j->ring, j->depth);
	return NULL;
}

static void start(struct job *j, void *(*fn)(void *), const pthread_attr_t *attr)
{
	errno = pthread_create(&j->thread, attr, fn, j);
	if (errno)
		die("pthread_create");
}

static int run_ring(char **argv, bool wake)
{
	long threads = atol(argv[4]);
	struct job *jobs = calloc(threads > 0 ? threads : 1, sizeof(*jobs));
	struct hop_ring ring = { 0 };

	if (!jobs || threads < 1)
		return 2;
	map_ring(&ring, argv[0], atol(argv[1]), 0);
	ring.leaf = wake ? wait_leaf : spin_leaf;
	for (long t = 0; t < threads; t++) {
		jobs[t].ring = ring;
		jobs[t].depth = atol(argv[2]);
		jobs[t].end_ms = now_ms() + atol(argv[3]);
		jobs[t].rounds = atol(argv[3]);
		start(&jobs[t], wake ? wait_thread : spin_thread, NULL);
	}
	/* Each round: every thread blocked in wait_leaf, then all woken at once. */
	for (long r = 0; wake && r < jobs[0].rounds; r++) {
		long t0 = now_ms();

		while (atomic_load(&waiting) < threads * (r + 1) && now_ms() - t0 < 10000)
			sleep_ms(1);
		sleep_ms(2);
		atomic_fetch_add(&gen, 1);
		syscall(SYS_futex, &gen, FUTEX_WAKE_PRIVATE, INT_MAX);
	}
	for (long t = 0; t < threads; t++)
		pthread_join(jobs[t].thread, NULL);
	printf("# %ld threads done\n", threads);
	return 0;
}

/*
 * A copy of FIRST replaced by THEN at the same address: the walks of the
 * second half must not step THEN as the mapping they knew there before.
 */
static int run_swap(char **argv)
{
	unsigned long t1, e1, t2, e2, at, len, at2, len2;
	long depth = atol(argv[2]), msec = atol(argv[3]), end;
	struct hop_ring ring = { .n = 1, .leaf = spin_leaf };

	ring.fn[0] = map_object_at(argv[0], 0, &t1, &e1, &at, &len);
	for (end = now_ms() + msec; now_ms() < end;)
		run_chain(&ring, depth);
	if (munmap((void *)at, len))
		die("munmap");
	ring.fn[0] = map_object_at(argv[1], at, &t2, &e2, &at2, &len2);
	for (end = now_ms() + msec; now_ms() < end;)
		run_chain(&ring, depth);
	printf("copy 0 %#lx %#lx\n", t1 < t2 ? t1 : t2, e1 > e2 ? e1 : e2);
	printf("# swapped at %#lx: text %#lx-%#lx, then %#lx-%#lx\n", at, t1, e1, t2, e2);
	return 0;
}

/* userfaultfd: the reader thread's stack, served by a handler thread. */
#define UF_STACK	(256 * 1024)

struct uf {
	int fd;
	char *stack, *save;
	atomic_int saved, served, stop, reader_done, release;
};

static void *uf_handler(void *arg)
{
	struct uf *u = arg;

	prctl(PR_SET_NAME, "uf_handler");
	while (!atomic_load(&u->stop)) {
		struct pollfd p = { .fd = u->fd, .events = POLLIN };
		struct uffd_msg msg;
		unsigned long page;

		if (poll(&p, 1, 100) <= 0 || read(u->fd, &msg, sizeof(msg)) != sizeof(msg))
			continue;
		if (msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		page = msg.arg.pagefault.address & ~4095UL;
		if (atomic_load(&u->saved)) {
			struct uffdio_copy c = {
				.dst = page, .len = 4096,
				.src = (unsigned long)u->save + (page - (unsigned long)u->stack),
			};

			if (ioctl(u->fd, UFFDIO_COPY, &c) && errno != EEXIST)
				die("UFFDIO_COPY");
		} else {
			struct uffdio_zeropage z = { .range = { .start = page, .len = 4096 } };

			if (ioctl(u->fd, UFFDIO_ZEROPAGE, &z) && errno != EEXIST)
				die("UFFDIO_ZEROPAGE");
		}
		atomic_fetch_add(&u->served, 1);
	}
	return NULL;
}

static struct uf uf;

static void *uf_reader(void *arg)
{
	struct job *j = arg;

	prctl(PR_SET_NAME, "uf_reader");
	for (long r = 0; r < j->rounds; r++)
		run_chain(&j->ring, j->depth);
	/*
	 * An exiting task's faults are not served (its thread id is cleared
	 * for pthread_join at exit): wait until the stack is whole again.
	 */
	atomic_store(&uf.reader_done, 1);
	while (!atomic_load(&uf.release))
		sleep_ms(1);
	return NULL;
}

static int run_uffd(char **argv)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct job j = { .depth = atol(argv[1]), .rounds = atol(argv[2]) };
	pthread_t handler;
	pthread_attr_t attr;
	struct uf *u = &uf;
	long t0 = now_ms();

	map_ring(&j.ring, argv[0], 2, 0);
	j.ring.leaf = read_leaf;
	if (pipe(leaf_pipe))
		die("pipe");
	u->fd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (u->fd < 0 || ioctl(u->fd, UFFDIO_API, &api))
		die("userfaultfd");
	u->stack = mmap(NULL, UF_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	u->save = malloc(UF_STACK);
	if (u->stack == MAP_FAILED || !u->save)
		die("stack");
	reg.range.start = (unsigned long)u->stack;
	reg.range.len = UF_STACK;
	if (ioctl(u->fd, UFFDIO_REGISTER, &reg))
		die("UFFDIO_REGISTER");
	errno = pthread_create(&handler, NULL, uf_handler, u);
	if (errno)
		die("pthread_create");
	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, u->stack, UF_STACK);
	start(&j, uf_reader, &attr);
	for (long r = 0; r < j.rounds; r++) {
		long t = now_ms();
		int before;

		while (!atomic_load(&reader_blocked) && now_ms() - t < 10000)
			sleep_ms(1);
		sleep_ms(10);	/* in the kernel by now, not just about to enter */
		atomic_store(&reader_blocked, 0);
		memcpy(u->save, u->stack, UF_STACK);
		atomic_store(&u->saved, 1);
		if (madvise(u->stack, UF_STACK, MADV_DONTNEED))
			die("madvise");
		before = atomic_load(&u->served);
		if (write(leaf_pipe[1], "", 1) != 1)
			die("write");
		/* The reader's return walks, then runs, on missing pages. */
		t = now_ms();
		while (atomic_load(&u->served) == before && now_ms() - t < 10000)
			sleep_ms(1);
	}
	while (!atomic_load(&u->reader_done))
		sleep_ms(1);
	for (long off = 0; off < UF_STACK; off += 4096)
		sink += ((volatile char *)u->stack)[off];
	if (ioctl(u->fd, UFFDIO_UNREGISTER, &reg.range))
		die("UFFDIO_UNREGISTER");
	atomic_store(&u->release, 1);
	pthread_join(j.thread, NULL);
	atomic_store(&u->stop, 1);
	pthread_join(handler, NULL);
	printf("# uffd: %ld rounds, %d pages served, %ld ms\n", j.rounds,
	       atomic_load(&u->served), now_ms() - t0);
	return 0;
}

static int run_fuse(char **argv)
{
	long msec = atol(argv[3]);
	struct job fast = { .depth = atol(argv[2]), .end_ms = now_ms() + msec, .name = "spinner" };
	struct job slow = fast;

	map_ring(&fast.ring, argv[0], 1, 0);
	fast.ring.leaf = spin_leaf;
	slow.name = "loader";
	slow.slow_path = argv[1];
	slow.delay_ms = msec / 4;
	start(&fast, spin_thread, NULL);
	start(&slow, spin_thread, NULL);
	pthread_join(fast.thread, NULL);
	pthread_join(slow.thread, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 7 && !strcmp(argv[1], "ring"))
		return run_ring(argv + 2, false);
	if (argc == 7 && !strcmp(argv[1], "wake"))
		return run_ring(argv + 2, true);
	if (argc == 5 && !strcmp(argv[1], "uffd"))
		return run_uffd(argv + 2);
	if (argc == 6 && !strcmp(argv[1], "fuse"))
		return run_fuse(argv + 2);
	if (argc == 6 && !strcmp(argv[1], "swap"))
		return run_swap(argv + 2);
	fprintf(stderr, "usage: sf_multi ring|wake OBJ COPIES DEPTH MSEC|ROUNDS THREADS\n"
		"       sf_multi uffd OBJ DEPTH ROUNDS\n"
		"       sf_multi fuse FAST SLOW DEPTH MSEC\n"
		"       sf_multi swap FIRST THEN DEPTH MSEC\n");
	return 2;
}
