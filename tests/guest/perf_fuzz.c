// SPDX-License-Identifier: GPL-2.0
/*
 * A bounded perf syscall fuzzer: for a fixed time, random perf_event_open
 * attrs (software events, tracepoints, breakpoints; the defer bits mixed with
 * every other flag), per task (self, our threads, forked children) and per CPU,
 * in groups; random ioctls (ENABLE, DISABLE, RESET, REFRESH, PERIOD,
 * SET_OUTPUT, PAUSE_OUTPUT, ID, SET_FILTER, SET_DEFER_SESSION, ...), also from a
 * second thread racing the main one; mmap/munmap of rings (valid and invalid
 * sizes, partial unmaps, read-only overwrite rings), draining them, read() of
 * counts, close; kernel.perf_event_max_stack changes; threads, fork, exec (also
 * from a multithreaded child, from a thread that is not the leader), exit,
 * SIGKILL and CPU migration of the sampled tasks, which keep entering the
 * kernel (read of /dev/zero, getppid) and running user code, so deferred
 * unwinds are pending all the time; "tool" children open their own defer
 * events on our tasks (other sessions) and exit with them open.
 *
 * Every system call may fail; the fuzzer itself must not crash or hang (a
 * watchdog thread ends it, printing the last operations; children have bounded
 * lives; fds, rings and memory are capped), and the kernel's health is judged
 * by the harness (any splat on the console fails the run; on the debug kernel
 * kmemleak_check.sh runs after it). Its own check: every
 * PERF_RECORD_CALLCHAIN_DEFERRED read from a ring is well formed.
 *
 *   perf_fuzz [SECONDS [SEED|random [MODES]]]   (default: 60 s, seed 1)
 *
 * MODES, joined by '+': "v" (verbose replay, below), "pin" (below), "rexec"
 * (remove_on_exec also on events opened on our children, which exec: that
 * meets a race of perf core on stock kernels, so it is off by default; see
 * repro_exec_enable.c), "nosigtrap" (no sigtrap on our own events, which
 * get it at random otherwise).
 *
 * "pin" first opens one event on every software event
 * type, on each preferred tracepoint (and a second probe on the raw syscall
 * tracepoints) and on its own task, and keeps them open, so that the static
 * keys and static calls behind those events never flip while the fuzzer
 * runs; only the preferred tracepoints are fuzzed. Under QEMU's software
 * emulation with a TCG thread per vCPU, flipping them while the other vCPU
 * runs through the patched code ends in "Oops: int3" (text_poke_bp()), on
 * Debian's stock 7.2 kernel as on ours (docs/kernel.md); the harness now runs
 * one TCG thread, and the suite runs unpinned ("perf_fuzz 60 random").
 *
 * The seed is printed first. "perf_fuzz 60 SEED v" makes the main thread take
 * the same random choices and prints each call; threads, children and the
 * racing thread get seeds derived from it, but what each call meets depends
 * on timing, so a replay is close, not exact. It prints the calls per kind,
 * then "# N calls in S s".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perf_util.h"

#ifndef PERF_EVENT_IOC_SET_DEFER_SESSION
#define PERF_EVENT_IOC_SET_DEFER_SESSION _IOW('$', 32, __u64)
#endif
#ifndef HW_BREAKPOINT_W
#define HW_BREAKPOINT_R 1
#define HW_BREAKPOINT_W 2
#define HW_BREAKPOINT_RW 3
#define HW_BREAKPOINT_X 4
#endif

#define MAX_EVENTS	200	/* open perf fds */
#define MAX_MAPS	48	/* mapped rings */
#define MAX_MAP_PAGES	2048	/* data pages mapped in all (8 MiB) */
#define MAX_CHILDREN	6
#define MAX_THREADS	4
#define NR_CPUS_TRY	4	/* 2 online: 2 and 3 are invalid */
#define EXAMPLE		"/tests/example_workload"

/* ------------------------------------------------------------------ */
/* Random numbers: xorshift64*, one state per thread of control.       */

struct rng {
	uint64_t s;
};

static uint64_t rnd64(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545F4914F6CDD1DULL;
}

static unsigned int rnd(struct rng *r, unsigned int n)
{
	return n ? (unsigned int)(rnd64(r) % n) : 0;
}

static int chance(struct rng *r, unsigned int pct)
{
	return rnd(r, 100) < pct;
}

static void rng_seed(struct rng *r, uint64_t seed)
{
	r->s = seed * 0x9E3779B97F4A7C15ULL + 0x1234567;
	if (!r->s)
		r->s = 1;
	for (int i = 0; i < 4; i++)
		rnd64(r);
}

/* ------------------------------------------------------------------ */
/* Call counters per kind.                                             */

enum kind {
	K_OPEN, K_CLOSE, K_ENABLE, K_DISABLE, K_RESET, K_REFRESH, K_PERIOD,
	K_SET_OUTPUT, K_PAUSE, K_ID, K_SESSION, K_FILTER, K_IOC_OTHER,
	K_MMAP, K_MUNMAP, K_DRAIN, K_READ, K_POLL, K_PRCTL, K_FORK, K_EXEC,
	K_KILL, K_REAP, K_THREAD_START, K_THREAD_STOP, K_MIGRATE, K_LOAD,
	K_RACE, K_SYSCTL, K_TOOL, NR_KINDS
};

static const char *const kind_name[NR_KINDS] = {
	"perf_event_open", "close", "ioctl ENABLE", "ioctl DISABLE", "ioctl RESET",
	"ioctl REFRESH", "ioctl PERIOD", "ioctl SET_OUTPUT", "ioctl PAUSE_OUTPUT",
	"ioctl ID", "ioctl SET_DEFER_SESSION", "ioctl SET_FILTER",
	"ioctl other (MODIFY_ATTRIBUTES, QUERY_BPF, SET_BPF, bad)", "mmap", "munmap",
	"ring drain", "read", "poll", "prctl PERF_EVENTS", "fork (load child)",
	"fork+exec", "kill -9", "waitpid", "pthread_create", "pthread stop+join",
	"sched_setaffinity", "main's own load (read, getppid)",
	"racing thread (ioctl, read)", "write perf_event_max_stack/contexts",
	"fork (tool child: its own events on us)",
};

static atomic_ulong calls[NR_KINDS], oks[NR_KINDS];
static unsigned long open_errno[256];
static int verbose;
static int pinned;
/*
 * remove_on_exec on events opened on our children, which exec: off unless
 * asked for ("rexec"). It meets a race in perf core that our series does not
 * touch, on Debian's stock 7.2 as on 6.12 (docs/kernel.md, "Limits";
 * repro_exec_enable.c): the event is in the child's context before it is on
 * its owner's list, and an exec in between unlinks it from that list.
 */
static int child_rexec;
/* DS_FUZZ_NO_DEFER=1: never set the defer bits (to tell our paths from others'). */
static int no_defer;
/*
 * sigtrap on our own events, unless "nosigtrap" is asked for; drawn all the
 * same, so that a seed replays either way.
 */
static int no_sigtrap;

static void count(enum kind k, long ret)
{
	atomic_fetch_add_explicit(&calls[k], 1, memory_order_relaxed);
	if (ret >= 0)
		atomic_fetch_add_explicit(&oks[k], 1, memory_order_relaxed);
}

/* The last operations of the main thread, for the watchdog. */
#define NR_LAST 8
static char last_op[NR_LAST][160];
static unsigned int last_idx;

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	va_list ap;
	char *s = last_op[last_idx++ % NR_LAST];

	va_start(ap, fmt);
	vsnprintf(s, sizeof(last_op[0]), fmt, ap);
	va_end(ap);
	if (verbose)
		printf("# op: %s\n", s);
}

static void result(long ret)
{
	if (verbose)
		printf("#   -> %ld%s%s\n", ret, ret < 0 ? " " : "",
		       ret < 0 ? strerror((int)-ret) : "");
}

/* ------------------------------------------------------------------ */
/* State of the main thread.                                           */

struct ev {
	int fd;			/* -1: free slot */
	uint32_t type;
	uint64_t config;
	int sigtrap;		/* keep its period long: SIGTRAP on each overflow */
	int freq;		/* period below is a frequency */
	uint64_t period;	/* as opened */
	int backward;		/* write_backward: not drained */
	int ro_rb;		/* may share a buffer created read-only (overwrite): not drained */
	int clock;		/* cpu-clock/task-clock: period in ns */
	int tracepoint;
	pid_t pid;
	int cpu;
};

struct map {
	void *base;		/* NULL: free slot */
	size_t len;
	unsigned int data_pages;
	int drain;		/* the one reader of this buffer */
	uint64_t tag;
	struct ds_ring ring;
};

struct thr {
	pthread_t th;
	int used;
	atomic_int stop;
	atomic_int tid;
	uint64_t seed;
};

static struct rng R;
static struct ev evs[MAX_EVENTS];
static struct map maps[MAX_MAPS];
static unsigned int mapped_pages;
static pid_t children[MAX_CHILDREN];
static struct thr thrs[MAX_THREADS];
static int nr_cpus = 2;
static long page_size;
static unsigned int period_scale = 1;
static uint64_t map_tag_next = 1;
static int null_fd = -1;

