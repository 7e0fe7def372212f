// SPDX-License-Identifier: GPL-2.0
/*
 * The SFrame walk where a real machine is hard on it. The workload
 * (/opt/sframe/sf_multi, no frame pointers, SFrame tables) maps one object
 * many times by itself and runs stacks that cycle through the copies (see
 * sf_multi.c); its threads are sampled with deferred callchains (per-CPU
 * events on the task, inherited by its threads).
 *
 *   ring:    48 copies, 100 frames deep: every record whole once the walk
 *            has indexed the copies (at most 16 new mappings a walk);
 *   deep:    48 copies, 500 frames deep (perf_event_max_stack raised);
 *   hostile: the same with each copy's table claiming 65,535 rows for its
 *            function: the walk ends, and marks the copies untrusted;
 *   kill:    SIGKILL of 16 threads walking 500 frames through 48 copies,
 *            of good and of hostile tables: reaped within a bound;
 *   wake:    32 threads blocked in a futex under the ring, woken all at
 *            once, sampled at each context switch: every record of a wait
 *            whole;
 *   scaling: the cost of a walk with 1, 8 and 32 threads walking (printed);
 *   uffd:    a thread whose stack is registered with userfaultfd and
 *            dropped while it sleeps: its return-to-user walk faults on
 *            every page, served by another thread of the process;
 *   big:     an object whose .sframe is over 4 MiB;
 *   fuse:    an object served by a FUSE daemon that takes 2 s per read,
 *            loaded by one thread while another walks: the other never
 *            waits for the daemon (its kernel stack), and walks read no
 *            file;
 *   memory:  slab and vmalloc of a process with 20 copies, with deferred
 *            callchains and with classic ones (printed);
 *   remap:   a frame-pointer build of the object (no table), then the table
 *            build mapped where it was: every record whole, the second
 *            half's too (a mapping remembered from the first half as one
 *            without a table would be stepped by frame pointers there);
 *   faults:  on the debug kernel, 1 in 5 allocations made from the unwinder
 *            fail (fault injection): ring, wake, uffd and big again, every
 *            sample still gets its record.
 *
 * Walk time is the time from a sample in user mode to its deferred record
 * (written on the way back to user space, right after the walk).
 * Bounds: a walk takes under WALK_BOUND_MS, a SIGKILL is reaped within
 * KILL_BOUND_MS, times DS_PERIOD_SCALE (the harness's slowdown of the
 * debug kernel, 4: KASAN, lockdep) under emulation.
 * On the mainline reference (no SFrame for user stacks) nothing is checked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fuse_server.h"
#include "sframe_util.h"
#include "stitch_util.h"

#define SF_DIR		"/opt/sframe"
#define HOP		SF_DIR "/lib/libsfhop.so"
#define NCPU		2
#define MAX_COPIES	64
#define WALK_BOUND_MS	250
#define KILL_BOUND_MS	3000

static int mainline;
static long bound_scale = 1;	/* DS_PERIOD_SCALE */
static bool faults;	/* allocations fail in the unwinder: stacks may be cut short */
static struct ds_symtab *st;

struct run_opts {
	unsigned int clock_us;		/* cpu-clock period; 0: context switches */
	uint16_t max_stack;		/* sample_max_stack, 0: the default */
	bool no_events;			/* run unsampled (a baseline) */
	bool classic;			/* classic callchains, not deferred */
	long kill_after_ms;		/* SIGKILL the workload then (0: never) */
	void (*monitor)(pid_t pid, long ms, void *arg);	/* every 10 ms */
	void *arg;
};

struct copy {
	uint64_t start, end;
};

struct run {
	struct ds_collect c;
	struct copy copies[MAX_COPIES];
	int ncopies;
	int status;
	struct rusage ru;
	long ms, kill_ms;		/* run time; SIGKILL to reaped */
	char out[4096];			/* the workload's "# " lines */
};

static void parse_out(struct run *r, char *buf, size_t *len)
{
	char *line = buf, *nl;

	while ((nl = memchr(line, '\n', *len - (size_t)(line - buf)))) {
		unsigned long k, s, e;

		*nl = 0;
		if (sscanf(line, "copy %lu %lx %lx", &k, &s, &e) == 3 && k < MAX_COPIES) {
			r->copies[k] = (struct copy){ s, e };
			if ((int)k >= r->ncopies)
				r->ncopies = (int)k + 1;
		} else if (line[0] == '#' && strlen(r->out) + strlen(line) + 2 < sizeof(r->out)) {
			strcat(r->out, line);
			strcat(r->out, "\n");
		}
		line = nl + 1;
	}
	*len -= (size_t)(line - buf);
	memmove(buf, line, *len);
}

/* What the workload wrote to @fd so far, parsed line by line. */
static void read_out(struct run *r, int fd, char *buf, size_t size, size_t *len)
{
	ssize_t n;

	while ((n = read(fd, buf + *len, size - *len)) > 0) {
		*len += (size_t)n;
		parse_out(r, buf, len);
		if (*len == size)
			*len = 0;	/* a line longer than the buffer: not ours */
	}
}

/*
 * Run @argv with a deferred-callchain event per CPU on it (inherited by its
 * threads) from its exec on; collect its records and stdout into @r.
 */
