// SPDX-License-Identifier: GPL-2.0
/*
 * What deferred delivery costs when user space sizes it (issue 21, item 1):
 * RINGS sampling page-fault events on this task (period 1, each with its own
 * ring, so each fault's return to user space serves RINGS asks), then the
 * same plus IDLE buffer-less events with defer_callchain on this task (they
 * never fire, but sit in the task context's defer list that delivery may
 * look through). Time per page fault, best of five runs of FAULTS faults,
 * with classic and with deferred callchains, and unprofiled.
 *
 * On a kernel with the preemptirq tracepoints (the debug config: lockdep
 * brings them) one more deferred round of TRACED faults runs with
 * preemptirq:irq_disable/irq_enable traced on this CPU, and prints the
 * longest intervals with interrupts off and where they began (the five
 * longest places, and any other in perf or the unwinder): that is what the
 * other tasks of the CPU wait for an interrupt.
 *
 * Prints figures only ("bench: fault: ..."), never fails on a number.
 *
 *   fault_bench [RINGS] [IDLE] [FAULTS] [TRACED]   (default 64 10000 2000 FAULTS/10)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "../../tests/guest/stitch_util.h"

struct fds {
	int *fd;
	struct ds_mmap *ring;
	int n, nring;
};

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

/* One run: FAULTS fresh anonymous pages touched; ns per fault. */
static double fault_run(long faults)
{
	long page = sysconf(_SC_PAGESIZE);
	volatile char *p;
	double t0, t1;

	p = mmap(NULL, faults * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return -1;
	t0 = now_ns();
	for (long i = 0; i < faults; i++)
		p[i * page] = 1;
	t1 = now_ns();
	munmap((void *)p, faults * page);
	return (t1 - t0) / faults;
}

static void ignore(const struct ds_event *ev, void *arg)
{
	(void)ev;
	(void)arg;
}

/* Best of five, the rings drained between runs: emulation noise only adds. */
static double best(long faults, struct fds *f)
{
	double b = 1e30;

	for (int i = 0; i < 5; i++) {
		double t = fault_run(faults);

		if (t >= 0 && t < b)
			b = t;
		for (int r = 0; r < f->nring; r++)
			ds_mmap_drain(&f->ring[r], ignore, NULL);
	}
	return b;
}

static int open_rings(struct fds *f, int rings, int deferred)
{
	struct perf_event_attr attr;

	for (int i = 0; i < rings; i++) {
		int fd;

		memset(&attr, 0, sizeof(attr));
		attr.size = sizeof(attr);
		attr.type = PERF_TYPE_SOFTWARE;
		attr.config = PERF_COUNT_SW_PAGE_FAULTS;
		attr.sample_period = 1;
		attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN;
		attr.exclude_kernel = 0;
		ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, deferred);
		fd = ds_perf_open(&attr, 0, -1, -1, 0);
		if (fd < 0)
			return fd;
		f->fd[f->n++] = fd;
		if (ds_mmap_open(&f->ring[f->nring], fd, 2))
			return -ENOMEM;
		f->nring++;
	}
	return 0;
}

static int open_idle(struct fds *f, int idle)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.sample_period = 1;
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN;
	ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
	for (int i = 0; i < idle; i++) {
		int fd = ds_perf_open(&attr, 0, -1, -1, 0);

		if (fd < 0)
			return fd;
		f->fd[f->n++] = fd;
	}
	return 0;
}

static void close_all(struct fds *f)
{
	while (f->nring)
		ds_mmap_close(&f->ring[--f->nring]);
	while (f->n)
		close(f->fd[--f->n]);
}

static const char *tracefs(void)
{
	static const char *const dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

	for (unsigned int i = 0; i < 2; i++) {
		char p[128];

		snprintf(p, sizeof(p), "%s/events/preemptirq/irq_disable/enable", dirs[i]);
		if (access(p, W_OK) == 0)
			return dirs[i];
	}
	return NULL;
}