/* Published for the racing thread: fd numbers of the open events. */
static atomic_int pub_fds[MAX_EVENTS];
static atomic_int race_stop;
static pthread_t race_th;
static int race_running;

static volatile sig_atomic_t sigtraps;
static long tool_events, tool_exits;
static long bad_records, deferred_records, sample_records, lost_records, other_records;

/* A breakpoint target our threads write and read. */
static volatile uint64_t bp_target[4];

/* Tracepoints: preferred ones by name, and every id found in tracefs. */
static const char *const tp_names[] = {
	"syscalls/sys_enter_read", "syscalls/sys_exit_read",
	"syscalls/sys_enter_getppid", "syscalls/sys_exit_getppid",
	"syscalls/sys_enter_execve", "syscalls/sys_exit_execve",
	"syscalls/sys_enter_exit_group", "syscalls/sys_enter_ioctl",
	"syscalls/sys_enter_perf_event_open", "syscalls/sys_enter_mmap",
	"syscalls/sys_enter_munmap", "syscalls/sys_enter_close",
	"syscalls/sys_enter_sched_setaffinity", "syscalls/sys_exit_clone",
	"raw_syscalls/sys_enter", "raw_syscalls/sys_exit",
	"sched/sched_switch", "sched/sched_wakeup", "sched/sched_process_fork",
	"sched/sched_process_exec", "sched/sched_process_exit",
	"sched/sched_process_free", "sched/sched_migrate_task",
	"x86_fpu/x86_fpu_regs_activated", "signal/signal_generate",
	"signal/signal_deliver", "task/task_newtask",
};
#define NR_TP_NAMES (sizeof(tp_names) / sizeof(tp_names[0]))
static long tp_pref[NR_TP_NAMES];
static int nr_tp_pref;
static long *tp_all;
static int nr_tp_all;

static long read_id(const char *path)
{
	FILE *f = fopen(path, "r");
	long id = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &id) != 1)
		id = -1;
	fclose(f);
	return id;
}

static void load_tracepoints(void)
{
	const char *root = "/sys/kernel/tracing/events";
	char path[512];
	DIR *d, *s;
	struct dirent *a, *b;
	int cap = 0;

	for (size_t i = 0; i < NR_TP_NAMES; i++) {
		long id;

		snprintf(path, sizeof(path), "%s/%s/id", root, tp_names[i]);
		id = read_id(path);
		if (id >= 0)
			tp_pref[nr_tp_pref++] = id;
		if (id >= 0 && verbose)
			printf("# tracepoint %ld: %s\n", id, tp_names[i]);
	}
	d = opendir(root);
	if (!d)
		return;
	while ((a = readdir(d))) {
		if (a->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", root, a->d_name);
		s = opendir(path);
		if (!s)
			continue;
		while ((b = readdir(s))) {
			long id;

			if (b->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s/%s/id", root, a->d_name, b->d_name);
			id = read_id(path);
			if (id < 0)
				continue;
			if (nr_tp_all == cap) {
				long *n = realloc(tp_all, (cap = cap ? 2 * cap : 256) * sizeof(*n));

				if (!n)
					break;
				tp_all = n;
			}
			tp_all[nr_tp_all++] = id;
		}
		closedir(s);
	}
	closedir(d);
}

/* ------------------------------------------------------------------ */
/* Load: user code and system calls, with frame pointers.              */

__attribute__((noinline)) static uint64_t fz_spin(uint64_t x, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	bp_target[x & 3] = x;	/* breakpoint events watch these */
	__asm__ volatile("" ::: "memory");
	return x;
}

__attribute__((noinline)) static long fz_read(int fd, char *buf, size_t len)
{
	long r = ds_syscall3(SYS_read, fd, (long)buf, (long)len);

	__asm__ volatile("" ::: "memory");
	return r;
}

__attribute__((noinline)) static long fz_getppid(void)
{
	long r = ds_syscall3(SYS_getppid, 0, 0, 0);

	__asm__ volatile("" ::: "memory");
	return r;
}

/* One round of load; @depth nests it a few frames. */
__attribute__((noinline)) static uint64_t fz_load(struct rng *r, int fd, char *buf,
						  size_t cap, unsigned int depth)
{
	uint64_t x = rnd64(r);

	if (depth)
		return fz_load(r, fd, buf, cap, depth - 1) + 1;
	switch (rnd(r, 8)) {
	case 0: case 1: case 2:
		fz_read(fd, buf, 1 + rnd(r, (unsigned int)cap));
		break;
	case 3: case 4:
		fz_getppid();
		break;
	case 5:
		ds_pin(0, (int)rnd(r, (unsigned int)nr_cpus));
		break;
	case 6:
		if (chance(r, 20))
			sched_yield();
		else
			usleep(rnd(r, 300));
		break;
	default:
		x = fz_spin(x, 1000 + rnd(r, 20000));
		break;
	}
	return x;
}

static void *thr_main(void *arg)
{
	struct thr *t = arg;
	struct rng r;
	size_t cap = 256 << 10;
	char *buf = malloc(cap);
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);

	rng_seed(&r, t->seed);
	atomic_store(&t->tid, (int)gettid());
	setpriority(PRIO_PROCESS, 0, 5);	/* the fuzzing thread goes first */
	while (!atomic_load(&t->stop) && buf && fd >= 0)
		fz_load(&r, fd, buf, cap, rnd(&r, 6));
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

static void __attribute__((noreturn)) exec_example(struct rng *r)
{
	char ms[16], bytes[16];

	snprintf(ms, sizeof(ms), "%u", 5 + rnd(r, 60));
	snprintf(bytes, sizeof(bytes), "%u", 1 + rnd(r, 65536));
	dup2(null_fd, 1);	/* its summary line is noise here */
	execl(EXAMPLE, "example_workload", ms, bytes, (char *)NULL);
	_exit(127);
}

/* A thread of a child that execs: the exec kills it, or it execs itself. */
struct cthr {
	uint64_t seed;
	int do_exec;
};

static void *child_thr(void *arg)
{
	struct cthr *c = arg;
	size_t cap = 64 << 10;
	char *buf = malloc(cap);
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	struct rng r;

	rng_seed(&r, c->seed);
	if (!buf || fd < 0)
		return NULL;
	for (unsigned int i = 0;; i++) {
		fz_load(&r, fd, buf, cap, rnd(&r, 4));
		if (c->do_exec && i > 10)
			exec_example(&r);	/* de_thread(): the leader goes */
	}
	return NULL;
}

/*
 * A forked child: load, maybe a grandchild, then exit or exec (sometimes
 * with threads running, or from a thread that is not the leader); or get
 * killed on the way.
 */
static void __attribute__((noreturn)) child_main(uint64_t seed, int do_exec)
{
	struct rng r;
	size_t cap = 1 << 20;
	char *buf = malloc(cap);
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	unsigned int rounds;

	signal(SIGALRM, SIG_DFL);	/* the alarm below ends it */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	setpriority(PRIO_PROCESS, 0, 5);
	rng_seed(&r, seed);
	alarm(1 + rnd(&r, 4));		/* bounded life, kept across exec */
	rounds = rnd(&r, do_exec ? 50 : 400);
	for (unsigned int i = 0; i < rounds && buf && fd >= 0; i++) {
		fz_load(&r, fd, buf, cap, rnd(&r, 8));
		if (chance(&r, 1)) {
			pid_t g = fork();

			if (g == 0) {
				prctl(PR_SET_PDEATHSIG, SIGKILL);
				for (unsigned int j = 0; j < 50; j++)
					fz_load(&r, fd, buf, cap, 2);
				_exit(0);
			}
		}
	}
	if (!do_exec)
		_exit(chance(&r, 50) ? 0 : 3);
	if (chance(&r, 50)) {
		static struct cthr ct[3];
		int n = 1 + (int)rnd(&r, 3), from = chance(&r, 50) ? (int)rnd(&r, (unsigned int)n) : -1;
		pthread_attr_t pa;
		pthread_t th;

		pthread_attr_init(&pa);
		pthread_attr_setstacksize(&pa, 128 << 10);
		pthread_attr_setdetachstate(&pa, PTHREAD_CREATE_DETACHED);
		for (int i = 0; i < n; i++) {
			ct[i].seed = rnd64(&r);
			ct[i].do_exec = i == from;
			pthread_create(&th, &pa, child_thr, &ct[i]);
		}
		if (from >= 0)
			for (;;)
				fz_load(&r, fd, buf, cap, rnd(&r, 4));
		for (unsigned int i = rnd(&r, 10); i; i--)
			fz_load(&r, fd, buf, cap, 1);
	}
	exec_example(&r);
}

/* ------------------------------------------------------------------ */
/* Signals and the watchdog.                                           */

static void on_sigtrap(int sig)
{
	(void)sig;
	sigtraps++;
}

static void sysctl_restore(void);
static double since(const struct timespec *t0);

/* A task's state and where it waits (stat, wchan, kernel stack) on stdout:
 * open(), read(), write() only, for the watchdog. */
static void show_task(const char *what, pid_t pid, pid_t tid)
{
	static const char *const files[] = { "stat", "wchan", "syscall", "stack" };
	char path[96], out[1024];

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		ssize_t len;
		int fd, n;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", (int)pid, (int)tid, files[f]);
		fd = open(path, O_RDONLY);
		len = fd < 0 ? -1 : read(fd, out, sizeof(out) - 1);
		if (fd >= 0)
			close(fd);
		if (len <= 0)
			continue;
		n = snprintf(path, sizeof(path), "#   %s %d/%d %s: ", what, (int)pid, (int)tid, files[f]);
		if (write(1, path, (size_t)n) < 0 || write(1, out, (size_t)len) < 0 ||
		    (out[len - 1] != '\n' && write(1, "\n", 1) < 0))
			return;
	}
}

/* Every thread of this process but the watchdog's. */
static void show_threads(pid_t self)
{
	static char dents[4096];
	int dfd = open("/proc/self/task", O_RDONLY | O_DIRECTORY);
	long len;

	while (dfd >= 0 && (len = syscall(SYS_getdents64, dfd, dents, sizeof(dents))) > 0) {
		for (long off = 0; off < len;) {
			const char *name = dents + off + 19;	/* d_ino, d_off, d_reclen, d_type */
			unsigned short reclen;

			memcpy(&reclen, dents + off + 16, sizeof(reclen));
			if (name[0] >= '0' && name[0] <= '9' && atoi(name) != self)
				show_task("thread", getpid(), atoi(name));
			off += reclen;
		}
	}
	if (dfd >= 0)
		close(dfd);
}

/* Each open sigtrap event's count: the one that keeps firing grows. */
static void show_sigtrap_events(void)
{
	for (int i = 0; i < MAX_EVENTS; i++) {
		uint64_t v[512];
		int fd = evs[i].fd;

		if (fd < 0 || !evs[i].sigtrap)
			continue;
		if (read(fd, v, sizeof(v)) < (ssize_t)sizeof(v[0]))
			v[0] = ~0ULL;
		printf("#   sigtrap event fd %d type %u config %llu %s %llu pid %d cpu %d: count %llu\n",
		       fd, evs[i].type, (unsigned long long)evs[i].config,
		       evs[i].freq ? "freq" : "period", (unsigned long long)evs[i].period,
		       (int)evs[i].pid, evs[i].cpu, (unsigned long long)v[0]);
	}
}

static void write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_TRUNC);

	if (fd >= 0) {
		ssize_t done = write(fd, val, strlen(val));

		(void)done;	/* a knob that is not there: nothing to show */
		close(fd);
	}
}

