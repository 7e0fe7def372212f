// SPDX-License-Identifier: GPL-2.0
/*
 * Several profiling sessions in one process: each gets exactly the deferred
 * records of the samples in its own buffers, whatever else the process has
 * open. A workload child runs the example workload in phases that the test
 * releases one at a time, so that events are disabled and buffers drained
 * while the child waits between phases.
 *
 *   sessions [leftover|two_task|siblings|percpu_keys|full_buffer|sixteen|key_once]
 *
 * Without an argument every case runs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stitch_util.h"
#include "workload.h"

#ifndef PERF_EVENT_IOC_SET_DEFER_SESSION
#define PERF_EVENT_IOC_SET_DEFER_SESSION _IOW('$', 32, __u64)
#endif

#define NCPU 2
#define MAXBUF 32

static struct ds_symtab *symtab;

/* ---- the workload child, driven phase by phase --------------------------- */

struct phase {
	unsigned int msec;	/* 0: exit */
	unsigned int read_size;
	int cpu;		/* pin to this CPU first, -1: any */
};

struct kid {
	pid_t pid;
	int go, ack;
};

static int kid_start(struct kid *k)
{
	int go[2], ack[2];

	if (pipe(go) || pipe(ack))
		return -1;
	k->pid = fork();
	if (k->pid < 0)
		return -1;
	if (k->pid == 0) {
		struct workload_stats ws;
		struct phase ph;

		close(go[1]);
		close(ack[0]);
		while (read(go[0], &ph, sizeof(ph)) == sizeof(ph) && ph.msec) {
			ds_pin(0, ph.cpu);
			if (workload_run(ph.msec, ph.read_size, "/dev/zero", &ws))
				_exit(1);
			if (write(ack[1], "d", 1) != 1)
				_exit(1);
		}
		_exit(0);
	}
	close(go[0]);
	close(ack[1]);
	k->go = go[1];
	k->ack = ack[0];
	return 0;
}

struct bufset {
	int n;
	int fds[MAXBUF];
	struct ds_mmap rings[MAXBUF];
	struct ds_collect col[MAXBUF];
};

static void drain_all(struct bufset *b)
{
	for (int i = 0; i < b->n; i++)
		if (b->rings[i].base)
			ds_mmap_drain(&b->rings[i], ds_collect_record, &b->col[i]);
}

/*
 * Run one phase. While it runs, drain @b every 20 ms if @drain, and move the
 * child to the other CPU every @hop_ms (0: never). Returns 0 when the phase
 * ended normally.
 */
static int kid_phase(struct kid *k, const struct phase *ph, struct bufset *b, bool drain,
		     unsigned int hop_ms)
{
	struct timespec t0;
	int cpu = ph->cpu < 0 ? 0 : ph->cpu;
	long next_hop = hop_ms;
	char c;

	if (write(k->go, ph, sizeof(*ph)) != sizeof(*ph))
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct timeval tv = { 0, 20000 };
		fd_set rd;

		FD_ZERO(&rd);
		FD_SET(k->ack, &rd);
		if (select(k->ack + 1, &rd, NULL, NULL, &tv) > 0)
			return read(k->ack, &c, 1) == 1 ? 0 : -1;
		if (drain && b)
			drain_all(b);
		/*
		 * No hop in the phase's last 200 ms: a task moved while it waits
		 * for the next phase returns on a CPU whose events are disabled
		 * by then, and such a record has nowhere to go (docs/kernel.md).
		 */
		if (hop_ms && ds_msec_since(&t0) >= next_hop &&
		    ds_msec_since(&t0) + 200 < (long)ph->msec) {
			cpu = !cpu;
			ds_pin(k->pid, cpu);
			next_hop += hop_ms;
		}
	}
}

/*
 * Wait until the child sleeps in its read of the next phase: the phase's
 * last kernel entry has then returned to user space, its samples and its
 * record are in the buffers. A test that drains and starts counting afresh
 * right after the ack could take the record of an entry that still samples
 * (the child preempted on its way out, after its task_work) and count those
 * samples without their record.
 */
static void kid_quiet(const struct kid *k)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)k->pid);
	for (int i = 0; i < 2000; i++) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = 0;
		p = strrchr(buf, ')');
		if (p && p[1] == ' ' && p[2] == 'S')
			return;
		usleep(1000);
	}
	printf("# the child did not go to sleep after its phase\n");
}