static int put(const char *dir, const char *file, const char *val)
{
	char p[160];
	int fd, ret = 0;

	snprintf(p, sizeof(p), "%s/%s", dir, file);
	fd = open(p, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* The longest interrupts-off interval per place that disabled them. */
struct irqsoff {
	char where[160];	/* "caller <- parent" of the irq_disable event */
	double us;
};

#define IRQSOFF_PLACES 256

/*
 * Pair each irq_disable on CPU 0's trace with the next irq_enable; keep the
 * longest interval per place, sorted, in @top (up to IRQSOFF_PLACES).
 * Returns the number of places.
 */
static int irqsoff_places(const char *dir, struct irqsoff *top)
{
	char p[160], line[512], where[160] = "";
	double off = -1;
	int n = 0;
	FILE *fp;

	snprintf(p, sizeof(p), "%s/per_cpu/cpu0/trace", dir);
	fp = fopen(p, "r");
	if (!fp)
		return 0;
	while (fgets(line, sizeof(line), fp)) {
		char *ev = strstr(line, ": irq_");
		char *ts, *caller, *parent;
		double t;
		int i;

		if (!ev)
			continue;
		*ev = '\0';
		ts = strrchr(line, ' ');
		if (!ts)
			continue;
		t = strtod(ts + 1, NULL) * 1e6;
		if (!strncmp(ev + 2, "irq_disable", 11)) {
			off = t;
			caller = strstr(ev + 2, "caller=");
			parent = strstr(ev + 2, "parent=");
			snprintf(where, sizeof(where), "%.*s <- %.*s",
				 caller ? (int)strcspn(caller + 7, "+ \n") : 1, caller ? caller + 7 : "?",
				 parent ? (int)strcspn(parent + 7, "+ \n") : 1, parent ? parent + 7 : "?");
			continue;
		}
		if (strncmp(ev + 2, "irq_enable", 10) || off < 0)
			continue;
		for (i = 0; i < n && strcmp(top[i].where, where); i++)
			;
		if (i == n && n < IRQSOFF_PLACES)
			snprintf(top[n++].where, sizeof(top[0].where), "%s", where);
		if (i < n && t - off > top[i].us)
			top[i].us = t - off;
		off = -1;
	}
	fclose(fp);
	for (int i = 1; i < n; i++)	/* insertion sort, longest first */
		for (int j = i; j > 0 && top[j].us > top[j - 1].us; j--) {
			struct irqsoff tmp = top[j];

			top[j] = top[j - 1];
			top[j - 1] = tmp;
		}
	return n;
}

static void trace_round(struct fds *f, long faults)
{
	static struct irqsoff top[IRQSOFF_PLACES];
	const char *dir = tracefs();
	int n;

	if (!dir) {
		printf("bench: fault: no preemptirq tracepoints on this kernel: interrupts-off time not measured\n");
		return;
	}
	put(dir, "tracing_on", "0");
	put(dir, "buffer_size_kb", "16384");
	put(dir, "trace", "");
	if (put(dir, "events/preemptirq/irq_disable/enable", "1") ||
	    put(dir, "events/preemptirq/irq_enable/enable", "1")) {
		printf("bench: fault: cannot enable the preemptirq tracepoints\n");
		return;
	}
	put(dir, "tracing_on", "1");
	fault_run(faults);
	put(dir, "tracing_on", "0");
	put(dir, "events/preemptirq/enable", "0");
	for (int r = 0; r < f->nring; r++)
		ds_mmap_drain(&f->ring[r], ignore, NULL);
	n = irqsoff_places(dir, top);
	printf("bench: fault: longest interrupts-off intervals on CPU 0 over %ld deferred faults with %d rings + %d idle events, by where they were disabled:\n",
	       faults, f->nring, f->n - f->nring);
	for (int i = 0; i < n && i < 5; i++)
		printf("bench: fault:   %8.0f us  %s\n", top[i].us, top[i].where);
	for (int i = 5; i < n; i++)
		if (strstr(top[i].where, "perf_") || strstr(top[i].where, "unwind"))
			printf("bench: fault:   %8.0f us  %s\n", top[i].us, top[i].where);
	put(dir, "trace", "");
	put(dir, "buffer_size_kb", "1408");
}

int main(int argc, char **argv)
{
	int rings = argc > 1 ? atoi(argv[1]) : 64;
	int idle = argc > 2 ? atoi(argv[2]) : 10000;
	long faults = argc > 3 ? atol(argv[3]) : 2000;
	long traced = argc > 4 ? atol(argv[4]) : faults / 10;
	struct rlimit rl = { rings + idle + 64, rings + idle + 64 };
	struct fds f = { 0 };
	double none, t[2][2];
	cpu_set_t set;
	int err;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
	if (setrlimit(RLIMIT_NOFILE, &rl))
		perror("bench: fault: setrlimit");
	f.fd = calloc(rings + idle, sizeof(*f.fd));
	f.ring = calloc(rings, sizeof(*f.ring));
	if (!f.fd || !f.ring)
		return 1;

	none = best(faults, &f);
	for (int d = 0; d < 2; d++) {
		err = open_rings(&f, rings, d);
		if (err) {
			printf("bench: fault: cannot open %d rings (%s)\n", rings, strerror(-err));
			return 1;
		}
		t[d][0] = best(faults, &f);
		err = open_idle(&f, idle);
		if (err) {
			printf("bench: fault: opened only %d of %d idle events (%s)\n",
			       f.n - f.nring, idle, strerror(-err));
			return 1;
		}
		t[d][1] = best(faults, &f);
		if (d)
			trace_round(&f, traced > 0 ? traced : 1);
		close_all(&f);
	}
	printf("bench: fault: page fault unprofiled: %.2f us\n", none / 1e3);
	printf("bench: fault: %-36s %10s %10s %8s\n", "us per fault", "classic", "deferred",
	       "ratio");
	printf("bench: fault: %-36s %10.2f %10.2f %8.2f\n", "rings alone", t[0][0] / 1e3,
	       t[1][0] / 1e3, t[1][0] / t[0][0]);
	printf("bench: fault: %-36s %10.2f %10.2f %8.2f\n", "rings + idle defer events",
	       t[0][1] / 1e3, t[1][1] / 1e3, t[1][1] / t[0][1]);
	printf("bench: fault: idle defer events make a deferred fault %.2fx dearer (classic %.2fx)\n",
	       t[1][1] / t[1][0], t[0][1] / t[0][0]);
	free(f.fd);
	free(f.ring);
	return 0;
}
