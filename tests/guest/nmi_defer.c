// SPDX-License-Identifier: GPL-2.0
/*
 * Deferred callchains requested from NMI context. The guest has no PMU that
 * raises NMIs, so the kernel's test PMU "nmi_selftest" (CONFIG_PERF_NMI_SELFTEST)
 * sends NMI IPIs to the CPU the sampled task runs on, at whatever it is
 * executing, and takes a PMU overflow's path from the NMI. A workload child
 * reads, spins, forks children that exec and exit, and hops between CPUs,
 * for the given time. Checks: every sample's cookie has exactly one record
 * of the same task; a sample taken in user mode gets a stack whose first
 * frame is the sample's own ip; samples in read() stitch to the read chain.
 * The debug kernel adds lockdep, KASAN and kmemleak (run after the suite).
 *
 *   nmi_defer [SECONDS]
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stitch_util.h"
#include "workload.h"

static int pmu_type(void)
{
	FILE *f = fopen("/sys/bus/event_source/devices/nmi_selftest/type", "r");
	int type = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &type) != 1)
		type = -1;
	fclose(f);
	return type;
}

/* The sampled child: runs until it reads from @stop_fd. */
static void child(int go_fd, unsigned int msec)
{
	struct workload_stats ws;
	struct timespec t0;
	char c;

	if (read(go_fd, &c, 1) != 1)
		_exit(1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned int i = 0; ds_msec_since(&t0) < msec; i++) {
		if (workload_run(150, 4 << 20, "/dev/zero", &ws))
			_exit(1);
		for (int j = 0; j < 200; j++)
			ds_syscall3(SYS_getppid, 0, 0, 0);
		if (i % 3 == 0) {
			pid_t p = fork();

			if (p == 0) {
				execl("/tests/example_workload", "example_workload", "30", "65536",
				      (char *)NULL);
				_exit(127);
			}
			if (p > 0)
				waitpid(p, NULL, 0);
		}
		ds_pin(0, i % 2);
	}
	/* Wait, in a system call, until the parent has disabled the event. */
	if (read(go_fd, &c, 1) < 0)
		_exit(1);
	_exit(0);
}

int main(int argc, char **argv)
{
	unsigned int secs = argc > 1 ? (unsigned int)atoi(argv[1]) : 20;
	struct ds_symtab *st = ds_symtab_load("/proc/self/exe");
	struct ds_collect c = { 0 };
	struct perf_event_attr attr;
	struct ds_verdict v;
	struct ds_mmap ring;
	int go[2], fd, type, failed = 0, status;
	long user_mode = 0, user_ok = 0, user_missing = 0;
	pid_t pid;

	if (ds_kernel_is_mainline()) {
		printf("# mainline kernel: no nmi_selftest PMU; nothing to check\n");
		return 0;
	}
	type = pmu_type();
	if (!st || type < 0) {
		printf("# no nmi_selftest PMU (CONFIG_PERF_NMI_SELFTEST)\n");
		return 1;
	}
	if (pipe(go))
		return 1;
	pid = fork();
	if (pid == 0)
		child(go[0], secs * 1000);

	ds_attr_sampling(&attr, 1);
	attr.type = (uint32_t)type;
	/*
	 * NMIs every 2 ms for a 20 s run, less often for longer runs and on the
	 * slow debug kernel, so that the checks' work stays bounded (attr.config
	 * is the interval in microseconds).
	 */
	attr.config = 2000ULL * (unsigned long long)ds_period_scale() *
		      (secs > 20 ? secs / 20 : 1);
	attr.sample_period = 1;
	attr.exclude_hv = 0;	/* the test PMU takes no exclude bits */
	ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
	fd = ds_perf_open(&attr, pid, -1, -1, 0);
	if (fd < 0 || ds_mmap_open(&ring, fd, 2048)) {
		printf("# nmi_selftest event: %s\n", strerror(fd < 0 ? -fd : 12));
		kill(pid, SIGKILL);
		return 1;
	}
	c.only_tid = (uint32_t)pid;
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	if (write(go[1], "g", 1) != 1)
		return 1;
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (ds_msec_since(&t0) < (long)secs * 1000 + 500) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };

		ds_mmap_drain(&ring, ds_collect_record, &c);
		nanosleep(&ts, NULL);
		if (waitpid(pid, &status, WNOHANG) == pid) {
			pid = -pid;
			break;
		}
	}
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	printf("# injection over after %ld ms, %ld records so far\n", ds_msec_since(&t0), c.n);
	fflush(stdout);
	if (pid > 0) {
		if (write(go[1], "q", 1) != 1)
			kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	} else {
		pid = -pid;
	}
	ds_mmap_drain(&ring, ds_collect_record, &c);

	ds_verify(&c, (uint32_t)pid, st, &v);
	for (long i = 0; i < c.n; i++) {
		const struct ds_rec *r = &c.recs[i], *d;
		long count;

		if (r->deferred || r->nr != 2 || !r->cookie)
			continue;
		user_mode++;
		d = ds_find_record(&c, r->tid, r->cookie, &count);
		if (!d || !d->nr)
			user_missing++;
		else
			user_ok += d->ips[0] == r->ip;
	}
	printf("# %ld samples from NMI, %ld lost; in user mode %ld, their stack starts at the sample ip: %ld\n",
	       v.samples, c.lost, user_mode, user_ok);
	DS_CHECK(&failed, WIFEXITED(status) && WEXITSTATUS(status) == 0, "workload ran");
	DS_CHECK(&failed, v.marker_samples >= 100, "deferred samples taken in NMI (%ld)",
		 v.marker_samples);
	DS_CHECK(&failed, v.unmatched == 0 && v.unmatched_at_end == 0,
		 "every NMI sample's cookie has its record (%ld + %ld unmatched)", v.unmatched,
		 v.unmatched_at_end);
	DS_CHECK(&failed, v.dup_records == 0, "exactly one record per cookie (%ld dup)",
		 v.dup_records);
	DS_CHECK(&failed, v.interleaved == 0, "one cookie per kernel entry (%ld interleaved)",
		 v.interleaved);
	DS_CHECK(&failed, v.read_stitched > 0, "samples in read() stitch to the read chain (%ld)",
		 v.read_stitched);
	DS_CHECK(&failed, user_mode > 0 && user_ok == user_mode,
		 "user-mode samples: the record's first frame is the sample ip (%ld of %ld, %ld without record)",
		 user_ok, user_mode, user_missing);
	DS_CHECK(&failed, c.lost == 0, "nothing lost (%ld)", c.lost);
	ds_mmap_close(&ring);
	close(fd);
	ds_collect_free(&c);
	ds_symtab_free(st);
	return failed ? 1 : 0;
}
