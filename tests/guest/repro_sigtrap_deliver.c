// SPDX-License-Identifier: GPL-2.0
/*
 * The SIGTRAP loop perf_fuzz met with "sigtrap" (docs/kernel.md, "Limits"):
 * an event on signal:signal_deliver with sigtrap and PERF_SAMPLE_PERIOD in
 * its sample_type. A software event that records PERF_SAMPLE_PERIOD (and is
 * not in frequency mode) overflows at every hit whatever its sample_period
 * (perf_swevent_event(): each hit is a sample carrying its own period), and
 * a software event's first overflow of a hit is never throttled. So each
 * signal delivered to the task sends it a SIGTRAP, which is delivered in
 * turn as soon as its handler returns: the task runs SIGTRAP handlers for
 * good and never gets past the instruction that took the first signal.
 * Perf core's behaviour, with or without deferred callchains; not in the
 * suite.
 *
 *   repro_sigtrap_deliver [SECONDS [defer]]   (default 2 s)
 *
 * Three runs, each raise(SIGUSR1) once with the event enabled, and a thread
 * that disables the event after SECONDS if raise() has not returned:
 *   period-sampling  sample_period 10000, sample_type IP|PERIOD: the loop;
 *   plain            the same without PERIOD: one SIGTRAP per 10000
 *                    deliveries, so none;
 *   period-1         sample_period 1, no PERIOD: the loop, as asked.
 * "defer" sets defer_callchain (and CALLCHAIN) on the event, with a ring,
 * so that each delivery also asks for a deferred user callchain.
 * Prints per run the SIGTRAPs taken and how long raise() took; exits 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "perf_util.h"

static atomic_long sigtraps;
static atomic_int returned;
static int event_fd = -1;
static unsigned int seconds = 2;

static void on_sigtrap(int sig)
{
	(void)sig;
	atomic_fetch_add(&sigtraps, 1);
}

static void on_usr1(int sig)
{
	(void)sig;
}

/* Breaks the loop from outside: the looping thread never sees its own code. */
static void *breaker(void *arg)
{
	struct timespec t0;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!atomic_load(&returned) && ds_msec_since(&t0) < (long)seconds * 1000)
		usleep(10000);
	if (!atomic_load(&returned))
		ioctl(event_fd, PERF_EVENT_IOC_DISABLE, 0);
	return NULL;
}

static void run(const char *name, uint64_t period, uint64_t sample_type, int defer)
{
	struct perf_event_attr attr;
	struct timespec t0;
	pthread_t th;
	void *ring = MAP_FAILED;
	size_t ring_size = 9 * (size_t)sysconf(_SC_PAGESIZE);
	long ms;

	if (ds_attr_tracepoint(&attr, "signal", "signal_deliver")) {
		printf("# %s: no signal:signal_deliver tracepoint\n", name);
		return;
	}
	attr.sample_period = period;
	attr.sample_type = sample_type | (defer ? PERF_SAMPLE_CALLCHAIN : 0);
	attr.sigtrap = 1;
	attr.remove_on_exec = 1;	/* sigtrap needs it */
	attr.disabled = 1;
	ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, defer);
	event_fd = ds_perf_open(&attr, 0, -1, -1, 0);
	if (event_fd < 0) {
		printf("# %s: perf_event_open: %s\n", name, strerror(errno));
		return;
	}
	if (defer)
		ring = mmap(NULL, ring_size, PROT_READ | PROT_WRITE, MAP_SHARED, event_fd, 0);
	atomic_store(&sigtraps, 0);
	atomic_store(&returned, 0);
	if (pthread_create(&th, NULL, breaker, NULL)) {
		printf("# %s: pthread_create failed\n", name);
		close(event_fd);
		return;
	}
	ioctl(event_fd, PERF_EVENT_IOC_ENABLE, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	raise(SIGUSR1);
	ms = ds_msec_since(&t0);
	atomic_store(&returned, 1);
	ioctl(event_fd, PERF_EVENT_IOC_DISABLE, 0);
	pthread_join(th, NULL);
	printf("# %-16s%s: %ld SIGTRAPs, raise() returned after %ld ms%s\n", name,
	       defer ? " (defer)" : "", atomic_load(&sigtraps), ms,
	       ms >= (long)seconds * 1000 ? " (the event disabled from outside)" : "");
	if (ring != MAP_FAILED)
		munmap(ring, ring_size);
	close(event_fd);
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	int defer = argc > 2 && !strcmp(argv[2], "defer");

	if (argc > 1)
		seconds = (unsigned int)atoi(argv[1]) ?: 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigtrap;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTRAP, &sa, NULL);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);

	run("period-sampling", 10000, PERF_SAMPLE_IP | PERF_SAMPLE_PERIOD, defer);
	run("plain", 10000, PERF_SAMPLE_IP, defer);
	run("period-1", 1, PERF_SAMPLE_IP, defer);
	return 0;
}