static int run_sampled(char *const argv[], const struct run_opts *o, struct run *r)
{
	struct ds_mmap ring[NCPU];
	struct timespec t0, tk;
	char buf[8192];
	size_t blen = 0;
	int go, out[2], fd[NCPU];
	pid_t pid;

	memset(r, 0, sizeof(*r));
	if (pipe(out))
		return -1;
	pid = ds_exec_paused(argv, out[1], &go);
	close(out[1]);
	if (pid < 0)
		return -1;
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	for (int cpu = 0; cpu < NCPU && !o->no_events; cpu++) {
		struct perf_event_attr attr;

		ds_attr_sampling(&attr, (o->clock_us ? o->clock_us : 1) * 1000ULL);
		if (!o->clock_us) {
			attr.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
			attr.sample_period = 1;
		}
		attr.sample_max_stack = o->max_stack;
		attr.inherit = 1;
		attr.disabled = 1;
		attr.enable_on_exec = 1;
		ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, !o->classic);
		if (mainline && !o->classic)
			ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_OUTPUT, 1);
		fd[cpu] = ds_perf_open(&attr, pid, cpu, -1, 0);
		if (fd[cpu] < 0 || ds_mmap_open(&ring[cpu], fd[cpu], 2048)) {
			printf("# open: %s\n", strerror(fd[cpu] < 0 ? -fd[cpu] : ENOMEM));
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			return -1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (ds_exec_go(go))
		return -1;
	while (wait4(pid, &r->status, WNOHANG, &r->ru) == 0) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		for (int cpu = 0; cpu < NCPU && !o->no_events; cpu++)
			ds_mmap_drain(&ring[cpu], ds_collect_record, &r->c);
		read_out(r, out[0], buf, sizeof(buf), &blen);
		if (o->monitor)
			o->monitor(pid, ds_msec_since(&t0), o->arg);
		if (o->kill_after_ms && !r->kill_ms && ds_msec_since(&t0) >= o->kill_after_ms) {
			kill(pid, SIGKILL);
			clock_gettime(CLOCK_MONOTONIC, &tk);
			r->kill_ms = -1;
		}
		nanosleep(&ts, NULL);
	}
	if (r->kill_ms)
		r->kill_ms = ds_msec_since(&tk);
	read_out(r, out[0], buf, sizeof(buf), &blen);
	r->ms = ds_msec_since(&t0);
	for (int cpu = 0; cpu < NCPU && !o->no_events; cpu++) {
		ds_mmap_drain(&ring[cpu], ds_collect_record, &r->c);
		ds_mmap_close(&ring[cpu]);
		close(fd[cpu]);
	}
	close(out[0]);
	return 0;
}

static bool is_fn(uint64_t ip, const char *name)
{
	const char *s = ds_symtab_lookup(st, ip);

	return s && !strcmp(s, name);
}

static int copy_of(const struct run *r, uint64_t ip)
{
	for (int k = 0; k < r->ncopies; k++)
		if (ip >= r->copies[k].start && ip < r->copies[k].end)
			return k;
	return -1;
}

/*
 * Is @d whole: @leaf <- DEPTH + 1 hops through the copies @ring[0..n) (the
 * hop at ips[j] in ring slot (depth - j + 1) mod n) <- run_chain?
 */
static bool chain_whole(const struct run *r, const struct ds_rec *d, const char *leaf,
			long depth, const int *ring, int n)
{
	if ((long)d->nr < depth + 3 || !is_fn(d->ips[0], leaf))
		return false;
	for (long j = 1; j <= depth + 1; j++)
		if (copy_of(r, d->ips[j] - 1) != ring[(depth - j + 1) % n])
			return false;
	return is_fn(d->ips[depth + 2] - 1, "run_chain");
}

/* The first frames of a record that is not whole, for the log. */
static void print_chain(const struct run *r, const struct ds_rec *d, long nth)
{
	printf("# not whole: tid %u, its hit %ld, %" PRIu64 " frames:", d->tid, nth, d->nr);
	for (uint64_t j = 0; j < d->nr; j++) {
		int k = copy_of(r, d->ips[j] - (j > 0));
		const char *s = ds_symtab_lookup(st, d->ips[j] - (j > 0));

		if (k >= 0)
			printf(" copy%d+%#" PRIx64, k, d->ips[j] - r->copies[k].start);
		else
			printf(" %s:%#" PRIx64, s ? s : "?", d->ips[j]);
	}
	printf("\n");
}

static int cmp_rec(const void *a, const void *b)
{
	const struct ds_rec *x = *(const struct ds_rec *const *)a, *y = *(const struct ds_rec *const *)b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->cookie != y->cookie)
		return x->cookie < y->cookie ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

/*
 * By task, then time: the order of a task's walks. A cookie's high bits are
 * the CPU it was handed out on, so (task, cookie) is not that order once the
 * task has moved to another CPU.
 */
