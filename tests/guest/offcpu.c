// SPDX-License-Identifier: GPL-2.0
/*
 * Off-CPU profiling: the context-switches software event sampled with
 * defer_callchain. Its samples are taken in the scheduler, under the
 * runqueue lock, where the unwind request must not allocate. A child that
 * blocks in a known call chain (nanosleep and a pipe read) runs while two
 * spinners keep both CPUs busy; every context-switch sample of the child
 * must be stitched, and the stitched stacks must name the blocking chain.
 *
 *   offcpu [MSEC]
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stitch_util.h"

static unsigned int run_msec = 2000;

__attribute__((noinline)) static void oc_block_sleep(void)
{
	struct timespec ts = { 0, 200000 };

	ds_syscall3(SYS_nanosleep, (long)&ts, 0, 0);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void oc_block_outer(void)
{
	oc_block_sleep();
	__asm__ volatile("" ::: "memory");
}

/*
 * Blocks at least MIN_BLOCKS times, however slowly the emulated CPUs run
 * (a busy host gave 98 in 2 s), and for run_msec; never more than ten
 * times that.
 */
#define MIN_BLOCKS	150

static int child(void *arg)
{
	struct timespec t0;
	long n = 0, t;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		oc_block_outer();
		n++;
		t = ds_msec_since(&t0);
	} while ((t < (long)run_msec || n < MIN_BLOCKS) && t < 10L * run_msec);
	return 0;
}

static int spinner(void *arg)
{
	volatile unsigned long x = 0;

	(void)arg;
	for (;;)
		x++;
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const chain[] = { "oc_block_sleep", "oc_block_outer", "child", NULL };
	struct ds_symtab *st = ds_symtab_load("/proc/self/exe");
	struct ds_collect c = { 0 };
	struct perf_event_attr attr;
	struct ds_child ch, spin[2];
	struct ds_verdict v;
	struct ds_mmap m;
	long named = 0, with_record = 0;
	int fd, status, failed = 0;

	if (argc > 1)
		run_msec = (unsigned int)strtoul(argv[1], NULL, 0);
	if (!st)
		return 1;
	memset(&attr, 0, sizeof(attr));
	ds_attr_sampling(&attr, 1);
	attr.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	attr.sample_period = 1;
	attr.disabled = 0;
	ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
	ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_OUTPUT, 1);
	for (int i = 0; i < 2; i++) {
		if (ds_child_start(&spin[i], spinner, NULL))
			return 1;
		ds_child_go(&spin[i]);
	}
	if (ds_child_start(&ch, child, NULL))
		return 1;
	fd = ds_perf_open(&attr, ch.pid, -1, -1, 0);
	if (fd < 0 || ds_mmap_open(&m, fd, 256)) {
		printf("# perf_event_open(context-switches, defer)/mmap: %s\n",
		       strerror(fd < 0 ? -fd : 0));
		return 1;
	}
	ds_child_go(&ch);
	status = ds_child_wait(&ch, &m, ds_collect_record, &c);
	for (int i = 0; i < 2; i++) {
		kill(spin[i].pid, SIGKILL);
		waitpid(spin[i].pid, NULL, 0);
	}
	DS_CHECK(&failed, WIFEXITED(status) && WEXITSTATUS(status) == 0, "child exited 0");
	ds_verify(&c, (uint32_t)ch.pid, st, &v);
	for (long i = 0; i < c.n; i++) {
		const struct ds_rec *r = &c.recs[i], *d;
		long count;

		if (r->deferred || !r->cookie)
			continue;
		d = ds_find_record(&c, r->tid, r->cookie, &count);
		if (d) {
			with_record++;
			named += ds_chain_has_sequence(st, d->ips, d->nr, chain);
		}
	}
	printf("# %ld context-switch samples (%ld with marker, %ld classic), %ld records, "
	       "%ld stitched, %ld naming the blocking chain; lost %ld\n",
	       v.samples, v.marker_samples, v.classic_samples, v.records, with_record, named,
	       c.lost);
	DS_CHECK(&failed, c.lost == 0 && c.bad == 0, "no lost or malformed records");
	DS_CHECK(&failed, v.marker_samples >= 100, "at least 100 off-CPU samples (%ld)",
		 v.marker_samples);
	DS_CHECK(&failed, v.classic_samples == 0, "no classic fallback (%ld)", v.classic_samples);
	DS_CHECK(&failed, with_record == v.marker_samples,
		 "every off-CPU sample is stitched (%ld of %ld)", with_record, v.marker_samples);
	DS_CHECK(&failed, named >= v.marker_samples * 95 / 100,
		 "stitched stacks name the blocking chain (%ld of %ld)", named, v.marker_samples);
	DS_CHECK(&failed, v.dup_records == 0, "one record per cookie (%ld dup)", v.dup_records);
	ds_mmap_close(&m);
	close(fd);
	ds_collect_free(&c);
	ds_symtab_free(st);
	return failed ? 1 : 0;
}
