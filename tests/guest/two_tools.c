// SPDX-License-Identifier: GPL-2.0
/*
 * Several tools at once. A workload child runs the example workload while
 * three tools, each its own process, watch it:
 *   A: per-CPU cpu-clock events (pid = -1) with defer_callchain;
 *   B: per-task event on the workload with defer_callchain + defer_output,
 *      plus per-CPU side-band dummy events with defer_output (perf 7.x style);
 *   C: per-CPU side-band dummy events with defer_output only, asking nothing.
 * A and B must each get exactly one record per (task, cookie) they sampled,
 * in their own buffers, and nothing else; C must get no record at all.
 * On the mainline reference the test checks mainline's broadcast instead.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stitch_util.h"
#include "workload.h"

#define NCPU 2
#define MAXFD (2 * NCPU + 1)

struct tool {
	char name;
	int nfd;
	int fds[MAXFD];
	struct ds_mmap rings[MAXFD];
	struct ds_collect col;	/* all of the tool's buffers together */
};

static int add_event(struct tool *t, struct perf_event_attr *attr, pid_t pid, int cpu)
{
	int fd = ds_perf_open(attr, pid, cpu, -1, 0);

	if (fd < 0) {
		printf("# tool %c: perf_event_open: %s\n", t->name, strerror(-fd));
		return -1;
	}
	if (ds_mmap_open(&t->rings[t->nfd], fd, 1024))
		return -1;
	t->fds[t->nfd++] = fd;
	return 0;
}

static void drain(struct tool *t)
{
	for (int i = 0; i < t->nfd; i++)
		ds_mmap_drain(&t->rings[i], ds_collect_record, &t->col);
}

/* Runs in the tool's own process; returns its exit code. */
static int run_tool(char name, pid_t wl, int ready_fd, int done_fd)
{
	struct ds_symtab *st = ds_symtab_load("/proc/self/exe");
	struct perf_event_attr attr;
	struct tool t = { .name = name, .col.only_tid = (uint32_t)wl };
	struct ds_verdict v;
	int failed = 0;
	char c;

	if (name == 'A') {
		ds_attr_sampling(&attr, 300000);
		ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
		for (int cpu = 0; cpu < NCPU; cpu++)
			if (add_event(&t, &attr, -1, cpu))
				return 1;
	} else if (name == 'B') {
		ds_attr_sampling(&attr, 170000);
		ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
		ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_OUTPUT, 1);
		if (add_event(&t, &attr, wl, -1))
			return 1;
	}
	if (name != 'A') {
		ds_attr_sideband(&attr);
		for (int cpu = 0; cpu < NCPU; cpu++)
			if (add_event(&t, &attr, -1, cpu))
				return 1;
	}
	for (int i = 0; i < t.nfd; i++)
		ioctl(t.fds[i], PERF_EVENT_IOC_ENABLE, 0);
	if (write(ready_fd, &name, 1) != 1)
		return 1;
	/* Drain while the workload runs, until the parent says it is done. */
	for (;;) {
		struct timeval tv = { 0, 50000 };
		fd_set rd;

		FD_ZERO(&rd);
		FD_SET(done_fd, &rd);
		drain(&t);
		if (select(done_fd + 1, &rd, NULL, NULL, &tv) > 0 && read(done_fd, &c, 1) >= 0)
			break;
	}
	for (int i = 0; i < t.nfd; i++)
		ioctl(t.fds[i], PERF_EVENT_IOC_DISABLE, 0);
	drain(&t);

	printf("# tool %c: %ld records in its %d buffers, %ld lost\n", name, t.col.n, t.nfd,
	       t.col.lost);
	ds_verify(&t.col, (uint32_t)wl, st, &v);
	long any = 0;

	for (long i = 0; i < t.col.n; i++)
		any += t.col.recs[i].deferred;
	if (ds_kernel_is_mainline()) {
		/*
		 * The reference, as DESIGN.md describes it: records go to every
		 * defer_output side-band event (C gets B's), never to A's plain
		 * defer_callchain events, and B sees each of its records twice
		 * (its per-task and its per-CPU defer_output events).
		 */
		if (name == 'A')
			DS_CHECK(&failed, any == 0,
				 "mainline: tool A (defer_callchain only) gets no records (%ld)", any);
		else
			DS_CHECK(&failed, any > 0,
				 "mainline: tool %c's defer_output events get broadcast records (%ld, %ld dup)",
				 name, any, v.dup_records);
	} else if (name == 'C') {
		DS_CHECK(&failed, any == 0, "tool C asked for nothing and got %ld records", any);
	} else {
		DS_CHECK(&failed, v.marker_samples >= 50, "tool %c: marker samples (%ld)", name,
			 v.marker_samples);
		DS_CHECK(&failed, v.unmatched == 0, "tool %c: every cookie has its record (%ld unmatched)",
			 name, v.unmatched);
		DS_CHECK(&failed, v.dup_records == 0, "tool %c: one record per cookie (%ld dup)", name,
			 v.dup_records);
		DS_CHECK(&failed, v.orphan_records == 0,
			 "tool %c: no record it did not ask for (%ld)", name, v.orphan_records);
		DS_CHECK(&failed, v.read_stitched > 0, "tool %c: stitched read chains (%ld)", name,
			 v.read_stitched);
	}
	printf("# tool %c counts: samples=%ld records=%ld matched=%ld unmatched=%ld dup=%ld orphan=%ld\n",
	       name, v.marker_samples, v.records, v.matched, v.unmatched, v.dup_records,
	       v.orphan_records);
	fflush(stdout);
	return failed ? 1 : 0;
}

int main(void)
{
	const char names[] = "ABC";
	int ready[2], done[2], start[2], failed = 0, status;
	pid_t wl, tools[3];
	char c;

	if (pipe(ready) || pipe(done) || pipe(start))
		return 1;
	wl = fork();
	if (wl == 0) {
		struct workload_stats ws;

		if (read(start[0], &c, 1) != 1)
			exit(1);
		exit(workload_run(1500, 8 << 20, "/dev/zero", &ws) ? 1 : 0);
	}
	for (int i = 0; i < 3; i++) {
		tools[i] = fork();
		if (tools[i] == 0) {
			close(done[1]);	/* or the EOF that stops us never comes */
			exit(run_tool(names[i], wl, ready[1], done[0]));
		}
	}
	for (int i = 0; i < 3; i++)
		if (read(ready[0], &c, 1) != 1)
			return 1;
	if (write(start[1], "s", 1) != 1)
		return 1;
	waitpid(wl, &status, 0);
	DS_CHECK(&failed, WIFEXITED(status) && !WEXITSTATUS(status), "workload ran");
	close(done[1]);	/* EOF tells every tool to stop */
	for (int i = 0; i < 3; i++) {
		waitpid(tools[i], &status, 0);
		DS_CHECK(&failed, WIFEXITED(status) && !WEXITSTATUS(status), "tool %c passed",
			 names[i]);
	}
	return failed ? 1 : 0;
}
