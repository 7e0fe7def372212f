// SPDX-License-Identifier: GPL-2.0
/*
 * Cost of one profiling configuration on one workload, repeated in one boot.
 * Figures only: the exit status is non-zero only when it could not measure.
 *
 *   cost_bench WORKLOAD MODE [REPS] [PERIOD_NS]
 *
 * WORKLOAD: short (64-byte reads), long (4 MiB reads), deep (100 frames,
 * 32 bytes each as clang builds them, then 4 KiB reads), cpu (a
 * user loop), offcpu (pipe ping-pong with a partner process: every read
 * blocks). MODE: none, classic (frame-pointer callchain in the sample),
 * deferred (defer_callchain + defer_output), or ext (no event of our own:
 * the program runs under perf record and only times itself). With
 * $COST_CTL and $COST_ACK (the fifos of perf record --control
 * fifo:CTL,ACK -D -1), any mode enables perf's events around each
 * repetition alone, as it does its own: perf's samples are the workload's.
 *
 * cpu-clock sampling (PERIOD_NS, default 50000) on one task, except offcpu,
 * which samples every context switch (context-switches, period 1) as
 * off-CPU profilers do. The workload is pinned to CPU 1 so that what runs
 * beside it (perf record, the partner) does not move it around.
 *
 * Each repetition prints one line:
 *   cost: wl=W mode=M rep=I ns=T samples=N bytes=B unwinds=U complete=C lost=L
 * ns is CLOCK_MONOTONIC around the workload alone (the ring is read after
 * it, outside the measured time): under QEMU -icount with sleep=off that
 * clock is virtual time, i.e. guest instructions. bytes: ring bytes of
 * samples and deferred records; unwinds: user stack walks (classic: samples
 * with a user chain; deferred: CALLCHAIN_DEFERRED records); complete:
 * samples whose user stack (inline or stitched by cookie) reaches
 * bench_root; lost: samples the kernel reported lost.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../tests/guest/stitch_util.h"

#define noinline __attribute__((noinline))

enum mode { NONE, CLASSIC, DEFERRED, EXT };
static const char *const mode_name[] = { "none", "classic", "deferred", "ext" };

static int zero_fd, pipe_to[2], pipe_from[2], ctl_fd = -1, ack_fd = -1;
static char *buf;
static unsigned long sink;

/* --- workloads: a fixed amount of work each --------------------------- */

noinline void wl_short(void)
{
	for (int i = 0; i < 4000; i++)
		ds_syscall3(SYS_read, zero_fd, (long)buf, 64);
}

noinline void wl_long(void)
{
	for (int i = 0; i < 12; i++)
		ds_syscall3(SYS_read, zero_fd, (long)buf, 4 << 20);
}

#define DEEP_FRAMES 100

noinline void deep_leaf(void)
{
	for (int i = 0; i < 300; i++)
		ds_syscall3(SYS_read, zero_fd, (long)buf, 4096);
}

noinline void deep(int depth)
{
	/*
	 * clang keeps only the byte used: 32-byte frames, 3.2 KiB in all,
	 * within perf's 8 KiB dwarf copy (RESULTS.md's figures are this).
	 */
	volatile char frame[80];

	frame[0] = (char)depth;
	if (depth)
		deep(depth - 1);
	else
		deep_leaf();
	sink += frame[0];
}

noinline void wl_deep(void)
{
	for (int i = 0; i < 4; i++)
		deep(DEEP_FRAMES);
}

