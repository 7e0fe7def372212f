// SPDX-License-Identifier: GPL-2.0
/*
 * The user registers rewritten inside one kernel entry: a sample taken before
 * the change must get the stack it was taken on, the one its classic
 * callchain shows, not the one the entry returns to user space with; and a
 * sample taken after it the new one.
 *
 *  signal     signal:signal_deliver fires in get_signal(), before the
 *             handler's frame is set up: the registers then point at the
 *             handler, the stack at the signal frame.
 *  sigreturn  syscalls:sys_enter_rt_sigreturn fires on the restorer's
 *             system call, which puts the interrupted code's registers back.
 *  restart    syscalls:sys_enter_read of a child that blocks in read(), is
 *             stopped by SIGSTOP and continued: without a handler the
 *             system call is restarted, its ip moved back onto the syscall
 *             instruction, on the way out of the same entry. Its
 *             sched_switch samples (blocking, stopping) keep the old ip,
 *             the x86_fpu_regs_activated one after the restart gets the
 *             new one.
 *  ptrace     a traced child's tracer moves its ip at every getppid() exit
 *             stop (to a function that longjmp()s back). The sample before the
 *             stop (raw_syscalls:sys_exit) must keep the old stack; the one
 *             on the way out after it (x86_fpu:x86_fpu_regs_activated: the
 *             stop switched the task out, so its FPU registers are reloaded,
 *             after the exit loop: a late request) must get the new one.
 *
 * Every hit is sampled by two events on the child: with defer_callchain
 * (+defer_output, as mainline delivers) and with a classic callchain, walked
 * at the hit itself; each deferred stack must be the classic one of the same
 * hit (ds_pair_hits()).
 *
 *   regs_change [MSEC]     (at most 1,500 rounds per case, within MSEC)
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stitch_util.h"

/* A few thousand hits fit the 4 MiB rings, read once at the end. */
#define RC_ROUNDS 1500
/* Each a stop and a continue of a child blocked in read(). */
#define RC_RESTARTS 150

static unsigned int run_msec = 3000;
static volatile sig_atomic_t handled;
static jmp_buf rc_env;
static volatile long landed;

static void rc_handler(int sig)
{
	(void)sig;
	handled++;
}

