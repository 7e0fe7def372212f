// SPDX-License-Identifier: GPL-2.0
/*
 * hold_keys: not a test. Opens one counting event of each kind the suite's
 * tests open (every software event type, the raw_syscalls tracepoints, a
 * per-task event for perf_sched_events) and keeps them open until killed,
 * so that the static keys and static calls behind them stay on while the
 * tests open and close their own events.
 *
 * Why: QEMU 7.2's software emulation (this project's CI host) now and then
 * runs stale code while text_poke_bp() re-patches a hot site that the other
 * vCPU is executing, and the guest dies of "Oops: int3" (docs/kernel.md,
 * "Limits"). run-suite starts this for the reference suite only, on
 * Debian's stock 7.x kernel; the suites on our own kernel flip the keys as
 * real use does.
 *
 *   hold_keys      prints "# hold_keys: N events held open", then waits
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>

#include "perf_util.h"

static int hold(struct perf_event_attr *a)
{
	a->size = sizeof(*a);
	a->disabled = 1;
	a->sample_period = 0;
	a->sample_type = 0;
	return syscall(SYS_perf_event_open, a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC) >= 0;
}

int main(void)
{
	static const char *const tps[] = { "sys_enter", "sys_exit" };
	struct perf_event_attr a;
	sigset_t set;
	int n = 0, sig;

	/* One static key per software event type; and each of these events
	 * is per task (on this one), which holds perf_sched_events on. */
	for (unsigned int id = 0; id < PERF_COUNT_SW_MAX; id++) {
		memset(&a, 0, sizeof(a));
		a.type = PERF_TYPE_SOFTWARE;
		a.config = id;
		n += hold(&a);
	}
	for (size_t i = 0; i < sizeof(tps) / sizeof(tps[0]); i++) {
		if (ds_attr_tracepoint(&a, "raw_syscalls", tps[i]))
			continue;
		n += hold(&a);
	}
	printf("# hold_keys: %d events held open\n", n);
	fflush(stdout);

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sigwait(&set, &sig);
	return 0;
}