/*
 * What the stuck tasks do, from tracefs: the signals sent and taken and the
 * system calls entered, for half a second; the last lines.
 */
static void show_trace(void)
{
	static const char *const evts[] = { "signal/signal_generate", "signal/signal_deliver",
					    "raw_syscalls/sys_enter" };
	const char *t = "/sys/kernel/tracing";
	char path[128];
	FILE *f;

	write_file("/sys/kernel/tracing/trace", "");
	for (size_t i = 0; i < sizeof(evts) / sizeof(evts[0]); i++) {
		snprintf(path, sizeof(path), "%s/events/%s/enable", t, evts[i]);
		write_file(path, "1");
	}
	write_file("/sys/kernel/tracing/tracing_on", "1");
	usleep(500000);
	write_file("/sys/kernel/tracing/tracing_on", "0");
	for (size_t i = 0; i < sizeof(evts) / sizeof(evts[0]); i++) {
		snprintf(path, sizeof(path), "%s/events/%s/enable", t, evts[i]);
		write_file(path, "0");
	}
	snprintf(path, sizeof(path), "%s/trace", t);
	f = fopen(path, "r");
	if (f) {
		static char lines[60][200];
		char line[200];
		long n = 0;

		while (fgets(line, sizeof(line), f)) {
			if (line[0] != '#')
				memcpy(lines[n++ % 60], line, sizeof(line));
		}
		fclose(f);
		printf("# trace, %ld lines in 0.5 s, the last:\n", n);
		for (long i = n > 60 ? n - 60 : 0; i < n; i++)
			printf("#   %s", lines[i % 60]);
	}
	write_file("/sys/kernel/tracing/trace", "");
	write_file("/sys/kernel/tracing/tracing_on", "1");	/* as booted */
}

/*
 * The watchdog is a thread of its own, not an alarm: a thread that spins in
 * the kernel, or returns to user space only to take signals, is looked at
 * while it does so. Fuzzed events do not follow it (it starts before any is
 * opened with inherit, and no event names its tid).
 */
static _Atomic int watchdog_armed;
static unsigned int watchdog_secs;

static void *watchdog(void *arg)
{
	struct timespec t0;
	pid_t self = (pid_t)syscall(SYS_gettid);

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (since(&t0) < watchdog_secs) {
		sleep(1);
		if (!atomic_load(&watchdog_armed))
			return NULL;
	}
	printf("# WATCHDOG: perf_fuzz did not finish in %u s; last ops:\n", watchdog_secs);
	for (unsigned int i = 0; i < NR_LAST; i++) {
		const char *s = last_op[(last_idx + i) % NR_LAST];

		if (s[0])
			printf("#   %s\n", s);
	}
	/*
	 * Where it is stuck, before anything is killed: each child's kernel
	 * stack, each thread's three times a second apart (system time that
	 * grows, a system call that stays the same), and on the console the
	 * blocked tasks (a deadlock) and every CPU's backtrace (a task
	 * spinning in the kernel).
	 */
	for (int i = 0; i < MAX_CHILDREN; i++)
		if (children[i] > 0)
			show_task("child", children[i], children[i]);
	for (int round = 0; round < 3; round++) {
		printf("# threads, look %d:\n", round + 1);
		show_threads(self);
		show_sigtrap_events();
		sleep(1);
	}
	show_trace();
	write_file("/proc/sysrq-trigger", "w");
	write_file("/proc/sysrq-trigger", "l");
	for (int i = 0; i < MAX_CHILDREN; i++)
		if (children[i] > 0)
			kill(children[i], SIGKILL);
	sysctl_restore();
	_exit(2);
}

static void watchdog_start(unsigned int secs)
{
	pthread_t th;

	watchdog_secs = secs;
	atomic_store(&watchdog_armed, 1);
	if (pthread_create(&th, NULL, watchdog, NULL) == 0)
		pthread_detach(th);
	else
		printf("# no watchdog thread: %s\n", strerror(errno));
}

/* ------------------------------------------------------------------ */
/* Helpers over the tables.                                            */

static int nr_open(void)
{
	int n = 0;

	for (int i = 0; i < MAX_EVENTS; i++)
		n += evs[i].fd >= 0;
	return n;
}

/* A random open event, or NULL. */
static struct ev *pick_ev(void)
{
	int start = (int)rnd(&R, MAX_EVENTS);

	for (int i = 0; i < MAX_EVENTS; i++) {
		struct ev *e = &evs[(start + i) % MAX_EVENTS];

		if (e->fd >= 0)
			return e;
	}
	return NULL;
}

/* Mostly an open event's fd; sometimes a closed, bad or unrelated one. */
static int pick_fd(void)
{
	struct ev *e = pick_ev();

	if (e && !chance(&R, 3))
		return e->fd;
	switch (rnd(&R, 3)) {
	case 0: return -1;
	case 1: return null_fd;	/* not a perf fd (never stdin: read blocks) */
	default: return 1000 + (int)rnd(&R, 50);
	}
}

static struct ev *find_ev(int fd)
{
	for (int i = 0; i < MAX_EVENTS; i++)
		if (evs[i].fd == fd && fd >= 0)
			return &evs[i];
	return NULL;
}

static pid_t pick_child(void)
{
	int start = (int)rnd(&R, MAX_CHILDREN);

	for (int i = 0; i < MAX_CHILDREN; i++)
		if (children[(start + i) % MAX_CHILDREN] > 0)
			return children[(start + i) % MAX_CHILDREN];
	return 0;
}

static pid_t pick_thread_tid(void)
{
	int start = (int)rnd(&R, MAX_THREADS);

	for (int i = 0; i < MAX_THREADS; i++) {
		struct thr *t = &thrs[(start + i) % MAX_THREADS];

		if (t->used && atomic_load(&t->tid) > 0)
			return atomic_load(&t->tid);
	}
	return 0;
}

static uint64_t scaled_ns(uint64_t ns)
{
	return ns * period_scale;
}

/* ------------------------------------------------------------------ */
/* perf_event_open                                                     */

static const uint64_t sample_bits[] = {
	PERF_SAMPLE_IP, PERF_SAMPLE_TID, PERF_SAMPLE_TIME, PERF_SAMPLE_ADDR,
	PERF_SAMPLE_READ, PERF_SAMPLE_ID, PERF_SAMPLE_CPU, PERF_SAMPLE_PERIOD,
	PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_RAW, PERF_SAMPLE_BRANCH_STACK,
	PERF_SAMPLE_REGS_USER, PERF_SAMPLE_STACK_USER, PERF_SAMPLE_WEIGHT,
	PERF_SAMPLE_DATA_SRC, PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_TRANSACTION,
	PERF_SAMPLE_REGS_INTR, PERF_SAMPLE_PHYS_ADDR, PERF_SAMPLE_AUX,
	PERF_SAMPLE_CGROUP, PERF_SAMPLE_DATA_PAGE_SIZE, PERF_SAMPLE_CODE_PAGE_SIZE,
	PERF_SAMPLE_WEIGHT_STRUCT,
};