__attribute__((noinline)) static void rc_sig_leaf(void)
{
	ds_syscall3(SYS_tgkill, getpid(), gettid(), SIGUSR1);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void rc_sig_path(void)
{
	rc_sig_leaf();
	__asm__ volatile("" ::: "memory");
}

/* Where the tracer sends the child at a getppid() exit stop. */
__attribute__((noinline, used)) void rc_landing(void)
{
	landed++;
	longjmp(rc_env, 1);
}

__attribute__((noinline)) static void rc_rs_leaf(int fd)
{
	char c;

	ds_syscall3(SYS_read, fd, (long)&c, 1);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void rc_rs_path(int fd)
{
	rc_rs_leaf(fd);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void rc_pt_leaf(void)
{
	ds_syscall3(SYS_getppid, 0, 0, 0);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void rc_pt_path(void)
{
	rc_pt_leaf();
	__asm__ volatile("" ::: "memory");
}

static int signal_child(void *arg)
{
	struct sigaction sa = { .sa_handler = rc_handler };
	struct timespec t0;

	(void)arg;
	ds_pin(0, 0);
	sigaction(SIGUSR1, &sa, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < RC_ROUNDS && ds_msec_since(&t0) < (long)run_msec; i++)
		rc_sig_path();
	return handled > 0 ? 0 : 3;
}

static int restart_fd[2];

static int restart_child(void *arg)
{
	(void)arg;
	ds_pin(0, 0);
	for (int i = 0; i < RC_RESTARTS; i++)
		rc_rs_path(restart_fd[0]);
	return 0;
}

/* Traced by the test itself: stops at every system call (PTRACE_SYSCALL). */
static void ptrace_child(void)
{
	struct timespec t0;

	ds_pin(0, 0);
	if (ptrace(PTRACE_TRACEME, 0, 0, 0))
		_exit(4);
	raise(SIGSTOP);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/*
	 * The clock every 64 rounds: where the vDSO cannot read it (a TSC
	 * marked unstable) each read is a system call, and its exit a hit
	 * off the expected path.
	 */
	for (int i = 0; i < RC_ROUNDS && ((i & 63) || ds_msec_since(&t0) < (long)run_msec); i++) {
		if (!setjmp(rc_env))
			rc_pt_path();
	}
	_exit(landed > 0 ? 0 : 5);
}

struct pair {
	const char *what, *sys, *name;	/* case, tracepoint */
	int fd[2];
	struct ds_mmap m[2];
	struct ds_collect c[2];
};

static int open_pair(struct pair *p, pid_t pid)
{
	struct perf_event_attr attr;
	int ret;

	ret = ds_attr_tracepoint(&attr, p->sys, p->name);
	if (ret) {
		printf("# tracepoint %s:%s: %s\n", p->sys, p->name, strerror(-ret));
		return ret;
	}
	for (int k = 0; k < 2; k++) {
		ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, k == 0);
		ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_OUTPUT, k == 0);
		p->fd[k] = ds_perf_open(&attr, pid, -1, -1, 0);
		if (p->fd[k] < 0) {
			printf("# perf_event_open %s:%s: %s\n", p->sys, p->name,
			       strerror(-p->fd[k]));
			return p->fd[k];
		}
		if (ds_mmap_open(&p->m[k], p->fd[k], 1024)) {
			printf("# mmap failed\n");
			return -1;
		}
		p->c[k].only_tid = (uint32_t)pid;
	}
	return 0;
}

static void drain_pair(struct pair *p)
{
	for (int k = 0; k < 2; k++)
		ds_mmap_drain(&p->m[k], ds_collect_record, &p->c[k]);
}

/* Check one pair's hits: at least @min_hits, most on @chain. */
static void check_pair(struct pair *p, const struct ds_symtab *st, const char *const *chain,
		       long min_hits, int *failed)
{
	struct ds_pairs r;

	for (int k = 0; k < 2; k++)
		ioctl(p->fd[k], PERF_EVENT_IOC_DISABLE, 0);
	drain_pair(p);
	ds_pair_hits(&p->c[0], &p->c[1], st, chain, p->what, 3, &r);
	printf("# %s: %ld deferred samples, %ld classic, %ld hits paired; stitched = classic %ld (caller named %ld, bare ip %ld), differ %ld, no record %ld, path named %ld; lost %ld/%ld\n",
	       p->what, r.nd, r.nc, r.pairs, r.equal, r.caller_added, r.bare, r.differ, r.missing,
	       r.named, p->c[0].lost, p->c[1].lost);
	DS_CHECK(failed, p->c[0].lost == 0 && p->c[1].lost == 0 && p->c[0].bad == 0 &&
		 p->c[1].bad == 0, "%s: no lost or malformed records", p->what);
	DS_CHECK(failed, r.nd == r.nc, "%s: both events sampled every hit (%ld, %ld)", p->what,
		 r.nd, r.nc);
	DS_CHECK(failed, r.pairs >= min_hits, "%s: at least %ld hits (%ld)", p->what, min_hits,
		 r.pairs);
	DS_CHECK(failed, r.named * 2 >= r.pairs, "%s: most hits on the expected path (%ld)",
		 p->what, r.named);
	DS_CHECK(failed, r.missing == 0, "%s: every deferred sample has its record (%ld missing)",
		 p->what, r.missing);
	DS_CHECK(failed, r.differ == 0,
		 "%s: every stitched user stack is the one the hit was taken on (%ld differ)",
		 p->what, r.differ);
	for (int k = 0; k < 2; k++) {
		ds_mmap_close(&p->m[k]);
		close(p->fd[k]);
		ds_collect_free(&p->c[k]);
	}
}

static void run_signal(const struct ds_symtab *st, int *failed)
{
	static const char *const sig_chain[] = { "rc_sig_leaf", "rc_sig_path", "signal_child",
						 NULL };
	static const char *const ret_chain[] = { "rc_sig_path", "signal_child", NULL };
	struct pair deliver = { .what = "signal: signal_deliver", .sys = "signal",
				.name = "signal_deliver" };
	struct pair sigret = { .what = "sigreturn: sys_enter_rt_sigreturn", .sys = "syscalls",
				.name = "sys_enter_rt_sigreturn" };
	struct ds_child ch;
	int ret;

	if (ds_child_start(&ch, signal_child, NULL))
		return;
	ds_child_wait_blocked(&ch);
	if (open_pair(&deliver, ch.pid) || open_pair(&sigret, ch.pid)) {
		*failed = 1;
		kill(ch.pid, SIGKILL);
		return;
	}
	ds_child_go(&ch);
	ret = ds_child_wait(&ch, &deliver.m[0], ds_collect_record, &deliver.c[0]);
	DS_CHECK(failed, WIFEXITED(ret) && WEXITSTATUS(ret) == 0,
		 "signal: child ran, handled its signals and exited 0 (status 0x%x)", ret);
	check_pair(&deliver, st, sig_chain, 50, failed);
	/* The restorer's frame, then the interrupted code's callers. */
	check_pair(&sigret, st, ret_chain, 50, failed);
}

static void run_restart(const struct ds_symtab *st, int *failed)
{
	static const char *const chain[] = { "rc_rs_leaf", "rc_rs_path", "restart_child", NULL };
	static const char *const late_chain[] = { "rc_rs_leaf", NULL };
	struct pair cs = { .what = "restart: sched_switch", .sys = "sched",
				.name = "sched_switch" };
	struct pair fpu = { .what = "restart: x86_fpu_regs_activated", .sys = "x86_fpu",
				.name = "x86_fpu_regs_activated" };
	struct timespec pause = { 0, 3000000 };
	volatile double fpu_use = 1.0;
	struct ds_child ch;
	int status = 0;
	long stopped = 0;

	/* On the child's CPU, using the FPU while it is stopped (as ptrace's). */
	ds_pin(0, 0);
	if (pipe(restart_fd) || ds_child_start(&ch, restart_child, NULL))
		return;
	/* Else a switch between the pair's two opens is a hit of one of them only. */
	ds_child_wait_blocked(&ch);
	if (open_pair(&cs, ch.pid) || open_pair(&fpu, ch.pid)) {
		*failed = 1;
		kill(ch.pid, SIGKILL);
		return;
	}
	ds_child_go(&ch);
	for (int i = 0; i < RC_RESTARTS; i++) {
		/* Blocked in read() by now; stopped there, continued, fed. */
		nanosleep(&pause, NULL);
		kill(ch.pid, SIGSTOP);
		if (waitpid(ch.pid, &status, WUNTRACED) == ch.pid && WIFSTOPPED(status))
			stopped++;
		fpu_use = fpu_use * 1.0000001 + 0.5;
		kill(ch.pid, SIGCONT);
		if (write(restart_fd[1], "x", 1) != 1)
			break;
	}
	waitpid(ch.pid, &status, 0);
	DS_CHECK(failed, WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "restart: child read through %ld stops and exited 0 (status 0x%x)", stopped,
		 status);
	check_pair(&cs, st, chain, 100, failed);
	/* After the restart, on the way out: the ip back on the syscall. */
	check_pair(&fpu, st, late_chain, 100, failed);
	close(restart_fd[0]);
	close(restart_fd[1]);
}

static void run_ptrace(const struct ds_symtab *st, int *failed)
{
	static const char *const exit_chain[] = { "rc_pt_leaf", "rc_pt_path", "ptrace_child",
						  NULL };
	static const char *const late_chain[] = { "rc_landing", NULL };
	struct pair sysexit = { .what = "ptrace: sys_exit", .sys = "raw_syscalls",
				.name = "sys_exit" };
	struct pair fpu = { .what = "ptrace: x86_fpu_regs_activated", .sys = "x86_fpu",
				.name = "x86_fpu_regs_activated" };
	volatile double fpu_use = 1.0;
	long moved = 0, stops = 0;
	pid_t pid;
	int status;

	/*
	 * The tracer on the child's CPU, using its FPU at every stop: the
	 * child's FPU registers are reloaded on each way out.
	 */
	ds_pin(0, 0);
	pid = fork();
	if (pid == 0)
		ptrace_child();
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) {
		DS_CHECK(failed, 0, "ptrace: child stopped for its tracer");
		return;
	}
	ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL);
	if (open_pair(&sysexit, pid) || open_pair(&fpu, pid)) {
		*failed = 1;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return;
	}
	for (int sig = 0;;) {
		struct user_regs_struct regs;

		if (ptrace(PTRACE_SYSCALL, pid, 0, sig) || waitpid(pid, &status, 0) != pid)
			break;
		sig = 0;
		if (WIFEXITED(status) || WIFSIGNALED(status))
			break;
		if (!WIFSTOPPED(status))
			continue;
		fpu_use = fpu_use * 1.0000001 + 0.5;
		if (WSTOPSIG(status) != (SIGTRAP | 0x80)) {
			sig = WSTOPSIG(status);
			continue;
		}
		/* Entry and exit stops alternate; rax = -ENOSYS at the entry. */
		if (ptrace(PTRACE_GETREGS, pid, 0, &regs))
			break;
		stops++;
		if (regs.orig_rax != SYS_getppid || (long)regs.rax == -38)
			continue;
		/* Leave getppid() for rc_landing(), aligned as after a call. */
		regs.rip = (unsigned long)rc_landing;
		regs.rsp = (regs.rsp & ~15ULL) - 8;
		if (ptrace(PTRACE_SETREGS, pid, 0, &regs) == 0)
			moved++;
	}
	DS_CHECK(failed, WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "ptrace: child ran, landed and exited 0 (status 0x%x, %ld moves)", status, moved);
	check_pair(&sysexit, st, exit_chain, 50, failed);
	check_pair(&fpu, st, late_chain, 50, failed);
}

int main(int argc, char **argv)
{
	struct ds_symtab *st = ds_symtab_load("/proc/self/exe");
	int failed = 0;

	if (argc > 1)
		run_msec = (unsigned int)strtoul(argv[1], NULL, 0);
	if (!st)
		return 1;
	run_signal(st, &failed);
	run_restart(st, &failed);
	run_ptrace(st, &failed);
	ds_symtab_free(st);
	return failed ? 1 : 0;
}
