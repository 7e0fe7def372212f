// SPDX-License-Identifier: MIT
/* deferstack record --switch-output: the executable mappings of each
 * process as the recording has seen them (the kernel's MMAP records, the
 * maps synthesized at a window's start, copied at fork, dropped at exec and
 * exit).  Each window synthesizes the processes alive at its start again
 * from /proc/PID/maps; a process whose maps the recorder may not read (a
 * user's other than its own without CAP_SYS_PTRACE, as the service runs
 * with CAP_PERFMON only) gets these instead, so that a process started
 * after the recorder is named in every window, not only in the first. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

/* A process's mappings beyond this are not kept (the first ones are: the
 * executable and its libraries). */
#define PMAPS_MAX 4096

/*
 * The rings of the CPUs are read one after the other, so what a process did
 * on two CPUs comes here out of order: its new image's MMAP read before the
 * exec's COMM, a child's MMAP before its FORK, a dead process's last MMAP
 * after its EXIT.  Each mapping keeps the time of its record and each
 * process the time its address space began (fork or exec), and every
 * change is made by those times, not by the order of reading.  Records
 * synthesized from /proc have time 0: they fill in what no record of the
 * kernel said, and lose to anything it said.
 */
struct pmaps {
	uint32_t pid;
	uint64_t since;		/* time of the fork or exec that began it */
	size_t n, cap;
	struct pmap *v;
};

static bool same_pid(const void *val, const void *arg)
{
	return ((const struct pmaps *)val)->pid == *(const uint32_t *)arg;
}

static struct pmaps *pmaps_get(const struct rec *r, uint32_t pid)
{
	return tab_get(&r->maps, pid, same_pid, &pid);
}

static void pmaps_drop(struct rec *r, uint32_t pid)
{
	struct pmaps *p = tab_del(&r->maps, pid, same_pid, &pid);

	if (p) {
		free(p->v);
		free(p);
	}
}

static struct pmaps *pmaps_new(struct rec *r, uint32_t pid)
{
	struct pmaps *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->pid = pid;
	if (tab_put(&r->maps, pid, p)) {
		free(p);
		return NULL;
	}
	return p;
}

static struct pmaps *pmaps_get_new(struct rec *r, uint32_t pid)
{
	struct pmaps *p = pmaps_get(r, pid);

	return p ? p : pmaps_new(r, pid);
}

/* Forget the mappings noted before time t (an address space that ended). */
static void forget_before(struct pmaps *p, uint64_t t)
{
	for (size_t i = 0; i < p->n;)
		if (p->v[i].time < t)
			p->v[i] = p->v[--p->n];
		else
			i++;
}

static int append(struct pmaps *p, const struct pmap *m)
{
	if (p->n >= PMAPS_MAX)
		return 0;
	if (ds_grow(&p->v, &p->cap, p->n + 1, sizeof(*p->v)))
		return -ENOMEM;
	p->v[p->n++] = *m;
	return 0;
}

/*
 * Map m into p as mmap() does: what it covers of earlier mappings is
 * replaced (cut out of them, one split in two if m lies inside it).  A
 * later mapping over any of its range was made after it: m is dropped.
 */
static int put_map(struct pmaps *p, const struct pmap *m)
{
	uint64_t s = m->start, e = m->start + m->len;

	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].start < e && p->v[i].start + p->v[i].len > s && p->v[i].time > m->time)
			return 0;
	for (size_t i = 0; i < p->n;) {
		struct pmap *o = &p->v[i];
		uint64_t oe = o->start + o->len;

		if (oe <= s || o->start >= e) {
			i++;
		} else if (o->start < s && oe > e) {
			struct pmap right = *o;

			right.start = e;
			right.len = oe - e;
			right.pgoff += e - o->start;
			o->len = s - o->start;
			if (append(p, &right))
				return -ENOMEM;
			i++;
		} else if (o->start < s) {
			o->len = s - o->start;
			i++;
		} else if (oe > e) {
			o->pgoff += e - o->start;
			o->len = oe - e;
			o->start = e;
			i++;
		} else {
			p->v[i] = p->v[--p->n];	/* all of it */
		}
	}
	return append(p, m);
}