static int random_attr(struct perf_event_attr *a, struct ev *e)
{
	static const uint64_t sw[] = {
		PERF_COUNT_SW_CPU_CLOCK, PERF_COUNT_SW_TASK_CLOCK,
		PERF_COUNT_SW_PAGE_FAULTS, PERF_COUNT_SW_CONTEXT_SWITCHES,
		PERF_COUNT_SW_DUMMY,
	};
	unsigned int t = rnd(&R, 100);
	/* Sane: no combination known to be refused, so the event lives. */
	int sane = chance(&R, 60);

	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	if (t < 50) {
		a->type = PERF_TYPE_SOFTWARE;
		a->config = chance(&R, 90) ? sw[rnd(&R, 5)] : rnd(&R, 14);
	} else if (t < 85 && (nr_tp_pref || nr_tp_all)) {
		a->type = PERF_TYPE_TRACEPOINT;
		if (nr_tp_pref && (chance(&R, 70) || !nr_tp_all))
			a->config = (uint64_t)tp_pref[rnd(&R, (unsigned int)nr_tp_pref)];
		else
			a->config = (uint64_t)tp_all[rnd(&R, (unsigned int)nr_tp_all)];
	} else if (t < 92) {
		a->type = PERF_TYPE_BREAKPOINT;
		a->bp_type = chance(&R, 80) ? HW_BREAKPOINT_W :
			     chance(&R, 50) ? HW_BREAKPOINT_RW : HW_BREAKPOINT_X;
		a->bp_addr = a->bp_type == HW_BREAKPOINT_X ? (uint64_t)(uintptr_t)fz_spin :
			     (uint64_t)(uintptr_t)&bp_target[rnd(&R, 4)];
		a->bp_len = a->bp_type == HW_BREAKPOINT_X ? sizeof(long) : 1u << rnd(&R, 4);
	} else if (t < 96) {
		a->type = PERF_TYPE_HARDWARE;	/* no PMU under emulation: fails */
		a->config = rnd(&R, 10);
	} else {
		a->type = rnd(&R, 12);
		a->config = rnd64(&R) & 0xffff;
		if (pinned && a->type == PERF_TYPE_TRACEPOINT && nr_tp_pref)
			a->config = (uint64_t)tp_pref[rnd(&R, (unsigned int)nr_tp_pref)];
	}
	e->type = a->type;
	e->config = a->config;
	e->clock = a->type == PERF_TYPE_SOFTWARE &&
		   (a->config == PERF_COUNT_SW_CPU_CLOCK || a->config == PERF_COUNT_SW_TASK_CLOCK);
	e->tracepoint = a->type == PERF_TYPE_TRACEPOINT;

	/* sample_type: mostly a callchain, anything else at random. */
	if (chance(&R, 85))
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	for (size_t i = 0; i < sizeof(sample_bits) / sizeof(sample_bits[0]); i++)
		if (chance(&R, sample_bits[i] <= PERF_SAMPLE_CPU ? 50 : 8))
			a->sample_type |= sample_bits[i];
	if (sane)
		a->sample_type &= PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
				  PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_CPU |
				  PERF_SAMPLE_PERIOD | PERF_SAMPLE_STREAM_ID |
				  PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW |
				  PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER |
				  PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_DATA_PAGE_SIZE |
				  PERF_SAMPLE_CODE_PAGE_SIZE;
	if (sane && a->type != PERF_TYPE_TRACEPOINT)
		a->sample_type &= ~(uint64_t)PERF_SAMPLE_RAW;
	if (!sane && chance(&R, 1))
		a->sample_type |= 1ULL << (25 + rnd(&R, 39));	/* unknown bit */
	if (a->sample_type & PERF_SAMPLE_REGS_USER)
		a->sample_regs_user = chance(&R, 80) ? 0xff0fffULL : rnd64(&R);
	if (a->sample_type & PERF_SAMPLE_REGS_INTR)
		a->sample_regs_intr = chance(&R, 80) ? 0xff0fffULL : rnd64(&R);
	if (a->sample_type & PERF_SAMPLE_STACK_USER)
		a->sample_stack_user = chance(&R, 90) ? 8 * (1 + rnd(&R, 1024)) : rnd(&R, 70000);
	if (a->sample_type & PERF_SAMPLE_BRANCH_STACK)
		a->branch_sample_type = rnd64(&R) & 0x3ffff;
	if (a->sample_type & PERF_SAMPLE_AUX)
		a->aux_sample_size = rnd(&R, 8192);
	a->read_format = rnd(&R, 32);
	if (!sane && chance(&R, 1))
		a->read_format |= 1ULL << (5 + rnd(&R, 59));

	/* Period or frequency. */
	if (chance(&R, 8)) {
		a->sample_period = 0;		/* counting only */
	} else if (e->clock) {
		if (chance(&R, 30)) {
			a->freq = 1;
			a->sample_freq = 1 + rnd(&R, 4000 / period_scale);
		} else {
			a->sample_period = scaled_ns(10000 + rnd(&R, 2000000));
		}
	} else if (a->type == PERF_TYPE_BREAKPOINT) {
		a->sample_period = 1 + rnd(&R, 4);
	} else {
		a->sample_period = chance(&R, 70) ? 1 + rnd(&R, 8) : 1 + rnd(&R, 1000);
		if (chance(&R, 5)) {
			a->freq = 1;
			a->sample_freq = 1 + rnd(&R, 1000);
		}
	}

	/* Flags: every bit, weighted towards what gets an event going. */
	a->disabled = chance(&R, 25);
	a->inherit = chance(&R, 30);
	a->pinned = chance(&R, 5);
	a->exclusive = chance(&R, 3);
	a->exclude_user = chance(&R, 5);
	a->exclude_kernel = chance(&R, 10);
	a->exclude_hv = chance(&R, 50);
	a->exclude_idle = chance(&R, 5);
	a->mmap = chance(&R, 20);
	a->comm = chance(&R, 20);
	a->inherit_stat = chance(&R, 5);
	a->enable_on_exec = chance(&R, 5);
	a->task = chance(&R, 20);
	a->watermark = chance(&R, 20);
	a->precise_ip = chance(&R, 5) ? rnd(&R, 4) : 0;
	a->mmap_data = chance(&R, 5);
	a->sample_id_all = chance(&R, 60);
	a->exclude_host = chance(&R, 3);
	a->exclude_guest = chance(&R, 3);
	a->exclude_callchain_kernel = chance(&R, 5);
	a->exclude_callchain_user = chance(&R, 5);
	a->mmap2 = chance(&R, 10);
	a->comm_exec = chance(&R, 5);
	a->use_clockid = chance(&R, 10);
	a->context_switch = chance(&R, 10);
	a->write_backward = chance(&R, 5);
	a->namespaces = chance(&R, 3);
	a->ksymbol = chance(&R, 3);
	a->bpf_event = chance(&R, 3);
	a->aux_output = chance(&R, 2);
	a->cgroup = chance(&R, 2);
	a->text_poke = chance(&R, 2);
	a->build_id = chance(&R, 3);
	a->inherit_thread = chance(&R, 10);
	a->remove_on_exec = chance(&R, 10);
	a->sigtrap = chance(&R, 4);
	if (a->sigtrap && chance(&R, 90))
		a->remove_on_exec = 1;
	if (no_sigtrap)
		a->sigtrap = 0;
	ds_attr_set_flag(a, DS_ATTR_BIT_DEFER_CALLCHAIN, chance(&R, 70));
	ds_attr_set_flag(a, DS_ATTR_BIT_DEFER_OUTPUT, chance(&R, 40));
	if (!sane && chance(&R, 1))
		ds_attr_set_flag(a, 40 + rnd(&R, 24), 1);	/* reserved: EINVAL */
	if (no_defer) {
		ds_attr_set_flag(a, DS_ATTR_BIT_DEFER_CALLCHAIN, 0);
		ds_attr_set_flag(a, DS_ATTR_BIT_DEFER_OUTPUT, 0);
	}
	if (sane) {
		a->inherit_thread &= a->inherit;
		a->build_id &= a->mmap2;
		a->aux_output = 0;
		a->cgroup = 0;
		a->precise_ip = 0;
		a->exclusive = 0;
		a->sigtrap &= a->remove_on_exec;
		if (a->inherit)
			a->read_format &= ~(uint64_t)PERF_FORMAT_GROUP;
	}

	if (a->use_clockid) {
		static const int clocks[] = { CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW,
					      CLOCK_REALTIME, CLOCK_BOOTTIME, CLOCK_TAI, 99 };

		a->clockid = clocks[rnd(&R, sane ? 5 : 6)];
	}
	if (a->watermark)
		a->wakeup_watermark = rnd(&R, 65536);
	else
		a->wakeup_events = chance(&R, 70) ? rnd(&R, 4) : rnd(&R, 1000);
	a->sample_max_stack = chance(&R, 60) ? 0 : chance(&R, 80) || sane ? rnd(&R, 128) :
			      rnd(&R, 1000);
	if (a->sigtrap)
		a->sig_data = rnd64(&R);
	/*
	 * A sigtrap event must not fire faster than its handler runs. A
	 * software event (tracepoints, breakpoints) that records
	 * PERF_SAMPLE_PERIOD outside frequency mode overflows at every hit,
	 * whatever its period: on signal:signal_deliver, or on a system call
	 * the handler's return makes, each SIGTRAP sends the next one and the
	 * task runs its handler for good (repro_sigtrap_deliver.c: perf core's
	 * behaviour, stock 7.2 as ours).
	 */
	if (a->sigtrap) {
		if (a->freq)
			a->sample_freq = 1 + rnd(&R, 100);
		else if (e->clock)
			a->sample_period = scaled_ns(2000000 + rnd(&R, 10000000));
		else if (a->sample_period)
			a->sample_period = 1000 + rnd(&R, 10000);
		if (!a->freq && !e->clock)
			a->sample_type &= ~(uint64_t)PERF_SAMPLE_PERIOD;
	}
	e->sigtrap = a->sigtrap;
	e->freq = a->freq;
	e->period = a->sample_period;
	e->backward = a->write_backward;
	return sane;
}

