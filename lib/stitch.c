// SPDX-License-Identifier: MIT
/*
 * Stitcher: joins samples ending in PERF_CONTEXT_USER_DEFERRED, cookie with
 * the PERF_RECORD_CALLCHAIN_DEFERRED of the same (tid, cookie).
 *
 * Per task we keep at most one deferred record (the latest, until the
 * task's cookie changes) and a FIFO of samples waiting for the record of
 * one cookie.  Pending samples are flushed kernel-only when the task's
 * cookie changes, when it exits, at the end of data, or when the FIFO is
 * full.  Memory is O(pending samples + live tasks).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "deferstack/deferstack.h"
#include "hash.h"
#include "internal.h"

struct pend {
	struct pend *next;
	uint64_t time;
	struct ds_event ev;	/* as parsed; its pointers moved to data */
	uint64_t data[];
};

struct ds_task {
	uint32_t tid;
	bool has_rec;
	uint64_t rec_cookie;
	uint64_t *rec_ips;
	size_t rec_nr, rec_cap;
	uint64_t pend_cookie;
	struct pend *ph, *pt;
	size_t npend;
};

struct ds_stitcher {
	struct ds_htab tasks;	/* tid -> struct ds_task */
	size_t max_pending_per_task;
	size_t pending_total;
	ds_stitch_cb cb;
	void *cb_arg;
	uint64_t *chain_buf;
	size_t chain_cap;
	struct ds_stitch_stats st;
	struct ds_recycle rc;	/* pending samples' blocks for reuse */
};

int ds_stitch_new(struct ds_stitcher **out, const struct ds_stitch_opts *opts)
{
	struct ds_stitch_opts o;
	struct ds_stitcher *s;
	int err = ds_opts_copy(&o, sizeof(o), opts, opts ? opts->sz : 0);

	*out = NULL;
	if (err)
		return err;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->max_pending_per_task = o.max_pending_per_task ? o.max_pending_per_task : 65536;
	s->cb = o.cb;
	s->cb_arg = o.cb_arg;
	s->st.sz = sizeof(s->st);
	*out = s;
	return 0;
}

const struct ds_stitch_stats *ds_stitch_get_stats(const struct ds_stitcher *s)
{
	return &s->st;
}

static void task_free(struct ds_task *t)
{
	struct pend *p = t->ph;

	while (p) {
		struct pend *n = p->next;

		free(p);
		p = n;
	}
	free(t->rec_ips);
	free(t);
}

void ds_stitch_free(struct ds_stitcher *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->tasks.used; i++)
		task_free(s->tasks.e[i].val);
	ds_htab_free(&s->tasks);
	free(s->chain_buf);
	ds_rc_destroy(&s->rc);
	free(s);
}

size_t ds_stitch_nr_tasks(const struct ds_stitcher *s)
{
	return s->tasks.used;
}

static struct ds_task *task_find(struct ds_stitcher *s, uint32_t tid)
{
	return ds_htab_get(&s->tasks, tid, NULL, NULL);
}

static struct ds_task *task_get(struct ds_stitcher *s, uint32_t tid, int *err)
{
	struct ds_task *t = task_find(s, tid);

	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t) {
		*err = -ENOMEM;
		return NULL;
	}
	t->tid = tid;
	*err = ds_htab_put(&s->tasks, tid, t);
	if (*err) {
		free(t);
		return NULL;
	}
	return t;
}

static int emit(struct ds_stitcher *s, struct ds_stitch_out *o)
{
	return s->cb ? s->cb(s->cb_arg, o) : 0;
}

static int chain_reserve(struct ds_stitcher *s, size_t n)
{
	return ds_grow(&s->chain_buf, &s->chain_cap, n, sizeof(uint64_t));
}

/* Emit a deferred sample, stitched with ips (if non-NULL) or kernel-only. */
static int emit_deferred(struct ds_stitcher *s, const struct ds_event *ev,
			 const uint64_t *ips, size_t nr_ips, bool record_first,
			 enum ds_unmatched_reason why)
{
	struct ds_stitch_out o;
	size_t kn = ev->nr - 2;	/* drop USER_DEFERRED, cookie */
	int err = chain_reserve(s, kn + 1 + nr_ips);

	if (err)
		return err;
	memcpy(s->chain_buf, ev->chain, kn * 8);
	memset(&o, 0, sizeof(o));
	o.sz = sizeof(o);
	o.ev = ev;
	o.cookie = ev->cookie;
	o.chain = s->chain_buf;
	if (ips) {
		s->chain_buf[kn] = PERF_CONTEXT_USER;
		memcpy(s->chain_buf + kn + 1, ips, nr_ips * 8);
		o.nr = kn + 1 + nr_ips;
		o.kind = DS_OUT_STITCHED;
		o.record_first = record_first;
		s->st.stitched++;
		s->st.record_first += record_first;
	} else {
		o.nr = kn;
		o.kind = DS_OUT_KERNEL_ONLY;
		o.reason = why;
		s->st.kernel_only++;
		switch (why) {
		case DS_UNM_COOKIE_CHANGED: s->st.unm_cookie++; break;
		case DS_UNM_EXIT: s->st.unm_exit++; break;
		case DS_UNM_OVERFLOW: s->st.unm_overflow++; break;
		default: s->st.unm_end++; break;
		}
	}
	return emit(s, &o);
}