noinline unsigned long spin_leaf(unsigned long x)
{
	for (int i = 0; i < 1000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

noinline void wl_cpu(void)
{
	unsigned long x = 1;

	for (int i = 0; i < 6000; i++)
		x = spin_leaf(x);
	sink += x;
}

noinline void wl_offcpu(void)
{
	char c = 0;

	/* Each read blocks until the partner answers: a switch out and back. */
	for (int i = 0; i < 1500; i++) {
		ds_syscall3(SYS_write, pipe_to[1], (long)&c, 1);
		ds_syscall3(SYS_read, pipe_from[0], (long)&c, 1);
	}
}

static const struct {
	const char *name;
	void (*fn)(void);
} workloads[] = {
	{ "short", wl_short }, { "long", wl_long }, { "deep", wl_deep },
	{ "cpu", wl_cpu }, { "offcpu", wl_offcpu },
};

/* Every sampled user stack of a workload runs through here. */
noinline void bench_root(void (*fn)(void))
{
	fn();
	__asm__ volatile("" ::: "memory");
}

/* --- measuring --------------------------------------------------------- */

struct run {
	struct ds_collect c;
	uint64_t bytes, lost;
};

static void count(const struct ds_event *ev, void *arg)
{
	struct run *r = arg;

	if (ev->type == PERF_RECORD_SAMPLE || ev->type == DS_RECORD_CALLCHAIN_DEFERRED)
		r->bytes += ev->size;
	/* PERF_RECORD_LOST: { header, id, lost }: count samples, not records. */
	if (ev->type == PERF_RECORD_LOST && ev->size >= sizeof(*ev->hdr) + 16)
		r->lost += ((const uint64_t *)(ev->hdr + 1))[1];
	ds_collect_record(ev, &r->c);
}

static const struct ds_symtab *symtab;
static uint64_t root_lo, root_hi;

/* Does a user chain reach bench_root? (Its address range, looked up once.) */
static int reaches_root(const uint64_t *ips, uint64_t nr)
{
	for (uint64_t i = 0; i < nr; i++)
		if (ips[i] >= root_lo && ips[i] < root_hi)
			return 1;
	return 0;
}

static void find_root_range(void)
{
	uint64_t a = (uint64_t)(uintptr_t)bench_root;

	root_lo = a;
	/* The function ends where the symbol lookup stops naming it. */
	for (root_hi = a; root_hi < a + 4096; root_hi++) {
		const char *s = ds_symtab_lookup(symtab, root_hi);

		if (!s || strcmp(s, "bench_root"))
			break;
	}
}

/* The deferred record for sample @i: records mostly follow their samples. */
static const struct ds_rec *record_for(const struct ds_collect *c, long i)
{
	const struct ds_rec *s = &c->recs[i];

	for (long j = i + 1; j < c->n; j++)
		if (c->recs[j].deferred && c->recs[j].tid == s->tid &&
		    c->recs[j].cookie == s->cookie)
			return &c->recs[j];
	for (long j = i - 1; j >= 0; j--)
		if (c->recs[j].deferred && c->recs[j].tid == s->tid &&
		    c->recs[j].cookie == s->cookie)
			return &c->recs[j];
	return NULL;
}

static void summarize(const struct run *r, long *samples, long *unwinds, long *complete)
{
	const struct ds_collect *c = &r->c;

	*samples = *unwinds = *complete = 0;
	for (long i = 0; i < c->n; i++) {
		const struct ds_rec *s = &c->recs[i], *d;

		if (s->deferred) {
			(*unwinds)++;
			continue;
		}
		(*samples)++;
		if (s->cookie) {
			d = record_for(c, i);
			*complete += d && reaches_root(d->ips, d->nr);
		} else if (s->user_start >= 0) {
			(*unwinds)++;
			*complete += reaches_root(s->ips + s->user_start,
						  s->nr - s->user_start);
		}
	}
}

static int open_event(enum mode m, int offcpu, uint64_t period)
{
	struct perf_event_attr attr;

	ds_attr_sampling(&attr, period);
	if (offcpu) {
		attr.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
		attr.sample_period = 1;
	}
	if (m == DEFERRED) {
		ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
		/* Mainline delivers records only to defer_output events. */
		ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_OUTPUT, 1);
	}
	return ds_perf_open(&attr, 0, -1, -1, 0);
}

/* perf record --control: send "enable"/"disable", wait for its "ack". */
static void perf_ctl(const char *cmd)
{
	char ack[16];

	if (ctl_fd < 0)
		return;
	if (write(ctl_fd, cmd, strlen(cmd)) < 0 || read(ack_fd, ack, sizeof(ack)) <= 0)
		fprintf(stderr, "cost_bench: perf control %s failed\n", cmd);
}

static void partner(void)
{
	char c;

	/* Our copy of the write end would keep read() from seeing EOF. */
	close(pipe_to[1]);
	close(pipe_from[0]);
	while (read(pipe_to[0], &c, 1) == 1)
		if (write(pipe_from[1], &c, 1) != 1)
			break;
	_exit(0);
}

int main(int argc, char **argv)
{
	const char *wl_name = argc > 1 ? argv[1] : "";
	const char *mode_arg = argc > 2 ? argv[2] : "";
	int reps = argc > 3 ? atoi(argv[3]) : 5;
	uint64_t period = argc > 4 ? strtoull(argv[4], NULL, 0) : 50000;
	void (*fn)(void) = NULL;
	enum mode m = NONE;
	int offcpu, fd = -1;
	struct ds_mmap ring = { 0 };
	pid_t child = -1;

	for (size_t i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++)
		if (!strcmp(wl_name, workloads[i].name))
			fn = workloads[i].fn;
	while (m <= EXT && strcmp(mode_arg, mode_name[m]))
		m++;
	if (!fn || m > EXT || reps < 1) {
		fprintf(stderr, "usage: cost_bench short|long|deep|cpu|offcpu "
			"none|classic|deferred|ext [REPS] [PERIOD_NS]\n");
		return 2;
	}
	offcpu = fn == wl_offcpu;
	ds_pin(0, 1);
	buf = malloc(4 << 20);
	zero_fd = open("/dev/zero", O_RDONLY);
	symtab = ds_symtab_load("/proc/self/exe");
	if (!buf || zero_fd < 0 || !symtab || pipe(pipe_to) || pipe(pipe_from)) {
		perror("cost_bench: setup");
		return 1;
	}
	find_root_range();
	if (offcpu) {
		child = fork();
		if (child == 0)
			partner();
	}
	if (getenv("COST_CTL") && getenv("COST_ACK")) {
		ctl_fd = open(getenv("COST_CTL"), O_WRONLY);
		ack_fd = open(getenv("COST_ACK"), O_RDONLY);
		if (ctl_fd < 0 || ack_fd < 0) {
			perror("cost_bench: perf control fifos");
			return 1;
		}
	}
	if (m == CLASSIC || m == DEFERRED) {
		fd = open_event(m, offcpu, period);
		if (fd < 0 || ds_mmap_open(&ring, fd, 2048)) {
			fprintf(stderr, "cost_bench: cannot open the %s event\n", mode_name[m]);
			return 1;
		}
	}
	bench_root(fn);		/* warm up: page in the buffer and the stack */
	for (int rep = 1; rep <= reps; rep++) {
		struct run r = { 0 };
		struct timespec t0, t1;
		long samples = 0, unwinds = 0, complete = 0;

		perf_ctl("enable\n");
		if (fd >= 0)
			ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		bench_root(fn);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		perf_ctl("disable\n");
		if (fd >= 0) {
			ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
			ds_mmap_drain(&ring, count, &r);
			summarize(&r, &samples, &unwinds, &complete);
		}
		printf("cost: wl=%s mode=%s rep=%d ns=%lld samples=%ld bytes=%llu unwinds=%ld "
		       "complete=%ld lost=%ld\n", wl_name, mode_name[m], rep,
		       (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL +
		       (t1.tv_nsec - t0.tv_nsec), samples, (unsigned long long)r.bytes,
		       unwinds, complete, (long)r.lost);
		fflush(stdout);
		ds_collect_free(&r.c);
	}
	if (fd >= 0) {
		ds_mmap_close(&ring);
		close(fd);
	}
	if (child > 0) {
		close(pipe_to[1]);
		waitpid(child, NULL, 0);
	}
	return 0;
}