static void do_mmap(struct ev *e);

static void do_open(void)
{
	static const uint32_t sizes[] = { 0, 64, 72, 80, 96, 104, 112, 120, 128, 136, 60, 4096 };
	union {
		struct perf_event_attr a;
		char raw[256];
	} u;
	struct ev tmp = { .fd = -1 };
	struct ev *slot = NULL, *leader = NULL;
	unsigned long flags = 0;
	int group_fd = -1, t = (int)rnd(&R, 100), sane;
	pid_t pid;
	int cpu;
	long fd;

	for (int i = 0; i < MAX_EVENTS; i++)
		if (evs[i].fd < 0) {
			slot = &evs[i];
			break;
		}
	if (!slot)
		return;
	memset(&u, 0, sizeof(u));
	sane = random_attr(&u.a, &tmp);
	if (!sane && chance(&R, 10))
		u.a.size = sizes[rnd(&R, sizeof(sizes) / sizeof(sizes[0]))];
	if (!sane && chance(&R, 2))
		u.raw[128 + rnd(&R, 100)] = 1;		/* non-zero tail: E2BIG */

	/* Target: self, our threads, a child, per CPU, or nonsense. */
	cpu = chance(&R, 60) ? -1 : (int)rnd(&R, (unsigned int)nr_cpus);
	if (t < 30) {
		pid = 0;
	} else if (t < 35) {
		pid = getpid();
	} else if (t < 52) {
		pid = pick_thread_tid();
	} else if (t < 70) {
		pid = pick_child();
		if (!child_rexec) {
			u.a.remove_on_exec = 0;
			u.a.sigtrap = 0;	/* with remove_on_exec, as perf does */
		}
	} else if (t < 95) {
		pid = -1;
		cpu = (int)rnd(&R, (unsigned int)nr_cpus);
	} else {
		pid = chance(&R, 50) ? -1 : 99999;
		cpu = (int)rnd(&R, NR_CPUS_TRY + 2) - 1;
	}
	if (chance(&R, sane ? 10 : 30) && (leader = pick_ev()))
		group_fd = leader->fd;
	else if (!sane && chance(&R, 3))
		group_fd = pick_fd();
	flags = PERF_FLAG_FD_CLOEXEC;
	if (chance(&R, 10))
		flags = 0;			/* forked children keep it, exec too */
	if (chance(&R, 3))
		flags |= PERF_FLAG_FD_NO_GROUP;
	if (chance(&R, 3))
		flags |= PERF_FLAG_FD_OUTPUT;
	if (!sane && chance(&R, 2))
		flags |= PERF_FLAG_PID_CGROUP;
	if (!sane && chance(&R, 2))
		flags |= 1UL << rnd(&R, 32);

	note("perf_event_open type %u config %llu st %#llx rf %#llx flags %#llx period %llu "
	     "pid %d cpu %d group %d oflags %#lx", u.a.type, (unsigned long long)u.a.config,
	     (unsigned long long)u.a.sample_type, (unsigned long long)u.a.read_format,
	     (unsigned long long)ds_attr_flags(&u.a),
	     (unsigned long long)u.a.sample_period, pid, cpu, group_fd, flags);
	fd = syscall(SYS_perf_event_open, &u.a, pid, cpu, group_fd, flags);
	if (fd < 0)
		fd = -errno;
	count(K_OPEN, fd);
	result(fd);
	if (fd < 0) {
		open_errno[-fd & 255]++;
		return;
	}
	*slot = tmp;
	slot->fd = (int)fd;
	slot->pid = pid;
	slot->cpu = cpu;
	atomic_store(&pub_fds[slot - evs], (int)fd);
	/* Most sampling events get a ring right away, so samples are written. */
	if (chance(&R, 50))
		do_mmap(slot);
}

static void do_close(struct ev *e)
{
	long r;

	note("close %d", e->fd);
	atomic_store(&pub_fds[e - evs], -1);
	r = close(e->fd) ? -errno : 0;
	count(K_CLOSE, r);
	result(r);
	e->fd = -1;
}

/* ------------------------------------------------------------------ */
/* ioctls                                                              */

static long xioctl(enum kind k, int fd, unsigned long req, unsigned long arg)
{
	long r = ioctl(fd, req, arg);

	r = r < 0 ? -errno : r;
	count(k, r);
	result(r);
	return r;
}

static uint64_t random_period(struct rng *r, const struct ev *e, int racing)
{
	if (racing || (e && e->sigtrap))
		return chance(r, 5) ? 0 : scaled_ns(2000000 + rnd(r, 10000000));
	if (chance(r, 5))
		return chance(r, 50) ? 0 : rnd64(r);	/* invalid or huge */
	if (e && e->clock)
		return scaled_ns(10000 + rnd(r, 2000000));
	return 1 + rnd(r, chance(r, 70) ? 8 : 5000);
}

static void do_ioctl(void)
{
	static const char *const filters[] = {
		"common_pid != 0", "common_pid > 1 && common_pid < 100000", "fd == 3",
		"nonsense((", "", "common_flags & 1 || common_preempt_count == 0",
	};
	unsigned int k = rnd(&R, 100);
	struct ev *e = pick_ev();
	int fd = e && !chance(&R, 3) ? e->fd : pick_fd();
	unsigned long grp = chance(&R, 20) ? PERF_IOC_FLAG_GROUP : 0;
	uint64_t v;

	if (!e && fd < 0)
		return;
	e = find_ev(fd);
	if (k < 16) {
		note("ioctl ENABLE %d %lu", fd, grp);
		xioctl(K_ENABLE, fd, PERF_EVENT_IOC_ENABLE, grp);
	} else if (k < 26) {
		note("ioctl DISABLE %d %lu", fd, grp);
		xioctl(K_DISABLE, fd, PERF_EVENT_IOC_DISABLE, grp);
	} else if (k < 32) {
		note("ioctl RESET %d %lu", fd, grp);
		xioctl(K_RESET, fd, PERF_EVENT_IOC_RESET, grp);
	} else if (k < 38) {
		unsigned long n = chance(&R, 10) ? 0 : 1 + rnd(&R, 100);

		note("ioctl REFRESH %d %lu", fd, n);
		xioctl(K_REFRESH, fd, PERF_EVENT_IOC_REFRESH, n);
	} else if (k < 48) {
		v = random_period(&R, e, 0);
		note("ioctl PERIOD %d %llu", fd, (unsigned long long)v);
		xioctl(K_PERIOD, fd, PERF_EVENT_IOC_PERIOD,
		       chance(&R, 2) ? 0UL : (unsigned long)&v);
	} else if (k < 62) {
		struct ev *o = pick_ev();
		int ofd = chance(&R, 25) ? -1 : o ? o->fd : -1;

		struct ev *oe = find_ev(ofd);

		note("ioctl SET_OUTPUT %d -> %d", fd, ofd);
		if (xioctl(K_SET_OUTPUT, fd, PERF_EVENT_IOC_SET_OUTPUT,
			   (unsigned long)(long)ofd) == 0 && e && oe && (e->ro_rb || oe->ro_rb))
			e->ro_rb = oe->ro_rb = 1;
	} else if (k < 70) {
		unsigned long p = rnd(&R, 3);

		note("ioctl PAUSE_OUTPUT %d %lu", fd, p);
		xioctl(K_PAUSE, fd, PERF_EVENT_IOC_PAUSE_OUTPUT, p);
	} else if (k < 76) {
		note("ioctl ID %d", fd);
		xioctl(K_ID, fd, PERF_EVENT_IOC_ID, chance(&R, 3) ? 0UL : (unsigned long)&v);
	} else if (k < 88) {
		v = chance(&R, 30) ? 0 : chance(&R, 50) ? 1 + rnd(&R, 4) : rnd64(&R);
		note("ioctl SET_DEFER_SESSION %d key %llu", fd, (unsigned long long)v);
		xioctl(K_SESSION, fd, PERF_EVENT_IOC_SET_DEFER_SESSION,
		       chance(&R, 3) ? 0UL : (unsigned long)&v);
	} else if (k < 93) {
		const char *f = filters[rnd(&R, sizeof(filters) / sizeof(filters[0]))];

		note("ioctl SET_FILTER %d \"%s\"", fd, f);
		xioctl(K_FILTER, fd, PERF_EVENT_IOC_SET_FILTER, (unsigned long)f);
	} else {
		struct perf_event_attr a;
		uint64_t qbuf[4] = { 4 };	/* perf_event_query_bpf, ids_len 4 */

		switch (rnd(&R, 4)) {
		case 0:
			memset(&a, 0, sizeof(a));
			a.size = sizeof(a);
			a.type = PERF_TYPE_BREAKPOINT;
			a.bp_type = HW_BREAKPOINT_W;
			a.bp_addr = (uint64_t)(uintptr_t)&bp_target[rnd(&R, 4)];
			a.bp_len = 8;
			a.disabled = chance(&R, 50);
			note("ioctl MODIFY_ATTRIBUTES %d", fd);
			xioctl(K_IOC_OTHER, fd, PERF_EVENT_IOC_MODIFY_ATTRIBUTES, (unsigned long)&a);
			break;
		case 1:
			note("ioctl QUERY_BPF %d", fd);
			xioctl(K_IOC_OTHER, fd, PERF_EVENT_IOC_QUERY_BPF, (unsigned long)qbuf);
			break;
		case 2:
			note("ioctl SET_BPF %d", fd);
			xioctl(K_IOC_OTHER, fd, PERF_EVENT_IOC_SET_BPF, (unsigned long)pick_fd());
			break;
		default: {
			unsigned long req = _IOC(rnd(&R, 4), '$', rnd(&R, 40), rnd(&R, 16));

			note("ioctl %#lx %d", req, fd);
			xioctl(K_IOC_OTHER, fd, req, (unsigned long)&v);
			break;
		}
		}
	}
}