/* Pop the oldest pending sample of t and emit it. */
static size_t pend_size(uint16_t rec_size)
{
	return sizeof(struct pend) + ((rec_size + 7u) & ~7u);
}

static int pop_pending(struct ds_stitcher *s, struct ds_task *t, const uint64_t *ips,
		       size_t nr_ips, enum ds_unmatched_reason why)
{
	struct pend *p = t->ph;
	struct perf_event_header h;
	struct ds_event ev;
	int err;

	t->ph = p->next;
	if (!t->ph)
		t->pt = NULL;
	t->npend--;
	s->pending_total--;
	memcpy(&h, p->data, sizeof(h));
	ev = p->ev;
	ev.hdr = (const void *)p->data;
	ev.chain = (const uint64_t *)(const void *)((const uint8_t *)p->data + ev.chain_off + 8);
	err = emit_deferred(s, &ev, ips, nr_ips, false, why);
	ds_rc_free(&s->rc, p, pend_size(h.size));
	return err;
}

static int flush_pending(struct ds_stitcher *s, struct ds_task *t, const uint64_t *ips,
			 size_t nr_ips, enum ds_unmatched_reason why)
{
	int err = 0;

	while (t->ph && !err)
		err = pop_pending(s, t, ips, nr_ips, why);
	return err;
}

static int on_deferred_sample(struct ds_stitcher *s, const struct ds_event *ev)
{
	struct ds_task *t;
	struct pend *p;
	int err = 0;

	t = task_get(s, ev->tid, &err);
	if (!t)
		return err;
	if (t->has_rec && t->rec_cookie == ev->cookie)
		return emit_deferred(s, ev, t->rec_ips, t->rec_nr, true, DS_UNM_NONE);
	/* the task is in another kernel entry now: the old record is useless */
	t->has_rec = false;
	if (t->npend && t->pend_cookie != ev->cookie) {
		err = flush_pending(s, t, NULL, 0, DS_UNM_COOKIE_CHANGED);
		if (err)
			return err;
	}
	if (t->npend >= s->max_pending_per_task) {
		err = pop_pending(s, t, NULL, 0, DS_UNM_OVERFLOW);
		if (err)
			return err;
	}
	p = ds_rc_alloc(&s->rc, pend_size(ev->size));
	if (!p)
		return -ENOMEM;
	p->next = NULL;
	p->time = ev->time;
	p->ev = *ev;	/* a sample: only hdr and chain point into the record */
	memcpy(p->data, ev->hdr, ev->size);
	if (t->pt)
		t->pt->next = p;
	else
		t->ph = p;
	t->pt = p;
	t->npend++;
	t->pend_cookie = ev->cookie;
	if (++s->pending_total > s->st.pending_peak)
		s->st.pending_peak = s->pending_total;
	return 0;
}

static int on_deferred_record(struct ds_stitcher *s, const struct ds_event *ev)
{
	struct ds_task *t;
	int err = 0;

	t = task_get(s, ev->tid, &err);
	if (!t)
		return err;
	if (t->npend && t->pend_cookie == ev->cookie)
		err = flush_pending(s, t, ev->chain, ev->nr, DS_UNM_NONE);
	else if (t->npend)
		err = flush_pending(s, t, NULL, 0, DS_UNM_COOKIE_CHANGED);
	if (err)
		return err;
	err = ds_grow(&t->rec_ips, &t->rec_cap, ev->nr ? ev->nr : 1, sizeof(uint64_t));
	if (err)
		return err;
	memcpy(t->rec_ips, ev->chain, ev->nr * 8);
	t->rec_nr = ev->nr;
	t->rec_cookie = ev->cookie;
	t->has_rec = true;
	return 0;
}

/* Does the chain hold a user ip?  Entries before any context marker count
 * by address. */
static bool has_user_ips(const uint64_t *c, uint64_t nr)
{
	int ctx = 0;	/* 0 none yet, 1 kernel, 2 user, 3 other */

	for (uint64_t i = 0; i < nr; i++) {
		if (c[i] >= PERF_CONTEXT_MAX) {
			ctx = c[i] == PERF_CONTEXT_USER ? 2 : c[i] == PERF_CONTEXT_KERNEL ? 1 : 3;
			continue;
		}
		if (ctx == 2 || (ctx == 0 && c[i] < 0xffff800000000000ULL))
			return true;
	}
	return false;
}

