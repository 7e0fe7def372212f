// SPDX-License-Identifier: GPL-2.0
/*
 * What the test kernels reach through the hooks of kernel/test-patches/
 * (CONFIG_UNWIND_USER_TEST_HOOKS, <debugfs>/unwind_test/):
 *
 *  - guest samples: a child runs a user loop with system calls, sampled by
 *    cpu-clock with defer_callchain; half way through, guest_pid makes perf
 *    take its samples as those of a guest in user mode, as KVM's vCPU
 *    threads inside KVM_RUN get them. Before: samples with a cookie, each
 *    with its record. After: samples with the guest's ip and cpumode, no
 *    cookie (no deferred callchain asked for) and no user frames.
 *  - late task data: unwind_deferred_init_data() after boot refuses task
 *    data (-EBUSY) and more than a page of it (-EINVAL).
 *
 *   test_hooks [MSEC]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stitch_util.h"

#define HOOKS "/sys/kernel/debug/unwind_test"
#define GUEST_IP 0x1000		/* what the hook's get_ip() says */

static unsigned int run_msec = 2000;

static volatile unsigned long th_sink;

__attribute__((noinline)) static void th_spin(void)
{
	for (int i = 0; i < 20000; i++)
		th_sink += i;
	ds_syscall3(SYS_getppid, 0, 0, 0);
}

static int child(void *arg)
{
	struct timespec t0;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (ds_msec_since(&t0) < run_msec)
		th_spin();
	return 0;
}

static int read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	struct ds_collect c = { 0 };
	struct perf_event_attr attr;
	long guest = 0, guest_cookie = 0, guest_ip = 0, guest_user = 0;
	long host = 0, host_cookie = 0, host_record = 0;
	char buf[128], pid[32];
	struct timespec t0;
	struct ds_child ch;
	struct ds_mmap m;
	int fd, status = -1, failed = 0, switched = 0;

	if (argc > 1)
		run_msec = (unsigned int)strtoul(argv[1], NULL, 0);
	run_msec *= (unsigned int)ds_period_scale();
	if (ds_kernel_is_mainline()) {
		printf("# mainline kernel: no test hooks; nothing to check\n");
		return 0;
	}
	if (access(HOOKS, F_OK)) {
		printf("# no %s (CONFIG_UNWIND_USER_TEST_HOOKS)\n", HOOKS);
		return 1;
	}

	/* late task data */
	if (read_file(HOOKS "/late_data", buf, sizeof(buf)))
		strcpy(buf, "unreadable\n");
	DS_CHECK(&failed, !strcmp(buf, "late_data=-16 huge=-22\n"),
		 "task data after boot: -EBUSY, more than a page: -EINVAL (%.*s)",
		 (int)strcspn(buf, "\n"), buf);

	/* guest samples */
	ds_attr_sampling(&attr, 1000000);
	ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
	if (ds_child_start(&ch, child, NULL))
		return 1;
	fd = ds_perf_open(&attr, ch.pid, -1, -1, 0);
	if (fd < 0 || ds_mmap_open(&m, fd, 256)) {
		printf("# perf_event_open(cpu-clock, defer)/mmap: %s\n", strerror(fd < 0 ? -fd : 0));
		return 1;
	}
	c.only_tid = (uint32_t)ch.pid;
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	ds_child_go(&ch);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		ds_mmap_drain(&m, ds_collect_record, &c);
		if (waitpid(ch.pid, &status, WNOHANG) == ch.pid)
			break;
		if (!switched && ds_msec_since(&t0) >= run_msec / 2) {
			snprintf(pid, sizeof(pid), "%d", (int)ch.pid);
			if (ds_write_str(HOOKS "/guest_pid", pid))
				printf("# cannot write %s/guest_pid\n", HOOKS);
			switched = 1;
		}
		nanosleep(&ts, NULL);
	}
	ds_write_str(HOOKS "/guest_pid", "0");
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	ds_mmap_drain(&m, ds_collect_record, &c);

	for (long i = 0; i < c.n; i++) {
		const struct ds_rec *r = &c.recs[i];
		long count;

		if (r->deferred)
			continue;
		if ((r->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_GUEST_USER) {
			guest++;
			guest_cookie += r->cookie != 0;
			guest_ip += r->ip == GUEST_IP;
			/* user frames: what follows PERF_CONTEXT_USER, if it is there */
			guest_user += r->user_start >= 0 && r->nr > (uint64_t)r->user_start;
			continue;
		}
		host++;
		if (r->cookie) {
			host_cookie++;
			host_record += ds_find_record(&c, r->tid, r->cookie, &count) != NULL;
		}
	}
	printf("# %ld samples as a guest's (%ld with a cookie, %ld at the guest ip, %ld with user frames), "
	       "%ld as the host's (%ld with a cookie, %ld of those with their record); lost %ld\n",
	       guest, guest_cookie, guest_ip, guest_user, host, host_cookie, host_record, c.lost);
	DS_CHECK(&failed, WIFEXITED(status) && WEXITSTATUS(status) == 0, "child exited 0");
	DS_CHECK(&failed, c.lost == 0 && c.bad == 0, "no lost or malformed records");
	DS_CHECK(&failed, host_cookie >= 20 && host_record == host_cookie,
		 "before: deferred samples, each with its record (%ld of %ld)", host_record,
		 host_cookie);
	DS_CHECK(&failed, guest >= 20 && guest_ip == guest,
		 "after: samples taken as the guest's, at its ip (%ld of %ld)", guest_ip, guest);
	DS_CHECK(&failed, guest_cookie == 0 && guest_user == 0,
		 "a guest's sample asks for no deferred callchain and has no user frames "
		 "(%ld with a cookie, %ld with user frames)", guest_cookie, guest_user);
	ds_mmap_close(&m);
	close(fd);
	ds_collect_free(&c);
	return failed ? 1 : 0;
}
