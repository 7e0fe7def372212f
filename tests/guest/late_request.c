// SPDX-License-Identifier: GPL-2.0
/*
 * A request made on the way out to user space, after the exit loop has run:
 * x86_fpu:x86_fpu_regs_activated fires in arch_exit_to_user_mode_prepare()
 * when a task that was switched out reloads its FPU registers. Its sample asks
 * for the deferred callchain when nothing would run the task_work before user
 * space any more; unless the kernel brings the task back, the work runs at
 * the next kernel entry, and the sample is stitched to a later moment's stack.
 *
 * A child alternates between a call path that sleeps (a context switch, so the
 * tracepoint fires on its way out) and one that only makes quick system calls,
 * on a CPU it shares with a spinning task (which makes the FPU reload real).
 * The tracepoint is sampled twice per hit: with defer_callchain (+defer_output,
 * so that mainline delivers too) and with a classic callchain, whose user part
 * is walked at the hit itself. Each deferred sample's stitched user stack must
 * be the classic one of the same hit (a prefix of it: the classic walk goes on
 * into garbage past the outermost frame), which names the sleeping path.
 *
 *   late_request [MSEC]
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
#include <time.h>
#include <unistd.h>

#include "stitch_util.h"

static unsigned int run_msec = 2000;

__attribute__((noinline)) static void lr_sleep_leaf(void)
{
	struct timespec ts = { 0, 20000 };

	ds_syscall3(SYS_nanosleep, (long)&ts, 0, 0);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void lr_sleep_path(void)
{
	lr_sleep_leaf();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void lr_quick_leaf(void)
{
	for (int i = 0; i < 4; i++)
		ds_syscall3(SYS_getppid, 0, 0, 0);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void lr_quick_path(void)
{
	lr_quick_leaf();
	__asm__ volatile("" ::: "memory");
}

/* Another user task on the CPU: the child's FPU registers must be reloaded. */
static int competitor(void *arg)
{
	volatile double x = 1.0;

	(void)arg;
	ds_pin(0, 0);
	for (;;)
		x = x * 1.0000001 + 0.5;
	return 0;
}

static int child(void *arg)
{
	struct timespec t0;

	(void)arg;
	ds_pin(0, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		lr_sleep_path();
		lr_quick_path();
	} while (ds_msec_since(&t0) < (long)run_msec);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const sleep_chain[] = { "lr_sleep_leaf", "lr_sleep_path", "child",
						   NULL };
	struct ds_symtab *st = ds_symtab_load("/proc/self/exe");
	struct ds_collect cd = { 0 }, cc = { 0 };
	struct perf_event_attr attr;
	struct ds_mmap md, mc;
	struct ds_child ch, comp;
	struct ds_pairs p;
	int fdd, fdc, ret, failed = 0;

	if (argc > 1)
		run_msec = (unsigned int)strtoul(argv[1], NULL, 0);
	if (!st)
		return 1;
	ret = ds_attr_tracepoint(&attr, "x86_fpu", "x86_fpu_regs_activated");
	if (ret) {
		printf("# tracepoint x86_fpu:x86_fpu_regs_activated: %s\n", strerror(-ret));
		return 1;
	}
	if (ds_child_start(&comp, competitor, NULL) || ds_child_start(&ch, child, NULL))
		return 1;
	ds_child_go(&comp);
	ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
	ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_OUTPUT, 1);
	fdd = ds_perf_open(&attr, ch.pid, -1, -1, 0);
	ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 0);
	ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_OUTPUT, 0);
	fdc = ds_perf_open(&attr, ch.pid, -1, -1, 0);
	if (fdd < 0 || fdc < 0) {
		printf("# perf_event_open: %s\n", strerror(-(fdd < 0 ? fdd : fdc)));
		return 1;
	}
	if (ds_mmap_open(&md, fdd, 1024) || ds_mmap_open(&mc, fdc, 1024)) {
		printf("# mmap failed\n");
		return 1;
	}
	ds_child_go(&ch);
	/* The classic ring (4 MiB) holds the whole run; the deferred one is drained. */
	ret = ds_child_wait(&ch, &md, ds_collect_record, &cd);
	kill(comp.pid, SIGKILL);
	waitpid(comp.pid, NULL, 0);
	DS_CHECK(&failed, WIFEXITED(ret) && WEXITSTATUS(ret) == 0,
		 "child ran and exited 0 (status 0x%x)", ret);
	ioctl(fdd, PERF_EVENT_IOC_DISABLE, 0);
	ioctl(fdc, PERF_EVENT_IOC_DISABLE, 0);
	ds_mmap_drain(&md, ds_collect_record, &cd);
	ds_mmap_drain(&mc, ds_collect_record, &cc);

	ds_pair_hits(&cd, &cc, st, sleep_chain, "hit", 3, &p);
	printf("# %ld deferred samples, %ld classic samples, %ld hits paired; lost %ld/%ld\n",
	       p.nd, p.nc, p.pairs, cd.lost, cc.lost);
	printf("# caller named where classic skips it (frameless stop): %ld\n", p.caller_added);
	printf("# stitched = classic: %ld (%ld of them a bare ip in both), differ: %ld, no record: %ld; sleeping path named: %ld\n",
	       p.equal, p.bare, p.differ, p.missing, p.named);
	DS_CHECK(&failed, cd.lost == 0 && cc.lost == 0 && cd.bad == 0 && cc.bad == 0,
		 "no lost or malformed records");
	DS_CHECK(&failed, p.nd == p.nc, "both events sampled every hit (%ld, %ld)", p.nd, p.nc);
	DS_CHECK(&failed, p.pairs >= 50, "at least 50 hits on the way out (%ld)", p.pairs);
	DS_CHECK(&failed, p.named >= p.pairs / 4, "a good share of hits on the sleeping path (%ld)",
		 p.named);
	DS_CHECK(&failed, p.missing == 0, "every deferred sample has its record (%ld missing)",
		 p.missing);
	DS_CHECK(&failed, p.bare * 10 <= p.pairs, "few hits where both walks stop at the ip (%ld)",
		 p.bare);
	DS_CHECK(&failed, p.differ == 0,
		 "every stitched user stack is the one the hit was taken on (%ld differ)", p.differ);
	ds_collect_free(&cd);
	ds_collect_free(&cc);
	ds_symtab_free(st);
	return failed ? 1 : 0;
}