/* Let the child exit (its pending unwind is flushed on the way) and reap it. */
static int kid_stop(struct kid *k)
{
	struct phase ph = { 0 };
	int status;

	if (write(k->go, &ph, sizeof(ph)) != sizeof(ph))
		kill(k->pid, SIGKILL);
	waitpid(k->pid, &status, 0);
	close(k->go);
	close(k->ack);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* ---- events ----------------------------------------------------------- */

static int add(struct bufset *b, struct perf_event_attr *attr, pid_t pid, int cpu,
	       unsigned int pages, pid_t only_tid)
{
	int fd = ds_perf_open(attr, pid, cpu, -1, 0);

	if (fd < 0) {
		printf("# perf_event_open: %s\n", strerror(-fd));
		return -1;
	}
	b->fds[b->n] = fd;
	memset(&b->col[b->n], 0, sizeof(b->col[b->n]));
	b->col[b->n].only_tid = (uint32_t)only_tid;
	b->col[b->n].ring_id = b->n;
	memset(&b->rings[b->n], 0, sizeof(b->rings[b->n]));
	if (pages && ds_mmap_open(&b->rings[b->n], fd, pages)) {
		close(fd);
		return -1;
	}
	return b->n++;
}

static void sampling(struct perf_event_attr *attr, uint64_t period_ns)
{
	ds_attr_sampling(attr, period_ns);
	ds_attr_set_flag(attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
}

static void set_all(struct bufset *b, int from, int to, unsigned long req)
{
	for (int i = from; i < to; i++)
		ioctl(b->fds[i], req, 0);
}

static void close_all(struct bufset *b)
{
	for (int i = 0; i < b->n; i++) {
		if (b->rings[i].base)
			ds_mmap_close(&b->rings[i]);
		close(b->fds[i]);
		ds_collect_free(&b->col[i]);
	}
	b->n = 0;
}

static long deferred_records(const struct ds_collect *c)
{
	long n = 0;

	for (long i = 0; i < c->n; i++)
		n += c->recs[i].deferred;
	return n;
}

/*
 * When a buffer misses a record: each sample of @c without one (where it is
 * in the buffer, its CPU, its kernel stack's first frames), and which of
 * @others (the other sessions' buffers, if any) sampled that kernel entry and
 * have its record: the whole entry's delivery lost, or this session's ask.
 */
static void explain_unmatched(const char *what, const struct ds_collect *c, uint32_t tid,
			      const struct ds_collect *others, int n_others)
{
	enum { MAX_SHOWN = 8, FRAMES_SHOWN = 6 };
	uint64_t ips[MAX_SHOWN * FRAMES_SHOWN];
	char syms[MAX_SHOWN * FRAMES_SHOWN][DS_KSYM_LEN];
	long last = -1, shown = 0, count, idx[MAX_SHOWN];
	size_t nips = 0;

	for (long n = 0; n < c->n; n++)
		if (c->recs[n].deferred && c->recs[n].tid == tid)
			last = n;
	/* what the buffer said it lost, and records the collector could not
	 * keep (too long, no tid) */
	printf("# %s: %ld records read (every task's), %ld LOST records (%llu lost), the first before record %ld; %ld not kept\n",
	       what, c->seen, c->lost, (unsigned long long)c->lost_events,
	       c->lost ? c->lost_at : -1, c->bad);
	/* the samples to show first, then their kernel frames named at once */
	for (long n = 0; n < c->n && shown < MAX_SHOWN; n++) {
		const struct ds_rec *r = &c->recs[n];

		if (r->deferred || r->tid != tid || !r->cookie ||
		    ds_find_record(c, tid, r->cookie, &count))
			continue;
		idx[shown++] = n;
		for (uint64_t i = 0; i < r->nr && i < FRAMES_SHOWN; i++)
			if (ds_is_kernel_ip(r->ips[i]))
				ips[nips++] = r->ips[i];
	}
	ds_kernel_syms(ips, nips, syms);
	nips = 0;
	for (long s = 0; s < shown; s++) {
		const struct ds_rec *r = &c->recs[idx[s]];
		char where[FRAMES_SHOWN * (DS_KSYM_LEN + 1) + 1] = "", with[3 * MAXBUF + 1] = "";
		int sampled = 0, have = 0;

		for (uint64_t i = 0; i < r->nr && i < FRAMES_SHOWN; i++)
			if (ds_is_kernel_ip(r->ips[i]))
				snprintf(where + strlen(where), sizeof(where) - strlen(where), " %s",
					 syms[nips++]);
		for (int j = 0; j < n_others; j++) {
			long k;

			for (k = 0; k < others[j].n; k++)
				if (!others[j].recs[k].deferred && others[j].recs[k].cookie == r->cookie)
					break;
			sampled += k < others[j].n;
			if (ds_find_record(&others[j], tid, r->cookie, &count)) {
				have++;
				snprintf(with + strlen(with), sizeof(with) - strlen(with), " %d", j);
			}
		}
		printf("# %s: sample %ld of %ld (%s the last record, cpu %u, time %llu, cookie %#llx) has no record; kernel stack:%s\n",
		       what, idx[s], c->n, idx[s] > last ? "after" : "before", r->cpu,
		       (unsigned long long)r->time, (unsigned long long)r->cookie, where);
		if (n_others)
			printf("#   of the %d buffers, %d sampled that entry (this one too), %d have its record:%s\n",
			       n_others, sampled, have, with);
	}
}

/* The contract for one buffer (or one session's buffers merged into @c). */
static void check_exact(int *failed, const char *what, const struct ds_collect *c, pid_t pid,
			long min_samples, bool no_classic, const struct ds_collect *others,
			int n_others)
{
	struct ds_verdict v;

	printf("# %s:\n", what);
	ds_verify(c, (uint32_t)pid, symtab, &v);
	DS_CHECK(failed, v.marker_samples >= min_samples, "%s: deferred samples (%ld >= %ld)",
		 what, v.marker_samples, min_samples);
	/*
	 * A full buffer loses records, and the kernel says how many (the
	 * PERF_RECORD_LOST counts, or the events' own, which the caller may
	 * put in lost_events): the only misses allowed. Per-CPU events sample
	 * every task on their CPU, and on the debug kernel their buffers fill
	 * while the reader is held up.
	 */
	DS_CHECK(failed, (uint64_t)(v.unmatched + v.unmatched_at_end) <= c->lost_events,
		 "%s: every sample's record is in its buffer (%ld + %ld unmatched, %llu lost by a full buffer)",
		 what, v.unmatched, v.unmatched_at_end, (unsigned long long)c->lost_events);
	if (v.unmatched || v.unmatched_at_end || c->lost)
		explain_unmatched(what, c, (uint32_t)pid, others, n_others);
	DS_CHECK(failed, v.dup_records == 0, "%s: one record per cookie (%ld dup)", what,
		 v.dup_records);
	DS_CHECK(failed, v.orphan_records == 0, "%s: no record it did not ask for (%ld)", what,
		 v.orphan_records);
	DS_CHECK(failed, v.read_stitched > 0, "%s: records stitch the read chain (%ld)", what,
		 v.read_stitched);
	if (no_classic && v.classic_samples) {
		long shown = 0;
		uint64_t t0 = c->n ? c->recs[0].time : 0;

		for (long i = 0; i < c->n && shown < 8; i++) {
			const struct ds_rec *r = &c->recs[i];

			if (r->deferred || r->cookie || r->user_start < 0)
				continue;
			printf("# classic sample: cpu %u, +%.3f ms, %llu ips, first user ip %d\n",
			       r->cpu, (r->time - t0) / 1e6, (unsigned long long)r->nr,
			       r->user_start);
			shown++;
		}
	}
	if (no_classic)
		DS_CHECK(failed, v.classic_samples == 0, "%s: no classic fallback (%ld)", what,
			 v.classic_samples);
}

static void merge(struct ds_collect *into, const struct ds_collect *from)
{
	for (long i = 0; i < from->n; i++) {
		if (into->n == into->cap) {
			into->cap = into->cap ? into->cap * 2 : 1024;
			into->recs = realloc(into->recs, into->cap * sizeof(*into->recs));
			if (!into->recs)
				abort();
		}
		into->recs[into->n++] = from->recs[i];
	}
	if (from->lost && !into->lost)
		into->lost_at = into->n - from->n + from->lost_at;
	into->lost += from->lost;
	into->lost_events += from->lost_events;
	into->seen += from->seen;
}

static const struct phase run_any = { 800, 8 << 20, -1 };

/* ---- the cases ---------------------------------------------------------- */

/*
 * The process still has per-CPU side-band defer_output events of an earlier
 * session open, unread; it then samples a child with a per-task event. Every
 * record must reach the per-task event's buffer, none the side-band buffers.
 */
static int case_leftover(void)
{
	struct perf_event_attr attr;
	struct bufset b = { 0 };
	struct kid k;
	int failed = 0, e;

	if (kid_start(&k))
		return 1;
	ds_attr_sideband(&attr);
	for (int cpu = 0; cpu < NCPU; cpu++)
		if (add(&b, &attr, -1, cpu, 64, 0) < 0)
			return 1;
	set_all(&b, 0, NCPU, PERF_EVENT_IOC_ENABLE);
	sampling(&attr, 200000);
	e = add(&b, &attr, k.pid, -1, 1024, k.pid);
	if (e < 0)
		return 1;
	ioctl(b.fds[e], PERF_EVENT_IOC_ENABLE, 0);
	/* The side-band buffers are never read: they are left-overs. */
	DS_CHECK(&failed, kid_phase(&k, &run_any, NULL, false, 0) == 0, "workload phase ran");
	ioctl(b.fds[e], PERF_EVENT_IOC_DISABLE, 0);
	DS_CHECK(&failed, kid_stop(&k) == 0, "workload exited");
	drain_all(&b);
	check_exact(&failed, "per-task session", &b.col[e], k.pid, 20, true, NULL, 0);
	for (int cpu = 0; cpu < NCPU; cpu++)
		DS_CHECK(&failed, deferred_records(&b.col[cpu]) == 0,
			 "left-over side-band buffer of CPU %d gets no record (%ld)", cpu,
			 deferred_records(&b.col[cpu]));
	close_all(&b);
	return failed;
}

/* Two per-task sessions on one child, each with its own buffer. */
static int case_two_task(void)
{
	struct perf_event_attr attr;
	struct bufset b = { 0 };
	struct kid k;
	int failed = 0;

	if (kid_start(&k))
		return 1;
	for (int i = 0; i < 2; i++) {
		sampling(&attr, i ? 170000 : 230000);
		if (add(&b, &attr, k.pid, -1, 1024, k.pid) < 0)
			return 1;
	}
	set_all(&b, 0, 2, PERF_EVENT_IOC_ENABLE);
	DS_CHECK(&failed, kid_phase(&k, &run_any, &b, true, 0) == 0, "workload phase ran");
	set_all(&b, 0, 2, PERF_EVENT_IOC_DISABLE);
	DS_CHECK(&failed, kid_stop(&k) == 0, "workload exited");
	drain_all(&b);
	check_exact(&failed, "first per-task session", &b.col[0], k.pid, 20, true, NULL, 0);
	check_exact(&failed, "second per-task session", &b.col[1], k.pid, 20, true, NULL, 0);
	close_all(&b);
	return failed;
}

/*
 * One session: the sampling event, then a disabled sibling with a buffer and
 * an enabled sibling that was never mmapped (opened later, so they come first
 * in the context's lists). Neither may swallow the record.
 */
static int case_siblings(void)
{
	struct perf_event_attr attr;
	struct bufset b = { 0 };
	struct kid k;
	int failed = 0;

	if (kid_start(&k))
		return 1;
	sampling(&attr, 200000);
	if (add(&b, &attr, k.pid, -1, 1024, k.pid) < 0 ||	/* 0: sampling */
	    add(&b, &attr, k.pid, -1, 64, k.pid) < 0 ||	/* 1: disabled */
	    add(&b, &attr, k.pid, -1, 0, k.pid) < 0)	/* 2: no buffer */
		return 1;
	ioctl(b.fds[0], PERF_EVENT_IOC_ENABLE, 0);
	ioctl(b.fds[2], PERF_EVENT_IOC_ENABLE, 0);
	DS_CHECK(&failed, kid_phase(&k, &run_any, &b, true, 0) == 0, "workload phase ran");
	set_all(&b, 0, 3, PERF_EVENT_IOC_DISABLE);
	DS_CHECK(&failed, kid_stop(&k) == 0, "workload exited");
	drain_all(&b);
	check_exact(&failed, "sampling event", &b.col[0], k.pid, 20, true, NULL, 0);
	DS_CHECK(&failed, b.col[1].n == 0, "the disabled sibling's buffer stays empty (%ld)",
		 b.col[1].n);
	close_all(&b);
	return failed;
}

/*
 * Two per-CPU sessions in one process, told apart by their session keys; the
 * child hops between the CPUs, so records often come out on the other CPU
 * than the sample. Each session gets exactly its records in its buffers.
 */
static int case_percpu_keys(void)
{
	struct perf_event_attr attr;
	struct bufset b = { 0 };
	struct kid k;
	int failed = 0;

	if (kid_start(&k))
		return 1;
	for (int s = 0; s < 2; s++) {
		__u64 key = 100 + s;

		sampling(&attr, s ? 170000 : 230000);
		attr.read_format = PERF_FORMAT_LOST;
		for (int cpu = 0; cpu < NCPU; cpu++) {
			int e = add(&b, &attr, -1, cpu, 1024, k.pid);

			if (e < 0)
				return 1;
			if (ioctl(b.fds[e], PERF_EVENT_IOC_SET_DEFER_SESSION, &key)) {
				printf("# PERF_EVENT_IOC_SET_DEFER_SESSION: %s\n", strerror(errno));
				failed++;
			}
		}
	}
	set_all(&b, 0, b.n, PERF_EVENT_IOC_ENABLE);
	struct phase ph = { 1500, 16 << 20, 0 };

	DS_CHECK(&failed, kid_phase(&k, &ph, &b, true, 7) == 0, "workload phase ran");
	set_all(&b, 0, b.n, PERF_EVENT_IOC_DISABLE);
	DS_CHECK(&failed, kid_stop(&k) == 0, "workload exited");
	drain_all(&b);
	/*
	 * What each buffer lost, as the event counts it: a PERF_RECORD_LOST
	 * comes only with the next record written, and after the last
	 * records (the disabled events' deliveries at the child's exit)
	 * there is none.
	 */
	for (int i = 0; i < b.n; i++) {
		__u64 rd[2];

		if (read(b.fds[i], rd, sizeof(rd)) == sizeof(rd) && rd[1] > b.col[i].lost_events)
			b.col[i].lost_events = rd[1];
	}
	for (int s = 0; s < 2; s++) {
		struct ds_collect all = { 0 };
		long moved = 0;
		char what[64];

		for (int cpu = 0; cpu < NCPU; cpu++)
			merge(&all, &b.col[s * NCPU + cpu]);
		/* Records that came out on another CPU than their samples. */
		for (long i = 0; i < all.n; i++) {
			const struct ds_rec *r = &all.recs[i];

			if (r->deferred)
				continue;
			for (long j = 0; j < all.n; j++)
				if (all.recs[j].deferred && all.recs[j].cookie == r->cookie &&
				    all.recs[j].tid == r->tid && all.recs[j].cpu != r->cpu) {
					moved++;
					break;
				}
		}
		snprintf(what, sizeof(what), "per-CPU session key %d", 100 + s);
		/* a miss looks in buffers 0-1 (key 100, CPU 0-1) and 2-3 (key 101) */
		check_exact(&failed, what, &all, k.pid, 20, true, b.col, b.n);
		/*
		 * Printed, not checked: since the guests run one TCG thread,
		 * 3 debug runs of 7 had no record on another CPU than its
		 * samples (the others 56 to 1,081; cause not found).
		 * percpu_migrate checks that path.
		 */
		printf("# %s: samples stitched across CPUs (%ld)\n", what, moved);
		ds_collect_free(&all);
	}
	close_all(&b);
	return failed;
}

/*
 * A buffer too small for what comes: while it is not read, records that do
 * not fit are counted as lost in it (PERF_RECORD_LOST); once it is read
 * again, every later sample gets its record.
 */
static int case_full_buffer(void)
{
	struct perf_event_attr attr;
	struct bufset b = { 0 };
	struct phase ph = { 600, 8 << 20, -1 };
	struct kid k;
	int failed = 0;
	__u64 lost[2] = { 0 };

	if (kid_start(&k))
		return 1;
	sampling(&attr, 100000);
	attr.read_format = PERF_FORMAT_LOST;
	if (add(&b, &attr, k.pid, -1, 2, k.pid) < 0)
		return 1;
	ioctl(b.fds[0], PERF_EVENT_IOC_ENABLE, 0);
	/* Phase 1: nobody reads. */
	DS_CHECK(&failed, kid_phase(&k, &ph, &b, false, 0) == 0, "unread phase ran");
	kid_quiet(&k);
	if (read(b.fds[0], lost, sizeof(lost)) != sizeof(lost))
		failed++;
	drain_all(&b);
	DS_CHECK(&failed, lost[1] > 0, "the full buffer counted lost records (%llu)",
		 (unsigned long long)lost[1]);
	ds_collect_free(&b.col[0]);
	memset(&b.col[0], 0, sizeof(b.col[0]));
	b.col[0].only_tid = (uint32_t)k.pid;
	/*
	 * Phase 2: read as it goes, with a period the small buffer keeps up
	 * with as long as the reader gets the CPU every 20 ms or so.
	 */
	__u64 period = 4000000, lost2[2] = { 0 };

	ioctl(b.fds[0], PERF_EVENT_IOC_PERIOD, &period);
	ph.msec = 1500;
	DS_CHECK(&failed, kid_phase(&k, &ph, &b, true, 0) == 0, "read phase ran");
	ioctl(b.fds[0], PERF_EVENT_IOC_DISABLE, 0);
	DS_CHECK(&failed, kid_stop(&k) == 0, "workload exited");
	drain_all(&b);
	if (read(b.fds[0], lost2, sizeof(lost2)) != sizeof(lost2))
		failed++;
	/*
	 * The first write after the drain reports phase 1's loss
	 * (PERF_RECORD_LOST), and a record of phase 1's last kernel entry may
	 * follow it.
	 */
	struct ds_verdict v;
	struct ds_collect *c = &b.col[0];
	long full_again = (long)(lost2[1] - lost[1]);

	ds_verify(c, (uint32_t)k.pid, symtab, &v);
	DS_CHECK(&failed, c->lost >= 1, "PERF_RECORD_LOST reports it (%ld)", c->lost);
	DS_CHECK(&failed, v.marker_samples >= 20 && v.dup_records == 0,
		 "samples after the buffer is read again (%ld), no record twice (%ld)",
		 v.marker_samples, v.dup_records);
	if (!full_again) {
		DS_CHECK(&failed, v.unmatched == 0 && v.unmatched_at_end == 0,
			 "after the buffer is read again every sample has its record (%ld samples, %ld unmatched)",
			 v.marker_samples, v.unmatched + v.unmatched_at_end);
	} else {
		/*
		 * The reader did not get the CPU in time (seen on the debug
		 * kernel): the buffer filled again. Every sample after the last
		 * loss still has its record: losing once does not stick. A loss
		 * in the last write has no LOST record after it (docs/kernel.md):
		 * only the last kernel entry's samples may then lack theirs.
		 */
		struct ds_collect tail = *c;
		struct ds_verdict vt;

		printf("# the buffer filled again while read (%ld lost, %ld LOST records): checking the samples after the last\n",
		       full_again, c->lost);
		tail.recs += c->last_lost_at;
		tail.n -= c->last_lost_at;
		ds_verify(&tail, (uint32_t)k.pid, symtab, &vt);
		/* With no second LOST record, the loss was the last write. */
		DS_CHECK(&failed, vt.unmatched == 0 && (vt.unmatched_at_end == 0 || c->lost < 2),
			 "after the last loss every sample has its record (%ld samples, %ld unmatched)",
			 vt.marker_samples, vt.unmatched + vt.unmatched_at_end);
	}
	close_all(&b);
	return failed;
}

/*
 * Sixteen sessions sample one task at once. The first long system calls may
 * fall back to classic callchains while the task's room for asks grows; after
 * that warm-up every sample of every session has exactly its record.
 */
static int case_sixteen(void)
{
	struct perf_event_attr attr;
	struct bufset b = { 0 };
	struct phase warm = { 400, 64 << 20, -1 };
	struct kid k;
	int failed = 0;

	if (kid_start(&k))
		return 1;
	for (int i = 0; i < 16; i++) {
		sampling(&attr, 300000 + 10000 * i);
		if (add(&b, &attr, k.pid, -1, 256, k.pid) < 0)
			return 1;
	}
	set_all(&b, 0, b.n, PERF_EVENT_IOC_ENABLE);
	DS_CHECK(&failed, kid_phase(&k, &warm, &b, true, 0) == 0, "warm-up phase ran");
	kid_quiet(&k);
	drain_all(&b);
	for (int i = 0; i < b.n; i++) {
		ds_collect_free(&b.col[i]);
		memset(&b.col[i], 0, sizeof(b.col[i]));
		b.col[i].only_tid = (uint32_t)k.pid;
	}
	struct phase ph = { 1500, 16 << 20, -1 };

	DS_CHECK(&failed, kid_phase(&k, &ph, &b, true, 0) == 0, "measured phase ran");
	set_all(&b, 0, b.n, PERF_EVENT_IOC_DISABLE);
	DS_CHECK(&failed, kid_stop(&k) == 0, "workload exited");
	drain_all(&b);
	for (int i = 0; i < b.n; i++) {
		struct ds_verdict v;
		long records = deferred_records(&b.col[i]);

		ds_verify(&b.col[i], (uint32_t)k.pid, symtab, &v);
		printf("# session %2d: %ld deferred samples, %ld records, %ld classic\n", i,
		       v.marker_samples, records, v.classic_samples);
		/* A record of the warm-up's last kernel entry may open the buffer. */
		DS_CHECK(&failed, v.marker_samples >= 10 && v.unmatched == 0 &&
				  v.unmatched_at_end == 0 && v.dup_records == 0 &&
				  v.orphan_records <= 1 && v.classic_samples == 0 &&
				  b.col[i].lost == 0,
			 "session %d: every sample has exactly its record", i);
		if (v.unmatched || v.unmatched_at_end) {
			char what[32];

			snprintf(what, sizeof(what), "session %d", i);
			explain_unmatched(what, &b.col[i], (uint32_t)k.pid, b.col, b.n);
		}
	}
	close_all(&b);
	return failed;
}

/*
 * A key is set before the event first counts: a key changed while samples'
 * requests are pending would match no event at their delivery. After the
 * first enable, disabled again or not, the ioctl fails with EBUSY.
 */
static int case_key_once(void)
{
	struct perf_event_attr attr;
	__u64 key = 7;
	int fd, failed = 0, ret;

	sampling(&attr, 1000000);
	fd = ds_perf_open(&attr, 0, -1, -1, 0);
	if (fd < 0) {
		printf("# perf_event_open: %s\n", strerror(-fd));
		return 1;
	}
	ret = ioctl(fd, PERF_EVENT_IOC_SET_DEFER_SESSION, &key);
	DS_CHECK(&failed, ret == 0, "key set before the first enable (%s)",
		 ret ? strerror(errno) : "ok");
	ret = ioctl(fd, PERF_EVENT_IOC_SET_DEFER_SESSION, &key);
	DS_CHECK(&failed, ret == 0, "and set again, still disabled");
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	ret = ioctl(fd, PERF_EVENT_IOC_SET_DEFER_SESSION, &key);
	DS_CHECK(&failed, ret == -1 && errno == EBUSY, "enabled: EBUSY (%s)",
		 ret ? strerror(errno) : "accepted");
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	ret = ioctl(fd, PERF_EVENT_IOC_SET_DEFER_SESSION, &key);
	DS_CHECK(&failed, ret == -1 && errno == EBUSY, "disabled again: still EBUSY (%s)",
		 ret ? strerror(errno) : "accepted");
	close(fd);
	return failed;
}

static const struct {
	const char *name;
	int (*fn)(void);
} cases[] = {
	{ "leftover", case_leftover },
	{ "two_task", case_two_task },
	{ "siblings", case_siblings },
	{ "percpu_keys", case_percpu_keys },
	{ "full_buffer", case_full_buffer },
	{ "sixteen", case_sixteen },
	{ "key_once", case_key_once },
};

int main(int argc, char **argv)
{
	int failed = 0, ran = 0;

	symtab = ds_symtab_load("/proc/self/exe");
	if (!symtab)
		return 1;
	if (sysconf(_SC_NPROCESSORS_ONLN) < NCPU) {
		printf("# needs %d CPUs online\n", NCPU);
		return 1;
	}
	if (ds_kernel_is_mainline()) {
		/* Mainline has no sessions: it broadcasts to defer_output events. */
		printf("# mainline kernel: sessions are ours; nothing to check\n");
		return 0;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (argc > 1 && strcmp(argv[1], cases[i].name))
			continue;
		int f = cases[i].fn();

		printf("%s - %s\n", f ? "not ok" : "ok", cases[i].name);
		fflush(stdout);
		failed += f != 0;
		ran++;
	}
	printf("# %d cases, %d failed\n", ran, failed);
	ds_symtab_free(symtab);
	return ran && !failed ? 0 : 1;
}