/* ------------------------------------------------------------------ */
/* Rings                                                               */

#define TAG_MAGIC 0x6473667a00000000ULL		/* "dsfz" */

static uint64_t *map_tag(void *base)
{
	struct perf_event_mmap_page *pg = base;

	return (uint64_t *)&pg->__reserved[sizeof(pg->__reserved) - 8];
}

static void do_mmap(struct ev *e)
{
	static const unsigned int odd[] = { 0, 3, 5, 6, 7, 100 };
	struct map *m = NULL;
	unsigned int pages;
	int ro = chance(&R, 8), fd;
	off_t off = chance(&R, 3) ? page_size * (off_t)(1 + rnd(&R, 16)) : 0;
	void *p;

	for (int i = 0; i < MAX_MAPS; i++)
		if (!maps[i].base) {
			m = &maps[i];
			break;
		}
	if (!m || !e)
		return;
	fd = chance(&R, 2) ? pick_fd() : e->fd;
	pages = chance(&R, 90) ? 1u << rnd(&R, 7) : odd[rnd(&R, 6)];
	if (mapped_pages + pages > MAX_MAP_PAGES)
		return;
	note("mmap fd %d 1+%u pages%s off %lld", fd, pages, ro ? " read-only" : "",
	     (long long)off);
	p = mmap(NULL, (size_t)(pages + 1) * (size_t)page_size,
		 PROT_READ | (ro ? 0 : PROT_WRITE), MAP_SHARED, fd, off);
	count(K_MMAP, p == MAP_FAILED ? -errno : 0);
	result(p == MAP_FAILED ? -errno : 0);
	if (p == MAP_FAILED)
		return;
	memset(m, 0, sizeof(*m));
	m->base = p;
	m->len = (size_t)(pages + 1) * (size_t)page_size;
	m->data_pages = pages;
	mapped_pages += pages;
	e = find_ev(fd);
	if (e && ro)
		e->ro_rb = 1;
	/*
	 * One reader per buffer: a buffer mapped twice (same event, or an
	 * event whose output was set to another) carries the first reader's
	 * tag. Backward and read-only (overwrite) buffers are not drained.
	 */
	if (ro || off || !pages || (pages & (pages - 1)) || !e || e->backward || e->ro_rb)
		return;
	if ((*map_tag(p) & 0xffffffff00000000ULL) == TAG_MAGIC) {
		for (int i = 0; i < MAX_MAPS; i++)
			if (maps[i].base && maps[i].drain && maps[i].tag == *map_tag(p))
				return;
	}
	m->ring.sz = sizeof(m->ring);
	if (ds_ring_init(&m->ring, p, m->len, (size_t)page_size))
		return;
	m->tag = TAG_MAGIC | map_tag_next++;
	*map_tag(p) = m->tag;
	m->drain = 1;
}

static void unmap(struct map *m, int partial)
{
	long r;

	if (m->drain)
		ds_ring_destroy(&m->ring);
	if (partial) {
		/* Part of it: the kernel may refuse or split; the rest goes after. */
		size_t cut = (size_t)page_size * (1 + rnd(&R, m->data_pages + 1));

		if (cut >= m->len)
			cut = (size_t)page_size;
		note("munmap partial %p +%zu of %zu", m->base, cut, m->len);
		r = munmap(m->base, cut) ? -errno : 0;
		count(K_MUNMAP, r);
		result(r);
	}
	note("munmap %p %zu", m->base, m->len);
	r = munmap(m->base, m->len) ? -errno : 0;
	count(K_MUNMAP, r);
	result(r);
	mapped_pages -= m->data_pages;
	m->base = NULL;
	m->drain = 0;
}

static void check_deferred(const struct perf_event_header *h)
{
	const uint64_t *p = (const uint64_t *)(h + 1);

	deferred_records++;
	if (h->size < sizeof(*h) + 16 || !p[0] || p[1] > 512 ||
	    sizeof(*h) + 16 + p[1] * 8 > h->size ||
	    (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) != PERF_RECORD_MISC_USER) {
		if (bad_records++ < 10)
			printf("# BAD deferred record: size %u misc %#x cookie %#llx nr %llu\n",
			       h->size, h->misc, (unsigned long long)p[0],
			       (unsigned long long)p[1]);
	}
}

static void drain(struct map *m)
{
	const struct perf_event_header *h;
	long n = 0;
	int r;

	note("drain %p", m->base);
	ds_ring_begin(&m->ring);
	while (n < 100000 && (r = ds_ring_next(&m->ring, &h)) > 0) {
		n++;
		switch (h->type) {
		case DS_RECORD_CALLCHAIN_DEFERRED:
			check_deferred(h);
			break;
		case PERF_RECORD_SAMPLE:
			sample_records++;
			break;
		case PERF_RECORD_LOST:
		case PERF_RECORD_LOST_SAMPLES:
			lost_records++;
			break;
		default:
			other_records++;
			break;
		}
	}
	ds_ring_end(&m->ring);
	count(K_DRAIN, n);
}

static struct map *pick_map(void)
{
	int start = (int)rnd(&R, MAX_MAPS);

	for (int i = 0; i < MAX_MAPS; i++)
		if (maps[(start + i) % MAX_MAPS].base)
			return &maps[(start + i) % MAX_MAPS];
	return NULL;
}

/*
 * A tool child: another process (another session) opens defer events on
 * us, our threads, itself or per CPU, maps and drains them, then exits with
 * them open or closes them first; or is killed by the fuzzer meanwhile.
 * Exit status 42: it read a malformed deferred record.
 */
