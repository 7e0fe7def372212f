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

struct pmap {
	uint64_t start, len, pgoff;
	const char *path;	/* interned in r->maps_paths */
};

struct pmaps {
	uint32_t pid;
	size_t n, cap;
	struct pmap *v;
};

static bool same_pid(const void *val, const void *arg)
{
	return ((const struct pmaps *)val)->pid == *(const uint32_t *)arg;
}

static struct pmaps *pmaps_get(struct rec *r, uint32_t pid)
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

static const char *intern(struct rec *r, const char *s)
{
	uint64_t key = cli_hash_str(s);
	char *p = tab_get(&r->maps_paths, key, tab_same_str, s);

	if (p)
		return p;
	p = strdup(s);
	if (!p || tab_put(&r->maps_paths, key, p)) {
		free(p);
		return NULL;
	}
	return p;
}

static int add_map(struct rec *r, const struct ds_event *ev)
{
	struct pmaps *p = pmaps_get(r, ev->pid);
	const char *path = intern(r, ev->filename);

	if (!path || (!p && !(p = pmaps_new(r, ev->pid))))
		return -ENOMEM;
	/* the same start mapped again replaces what was there */
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].start == ev->start) {
			p->v[i] = (struct pmap){ ev->start, ev->len, ev->pgoff, path };
			return 0;
		}
	if (p->n >= PMAPS_MAX)
		return 0;
	if (cli_grow(&p->v, &p->cap, p->n + 1, sizeof(*p->v)))
		return -ENOMEM;
	p->v[p->n++] = (struct pmap){ ev->start, ev->len, ev->pgoff, path };
	return 0;
}

/* A child process starts with its parent's mappings. */
static int fork_maps(struct rec *r, uint32_t pid, uint32_t ppid)
{
	struct pmaps *parent = pmaps_get(r, ppid), *p;

	pmaps_drop(r, pid);	/* a pid used again */
	if (!parent || !parent->n)
		return 0;
	p = pmaps_new(r, pid);
	if (!p)
		return -ENOMEM;
	p->v = malloc(parent->n * sizeof(*p->v));
	if (!p->v)
		return -ENOMEM;
	memcpy(p->v, parent->v, parent->n * sizeof(*p->v));
	p->n = p->cap = parent->n;
	return 0;
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
		    !ev.filename)
			return 0;
		return add_map(r, &ev);
	case PERF_RECORD_COMM:
		/* exec: a new address space, its mappings reported after this */
		if (h->misc & PERF_RECORD_MISC_COMM_EXEC)
			pmaps_drop(r, ev.pid);
		return 0;
	case PERF_RECORD_FORK:
		return ev.pid != ev.ppid ? fork_maps(r, ev.pid, ev.ppid) : 0;
	case PERF_RECORD_EXIT:
		if (ev.pid == ev.tid)
			pmaps_drop(r, ev.pid);
		return 0;
	}
	return 0;
}

int maps_synth(struct rec *r, pid_t pid, bool *found)
{
	struct pmaps *p = pmaps_get(r, (uint32_t)pid);
	struct pmap *v;
	size_t n;
	int err = 0;

	*found = p && p->n;
	if (!*found)
		return 0;
	/* writing them notes them again: from a copy */
	n = p->n;
	v = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, p->v, n * sizeof(*v));
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
	for (size_t i = 0; i < r->maps_paths.cap; i++)
		free(r->maps_paths.s[i].val);
	tab_free(&r->maps_paths);
}
