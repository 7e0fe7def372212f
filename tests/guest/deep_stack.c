// SPDX-License-Identifier: GPL-2.0
/*
 * Stack depth: a child recurses 400 deep and makes system calls at the
 * bottom, sampled with syscalls:sys_enter_getppid and defer_callchain. With
 * kernel.perf_event_max_stack raised to 1024, an event with sample_max_stack
 * 1000 must get the whole stack (every recursion frame); one with
 * sample_max_stack 50 must get exactly 50 user frames, as a classic chain is
 * bounded by it.
 *
 *   deep_stack [DEPTH]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stitch_util.h"

static int depth = 400;

__attribute__((noinline)) static int ds_recurse(int n)
{
	int r;

	if (n == 0) {
		for (int i = 0; i < 20; i++)
			ds_syscall3(SYS_getppid, 0, 0, 0);
		return 0;
	}
	r = ds_recurse(n - 1);
	__asm__ volatile("" ::: "memory");
	return r;
}

static int child(void *arg)
{
	(void)arg;
	return ds_recurse(depth);
}

static int write_sysctl(const char *path, int val)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -1;
	ok = fprintf(f, "%d\n", val) > 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	static const char *const maxpath = "/proc/sys/kernel/perf_event_max_stack";
	struct ds_symtab *st = ds_symtab_load("/proc/self/exe");
	const unsigned int maxes[2] = { 1000, 50 };
	struct ds_collect c[2] = { { 0 } };
	struct perf_event_attr attr;
	struct ds_mmap m[2];
	struct ds_child ch;
	int fd[2], status, failed = 0;

	if (argc > 1)
		depth = atoi(argv[1]);
	if (!st || ds_attr_tracepoint(&attr, "syscalls", "sys_enter_getppid")) {
		printf("# no symbols or no syscalls:sys_enter_getppid\n");
		return 1;
	}
	if (write_sysctl(maxpath, 1024)) {
		printf("# cannot raise %s\n", maxpath);
		return 1;
	}
	ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
	ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_OUTPUT, 1);
	/* One child per limit: one process's events share one record per entry. */
	for (int i = 0; i < 2; i++) {
		if (ds_child_start(&ch, child, NULL))
			return 1;
		attr.sample_max_stack = (uint16_t)maxes[i];
		fd[i] = ds_perf_open(&attr, ch.pid, -1, -1, 0);
		if (fd[i] < 0 || ds_mmap_open(&m[i], fd[i], 256)) {
			printf("# perf_event_open(max_stack %u)/mmap: %s\n", maxes[i],
			       strerror(fd[i] < 0 ? -fd[i] : 0));
			return 1;
		}
		ds_child_go(&ch);
		status = ds_child_wait(&ch, &m[i], ds_collect_record, &c[i]);
		DS_CHECK(&failed, WIFEXITED(status) && WEXITSTATUS(status) == 0,
			 "child exited 0 (max_stack %u)", maxes[i]);
	}
	for (int i = 0; i < 2; i++) {
		long samples = 0, records = 0, full = 0, exact = 0;
		uint64_t minnr = ~0ULL, maxnr = 0;

		for (long j = 0; j < c[i].n; j++) {
			const struct ds_rec *r = &c[i].recs[j];
			long frames = 0;

			if (!r->deferred) {
				samples += r->cookie != 0;
				continue;
			}
			records++;
			minnr = r->nr < minnr ? r->nr : minnr;
			maxnr = r->nr > maxnr ? r->nr : maxnr;
			for (uint64_t k = 1; k < r->nr; k++) {
				const char *s = ds_symtab_lookup(st, r->ips[k] - 1);

				frames += s && !strcmp(s, "ds_recurse");
			}
			full += frames >= depth;
			exact += r->nr == maxes[i];
		}
		printf("# sample_max_stack %u: %ld marker samples, %ld records, %llu..%llu user "
		       "frames, %ld with all %d recursion frames, lost %ld\n",
		       maxes[i], samples, records, (unsigned long long)(records ? minnr : 0),
		       (unsigned long long)maxnr, full, depth, c[i].lost);
		DS_CHECK(&failed, samples >= 1 && records >= 1 && c[i].lost == 0 && c[i].bad == 0,
			 "max_stack %u: samples and records, none lost", maxes[i]);
		if (maxes[i] > (unsigned int)depth + 8)
			DS_CHECK(&failed, full == records, "max_stack %u: whole %d-deep stack in every "
				 "record (%ld of %ld)", maxes[i], depth, full, records);
		else
			DS_CHECK(&failed, exact == records, "max_stack %u: every record has exactly %u "
				 "frames (%ld of %ld)", maxes[i], maxes[i], exact, records);
		ds_mmap_close(&m[i]);
		close(fd[i]);
		ds_collect_free(&c[i]);
	}
	write_sysctl(maxpath, 127);
	ds_symtab_free(st);
	return failed ? 1 : 0;
}
