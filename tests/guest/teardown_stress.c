// SPDX-License-Identifier: GPL-2.0
/*
 * Teardown and stress: for a fixed number of rounds, a workload task that is
 * mostly inside long read() calls (so deferred unwinds are pending), forks and
 * execs children and hops between CPUs, is profiled by two tools at once that
 * open per-task (inherited) and per-CPU events with the defer bits, in two
 * sessions each (the second under its own key), and close them at random
 * moments, sometimes by exiting with them open; the workload is
 * then killed while an unwind is pending. The kernel must not splat (the
 * debug kernel checks lockdep, RCU, KASAN, sleeping in atomic), every open
 * must succeed, and deferred callchains must still be exact afterwards.
 *
 *   teardown_stress [ROUNDS]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stitch_util.h"
#include "workload.h"

#define NCPU 2

#ifndef PERF_EVENT_IOC_SET_DEFER_SESSION
#define PERF_EVENT_IOC_SET_DEFER_SESSION _IOW('$', 32, __u64)
#endif

static unsigned int rnd(unsigned int *seed, unsigned int n)
{
	*seed = *seed * 1103515245 + 12345;
	return (*seed >> 16) % n;
}

static void sleep_us(unsigned int us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* The workload: long reads, forks that exec, CPU hops; runs until killed. */
static void workload(void)
{
	/* KASAN makes the copy (and the faults of a new buffer) about 8x
	 * dearer on the debug kernel, which samples less often too */
	size_t len = (16u << 20) / (size_t)ds_period_scale();
	char *buf = malloc(len);
	int fd = open("/dev/zero", O_RDONLY);

	for (unsigned int i = 0;; i++) {
		wl_read_top(fd, buf, len);
		if (i % 3 == 0) {
			pid_t c = fork();

			if (c == 0) {
				execl("/tests/example_workload", "example_workload", "20",
				      "1048576", (char *)NULL);
				_exit(127);
			}
			if (c > 0 && i % 2)
				waitpid(c, NULL, 0);	/* others are reaped by init */
		}
		ds_pin(0, i % NCPU);
	}
}

/* One tool: open, sample a little, close (or just exit) at a random moment. */
static int tool(pid_t wl, unsigned int seed)
{
	struct perf_event_attr attr;
	struct ds_mmap rings[4 * NCPU];
	int fds[4 * NCPU], n = 0;

	/*
	 * Two sessions per tool, the second under its own key. Inherited
	 * per-task events cannot be mmapped with cpu = -1: open one per CPU,
	 * as perf does; then per-CPU events of all tasks.
	 */
	for (int s = 0; s < 2; s++) {
		__u64 key = s ? 1 + rnd(&seed, 1000) : 0;

		ds_attr_sampling(&attr, 100000 + rnd(&seed, 200000));
		ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
		if (rnd(&seed, 2))
			ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_OUTPUT, 1);
		for (int cpu = 0; cpu < 2 * NCPU; cpu++) {
			attr.inherit = cpu < NCPU;
			fds[n] = ds_perf_open(&attr, cpu < NCPU ? wl : -1, cpu % NCPU, -1, 0);
			if (fds[n] == -ESRCH)
				_exit(0);	/* the workload is already gone */
			if (fds[n] < 0) {
				printf("# %s open: %s\n", cpu < NCPU ? "per-task" : "per-CPU",
				       strerror(-fds[n]));
				return 1;
			}
			if (key && ioctl(fds[n], PERF_EVENT_IOC_SET_DEFER_SESSION, &key)) {
				printf("# PERF_EVENT_IOC_SET_DEFER_SESSION: %s\n", strerror(errno));
				return 1;
			}
			n++;
		}
	}
	for (int i = 0; i < n; i++) {
		int ret = ds_mmap_open(&rings[i], fds[i], 16);

		if (ret) {
			printf("# mmap: %s\n", strerror(-ret));
			return 1;
		}
		ioctl(fds[i], PERF_EVENT_IOC_ENABLE, 0);
	}
	sleep_us(1000 + rnd(&seed, 20000));
	if (rnd(&seed, 4) == 0)
		_exit(0);	/* let exit() tear everything down */
	for (int i = 0; i < n; i++) {
		int j = (i + rnd(&seed, n)) % n;

		if (fds[j] < 0)
			continue;
		if (rnd(&seed, 2))
			ds_mmap_close(&rings[j]);
		close(fds[j]);
		fds[j] = -1;
		sleep_us(rnd(&seed, 3000));
	}
	for (int i = 0; i < n; i++)
		ds_mmap_close(&rings[i]);
	return 0;
}

/* After the storm: a short exact run, as in deferred_task. */
static int still_exact(void)
{
	struct ds_symtab *st = ds_symtab_load("/proc/self/exe");
	struct ds_collect c = { 0 };
	struct workload_stats ws;
	struct ds_verdict v;
	int failed = 0;

	if (!st || ds_sample_own_workload(&c, false, 500, 8 << 20, &ws) < 0)
		return 1;
	ds_verify(&c, (uint32_t)gettid(), st, &v);
	DS_CHECK(&failed, v.marker_samples > 20 && v.unmatched == 0 && v.dup_records == 0,
		 "deferred callchains still exact after the stress (%ld samples, %ld unmatched)",
		 v.marker_samples, v.unmatched);
	ds_collect_free(&c);
	ds_symtab_free(st);
	return failed;
}

int main(int argc, char **argv)
{
	unsigned int rounds = argc > 1 ? (unsigned int)atoi(argv[1]) : 30;
	unsigned int seed = 12345;
	struct timespec t0, t1;
	int failed = 0, tool_fail = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	signal(SIGCHLD, SIG_DFL);
	for (unsigned int r = 0; r < rounds; r++) {
		pid_t wl = fork(), t[2];
		int status;

		if (wl == 0)
			workload();
		sleep_us(2000);
		for (int i = 0; i < 2; i++) {
			unsigned int s = seed + r * 7 + i;

			t[i] = fork();
			if (t[i] == 0)
				_exit(tool(wl, s));
		}
		for (int i = 0; i < 2; i++) {
			waitpid(t[i], &status, 0);
			tool_fail += !WIFEXITED(status) || WEXITSTATUS(status);
		}
		sleep_us(rnd(&seed, 5000));
		kill(wl, SIGKILL);	/* most likely inside read(): unwind pending */
		waitpid(wl, NULL, 0);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("# %u rounds of fork/exec/exit + migration + open/close by two tools in %.1fs\n",
	       rounds, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	DS_CHECK(&failed, tool_fail == 0, "every tool opened its events (%d failed)", tool_fail);
	failed += still_exact();
	return failed ? 1 : 0;
}