static int cmp_rec_time(const void *a, const void *b)
{
	const struct ds_rec *x = *(const struct ds_rec *const *)a, *y = *(const struct ds_rec *const *)b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

struct tally {
	long samples, missing, records, hits, whole, early;
	long walk_max_us, walk_med_us, walk_p90_us, walks_timed;
};

/*
 * Match samples to records by (task, cookie); count the records whose
 * leaf is @leaf and how many are whole; of each task's first @skip hits,
 * those before its first whole record are not checked (walks that were
 * still indexing the copies, @skip at most). Walk time: user-mode
 * samples to their record.
 */
static void tally(const struct run *r, const char *leaf, long depth, const int *ring, int n,
		  long skip, struct tally *t)
{
	const struct ds_rec **defs = calloc((size_t)r->c.n + 1, sizeof(*defs));
	const struct ds_rec **hits = calloc((size_t)r->c.n + 1, sizeof(*hits));
	long *walk = calloc((size_t)r->c.n + 1, sizeof(*walk));
	long nd = 0, nh = 0;
	uint32_t last_tid = 0;
	bool whole_seen = false;
	long seen = 0;

	memset(t, 0, sizeof(*t));
	if (!defs || !hits || !walk)
		goto out;
	for (long i = 0; i < r->c.n; i++)
		if (r->c.recs[i].deferred)
			defs[nd++] = &r->c.recs[i];
	qsort(defs, (size_t)nd, sizeof(*defs), cmp_rec);
	t->records = nd;
	for (long i = 0; i < r->c.n; i++) {
		const struct ds_rec *s = &r->c.recs[i], **d;
		struct ds_rec key = { .tid = s->tid, .cookie = s->cookie };
		const struct ds_rec *kp = &key;
		long lo = 0, hi = nd;

		if (s->deferred || !s->cookie)
			continue;
		t->samples++;
		/* The first record of (tid, cookie): lower bound by time 0. */
		while (lo < hi) {
			long mid = (lo + hi) / 2;

			if (cmp_rec(&defs[mid], &kp) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		d = lo < nd ? &defs[lo] : NULL;
		if (!d || (*d)->tid != s->tid || (*d)->cookie != s->cookie) {
			t->missing++;
			continue;
		}
		if ((s->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER &&
		    (*d)->time >= s->time)
			walk[t->walks_timed++] = (long)(((*d)->time - s->time) / 1000);
	}
	/* Hits, each task's in time order. */
	for (long i = 0; i < nd; i++)
		if (is_fn(defs[i]->ips[0], leaf))
			hits[nh++] = defs[i];
	qsort(hits, (size_t)nh, sizeof(*hits), cmp_rec_time);
	for (long i = 0; i < nh; i++) {
		bool whole;

		if (hits[i]->tid != last_tid) {
			last_tid = hits[i]->tid;
			seen = 0;
			whole_seen = false;
		}
		t->hits++;
		whole = chain_whole(r, hits[i], leaf, depth, ring, n);
		/* Still indexing: before the task's first whole record, up to @skip. */
		if (seen++ < skip && !whole && !whole_seen) {
			t->early++;
			continue;
		}
		whole_seen |= whole;
		if (whole)
			t->whole++;
		else if (t->hits - t->early - t->whole == 1)
			print_chain(r, hits[i], seen);
	}
	qsort(walk, (size_t)t->walks_timed, sizeof(*walk), cmp_long);
	if (t->walks_timed) {
		t->walk_max_us = walk[t->walks_timed - 1];
		t->walk_med_us = walk[t->walks_timed / 2];
		t->walk_p90_us = walk[t->walks_timed * 9 / 10];
	}
out:
	free(defs);
	free(hits);
	free(walk);
}

static void print_tally(const char *name, const struct run *r, const struct tally *t)
{
	printf("# %s: %ld samples, %ld records (%ld lost reports), %ld without a record; %ld hits in the leaf, %ld whole of %ld checked; walk time median %ld us, 90th percentile %ld us, max %ld us (%ld timed); ran %ld ms, exit 0x%x\n",
	       name, t->samples, t->records, r->c.lost, t->missing, t->hits, t->whole,
	       t->hits - t->early, t->walk_med_us, t->walk_p90_us, t->walk_max_us, t->walks_timed,
	       r->ms, r->status);
	if (r->out[0])
		printf("%s", r->out);
}

static bool ran_ok(const struct run *r)
{
	return WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0;
}

static void ring_of(int *ring, int n)
{
	for (int i = 0; i < n; i++)
		ring[i] = i;
}

/* ring and deep: 48 copies, 100 and 500 frames. */
static int check_ring(int *failed, const char *obj, long depth, bool hostile)
{
	char copies[] = "48", d[16], *argv[] = { SF_DIR "/sf_multi", "ring", (char *)obj, copies, d,
						 "3000", "1", NULL };
	/*
	 * 500 deep, a walk took 28 ms (median) on the debug kernel of a slow
	 * run, against a 2 ms period: the samples taken during each walk
	 * asked for the next, user code hardly ran and no sample landed in
	 * the leaf (0 of 2445). A 10x longer period leaves it most of its time.
	 */
	struct run_opts o = { .clock_us = depth > 100 ? 5000 : 500,
			      .max_stack = depth > 100 ? 600 : 0 };
	struct ds_unwind_stats s0, s1;
	int ring[48];
	struct tally t;
	struct run r;

	snprintf(d, sizeof(d), "%ld", depth);
	/* 500 deep on the debug kernel: 15 hits in 3 s once, on a loaded host */
	if (depth > 100)
		argv[5] = "5000";
	ring_of(ring, 48);
	ds_unwind_stats_read(&s0);
	if (run_sampled(argv, &o, &r))
		return -1;
	ds_unwind_stats_read(&s1);
	/* Four walks index the 48 copies and the executable, 16 a walk at most. */
	tally(&r, "spin_leaf", depth, ring, 48, 4, &t);
	print_tally(hostile ? "hostile" : depth > 100 ? "deep" : "ring", &r, &t);
	/* Frames by frame pointers: where a walk of SFrame code fell back (none expected) */
	printf("# stats: %ld walks, %.1f frames by SFrame a walk, %ld by frame pointers in all; %ld objects indexed with a table, %ld without, %ld untrusted\n",
	       s1.walks - s0.walks,
	       s1.walks > s0.walks ? (double)(s1.frames_sframe - s0.frames_sframe) / (s1.walks - s0.walks) : 0.0,
	       s1.frames_fp - s0.frames_fp, s1.objects_sframe - s0.objects_sframe,
	       s1.objects_plain - s0.objects_plain, s1.objects_untrusted - s0.objects_untrusted);
	if (!mainline) {
		DS_CHECK(failed, ran_ok(&r) && r.ncopies == 48, "%s: the workload ran, 48 copies",
			 obj);
		DS_CHECK(failed, t.missing == 0 || r.c.lost,
			 "%s: every sample has its record (%ld missing)", obj, t.missing);
		DS_CHECK(failed, t.walks_timed >= 20 && t.walk_max_us < WALK_BOUND_MS * 1000L * bound_scale,
			 "%s, %ld deep: %ld walks timed, the longest %ld us < %ld ms", obj, depth,
			 t.walks_timed, t.walk_max_us, WALK_BOUND_MS * bound_scale);
		/*
		 * Few hits land in the leaf on the debug kernel: 7 to 55 at 500
		 * frames deep, in 3 s as in 6 s (tried), and 17 once at 100 deep
		 * (135 and 31 on fast): 3 at least, at both depths; each is
		 * checked whole.
		 */
		if (hostile)
			DS_CHECK(failed, s1.objects_untrusted - s0.objects_untrusted >= 1,
				 "hostile tables marked untrusted (%ld)",
				 s1.objects_untrusted - s0.objects_untrusted);
		else
			DS_CHECK(failed, t.hits - t.early >= 3 &&
				 (faults || t.whole == t.hits - t.early),
				 "%ld deep through 48 copies: every record whole once the copies are indexed (%ld of %ld)",
				 depth, t.whole, t.hits - t.early);
	}
	ds_collect_free(&r.c);
	return 0;
}

static int check_kill(int *failed, const char *obj, const char *name)
{
	char *argv[] = { SF_DIR "/sf_multi", "ring", (char *)obj, "48", "500", "60000", "16", NULL };
	struct run_opts o = { .clock_us = 500, .max_stack = 600, .kill_after_ms = 2000 };
	int ring[48];
	struct tally t;
	struct run r;

	ring_of(ring, 48);
	if (run_sampled(argv, &o, &r))
		return -1;
	tally(&r, "spin_leaf", 500, ring, 48, 4, &t);
	printf("# kill (%s): 16 threads, %ld records, SIGKILL reaped in %ld ms\n", name,
	       t.records, r.kill_ms);
	if (!mainline)
		DS_CHECK(failed, WIFSIGNALED(r.status) && r.kill_ms >= 0 && r.kill_ms < KILL_BOUND_MS * bound_scale &&
			 t.records >= 16,
			 "SIGKILL of 16 threads walking 500 frames (%s): reaped in %ld ms < %ld ms (%ld records before)",
			 name, r.kill_ms, KILL_BOUND_MS * bound_scale, t.records);
	ds_collect_free(&r.c);
	return 0;
}

/* 32 threads blocked in a futex under the ring, woken at once, 40 times. */
static int check_wake(int *failed)
{
	char *argv[] = { SF_DIR "/sf_multi", "wake", HOP, "4", "20", "40", "32", NULL };
	struct run_opts o = { 0 };
	int ring[4];
	struct tally t;
	struct run r;

	ring_of(ring, 4);
	if (run_sampled(argv, &o, &r))
		return -1;
	tally(&r, "wait_leaf", 20, ring, 4, 0, &t);
	print_tally("wake", &r, &t);
	if (!mainline) {
		DS_CHECK(failed, ran_ok(&r) && t.missing == 0 && t.hits >= 40 * 32 * 9 / 10,
			 "32 threads woken together: ran, %ld waits recorded (40 x 32 made), none without a record (%ld)",
			 t.hits, t.missing);
		DS_CHECK(failed, faults || t.whole == t.hits,
			 "32 threads woken together: every wait's record whole (%ld of %ld)",
			 t.whole, t.hits);
	}
	ds_collect_free(&r.c);
	return 0;
}

/* System time of a run, microseconds. */
static long stime_us(const struct run *r)
{
	return r->ru.ru_stime.tv_sec * 1000000L + r->ru.ru_stime.tv_usec;
}

/*
 * The cost of a walk with 1, 8 and 32 threads walking the same object at
 * once (printed; a lock on the walk's way would make it grow): the system
 * time of a run with deferred callchains less that of the same run with
 * classic ones (a frame-pointer walk in the interrupt, one frame here), per
 * record. Tick-sampled system time: meaningful over many walks, and under
 * -icount (bench) in guest instructions. Walk time (sample to record)
 * includes the wait for a CPU once the threads outnumber the CPUs.
 */
static int print_scaling(void)
{
	static const char *const threads[] = { "1", "8", "32" };
	int ring[4];

	ring_of(ring, 4);
	for (int i = 0; i < 3; i++) {
		char *argv[] = { SF_DIR "/sf_multi", "ring", HOP, "4", "20", "2000",
				 (char *)threads[i], NULL };
		struct run_opts o = { .clock_us = 1000 }, c = { .clock_us = 1000, .classic = true };
		struct run r, b;
		struct tally t;

		if (run_sampled(argv, &c, &b))
			return -1;
		ds_collect_free(&b.c);
		if (run_sampled(argv, &o, &r))
			return -1;
		tally(&r, "spin_leaf", 20, ring, 4, 0, &t);
		printf("# scaling, %s threads: %ld records, %ld of %ld whole; system time %ld ms deferred, %ld ms classic: %.1f us a walk; walk time median %ld us, 90th percentile %ld us\n",
		       threads[i], t.records, t.whole, t.hits, stime_us(&r) / 1000, stime_us(&b) / 1000,
		       t.records ? (double)(stime_us(&r) - stime_us(&b)) / t.records : 0.0,
		       t.walk_med_us, t.walk_p90_us);
		ds_collect_free(&r.c);
	}
	return 0;
}

static int check_uffd(int *failed)
{
	char *argv[] = { SF_DIR "/sf_multi", "uffd", HOP, "20", "20", NULL };
	struct run_opts o = { .kill_after_ms = 60000 };
	int ring[2] = { 0, 1 };
	struct tally t;
	struct run r;

	if (run_sampled(argv, &o, &r))
		return -1;
	tally(&r, "read_leaf", 20, ring, 2, 0, &t);
	print_tally("uffd", &r, &t);
	if (!mainline) {
		DS_CHECK(failed, ran_ok(&r) && strstr(r.out, "# uffd: 20 rounds"),
			 "a stack served by userfaultfd: the workload made progress (%ld ms)", r.ms);
		DS_CHECK(failed, t.hits >= 18 && (faults || t.whole == t.hits) && t.missing == 0,
			 "walks through pages served by the handler thread: whole (%ld of %ld, %ld missing)",
			 t.whole, t.hits, t.missing);
	}
	ds_collect_free(&r.c);
	return 0;
}

static int check_big(int *failed)
{
	char *argv[] = { SF_DIR "/sf_multi", "ring", SF_DIR "/lib/libsfbig.so", "1", "50", "2000", "1",
			 NULL };
	struct run_opts o = { .clock_us = 500 };
	int ring[1] = { 0 };
	struct tally t;
	struct run r;

	if (run_sampled(argv, &o, &r))
		return -1;
	tally(&r, "spin_leaf", 50, ring, 1, 0, &t);
	print_tally("big", &r, &t);
	if (!mainline)
		DS_CHECK(failed, ran_ok(&r) && t.hits >= 20 && t.missing == 0 &&
			 (faults || t.whole == t.hits) && t.walk_max_us < WALK_BOUND_MS * 1000L * bound_scale,
			 "an object with a table over 4 MiB: every record whole (%ld of %ld, %ld missing), the longest walk %ld us",
			 t.whole, t.hits, t.missing, t.walk_max_us);
	ds_collect_free(&r.c);
	return 0;
}

/*
 * What the tasks "spinner" and "loader" of the workload wait for. FUSE waits
 * for its daemon interruptibly (S), so the state alone does not say who
 * waits for it: the task's kernel stack does. A spinner briefly in D for
 * some other lock (a page fault against the loader's mmap) is not a wait
 * for the daemon; one that lasts as long as a read of slow.so (2 s) is.
 */
struct fuse_watch {
	long spinner_d, spinner_fuse, loader_fuse, polls;
	long d_since_ms, d_longest_ms;	/* the spinner's stretches in D */
	long fast_reads_at_1s;
	char first_d_stack[256];	/* the spinner's, the first time it was in D */
	struct fuse_server *fs;
};

/* /proc/PID/task/TID/stack as "f1 f2 ...", offsets dropped; false if unreadable. */
static bool kernel_stack(pid_t pid, const char *tid, char *out, size_t size)
{
	char path[64], line[256];
	size_t used = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%s/stack", pid, tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	out[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		char *fn = strchr(line, ']');
		size_t n;

		if (!fn)
			continue;
		fn += 1 + strspn(fn + 1, " ");
		n = strcspn(fn, "+\n");
		if (used + n + 2 > size)
			break;
		memcpy(out + used, fn, n);
		used += n;
		out[used++] = ' ';
		out[used] = 0;
	}
	fclose(f);
	return true;
}

static void watch_tasks(pid_t pid, long ms, void *arg)
{
	struct fuse_watch *w = arg;
	bool spinner_d = false;
	struct dirent *de;
	char path[64];
	DIR *dir;

	if (ms >= 1000 && w->fast_reads_at_1s < 0)
		w->fast_reads_at_1s = atomic_load(&w->fs->files[0].reads);
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	while (dir && (de = readdir(dir))) {
		char buf[256], name[32], stack[1024], state;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", pid, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) &&
		    sscanf(buf, "%*d (%31[^)]) %c", name, &state) == 2) {
			bool is_spinner = !strcmp(name, "spinner");
			bool have_stack = (state == 'S' || state == 'D') &&
					  (is_spinner || !strcmp(name, "loader")) &&
					  kernel_stack(pid, de->d_name, stack, sizeof(stack));
			bool in_fuse = have_stack && strstr(stack, "fuse");

			if (is_spinner) {
				spinner_d = state == 'D';
				w->spinner_fuse += in_fuse;
				if (spinner_d && !w->spinner_d && have_stack)
					snprintf(w->first_d_stack, sizeof(w->first_d_stack), "%s",
						 stack);
				w->spinner_d += spinner_d;
			} else if (in_fuse) {
				w->loader_fuse++;
			}
		}
		fclose(f);
	}
	if (dir)
		closedir(dir);
	w->polls++;
	if (!spinner_d)
		w->d_since_ms = -1;
	else if (w->d_since_ms < 0)
		w->d_since_ms = ms;
	else if (ms - w->d_since_ms > w->d_longest_ms)
		w->d_longest_ms = ms - w->d_since_ms;
}

static unsigned char *read_file(const char *path, size_t *len)
{
	struct stat sb;
	unsigned char *buf;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &sb))
		return NULL;
	*len = (size_t)sb.st_size;
	buf = malloc(*len);
	if (buf && read(fd, buf, *len) != (ssize_t)*len) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	return buf;
}