static void __attribute__((noreturn)) tool_main(uint64_t seed, pid_t parent)
{
	struct map ms[6];
	int fds[6], n, opened = 0;
	size_t cap = 64 << 10;
	char *buf = malloc(cap);
	int zfd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	struct timespec t0;
	unsigned int msec;

	signal(SIGALRM, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	rng_seed(&R, seed);		/* our copy of the main thread's state */
	alarm(2 + rnd(&R, 3));
	verbose = 0;
	bad_records = 0;
	memset(ms, 0, sizeof(ms));
	n = 1 + (int)rnd(&R, 6);
	for (int i = 0; i < n; i++) {
		struct perf_event_attr a;
		struct ev tmp = { .fd = -1 };
		pid_t pid;
		int cpu = -1;
		__u64 key = rnd(&R, 3);
		void *p;

		random_attr(&a, &tmp);
		if (chance(&R, 80) && !no_defer)
			ds_attr_set_flag(&a, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
		switch (rnd(&R, 4)) {
		case 0: pid = parent; break;
		case 1: pid = pick_thread_tid(); break;
		case 2: pid = 0; break;
		default: pid = -1; break;
		}
		if (pid == -1 || chance(&R, 30))
			cpu = (int)rnd(&R, (unsigned int)nr_cpus);
		fds[i] = (int)syscall(SYS_perf_event_open, &a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fds[i] < 0)
			continue;
		if (key)
			ioctl(fds[i], PERF_EVENT_IOC_SET_DEFER_SESSION, &key);
		ms[i].data_pages = 1u << rnd(&R, 5);
		ms[i].len = (ms[i].data_pages + 1) * (size_t)page_size;
		p = mmap(NULL, ms[i].len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[i], 0);
		if (p == MAP_FAILED)
			continue;
		ms[i].base = p;
		ms[i].drain = !tmp.backward && !ds_ring_init(&ms[i].ring, p, ms[i].len,
							       (size_t)page_size);
		ioctl(fds[i], PERF_EVENT_IOC_ENABLE, 0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	msec = 5 + rnd(&R, 300);
	while (ds_msec_since(&t0) < (long)msec && buf && zfd >= 0) {
		for (int i = 0; i < n; i++)
			if (ms[i].base && ms[i].drain)
				drain(&ms[i]);
		fz_load(&R, zfd, buf, cap, rnd(&R, 3));
	}
	if (chance(&R, 50)) {
		for (int i = 0; i < n; i++) {
			if (ms[i].base && chance(&R, 70))
				munmap(ms[i].base, ms[i].len);
			if (fds[i] >= 0 && chance(&R, 70))
				close(fds[i]);
		}
	}
	/* The rest goes with exit(). Status 10 + events opened and mapped. */
	for (int i = 0; i < n; i++)
		opened += ms[i].base != NULL;
	_exit(bad_records ? 42 : 10 + opened);
}

/* ------------------------------------------------------------------ */
/* kernel.perf_event_max_stack bounds the deferred record: change it.   */

static const char *const sysctls[2] = {
	"/proc/sys/kernel/perf_event_max_stack",
	"/proc/sys/kernel/perf_event_max_contexts_per_stack",
};
static char sysctl_saved[2][32];

static long sysctl_write(int i, const char *val)
{
	int fd = open(sysctls[i], O_WRONLY | O_CLOEXEC);
	long r;

	if (fd < 0)
		return -errno;
	r = write(fd, val, strlen(val)) < 0 ? -errno : 0;
	close(fd);
	return r;
}

static void sysctl_save(void)
{
	for (int i = 0; i < 2; i++) {
		int fd = open(sysctls[i], O_RDONLY | O_CLOEXEC);
		long n = fd >= 0 ? read(fd, sysctl_saved[i], sizeof(sysctl_saved[i]) - 1) : -1;

		sysctl_saved[i][n > 0 ? n : 0] = 0;
		if (fd >= 0)
			close(fd);
	}
}

static void sysctl_restore(void)
{
	for (int i = 0; i < 2; i++)
		if (sysctl_saved[i][0])
			sysctl_write(i, sysctl_saved[i]);
}

static void do_sysctl(void)
{
	char val[32];
	int i = chance(&R, 80) ? 0 : 1;
	long r;

	snprintf(val, sizeof(val), "%u", chance(&R, 80) ? rnd(&R, 600) : rnd(&R, 70000));
	note("write %s %s", sysctls[i], val);
	r = sysctl_write(i, val);
	count(K_SYSCTL, r);
	result(r);
}

/* ------------------------------------------------------------------ */
/* Tasks                                                               */

static void add_child(pid_t pid)
{
	for (int i = 0; i < MAX_CHILDREN; i++)
		if (children[i] <= 0) {
			children[i] = pid;
			return;
		}
}

static void reap(int block)
{
	pid_t p;
	int st;

	while ((p = waitpid(-1, &st, block ? 0 : WNOHANG)) > 0 || (p < 0 && errno == EINTR)) {
		count(K_REAP, p);
		if (p > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 42) {
			printf("# BAD deferred record read by tool child %d\n", p);
			bad_records++;
		} else if (p > 0 && WIFEXITED(st) && WEXITSTATUS(st) >= 10 &&
			   WEXITSTATUS(st) <= 16) {
			tool_exits++;
			tool_events += WEXITSTATUS(st) - 10;
		}
		for (int i = 0; i < MAX_CHILDREN; i++)
			if (children[i] == p)
				children[i] = 0;
	}
}

static int nr_children(void)
{
	int n = 0;

	for (int i = 0; i < MAX_CHILDREN; i++)
		n += children[i] > 0;
	return n;
}

/* mode 0: load child, 1: load then exec, 2: tool child. */
static void do_fork(int mode)
{
	static const enum kind kinds[] = { K_FORK, K_EXEC, K_TOOL };
	uint64_t seed = rnd64(&R);
	pid_t p, parent = getpid();

	if (nr_children() >= MAX_CHILDREN)
		return;
	note("fork mode %d", mode);
	fflush(stdout);
	p = fork();
	if (p == 0) {
		if (mode == 2)
			tool_main(seed, parent);
		child_main(seed, mode);
	}
	count(kinds[mode], p < 0 ? -errno : p);
	result(p < 0 ? -errno : p);
	if (p > 0)
		add_child(p);
}

static void do_kill(void)
{
	pid_t p = pick_child();
	long r;

	if (!p)
		return;
	note("kill -9 %d", p);
	r = kill(p, SIGKILL) ? -errno : 0;
	count(K_KILL, r);
	result(r);
}

static void do_thread_start(void)
{
	for (int i = 0; i < MAX_THREADS; i++) {
		struct thr *t = &thrs[i];
		pthread_attr_t pa;
		int r;

		if (t->used)
			continue;
		atomic_store(&t->stop, 0);
		atomic_store(&t->tid, 0);
		t->seed = rnd64(&R);
		pthread_attr_init(&pa);
		pthread_attr_setstacksize(&pa, 256 << 10);
		note("pthread_create %d", i);
		r = pthread_create(&t->th, &pa, thr_main, t);
		pthread_attr_destroy(&pa);
		count(K_THREAD_START, -r);
		result(-r);
		t->used = !r;
		return;
	}
}

static void thread_stop(struct thr *t)
{
	note("pthread stop+join %d", atomic_load(&t->tid));
	atomic_store(&t->stop, 1);
	count(K_THREAD_STOP, -pthread_join(t->th, NULL));
	t->used = 0;
}

static void do_thread_stop(void)
{
	int start = (int)rnd(&R, MAX_THREADS);

	for (int i = 0; i < MAX_THREADS; i++) {
		struct thr *t = &thrs[(start + i) % MAX_THREADS];

		if (t->used) {
			thread_stop(t);
			return;
		}
	}
}

static void do_migrate(void)
{
	cpu_set_t set;
	pid_t who;
	long r;

	switch (rnd(&R, 3)) {
	case 0: who = 0; break;
	case 1: who = pick_thread_tid(); break;
	default: who = pick_child(); break;
	}
	CPU_ZERO(&set);
	if (chance(&R, 10)) {
		for (int c = 0; c < nr_cpus; c++)
			CPU_SET(c, &set);
	} else {
		CPU_SET(rnd(&R, NR_CPUS_TRY), &set);
	}
	note("sched_setaffinity %d", who);
	r = sched_setaffinity(who, sizeof(set), &set) ? -errno : 0;
	count(K_MIGRATE, r);
	result(r);
}

/* The racing thread: ioctls and reads on whatever fds are open right now. */
static void *race_main(void *arg)
{
	struct rng r;
	uint64_t buf[64], v;

	rng_seed(&r, (uint64_t)(uintptr_t)arg);
	while (!atomic_load(&race_stop)) {
		int fd = atomic_load(&pub_fds[rnd(&r, MAX_EVENTS)]);
		long ret;

		if (fd < 0) {
			if (chance(&r, 10))
				fz_getppid();
			continue;
		}
		switch (rnd(&r, 10)) {
		case 0: ret = ioctl(fd, PERF_EVENT_IOC_ENABLE, 0); break;
		case 1: ret = ioctl(fd, PERF_EVENT_IOC_DISABLE, 0); break;
		case 2: ret = ioctl(fd, PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP); break;
		case 3:
			v = random_period(&r, NULL, 1);
			ret = ioctl(fd, PERF_EVENT_IOC_PERIOD, &v);
			break;
		/* Only to -1: the main thread tracks which buffers are shared. */
		case 4: ret = ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, -1); break;
		case 5: ret = ioctl(fd, PERF_EVENT_IOC_PAUSE_OUTPUT, rnd(&r, 2)); break;
		case 6:
			v = rnd(&r, 3);
			ret = ioctl(fd, PERF_EVENT_IOC_SET_DEFER_SESSION, &v);
			break;
		case 7: ret = ioctl(fd, PERF_EVENT_IOC_REFRESH, 1 + rnd(&r, 3)); break;
		default: ret = read(fd, buf, sizeof(buf)); break;
		}
		count(K_RACE, ret < 0 ? -errno : ret);
		if (chance(&r, 20))
			usleep(rnd(&r, 200));
	}
	return NULL;
}

/* ------------------------------------------------------------------ */

static void one_op(int zero_fd, char *buf, size_t cap)
{
	unsigned int k = rnd(&R, 1000);
	int open = nr_open();

	/* Near the fd cap, close more than open. */
	if (open >= MAX_EVENTS - 20 && k < 180)
		k = 200;
	if (k < 180) {
		do_open();
	} else if (k < 260) {
		struct ev *e = pick_ev();

		if (e)
			do_close(e);
	} else if (k < 520) {
		do_ioctl();
	} else if (k < 580) {
		do_mmap(pick_ev());
	} else if (k < 620) {
		struct map *m = pick_map();

		if (m)
			unmap(m, chance(&R, 15));
	} else if (k < 700) {
		struct map *m = pick_map();

		if (m && m->drain)
			drain(m);
	} else if (k < 760) {
		int fd = pick_fd();
		size_t n = chance(&R, 80) ? 8 * (1 + rnd(&R, 64)) : rnd(&R, 600);
		long r;

		note("read %d %zu", fd, n);
		r = read(fd, buf, n);
		count(K_READ, r < 0 ? -errno : r);
		result(r < 0 ? -errno : r);
	} else if (k < 780) {
		struct pollfd pfd = { .fd = pick_fd(), .events = POLLIN };
		long r;

		note("poll %d", pfd.fd);
		r = poll(&pfd, 1, 0);
		count(K_POLL, r < 0 ? -errno : r);
	} else if (k < 790) {
		int op = chance(&R, 50) ? PR_TASK_PERF_EVENTS_DISABLE : PR_TASK_PERF_EVENTS_ENABLE;
		long r;

		note("prctl %d", op);
		r = prctl(op, 0, 0, 0, 0) ? -errno : 0;
		count(K_PRCTL, r);
	} else if (k < 802) {
		do_fork(0);
	} else if (k < 814) {
		do_fork(1);
	} else if (k < 826) {
		do_fork(2);
	} else if (k < 846) {
		do_kill();
	} else if (k < 856) {
		do_thread_start();
	} else if (k < 862) {
		do_thread_stop();
	} else if (k < 900) {
		do_migrate();
	} else if (k < 903) {
		do_sysctl();
	} else if (k < 908) {
		if (!race_running) {
			atomic_store(&race_stop, 0);
			note("start racing thread");
			race_running = !pthread_create(&race_th, NULL, race_main,
						       (void *)(uintptr_t)rnd64(&R));
		} else if (chance(&R, 30)) {
			note("stop racing thread");
			atomic_store(&race_stop, 1);
			pthread_join(race_th, NULL);
			race_running = 0;
		}
	} else {
		/* Our own load: the main thread is sampled by pid 0 events. */
		long r;

		note("load");
		if (chance(&R, 50))
			r = fz_read(zero_fd, buf, 1 + rnd(&R, (unsigned int)cap));
		else
			r = fz_getppid();
		fz_spin(r, rnd(&R, 5000));
		count(K_LOAD, r);
	}
}

static double since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/*
 * Pinned mode: hold one counting event of each kind the fuzzer opens, so no
 * static key or static call of theirs flips during the run (see the top).
 */
static int pin_events(void)
{
	static const char *const extra[] = {
		/* a second probe type on sys_enter/sys_exit: 2 probes, not 1 */
		"syscalls/sys_enter_getppid", "syscalls/sys_exit_getppid",
	};
	struct perf_event_attr a;
	int n = 0;

	for (int i = 0; i < nr_tp_pref + 14 + 1; i++) {
		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.disabled = 1;
		if (i < nr_tp_pref) {
			a.type = PERF_TYPE_TRACEPOINT;
			a.config = (uint64_t)tp_pref[i];
		} else if (i < nr_tp_pref + 14) {
			a.type = PERF_TYPE_SOFTWARE;
			a.config = (uint64_t)(i - nr_tp_pref);
		} else {
			a.type = PERF_TYPE_SOFTWARE;	/* a per-task event: perf_sched_events */
			a.config = PERF_COUNT_SW_DUMMY;
		}
		if (syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC) >= 0)
			n++;
	}
	for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++) {
		char path[256];
		long id;

		snprintf(path, sizeof(path), "/sys/kernel/tracing/events/%s/id", extra[i]);
		id = read_id(path);
		if (id < 0)
			continue;
		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.disabled = 1;
		a.type = PERF_TYPE_TRACEPOINT;
		a.config = (uint64_t)id;
		if (syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC) >= 0)
			n++;
	}
	/* Only what is pinned is fuzzed. */
	nr_tp_all = 0;
	return n;
}

