// SPDX-License-Identifier: GPL-2.0
/*
 * Cost of delivering deferred records when many other events are open.
 * Every getppid() is sampled (syscalls:sys_enter_getppid, period 1), with a
 * classic and then with a deferred callchain: each deferred call asks for one
 * record and gets it at the return to user space. The time per call is
 * measured with the sampling event alone, then with N counting events without
 * defer bits in the task's context and N more in this CPU's context, then
 * with N defer_output side-band events of N other sessions (session keys) on
 * this CPU, which delivery has to look at. The extra events cost the classic
 * run too (the tick walks active events); the difference of the differences
 * is what they cost delivery.
 *
 * Prints figures only ("bench: ..."), never fails on a number.
 *
 *   delivery_bench [N] [CALLS]     (default 1000 events, 2000 calls per round)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../tests/guest/stitch_util.h"

#ifndef PERF_EVENT_IOC_SET_DEFER_SESSION
#define PERF_EVENT_IOC_SET_DEFER_SESSION _IOW('$', 32, __u64)
#endif

static int *extra;
static int nextra;

static double ns_per_call(long calls)
{
	struct timespec t0, t1;

	for (long i = 0; i < calls / 10; i++)	/* warm up */
		ds_syscall3(SYS_getppid, 0, 0, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < calls; i++)
		ds_syscall3(SYS_getppid, 0, 0, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / calls;
}

/* Best of five: emulation noise only ever adds time. */
static double best(long calls)
{
	double b = 1e30;

	for (int i = 0; i < 5; i++) {
		double t = ns_per_call(calls);

		if (t < b)
			b = t;
	}
	return b;
}

static int add_counting(pid_t pid, int cpu)
{
	struct perf_event_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_PAGE_FAULTS;
	fd = ds_perf_open(&attr, pid, cpu, -1, 0);
	if (fd >= 0)
		extra[nextra++] = fd;
	return fd;
}

static int add_session(int cpu, __u64 key)
{
	struct perf_event_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.sample_id_all = 1;
	attr.sample_type = PERF_SAMPLE_TID;
	attr.task = 1;
	ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_OUTPUT, 1);
	fd = ds_perf_open(&attr, -1, cpu, -1, 0);
	if (fd < 0)
		return fd;
	extra[nextra++] = fd;
	if (ioctl(fd, PERF_EVENT_IOC_SET_DEFER_SESSION, &key))
		return -errno;
	return fd;
}

static void close_extra(void)
{
	while (nextra)
		close(extra[--nextra]);
}

struct figures {
	double alone, unrel, sess;	/* ns per call; sess < 0: not measured */
	long records, samples, lost;
};

/* Time getppid() with a sampling event (deferred or classic) and the extras. */
static int measure(bool deferred, int n, long calls, struct figures *f)
{
	struct perf_event_attr attr;
	struct ds_mmap ring;
	struct ds_collect c = { 0 };
	int fd, ret;

	ret = ds_attr_tracepoint(&attr, "syscalls", "sys_enter_getppid");
	if (ret) {
		printf("bench: delivery: no syscalls:sys_enter_getppid tracepoint (%s)\n",
		       strerror(-ret));
		return -1;
	}
	attr.disabled = 1;
	if (deferred)
		ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
	fd = ds_perf_open(&attr, 0, -1, -1, 0);
	if (fd < 0 || ds_mmap_open(&ring, fd, 1024)) {
		printf("bench: delivery: cannot open the sampling event (%s)\n", strerror(-fd));
		return -1;
	}
	c.only_tid = (uint32_t)gettid();
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	/* Few enough calls per round for the 4 MiB buffer: every record fits. */
	f->alone = best(calls);
	ds_mmap_drain(&ring, ds_collect_record, &c);

	for (int i = 0; i < n; i++) {
		if (add_counting(0, -1) < 0 || add_counting(-1, 0) < 0) {
			printf("bench: delivery: opened only %d unrelated events\n", nextra);
			break;
		}
	}
	f->unrel = best(calls);
	ds_mmap_drain(&ring, ds_collect_record, &c);
	close_extra();

	f->sess = -1;
	for (int i = 0; i < n; i++) {
		ret = add_session(0, 1000 + i);
		if (ret < 0) {
			close_extra();
			break;
		}
	}
	if (nextra) {
		f->sess = best(calls);
		ds_mmap_drain(&ring, ds_collect_record, &c);
		close_extra();
	}
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	ds_mmap_drain(&ring, ds_collect_record, &c);
	f->records = 0;
	for (long i = 0; i < c.n; i++)
		f->records += c.recs[i].deferred;
	f->samples = c.n - f->records;
	f->lost = c.lost;
	ds_mmap_close(&ring);
	close(fd);
	ds_collect_free(&c);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	long calls = argc > 2 ? atol(argv[2]) : 2000;
	struct rlimit rl = { 4 * n + 64, 4 * n + 64 };
	struct figures cl, df;
	double t_none;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
	if (setrlimit(RLIMIT_NOFILE, &rl))
		perror("bench: setrlimit");
	extra = calloc(3 * n + 1, sizeof(*extra));

	t_none = best(calls * 10);
	if (measure(false, n, calls, &cl) || measure(true, n, calls, &df))
		return 1;
	printf("bench: delivery: getppid() unprofiled: %.0f ns/call; %d extra events per kind\n",
	       t_none, n);
	printf("bench: delivery: %-34s %10s %10s %10s\n", "ns/call", "classic", "deferred",
	       "diff");
	printf("bench: delivery: %-34s %10.0f %10.0f %+10.0f\n", "sampling event alone", cl.alone,
	       df.alone, df.alone - cl.alone);
	printf("bench: delivery: %-34s %10.0f %10.0f %+10.0f\n", "+ unrelated events (task + CPU)",
	       cl.unrel, df.unrel, df.unrel - cl.unrel);
	if (df.sess >= 0)
		printf("bench: delivery: %-34s %10.0f %10.0f %+10.0f\n",
		       "+ other sessions' defer_output", cl.sess, df.sess, df.sess - cl.sess);
	else
		printf("bench: delivery: other sessions: not measured (no session keys on this kernel)\n");
	printf("bench: delivery: cost of the extra events to delivery: unrelated %+.0f ns/call",
	       (df.unrel - df.alone) - (cl.unrel - cl.alone));
	if (df.sess >= 0)
		printf(", other sessions %+.0f ns/call", (df.sess - df.alone) - (cl.sess - cl.alone));
	printf("\n");
	printf("bench: delivery: deferred: %ld records for %ld samples (%ld lost)\n", df.records,
	       df.samples, df.lost);
	return 0;
}