static int check_fuse(int *failed)
{
	char *argv[] = { SF_DIR "/sf_multi", "fuse", "/mnt/sf/fast.so", "/mnt/sf/slow.so", "20",
			 "8000", NULL };
	struct fuse_server fs = { .nfiles = 2 };
	struct fuse_watch w = { .fast_reads_at_1s = -1, .d_since_ms = -1, .fs = &fs };
	struct run_opts o = { .clock_us = 1000, .monitor = watch_tasks, .arg = &w,
			      .kill_after_ms = 60000 };
	struct tally ts, tl;
	int fast[1] = { 0 }, slow[1] = { 1 };
	struct run r;
	size_t len;
	unsigned char *obj = read_file(HOP, &len);
	long fast_reads, load_ms = 0;
	const char *loaded;

	if (!obj)
		return -1;
	fs.files[0] = (struct fuse_server_file){ .name = "fast.so", .data = obj, .size = len };
	fs.files[1] = (struct fuse_server_file){ .name = "slow.so", .data = obj, .size = len,
						 .delay_ms = 2000 };
	mkdir("/mnt", 0755);
	if (fuse_server_start(&fs, "/mnt/sf")) {
		free(obj);
		return -1;
	}
	if (run_sampled(argv, &o, &r)) {
		fuse_server_stop(&fs);
		return -1;
	}
	fast_reads = atomic_load(&fs.files[0].reads);
	loaded = strstr(r.out, "# loaded ");
	if (loaded)
		sscanf(loaded, "# loaded %*s in %ld ms", &load_ms);
	tally(&r, "spin_leaf", 20, fast, 1, 0, &ts);
	tally(&r, "spin_leaf", 20, slow, 1, 0, &tl);
	print_tally("fuse", &r, &ts);
	printf("# fuse: reads of fast.so %ld (%ld at 1 s), of slow.so %ld (2 s each); of %ld polls: loader waiting in FUSE at %ld, spinner at %ld (in D at %ld, for %ld ms at the longest); %ld records through slow.so whole\n",
	       fast_reads, w.fast_reads_at_1s, atomic_load(&fs.files[1].reads), w.polls,
	       w.loader_fuse, w.spinner_fuse, w.spinner_d, w.d_longest_ms, tl.whole);
	if (w.spinner_d)
		printf("# fuse: the spinner's kernel stack when first in D: %s\n", w.first_d_stack);
	if (!mainline) {
		DS_CHECK(failed, ran_ok(&r) && load_ms >= 2000,
			 "an object served by a slow FUSE daemon: loaded in %ld ms (2 s a read) and run",
			 load_ms);
		DS_CHECK(failed, w.loader_fuse > 0 && w.spinner_fuse == 0 && w.d_longest_ms < 500,
			 "while one thread waits for the daemon (%ld polls), its walking sibling never does (%ld polls; in D %ld ms at the longest)",
			 w.loader_fuse, w.spinner_fuse, w.d_longest_ms);
		DS_CHECK(failed, fast_reads == w.fast_reads_at_1s,
			 "walks read no file: fast.so read %ld times after its first second",
			 fast_reads - w.fast_reads_at_1s);
		DS_CHECK(failed, ts.hits >= 100 && ts.whole + tl.whole == ts.hits && tl.whole >= 10,
			 "records through the FUSE objects whole (%ld of %ld; %ld through slow.so)",
			 ts.whole + tl.whole, ts.hits, tl.whole);
	}
	ds_collect_free(&r.c);
	fuse_server_stop(&fs);
	free(obj);
	return 0;
}