static int add_map(struct rec *r, const struct ds_event *ev)
{
	struct pmaps *p = pmaps_get_new(r, ev->pid);
	const char *path = tab_intern(&r->maps_paths, ev->filename);

	if (!path || !p)
		return -ENOMEM;
	/* Of the address space before the exec or fork; not one from /proc,
	 * which is the present's (where a record says otherwise, it wins). */
	if (ev->time && ev->time < p->since)
		return 0;
	return put_map(p, &(struct pmap){ ev->start, ev->len, ev->pgoff, ev->time, path });
}

/* exec at time t: a new address space, its mappings reported after this */
static int exec_maps(struct rec *r, uint32_t pid, uint64_t t)
{
	struct pmaps *p = pmaps_get_new(r, pid);

	if (!p)
		return -ENOMEM;
	if (t >= p->since) {
		forget_before(p, t);
		p->since = t;
	}
	return 0;
}

/* A child process starts at time t with its parent's mappings of then. */
static int fork_maps(struct rec *r, uint32_t pid, uint32_t ppid, uint64_t t)
{
	struct pmaps *parent = pmaps_get(r, ppid), *p = pmaps_get(r, pid);

	if (p && t < p->since)
		return 0;	/* a fork before the one that made this pid's process */
	if (!p && !(parent && parent->n))
		return 0;
	if (!p && !(p = pmaps_new(r, pid)))
		return -ENOMEM;
	forget_before(p, t);	/* a process that had the pid before */
	p->since = t;
	/* the child's own mappings, if read already, are later: they win */
	for (size_t i = 0; parent && i < parent->n; i++)
		if (parent->v[i].time < t && put_map(p, &parent->v[i]))
			return -ENOMEM;
	return 0;
}

/* The process ended at time t: what it mapped goes; a later process that
 * has its pid already (its FORK read first) keeps its own. */
static void exit_maps(struct rec *r, uint32_t pid, uint64_t t)
{
	struct pmaps *p = pmaps_get(r, pid);

	if (!p || t < p->since)
		return;
	forget_before(p, t + 1);
	if (!p->n)
		pmaps_drop(r, pid);
}

int maps_note(struct rec *r, const struct perf_event_header *h)
{
	struct ds_event ev = { .sz = sizeof(ev) };

	if (!r->o.switch_mode)
		return 0;	/* one recording: no later window to give them to */
	if (ds_event_parse(h, h->size, SAMPLE_TYPE, true, &ev))
		return 0;
	switch (h->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		if ((h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL ||
		    !ev.filename || !ev.len)
			return 0;
		return add_map(r, &ev);
	case PERF_RECORD_COMM:
		return h->misc & PERF_RECORD_MISC_COMM_EXEC ? exec_maps(r, ev.pid, ev.time) : 0;
	case PERF_RECORD_FORK:
		return ev.pid != ev.ppid ? fork_maps(r, ev.pid, ev.ppid, ev.time) : 0;
	case PERF_RECORD_EXIT:
		if (ev.pid == ev.tid)
			exit_maps(r, ev.pid, ev.time);
		return 0;
	}
	return 0;
}

const struct pmap *maps_of(const struct rec *r, uint32_t pid, size_t *n)
{
	const struct pmaps *p = pmaps_get(r, pid);

	*n = p ? p->n : 0;
	return p ? p->v : NULL;
}

int maps_synth(struct rec *r, pid_t pid, bool *found)
{
	const struct pmap *cur;
	struct pmap *v;
	size_t n;
	int err = 0;

	cur = maps_of(r, (uint32_t)pid, &n);
	*found = n > 0;
	if (!*found)
		return 0;
	/* writing them notes them again: from a copy */
	v = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, cur, n * sizeof(*v));
	for (size_t i = 0; i < n && !err; i++)
		err = synth_mmap(r, pid, v[i].start, v[i].start + v[i].len, v[i].pgoff,
				 v[i].path, false);
	free(v);
	return err;
}

void maps_free(struct rec *r)
{
	for (size_t i = 0; i < r->maps.cap; i++) {
		struct pmaps *p = r->maps.s[i].val;

		if (p) {
			free(p->v);
			free(p);
		}
	}
	tab_free(&r->maps);
	tab_free_strs(&r->maps_paths);
}
