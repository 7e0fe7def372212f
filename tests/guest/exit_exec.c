// SPDX-License-Identifier: GPL-2.0
/*
 * Samples whose task never returns to user space with the stack they were
 * taken on:
 *   exit   - sampled at exit_group() entry: the task dies in that system call;
 *   kill   - sampled at read() entry, then SIGKILLed while blocked in it;
 *   exec   - sampled at execve() entry: the task returns into a new image;
 *   exec-late - sampled at execve() exit, after the point of no return: the
 *            record must hold no stack (neither image's is the sample's).
 * Each child is sampled with a syscalls tracepoint that has defer_callchain
 * and defer_output. Every sample's record must exist and name the child's
 * callers of that system call (the old image's, for exec).
 *
 *   exit_exec [ROUNDS]          (exit_exec --exec-target: the new image)
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stitch_util.h"

static int kill_pipe[2];

__attribute__((noinline)) static void ee_exit_inner(void)
{
	ds_syscall3(SYS_exit_group, 0, 0, 0);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static int ee_exit_outer(void *arg)
{
	(void)arg;
	ee_exit_inner();
	__asm__ volatile("" ::: "memory");
	return 1;
}

__attribute__((noinline)) static void ee_kill_inner(void)
{
	char c;

	/* Blocks: nothing is ever written to the pipe. */
	ds_syscall3(SYS_read, kill_pipe[0], (long)&c, 1);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static int ee_kill_outer(void *arg)
{
	(void)arg;
	ee_kill_inner();
	__asm__ volatile("" ::: "memory");
	return 1;
}

__attribute__((noinline)) static void ee_exec_inner(void)
{
	char *const argv[] = { "exit_exec", "--exec-target", NULL };
	char *const envp[] = { NULL };

	ds_syscall3(SYS_execve, (long)"/proc/self/exe", (long)argv, (long)envp);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static int ee_exec_outer(void *arg)
{
	(void)arg;
	ee_exec_inner();
	__asm__ volatile("" ::: "memory");
	return 1;
}

struct scenario {
	const char *name, *tp;		/* the syscalls:TP tracepoint sampled */
	int (*fn)(void *);
	const char *const *chain;	/* NULL: the record must hold no stack */
	int kill;
};

static bool has_sample(const struct ds_collect *c, uint32_t tid)
{
	for (long i = 0; i < c->n; i++)
		if (!c->recs[i].deferred && c->recs[i].tid == tid)
			return true;
	return false;
}

/* Run one child under a sys_enter_* tracepoint; count samples and good records. */
static int run_one(const struct scenario *s, const struct ds_symtab *st, long *samples,
		   long *stitched, long *named, long *depth1)
{
	struct ds_collect c = { 0 };
	struct perf_event_attr attr;
	struct ds_mmap m;
	struct ds_child ch;
	char tp[64];
	int fd, status;

	snprintf(tp, sizeof(tp), "%s", s->tp);
	if (ds_attr_tracepoint(&attr, "syscalls", tp)) {
		printf("# no tracepoint syscalls:%s\n", tp);
		return -1;
	}
	ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
	ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_OUTPUT, 1);
	if (s->kill && pipe(kill_pipe))
		return -1;
	if (ds_child_start(&ch, s->fn, NULL))
		return -1;
	/* Else the kill case may get a sample of its read(), not of the stack sampled. */
	ds_child_wait_blocked(&ch);
	fd = ds_perf_open(&attr, ch.pid, -1, -1, 0);
	if (fd < 0 || ds_mmap_open(&m, fd, 64)) {
		printf("# perf_event_open/mmap: %s\n", strerror(fd < 0 ? -fd : 0));
		kill(ch.pid, SIGKILL);
		return -1;
	}
	ds_child_go(&ch);
	if (s->kill) {
		/* Kill it once its read() was sampled (it blocks there), 10 s at most. */
		for (int t = 0; t < 1000 && !has_sample(&c, (uint32_t)ch.pid); t++) {
			usleep(10000);
			ds_mmap_drain(&m, ds_collect_record, &c);
		}
		usleep(50000);
		kill(ch.pid, SIGKILL);
	}
	status = ds_child_wait(&ch, &m, ds_collect_record, &c);
	if (s->kill) {
		close(kill_pipe[0]);
		close(kill_pipe[1]);
	}
	if (s->kill ? !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		    : !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		printf("# %s: child status 0x%x\n", s->name, status);
	for (long i = 0; i < c.n; i++) {
		const struct ds_rec *r = &c.recs[i], *d;
		long count;

		if (r->deferred || (uint32_t)ch.pid != r->tid)
			continue;
		(*samples)++;
		d = r->cookie ? ds_find_record(&c, r->tid, r->cookie, &count) : NULL;
		if (!d)
			continue;
		(*stitched)++;
		if (s->chain ? ds_chain_has_sequence(st, d->ips, d->nr, s->chain) : !d->nr)
			(*named)++;
		if (d->nr == 1)
			(*depth1)++;
	}
	ds_mmap_close(&m);
	close(fd);
	ds_collect_free(&c);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const exit_chain[] = { "ee_exit_inner", "ee_exit_outer", NULL };
	static const char *const kill_chain[] = { "ee_kill_inner", "ee_kill_outer", NULL };
	static const char *const exec_chain[] = { "ee_exec_inner", "ee_exec_outer", NULL };
	const struct scenario scen[] = {
		{ "exit", "sys_enter_exit_group", ee_exit_outer, exit_chain, 0 },
		{ "kill", "sys_enter_read", ee_kill_outer, kill_chain, 1 },
		{ "exec", "sys_enter_execve", ee_exec_outer, exec_chain, 0 },
		/* After the point of no return: no stack of either image. */
		{ "exec-late", "sys_exit_execve", ee_exec_outer, NULL, 0 },
	};
	int rounds = 5, failed = 0;
	struct ds_symtab *st;

	if (argc > 1 && !strcmp(argv[1], "--exec-target"))
		return 0;
	if (argc > 1)
		rounds = atoi(argv[1]);
	st = ds_symtab_load("/proc/self/exe");
	if (!st)
		return 1;
	for (size_t k = 0; k < sizeof(scen) / sizeof(scen[0]); k++) {
		long samples = 0, stitched = 0, named = 0, depth1 = 0;

		for (int i = 0; i < rounds; i++) {
			if (run_one(&scen[k], st, &samples, &stitched, &named, &depth1))
				failed++;
		}
		printf("# %s: %ld samples, %ld with their record, %ld %s, %ld of one frame\n",
		       scen[k].name, samples, stitched, named,
		       scen[k].chain ? "naming the callers" : "with an empty stack", depth1);
		DS_CHECK(&failed, samples >= rounds, "%s: every child sampled (%ld)", scen[k].name,
			 samples);
		DS_CHECK(&failed, stitched == samples, "%s: every sample has its record (%ld of %ld)",
			 scen[k].name, stitched, samples);
		DS_CHECK(&failed, named == samples,
			 "%s: every record has the sampled stack (%ld of %ld)", scen[k].name, named,
			 samples);
	}
	ds_symtab_free(st);
	return failed ? 1 : 0;
}