/* Slab + vmalloc in use, KiB, half-way through a run. */
static void read_kmem(pid_t pid, long ms, void *arg)
{
	long *kib = arg;
	char line[128];
	FILE *f;

	(void)pid;
	if (ms < 1500 || *kib)
		return;
	f = fopen("/proc/meminfo", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		long v;

		if (sscanf(line, "Slab: %ld", &v) == 1 || sscanf(line, "VmallocUsed: %ld", &v) == 1)
			*kib += v;
	}
	fclose(f);
}

static int check_memory(void)
{
	char *argv[] = { SF_DIR "/sf_multi", "ring", HOP, "20", "20", "3000", "1", NULL };
	long walked = 0, unwalked = 0;
	struct run_opts o = { .clock_us = 500, .monitor = read_kmem, .arg = &walked };
	struct run_opts b = { .clock_us = 500, .classic = true, .monitor = read_kmem,
			      .arg = &unwalked };
	struct ds_unwind_stats s0, s1;
	struct run r;

	ds_unwind_stats_read(&s0);
	if (run_sampled(argv, &b, &r))
		return -1;
	ds_collect_free(&r.c);
	if (run_sampled(argv, &o, &r))
		return -1;
	ds_unwind_stats_read(&s1);
	printf("# memory, 20 copies: slab + vmalloc %ld KiB with deferred callchains, %ld KiB with classic ones (%+ld KiB: the task's deferred state and the index); %ld objects indexed\n",
	       walked, unwalked, walked - unwalked, s1.objects_sframe - s0.objects_sframe);
	ds_collect_free(&r.c);
	return 0;
}

