// SPDX-License-Identifier: GPL-2.0
/*
 * 32-bit compat tasks get full deferred user stacks, as the classic compat
 * callchain (perf_callchain_user32) gives them. A 32-bit static workload
 * (compat_workload) makes getppid() with "int $0x80" from c32_leaf <- c32_mid
 * <- c32_top <- main; raw_syscalls:sys_enter is sampled at every hit twice,
 * by an event with a deferred and by one with a classic callchain. Every
 * deferred sample's record must hold the whole chain, and equal the classic
 * user chain of the same hit.
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

#define WORKLOAD "/tests/compat_workload"

static const char *const chain[] = { "c32_leaf", "c32_mid", "c32_top", "main", NULL };

int main(void)
{
	struct ds_symtab *st = ds_symtab_load(WORKLOAD);
	struct ds_collect def = { 0 }, cls = { 0 };
	struct perf_event_attr attr;
	struct ds_mmap ring[2];
	int go[2], fd[2], failed = 0, status;
	long deferred = 0, full = 0, pairs = 0, equal = 0, classic_full = 0;
	pid_t pid;
	char c;

	/* Mainline 7.x walks compat stacks too: the same checks hold there. */
	int mainline = ds_kernel_is_mainline();

	if (!st || pipe(go))
		return 1;
	pid = fork();
	if (pid == 0) {
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		execl(WORKLOAD, "compat_workload", "400", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 2; i++) {
		if (ds_attr_tracepoint(&attr, "raw_syscalls", "sys_enter"))
			return 1;
		attr.disabled = 1;
		attr.enable_on_exec = 1;
		if (i == 0)
			ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
		/* Mainline writes its records through defer_output events only. */
		if (i == 0 && mainline)
			ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_OUTPUT, 1);
		fd[i] = ds_perf_open(&attr, pid, -1, -1, 0);
		if (fd[i] < 0 || ds_mmap_open(&ring[i], fd[i], 2048)) {
			printf("# open: %s\n", strerror(fd[i] < 0 ? -fd[i] : 12));
			kill(pid, SIGKILL);
			return 1;
		}
	}
	def.only_tid = cls.only_tid = (uint32_t)pid;
	if (write(go[1], "g", 1) != 1)
		return 1;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };

		ds_mmap_drain(&ring[0], ds_collect_record, &def);
		ds_mmap_drain(&ring[1], ds_collect_record, &cls);
		nanosleep(&ts, NULL);
	}
	ds_mmap_drain(&ring[0], ds_collect_record, &def);
	ds_mmap_drain(&ring[1], ds_collect_record, &cls);

	/* The n-th getppid() hit of each event is the same system call. */
	long ci = 0;

	for (long i = 0; i < def.n; i++) {
		const struct ds_rec *s = &def.recs[i], *d = NULL, *k = NULL;

		if (s->deferred || !s->cookie)
			continue;
		/* Its record follows it (ds_find_record() would be quadratic here). */
		for (long j = i + 1; j < def.n && !d; j++)
			if (def.recs[j].deferred && def.recs[j].tid == s->tid &&
			    def.recs[j].cookie == s->cookie)
				d = &def.recs[j];
		if (!d || !ds_chain_has_sequence(st, d->ips, d->nr, chain))
			continue;
		deferred++;
		full++;
		/* The classic sample of the same hit: the next one in c32_leaf. */
		while (ci < cls.n) {
			const struct ds_rec *r = &cls.recs[ci++];

			if (!r->deferred && r->user_start >= 0 &&
			    ds_chain_has_sequence(st, r->ips + r->user_start,
						  r->nr - (uint64_t)r->user_start, chain)) {
				k = r;
				break;
			}
		}
		if (!k)
			continue;
		classic_full++;
		pairs++;
		equal += k->nr - (uint64_t)k->user_start == d->nr &&
			 !memcmp(k->ips + k->user_start, d->ips, d->nr * sizeof(uint64_t));
	}
	long markers = 0;

	for (long i = 0; i < def.n; i++)
		markers += !def.recs[i].deferred && def.recs[i].cookie;
	printf("# %ld deferred samples, %ld with c32_leaf <- c32_mid <- c32_top <- main; %ld classic pairs, %ld equal\n",
	       markers, full, pairs, equal);
	DS_CHECK(&failed, WIFEXITED(status) && WEXITSTATUS(status) == 0, "32-bit workload ran");
	DS_CHECK(&failed, markers >= 50, "deferred samples of the compat task (%ld)", markers);
	DS_CHECK(&failed, full >= markers * 9 / 10,
		 "their records hold the whole 32-bit chain (%ld of %ld)", full, markers);
	DS_CHECK(&failed, pairs >= full * 9 / 10 && equal == pairs,
		 "and equal the classic compat chain of the same hit (%ld of %ld)", equal, pairs);
	(void)deferred;
	(void)classic_full;
	for (int i = 0; i < 2; i++) {
		ds_mmap_close(&ring[i]);
		close(fd[i]);
	}
	ds_collect_free(&def);
	ds_collect_free(&cls);
	ds_symtab_free(st);
	return failed ? 1 : 0;
}
