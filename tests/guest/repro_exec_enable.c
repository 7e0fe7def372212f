// SPDX-License-Identifier: GPL-2.0
/*
 * Reproducers of two bugs of perf core that our series does not touch
 * (docs/kernel.md, "Limits"), both on exec of a task whose remove_on_exec
 * events another task owns. The first was found by perf_fuzz on Debian's
 * stock 7.2.13 kernel (seed 3, remove_on_exec on children's events). Not in
 * the suite: they hang or crash the kernels they reproduce on, 6.12 and 7.2.
 *
 * A lock inversion:
 *   exec of a task with remove_on_exec events owned by another task:
 *     perf_event_exec() -> perf_event_remove_on_exec(): ctx->mutex (the
 *     task's), then perf_remove_from_owner(): owner->perf_event_mutex
 *   the owner, at the same time, prctl(PR_TASK_PERF_EVENTS_ENABLE or
 *   _DISABLE): its perf_event_mutex, then each owned event's ctx->mutex
 *
 * perf_remove_from_owner() takes the owner's mutex inside ctx->mutex on the
 * grounds that it is "the child ctx->mutex" (the exit path's case); on exec
 * the owner can hold its own mutex and wait for that ctx. Both tasks then
 * sleep in D state for good.
 *
 *   repro_exec_enable [SECONDS [race|abba]]   (default 30 s, race;
 *                                              exits 0 if nothing happened)
 *
 * race: a child execs itself over and over while the parent keeps opening
 * events with remove_on_exec on it (and closing old ones) from one thread
 * and toggles its own events with PR_TASK_PERF_EVENTS_DISABLE/ENABLE from
 * another. This meets a second bug first, in a second or so: the event is in
 * the child's context (perf_install_in_context()) before perf_event_open()
 * puts it on its owner's list, and an exec in between unlinks it from a
 * list it is not on: a NULL pointer dereference in perf_remove_from_owner()
 * on 6.12 ("list_del corruption, ...->next is NULL" with DEBUG_LIST, 7.2).
 *
 * abba: the inversion alone. Rounds of a new child that waits on a pipe
 * while the parent opens 16 events on it (all on the owner's list when the
 * child goes on), then execs once; the toggling thread runs throughout. On
 * a hang the harness's per-test budget dumps the blocked tasks:
 * perf_event_exec() and perf_event_task_enable()/_disable(), each waiting
 * for the other's mutex.
 */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RING 32

static pid_t child;
static atomic_int stop;
static atomic_long opened, toggles;

static void *toggler(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		prctl(PR_TASK_PERF_EVENTS_DISABLE, 0, 0, 0, 0);
		prctl(PR_TASK_PERF_EVENTS_ENABLE, 0, 0, 0, 0);
		atomic_fetch_add(&toggles, 1);
	}
	return NULL;
}

/* One abba round: a child that waits, 16 events on it, then its exec. */
static long abba_round(const char *self)
{
	int go[2], fds[16], status;
	long n = 0;
	char c = 0;

	if (pipe(go))
		return 0;
	child = fork();
	if (child == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) == 1)
			execl("/proc/self/exe", self, "0", "exit", (char *)NULL);
		_exit(127);
	}
	close(go[0]);
	for (int i = 0; i < 16; i++) {
		struct perf_event_attr attr = {
			.size = sizeof(attr),
			.type = PERF_TYPE_SOFTWARE,
			.config = PERF_COUNT_SW_TASK_CLOCK,
			.remove_on_exec = 1,
		};

		fds[i] = syscall(SYS_perf_event_open, &attr, child, -1, -1, 0);
		n += fds[i] >= 0;
	}
	if (write(go[1], &c, 1) != 1)
		kill(child, SIGKILL);
	close(go[1]);
	waitpid(child, &status, 0);
	for (int i = 0; i < 16; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return n;
}

int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 30;
	int abba = argc > 2 && !strcmp(argv[2], "abba");
	int fds[RING], i = 0, status;
	long rounds = 0;
	pthread_t t;
	time_t end;

	if (argc > 2 && !strcmp(argv[2], "exit"))
		return 0;
	if (argc > 2 && !strcmp(argv[2], "child"))
		/* exec again at once: every exec removes the events */
		execl("/proc/self/exe", argv[0], argv[1], "child", (char *)NULL);

	pthread_create(&t, NULL, toggler, NULL);
	end = time(NULL) + secs;
	if (abba) {
		while (time(NULL) < end) {
			atomic_fetch_add(&opened, abba_round(argv[0]));
			rounds++;
		}
		atomic_store(&stop, 1);
		pthread_join(t, NULL);
		printf("# abba: %ld rounds, %ld events opened with remove_on_exec, %ld enable/disable pairs, no hang\n",
		       rounds, atomic_load(&opened), atomic_load(&toggles));
		return 0;
	}
	for (i = 0; i < RING; i++)
		fds[i] = -1;
	child = fork();
	if (child == 0) {
		execl("/proc/self/exe", argv[0], argv[1], "child", (char *)NULL);
		_exit(127);
	}
	for (i = 0; time(NULL) < end; i = (i + 1) % RING) {
		struct perf_event_attr attr = {
			.size = sizeof(attr),
			.type = PERF_TYPE_SOFTWARE,
			.config = PERF_COUNT_SW_TASK_CLOCK,
			.remove_on_exec = 1,
		};

		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = syscall(SYS_perf_event_open, &attr, child, -1, -1, 0);
		if (fds[i] >= 0)
			atomic_fetch_add(&opened, 1);
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	printf("# race: %ld events opened with remove_on_exec on an exec loop, %ld enable/disable pairs, no crash\n",
	       atomic_load(&opened), atomic_load(&toggles));
	return 0;
}