/* A copy of libsfhop.so whose table claims 65,535 rows for its function. */
static int write_hostile(const char *path)
{
	size_t len;
	unsigned char *buf = read_file(HOP, &len);
	int fd, ret = -1;

	if (!buf || sframe_damage(buf, len, SFRAME_DAMAGE_ROWS))
		goto out;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0 && write(fd, buf, len) == (ssize_t)len)
		ret = 0;
	if (fd >= 0)
		close(fd);
out:
	free(buf);
	return ret;
}

static int set_max_stack(const char *value)
{
	int fd = open("/proc/sys/kernel/perf_event_max_stack", O_WRONLY);
	int ok = fd >= 0 && write(fd, value, strlen(value)) == (ssize_t)strlen(value);

	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

/* The kernel's unwinder text [*start, *end), from /proc/kallsyms. */
static int unwinder_text(unsigned long *start, unsigned long *end)
{
	static const char *const anchors[] = {
		"unwind_user", "unwind_deferred_task_work", "unwind_table_lookup",
		"unwind_sframe_step", "sframe_table_init",
	};

	return ds_kernel_text_range(anchors, sizeof(anchors) / sizeof(anchors[0]), start, end);
}

static long read_long(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDONLY);

	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) < 0)
		buf[0] = 0;
	if (fd >= 0)
		close(fd);
	return atol(buf);
}