/* Is WORD one of the '+'-separated words of MODES ("pin+rexec")? */
static int has_word(const char *modes, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = modes; p; p = strchr(p, '+') ? strchr(p, '+') + 1 : NULL)
		if (!strncmp(p, word, n) && (p[n] == '\0' || p[n] == '+'))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int seconds = argc > 1 ? (unsigned int)strtoul(argv[1], NULL, 0) : 60;
	uint64_t seed;
	struct timespec t0, now;
	struct sigaction sa;
	struct rlimit rl = { 768UL << 20, 768UL << 20 };
	size_t cap = 256 << 10;
	char *buf = malloc(cap);
	int zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	unsigned long total = 0;
	double dur;

	clock_gettime(CLOCK_REALTIME, &now);
	seed = 1;
	if (argc > 2)
		seed = strcmp(argv[2], "random") ? strtoull(argv[2], NULL, 0) :
		       (uint64_t)now.tv_sec * 1000003ULL ^ (uint64_t)now.tv_nsec;
	if (argc > 3) {
		verbose = has_word(argv[3], "v");
		pinned = has_word(argv[3], "pin");
		child_rexec = has_word(argv[3], "rexec");
		no_sigtrap = has_word(argv[3], "nosigtrap");
	}
	no_defer = getenv("DS_FUZZ_NO_DEFER") && atoi(getenv("DS_FUZZ_NO_DEFER"));
	if (!seconds)
		seconds = 1;
	period_scale = (unsigned int)ds_period_scale();
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("# perf_fuzz: seed %llu, %u s, period scale %u%s (replay: perf_fuzz %u %llu v%s%s%s)\n",
	       (unsigned long long)seed, seconds, period_scale,
	       no_defer ? ", no defer bits" : "", seconds, (unsigned long long)seed,
	       pinned ? "+pin" : "", child_rexec ? "+rexec" : "", no_sigtrap ? "+nosigtrap" : "");
	rng_seed(&R, seed);
	page_size = sysconf(_SC_PAGESIZE);
	nr_cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (nr_cpus < 1 || nr_cpus > NR_CPUS_TRY)
		nr_cpus = nr_cpus < 1 ? 1 : NR_CPUS_TRY;
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (!buf || zero_fd < 0 || null_fd < 0) {
		printf("# setup failed\n");
		return 1;
	}
	setrlimit(RLIMIT_AS, &rl);
	prctl(PR_SET_CHILD_SUBREAPER, 1);	/* grandchildren are ours to reap */
	for (int i = 0; i < MAX_EVENTS; i++) {
		evs[i].fd = -1;
		atomic_store(&pub_fds[i], -1);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigtrap;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTRAP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGIO, SIG_IGN);
	load_tracepoints();
	sysctl_save();
	/* Writable only while no event samples a callchain: now, before any. */
	if (chance(&R, 50)) {
		char val[16];

		snprintf(val, sizeof(val), "%u", 8 + rnd(&R, 600));
		printf("# kernel.perf_event_max_stack %s: %s\n", val,
		       sysctl_write(0, val) ? "refused" : "set");
	}
	printf("# %d tracepoints (%d preferred), %d CPUs\n", nr_tp_all, nr_tp_pref, nr_cpus);
	if (pinned)
		printf("# pinned: %d events held open, only the preferred tracepoints fuzzed\n",
		       pin_events());
	/* Watchdog: the run, plus the teardown on a slow kernel. */
	watchdog_start(seconds + 60 + 30 * period_scale);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 2; i++)
		do_thread_start();
	while (since(&t0) < seconds) {
		for (int i = 0; i < 20; i++)
			one_op(zero_fd, buf, cap);
		reap(0);
	}

	/* Teardown: racing thread, threads, children, rings, events. */
	note("teardown");
	if (race_running) {
		atomic_store(&race_stop, 1);
		pthread_join(race_th, NULL);
	}
	for (int i = 0; i < MAX_THREADS; i++)
		if (thrs[i].used)
			thread_stop(&thrs[i]);
	for (int i = 0; i < MAX_CHILDREN; i++)
		if (children[i] > 0)
			kill(children[i], SIGKILL);
	reap(1);
	for (int i = 0; i < MAX_MAPS; i++)
		if (maps[i].base) {
			if (maps[i].drain)
				drain(&maps[i]);
			unmap(&maps[i], 0);
		}
	for (int i = 0; i < MAX_EVENTS; i++)
		if (evs[i].fd >= 0)
			do_close(&evs[i]);
	sysctl_restore();
	dur = since(&t0);
	atomic_store(&watchdog_armed, 0);

	for (int k = 0; k < NR_KINDS; k++) {
		unsigned long c = atomic_load(&calls[k]);

		total += c;
		printf("# %-58s %8lu calls, %8lu ok\n", kind_name[k], c, atomic_load(&oks[k]));
	}
	printf("# records read: %ld samples, %ld deferred callchains (%ld malformed), "
	       "%ld lost, %ld other; %ld SIGTRAPs\n", sample_records, deferred_records,
	       bad_records, lost_records, other_records, (long)sigtraps);
	printf("# tool children that finished: %ld, with %ld mapped events in all\n",
	       tool_exits, tool_events);
	printf("# perf_event_open errors:");
	for (int i = 1; i < 256; i++)
		if (open_errno[i])
			printf(" %s %lu,", strerrorname_np(i) ?: "?", open_errno[i]);
	printf("\n# seed %llu\n", (unsigned long long)seed);
	printf("# %lu calls in %.1f s\n", total, dur);
	free(buf);
	free(tp_all);
	close(zero_fd);
	if (bad_records) {
		printf("# FAIL: %ld malformed deferred records\n", bad_records);
		return 1;
	}
	return 0;
}