/*
 * A complete chain without user part (perf record --call-graph dwarf leaves
 * the user stack to the tool: kernel entries or nothing) still has a first
 * user frame, as perf shows it: the user ip of PERF_SAMPLE_REGS_USER, else
 * the sample's own ip when it was taken in user mode.
 */
static int add_user_ip(struct ds_stitcher *s, const struct ds_event *ev,
		       struct ds_stitch_out *o)
{
	uint64_t ip;
	int err;

	if (ev->have & DS_EV_USER_IP)
		ip = ev->user_ip;
	else if ((ev->have & DS_EV_IP) &&
		 (ev->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER)
		ip = ev->ip;
	else
		return 0;
	if (has_user_ips(ev->chain, ev->nr))
		return 0;
	err = chain_reserve(s, ev->nr + 2);
	if (err)
		return err;
	memcpy(s->chain_buf, ev->chain, ev->nr * 8);
	s->chain_buf[ev->nr] = PERF_CONTEXT_USER;
	s->chain_buf[ev->nr + 1] = ip;
	o->chain = s->chain_buf;
	o->nr = ev->nr + 2;
	return 0;
}

/* An older caller's smaller event: its fields, the rest 0.  Out of the
 * hot path. */
static __attribute__((noinline)) int stitch_small(struct ds_stitcher *s,
						  const struct ds_event *ev)
{
	struct ds_event tmp;

	if (ev->sz < DS_SZ_MIN(struct ds_event, hdr))
		return -EINVAL;
	memset(&tmp, 0, sizeof(tmp));
	memcpy(&tmp, ev, ev->sz);
	tmp.sz = sizeof(tmp);
	return ds_stitch_event(s, &tmp);
}

int ds_stitch_event(struct ds_stitcher *s, const struct ds_event *ev)
{
	struct ds_stitch_out o;
	int err = 0;

	if (__builtin_expect(ev->sz < sizeof(*ev), 0))
		return stitch_small(s, ev);
	memset(&o, 0, sizeof(o));
	o.sz = sizeof(o);
	o.ev = ev;
	o.kind = DS_OUT_RECORD;
	s->st.records++;
	switch (ev->type) {
	case PERF_RECORD_SAMPLE:
		s->st.samples++;
		if (!(ev->have & DS_EV_CALLCHAIN)) {
			s->st.nochain++;
			o.kind = DS_OUT_NOCHAIN;
			return emit(s, &o);
		}
		if (!ev->has_cookie) {
			s->st.complete++;
			o.kind = DS_OUT_COMPLETE;
			o.chain = ev->chain;
			o.nr = ev->nr;
			err = add_user_ip(s, ev, &o);
			return err ? err : emit(s, &o);
		}
		return on_deferred_sample(s, ev);
	case DS_RECORD_CALLCHAIN_DEFERRED:
		s->st.deferred++;
		err = emit(s, &o);
		return err ? err : on_deferred_record(s, ev);
	case PERF_RECORD_EXIT: {
		struct ds_task *t = task_find(s, ev->tid);

		if (t) {
			err = flush_pending(s, t, NULL, 0, DS_UNM_EXIT);
			ds_htab_del(&s->tasks, ev->tid, NULL, NULL);
			task_free(t);
		}
		return err ? err : emit(s, &o);
	}
	case PERF_RECORD_LOST:
		s->st.lost_records++;
		s->st.lost_events += ev->lost;
		return emit(s, &o);
	case PERF_RECORD_LOST_SAMPLES:
		s->st.lost_samples += ev->lost;
		return emit(s, &o);
	case PERF_RECORD_MMAP: case PERF_RECORD_MMAP2: case PERF_RECORD_COMM:
	case PERF_RECORD_FORK: case PERF_RECORD_THROTTLE: case PERF_RECORD_UNTHROTTLE:
	case DS_RECORD_FINISHED_ROUND:
		return emit(s, &o);
	default:
		s->st.unknown++;
		return emit(s, &o);
	}
}

static int cmp_task_time(const void *a, const void *b)
{
	const struct ds_task *x = *(struct ds_task *const *)a;
	const struct ds_task *y = *(struct ds_task *const *)b;

	if (x->ph->time != y->ph->time)
		return x->ph->time < y->ph->time ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

int ds_stitch_finish(struct ds_stitcher *s)
{
	struct ds_task **v;
	size_t n = 0;
	int err = 0;

	v = malloc((s->tasks.used + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < s->tasks.used; i++) {
		struct ds_task *t = s->tasks.e[i].val;

		if (t->npend)
			v[n++] = t;
	}
	qsort(v, n, sizeof(*v), cmp_task_time);
	for (size_t i = 0; i < n && !err; i++)
		err = flush_pending(s, v[i], NULL, 0, DS_UNM_END);
	free(v);
	return err;
}