#define FAIL_TIMES	1000000

/*
 * Fail @percent of the slab and page allocations made from the unwinder
 * (any task), or stop (0). Returns the number failed so far, or -1.
 */
static long inject(int percent, unsigned long start, unsigned long end)
{
	static const char *const kinds[] = { "failslab", "fail_page_alloc" };
	long failed = 0;

	for (int k = 0; k < 2; k++) {
		char path[128], v[32];
		const char *const set[][2] = {
			{ "verbose", "0" }, { "interval", "1" }, { "task-filter", "N" },
			{ "ignore-gfp-wait", "N" },
		};

		snprintf(path, sizeof(path), "/sys/kernel/debug/%s/times", kinds[k]);
		if (!percent) {
			failed += FAIL_TIMES - read_long(path);
			snprintf(path, sizeof(path), "/sys/kernel/debug/%s/probability", kinds[k]);
			if (ds_write_str(path, "0"))
				return -1;
			continue;
		}
		snprintf(v, sizeof(v), "%d", FAIL_TIMES);
		if (ds_write_str(path, v))
			return -1;
		for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++) {
			snprintf(path, sizeof(path), "/sys/kernel/debug/%s/%s", kinds[k], set[i][0]);
			if (ds_write_str(path, set[i][1]))
				return -1;
		}
		snprintf(path, sizeof(path), "/sys/kernel/debug/%s/require-start", kinds[k]);
		snprintf(v, sizeof(v), "%lu", start);
		if (ds_write_str(path, v))
			return -1;
		snprintf(path, sizeof(path), "/sys/kernel/debug/%s/require-end", kinds[k]);
		snprintf(v, sizeof(v), "%lu", end);
		if (ds_write_str(path, v))
			return -1;
		snprintf(path, sizeof(path), "/sys/kernel/debug/%s/probability", kinds[k]);
		snprintf(v, sizeof(v), "%d", percent);
		if (ds_write_str(path, v))
			return -1;
	}
	return failed;
}

static int check_ring_shallow(int *failed) { return check_ring(failed, HOP, 100, false); }

/*
 * Allocations made from the unwinder fail, 1 in 5 (the debug kernel's
 * fault injection, filtered by stack): the ring, wake, uffd and big cases
 * again. Every sample must still get its record; no splat, no leak (the
 * suite's kmemleak check); stacks may be cut short (printed).
 */
static int case_faults(int *failed)
{
	int (*const runs[])(int *) = { check_ring_shallow, check_wake, check_uffd, check_big };
	unsigned long start, end;
	long n;

	if (access("/sys/kernel/debug/failslab/require-start", F_OK)) {
		printf("# faults: SKIP: no fault injection filtered by stack in this kernel\n");
		return 0;
	}
	if (unwinder_text(&start, &end) || inject(20, start, end) < 0)
		return -1;
	printf("# faults: 20%% of the allocations from [%#lx, %#lx) fail\n", start, end);
	faults = true;
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++)
		if (runs[i](failed)) {
			inject(0, 0, 0);
			return -1;
		}
	faults = false;
	n = inject(0, 0, 0);
	printf("# faults: %ld allocations failed\n", n);
	if (!mainline)
		DS_CHECK(failed, n > 0, "allocations from the unwinder failed (%ld)", n);
	return n < 0 ? -1 : 0;
}

