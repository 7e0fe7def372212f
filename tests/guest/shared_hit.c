// SPDX-License-Identifier: GPL-2.0
/*
 * One hit counted by several events of the same kind. Software events and
 * tracepoints hand one perf_sample_data to every event of the hit, and perf
 * keeps what the first event put in it: each event must still get the
 * callchain it asked for. Three events on a child that blocks in nanosleep()
 * (a context switch and a sched_switch per call), each with its own ring:
 *
 *   defer, classic, defer    and    classic, defer, classic
 *
 * for the context-switches software event and for sched:sched_switch. Every
 * deferred sample must carry a cookie whose record is in its own ring and
 * equals the classic chain of the same hit (ds_pair_hits()); no classic
 * sample may carry a cookie.
 *
 *   shared_hit [ROUNDS]      (nanosleep() calls per case, 300 by default)
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

#define SH_EVENTS 3

static int rounds = 300;

__attribute__((noinline)) static void sh_leaf(void)
{
	/* Long enough to block every time, also on the debug kernel. */
	struct timespec ts = { 0, 1000000 };

	ds_syscall3(SYS_nanosleep, (long)&ts, 0, 0);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void sh_path(void)
{
	sh_leaf();
	__asm__ volatile("" ::: "memory");
}

static int sh_child(void *arg)
{
	(void)arg;
	ds_pin(0, 0);
	for (int i = 0; i < rounds; i++)
		sh_path();
	return 0;
}

struct shared_case {
	const char *what;
	const char *sys, *name;		/* a tracepoint, or NULL: context-switches */
	bool defer[SH_EVENTS];
	int fd[SH_EVENTS];
	struct ds_mmap m[SH_EVENTS];
	struct ds_collect c[SH_EVENTS];
};

static int open_events(struct shared_case *sc, pid_t pid)
{
	struct perf_event_attr attr;
	int ret;

	for (int k = 0; k < SH_EVENTS; k++) {
		if (sc->sys) {
			ret = ds_attr_tracepoint(&attr, sc->sys, sc->name);
			if (ret) {
				printf("# tracepoint %s:%s: %s\n", sc->sys, sc->name,
				       strerror(-ret));
				return ret;
			}
		} else {
			ds_attr_sampling(&attr, 1);
			attr.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
			attr.sample_period = 1;
			attr.disabled = 0;
		}
		ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, sc->defer[k]);
		ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_OUTPUT, sc->defer[k]);
		sc->fd[k] = ds_perf_open(&attr, pid, -1, -1, 0);
		if (sc->fd[k] < 0) {
			printf("# %s: perf_event_open: %s\n", sc->what, strerror(-sc->fd[k]));
			return sc->fd[k];
		}
		if (ds_mmap_open(&sc->m[k], sc->fd[k], 512)) {
			printf("# %s: mmap failed\n", sc->what);
			return -1;
		}
		sc->c[k].only_tid = (uint32_t)pid;
	}
	return 0;
}

static void close_events(struct shared_case *sc)
{
	for (int k = 0; k < SH_EVENTS; k++) {
		if (sc->fd[k] <= 0)
			continue;
		ds_mmap_close(&sc->m[k]);
		close(sc->fd[k]);
		ds_collect_free(&sc->c[k]);
	}
}

static void check_case(struct shared_case *sc, const struct ds_symtab *st, int *failed)
{
	static const char *const chain[] = { "sh_leaf", "sh_path", "sh_child", NULL };
	long cookies_in_classic = 0, lost = 0, bad = 0;
	int cl = -1;

	for (int k = 0; k < SH_EVENTS; k++) {
		ioctl(sc->fd[k], PERF_EVENT_IOC_DISABLE, 0);
		ds_mmap_drain(&sc->m[k], ds_collect_record, &sc->c[k]);
		lost += sc->c[k].lost;
		bad += sc->c[k].bad;
		if (!sc->defer[k] && cl < 0)
			cl = k;
		for (long i = 0; !sc->defer[k] && i < sc->c[k].n; i++)
			cookies_in_classic += !sc->c[k].recs[i].deferred && sc->c[k].recs[i].cookie;
	}
	DS_CHECK(failed, lost == 0 && bad == 0, "%s: no lost or malformed records (%ld, %ld)",
		 sc->what, lost, bad);
	DS_CHECK(failed, cookies_in_classic == 0,
		 "%s: no classic sample carries a cookie (%ld do)", sc->what, cookies_in_classic);
	for (int k = 0; k < SH_EVENTS; k++) {
		char what[96];
		struct ds_pairs r;

		if (!sc->defer[k])
			continue;
		snprintf(what, sizeof(what), "%s, event %d", sc->what, k);
		ds_pair_hits(&sc->c[k], &sc->c[cl], st, chain, what, 3, &r);
		printf("# %s: %ld deferred samples, %ld classic, %ld hits paired; stitched = classic %ld (no user stack in either %ld, not deferred %ld), differ %ld, no record %ld, path named %ld\n",
		       what, r.nd, r.nc, r.pairs, r.equal, r.no_user, r.inline_user, r.differ,
		       r.missing, r.named);
		DS_CHECK(failed, r.nd == r.nc && r.pairs >= rounds / 2,
			 "%s: both events sampled every hit, at least %d (%ld, %ld)", what,
			 rounds / 2, r.nd, r.nc);
		DS_CHECK(failed, r.named * 2 >= r.pairs, "%s: most hits on the expected path (%ld)",
			 what, r.named);
		DS_CHECK(failed, r.missing == 0 && r.equal == r.pairs,
			 "%s: every deferred sample has its record, equal to the classic chain (%ld missing, %ld differ)",
			 what, r.missing, r.differ);
	}
}

static void run_case(struct shared_case *sc, const struct ds_symtab *st, int *failed)
{
	struct ds_child ch;
	int status;

	if (ds_child_start(&ch, sh_child, NULL)) {
		DS_CHECK(failed, 0, "%s: child started", sc->what);
		return;
	}
	/* Else a switch between two opens is a hit of only the events opened before it. */
	ds_child_wait_blocked(&ch);
	if (open_events(sc, ch.pid)) {
		*failed = 1;
		kill(ch.pid, SIGKILL);
		waitpid(ch.pid, NULL, 0);
		close_events(sc);
		return;
	}
	ds_child_go(&ch);
	status = ds_child_wait(&ch, NULL, NULL, NULL);
	DS_CHECK(failed, WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "%s: child ran and exited 0 (status 0x%x)", sc->what, status);
	check_case(sc, st, failed);
	close_events(sc);
}

int main(int argc, char **argv)
{
	struct shared_case cases[] = {
		{ .what = "context-switches: defer, classic, defer", .defer = { 1, 0, 1 } },
		{ .what = "context-switches: classic, defer, classic", .defer = { 0, 1, 0 } },
		{ .what = "sched_switch: defer, classic, defer", .sys = "sched",
		  .name = "sched_switch", .defer = { 1, 0, 1 } },
		{ .what = "sched_switch: classic, defer, classic", .sys = "sched",
		  .name = "sched_switch", .defer = { 0, 1, 0 } },
	};
	struct ds_symtab *st = ds_symtab_load("/proc/self/exe");
	int failed = 0;

	if (argc > 1)
		rounds = atoi(argv[1]);
	if (!st || rounds < 2)
		return 1;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i], st, &failed);
	ds_symtab_free(st);
	return failed ? 1 : 0;
}