/*
 * remap: a frame-pointer build of the object, then the table build where it
 * was. The two builds return into hop() at other offsets: the records of
 * each half are told apart by the return address into the copy.
 */
static int check_remap(int *failed)
{
	char *argv[] = { SF_DIR "/sf_multi", "swap", SF_DIR "/lib/libsfhop_fp.so", HOP, "20",
			 "1500", NULL };
	struct run_opts o = { .clock_us = 500 };
	unsigned long off[2] = { 0 };
	long per[2] = { 0 }, other = 0;
	int ring[1] = { 0 };
	struct tally t;
	struct run r;

	if (run_sampled(argv, &o, &r))
		return -1;
	tally(&r, "spin_leaf", 20, ring, 1, 4, &t);
	print_tally("remap", &r, &t);
	for (long i = 0; r.ncopies == 1 && i < r.c.n; i++) {
		const struct ds_rec *d = &r.c.recs[i];
		unsigned long o2;
		int k;

		if (!d->deferred || d->nr < 3 || !is_fn(d->ips[0], "spin_leaf") ||
		    copy_of(&r, d->ips[2] - 1) != 0)
			continue;
		o2 = d->ips[2] - r.copies[0].start;
		for (k = 0; k < 2 && off[k] && off[k] != o2; k++)
			;
		if (k == 2) {
			other++;
			continue;
		}
		off[k] = o2;
		per[k]++;
	}
	printf("# remap: %ld and %ld records by return offset %#lx and %#lx, %ld others\n",
	       per[0], per[1], off[0], off[1], other);
	if (!mainline) {
		DS_CHECK(failed, ran_ok(&r) && r.ncopies == 1 && strstr(r.out, "# swapped at"),
			 "remap: the workload ran, the table build mapped where the other was");
		DS_CHECK(failed, t.missing == 0 || r.c.lost,
			 "remap: every sample has its record (%ld missing)", t.missing);
		DS_CHECK(failed, per[0] >= 10 && per[1] >= 10,
			 "remap: records of both builds (%ld and %ld)", per[0], per[1]);
		DS_CHECK(failed, t.hits - t.early >= 20 && t.whole == t.hits - t.early,
			 "remap: every record whole, before and after the remap (%ld of %ld)",
			 t.whole, t.hits - t.early);
	}
	ds_collect_free(&r.c);
	return 0;
}

static const char *hostile = "/tmp/sf_hostile.so";

static int case_ring(int *failed) { return check_ring(failed, HOP, 100, false); }
static int case_deep(int *failed) { return check_ring(failed, HOP, 500, false); }
static int case_hostile(int *failed) { return check_ring(failed, hostile, 500, true); }
static int case_kill(int *failed)
{
	return check_kill(failed, HOP, "good tables") ||
	       check_kill(failed, hostile, "hostile tables");
}
static int case_scaling(int *failed) { (void)failed; return print_scaling(); }
static int case_memory(int *failed)
{
	(void)failed;
	return set_max_stack("127") || check_memory();
}

static const struct {
	const char *name;
	int (*run)(int *failed);
} cases[] = {
	{ "ring", case_ring }, { "deep", case_deep }, { "hostile", case_hostile },
	{ "kill", case_kill }, { "wake", check_wake }, { "scaling", case_scaling },
	{ "uffd", check_uffd }, { "big", check_big }, { "fuse", check_fuse },
	{ "memory", case_memory }, { "remap", check_remap }, { "faults", case_faults },
};

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * sframe_stress [CASE...]: all cases in order (those that need the debug
 * kernel's fault injection skip elsewhere), or the ones named (repeats too).
 */
int main(int argc, char **argv)
{
	int failed = 0;

	if (access("/tests/sframe-missing", F_OK) == 0) {
		printf("# SKIP: no SFrame workloads in this initramfs (see /tests/sframe-missing)\n");
		return 0;
	}
	mainline = ds_kernel_is_mainline();
	bound_scale = ds_period_scale();
	st = ds_symtab_load(SF_DIR "/sf_multi");
	if (!st || set_max_stack("1024") || write_hostile(hostile)) {
		printf("# setup failed: %s\n", strerror(errno));
		return 1;
	}
	for (int a = argc < 2 ? 0 : 1; a < argc || (argc < 2 && a < (int)ARRAY_SIZE(cases)); a++) {
		size_t i = 0;

		while (argc >= 2 && i < ARRAY_SIZE(cases) && strcmp(argv[a], cases[i].name))
			i++;
		if (argc < 2)
			i = (size_t)a;
		if (i == ARRAY_SIZE(cases)) {
			printf("# unknown case %s\n", argv[a]);
			return 1;
		}
		if (cases[i].run(&failed)) {
			printf("# %s: setup failed: %s\n", cases[i].name, strerror(errno));
			return 1;
		}
	}
	set_max_stack("127");
	return failed ? 1 : 0;
}
