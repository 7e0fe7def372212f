// SPDX-License-Identifier: MIT
/*
 * Time-ordered merge of per-CPU record streams.
 *
 * Each CPU's buffer is normally in time order, so a record that is not
 * older than the tail of its CPU's queue is appended to it (O(1)).  One
 * binary min-heap orders the sources by the key (time, cpu, arrival): one
 * entry per non-empty CPU queue (its head) and one per record that went
 * back in time within its buffer (a "late" record, which cannot join its
 * queue without breaking its order).  Popping takes the heap's top:
 * O(log(CPUs + late records)) per record, whatever the number of CPUs or
 * the input order; the old pop scanned every CPU queue.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "deferstack/deferstack.h"
#include "internal.h"

#define MAX_QUEUES 4096
#define LATE SIZE_MAX

/* 16 bytes before the record (allocation size classes matter at these
 * rates) */
struct ds_merge_node {
	uint64_t time;
	uint64_t seq;		/* arrival order, for equal (time, cpu) */
	uint64_t data[];	/* the record, 8-byte aligned */
};

/* One CPU's records in time order: a ring of node pointers. */
struct ds_merge_q {
	struct ds_merge_node **v;
	size_t head, len, cap;	/* cap: 0 or a power of two */
};

/* A heap entry: the head of CPU queue q, or a late node (q = LATE). */
struct ds_merge_ent {
	uint64_t time, seq;
	uint32_t cpu;
	size_t q;
	struct ds_merge_node *n;
};

struct ds_merge {
	struct ds_merge_q *q;		/* per CPU, in time order */
	size_t nr_q;
	struct ds_merge_ent *heap;	/* queue heads and late records */
	size_t nr_heap, cap_heap;
	uint64_t seq;		/* arrival counter (stable order) */
	size_t pending, max_pending;
	uint64_t max_time_cur, max_time_prev, watermark;
	bool flushing;
	struct ds_merge_node *out;	/* last released node, freed on next pop */
	struct ds_recycle rc;		/* nodes for reuse */
	uint64_t nr_out_of_order;	/* records older than an already released one */
	uint64_t last_released;
	size_t extra;		/* bytes kept after each record (ds_merge_set_extra) */
};

int ds_merge_new(struct ds_merge **out, const struct ds_merge_opts *opts)
{
	struct ds_merge_opts o;
	struct ds_merge *m;
	int err = ds_opts_copy(&o, sizeof(o), opts, opts ? opts->sz : 0);

	*out = NULL;
	if (err)
		return err;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->max_pending = o.max_pending ? o.max_pending : 1u << 20;
	*out = m;
	return 0;
}

uint64_t ds_merge_out_of_order(const struct ds_merge *m)
{
	return m->nr_out_of_order;
}

size_t ds_merge_pending(const struct ds_merge *m)
{
	return m->pending;
}

uint64_t ds_merge_pop_time(const struct ds_merge *m)
{
	return m->out ? m->out->time : 0;
}

void ds_merge_free(struct ds_merge *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nr_q; i++) {
		struct ds_merge_q *q = &m->q[i];

		for (size_t k = 0; k < q->len; k++)
			free(q->v[(q->head + k) & (q->cap - 1)]);
		free(q->v);
	}
	for (size_t i = 0; i < m->nr_heap; i++) {
		if (m->heap[i].q == LATE)
			free(m->heap[i].n);
	}
	free(m->q);
	free(m->heap);
	free(m->out);
	ds_rc_destroy(&m->rc);
	free(m);
}

static int ensure_queue(struct ds_merge *m, size_t q)
{
	struct ds_merge_q *nq;

	if (q < m->nr_q)
		return 0;
	nq = realloc(m->q, (q + 1) * sizeof(*m->q));
	if (!nq)
		return -ENOMEM;
	memset(nq + m->nr_q, 0, (q + 1 - m->nr_q) * sizeof(*nq));
	m->q = nq;
	m->nr_q = q + 1;
	return 0;
}

static int q_append(struct ds_merge_q *q, struct ds_merge_node *n)
{
	if (q->len == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 64;
		struct ds_merge_node **v;

		if (cap > SIZE_MAX / 2 / sizeof(*v))
			return -ENOMEM;
		v = malloc(cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (size_t k = 0; k < q->len; k++)
			v[k] = q->v[(q->head + k) & (q->cap - 1)];
		free(q->v);
		q->v = v;
		q->head = 0;
		q->cap = cap;
	}
	q->v[(q->head + q->len) & (q->cap - 1)] = n;
	q->len++;
	return 0;
}

static bool before(const struct ds_merge_ent *a, const struct ds_merge_ent *b)
{
	if (a->time != b->time)
		return a->time < b->time;
	if (a->cpu != b->cpu)
		return a->cpu < b->cpu;
	return a->seq < b->seq;
}

static void sift_up(struct ds_merge_ent *h, size_t i)
{
	struct ds_merge_ent n = h[i];

	while (i) {
		size_t p = (i - 1) / 2;

		if (!before(&n, &h[p]))
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = n;
}

static void sift_down(struct ds_merge_ent *h, size_t len, size_t i)
{
	struct ds_merge_ent n = h[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= len)
			break;
		if (c + 1 < len && before(&h[c + 1], &h[c]))
			c++;
		if (!before(&h[c], &n))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = n;
}

static int heap_add(struct ds_merge *m, struct ds_merge_node *n, uint32_t cpu, size_t q)
{
	int err = ds_grow(&m->heap, &m->cap_heap, m->nr_heap + 1, sizeof(*m->heap));

	if (err)
		return err;
	m->heap[m->nr_heap] = (struct ds_merge_ent){ n->time, n->seq, cpu, q, n };
	sift_up(m->heap, m->nr_heap);
	m->nr_heap++;
	return 0;
}

static size_t node_size(const struct ds_merge *m, uint16_t rec_size)
{
	return sizeof(struct ds_merge_node) + ((rec_size + 7u) & ~7u) + m->extra;
}

int ds_merge_set_extra(struct ds_merge *m, size_t extra)
{
	if (m->pending || m->out || extra > 4096)
		return -EINVAL;
	m->extra = (extra + 7) & ~(size_t)7;
	return 0;
}

void *ds_merge_extra(const struct ds_merge *m)
{
	const struct perf_event_header *h;

	if (!m->out || !m->extra)
		return NULL;
	h = (const void *)m->out->data;
	return (char *)m->out->data + ((h->size + 7u) & ~7u);
}

int ds_merge_push(struct ds_merge *m, const struct perf_event_header *rec, uint64_t time,
		  uint32_t cpu)
{
	return ds_merge_push_extra(m, rec, time, cpu, NULL);
}

int ds_merge_push_extra(struct ds_merge *m, const struct perf_event_header *rec, uint64_t time,
			uint32_t cpu, const void *extra)
{
	size_t qi = cpu < MAX_QUEUES ? cpu : MAX_QUEUES - 1;
	struct ds_merge_node *n;
	struct ds_merge_q *q;
	int err;

	if (rec->size < sizeof(*rec))
		return -EINVAL;
	err = ensure_queue(m, qi);
	if (err)
		return err;
	q = &m->q[qi];
	n = ds_rc_alloc(&m->rc, node_size(m, rec->size));
	if (!n)
		return -ENOMEM;
	n->time = time;
	n->seq = m->seq++;
	memcpy(n->data, rec, rec->size);
	if (m->extra) {
		char *x = (char *)n->data + ((rec->size + 7u) & ~7u);

		if (extra)
			memcpy(x, extra, m->extra);
		else
			memset(x, 0, m->extra);
	}
	if (!q->len) {
		/* the queue's new head enters the heap */
		err = q_append(q, n);
		if (!err) {
			err = heap_add(m, n, (uint32_t)qi, qi);
			if (err)
				q->len--;
		}
	} else if (time >= q->v[(q->head + q->len - 1) & (q->cap - 1)]->time) {
		err = q_append(q, n);
	} else {
		/* back in time within its buffer: a heap entry of its own */
		err = heap_add(m, n, (uint32_t)qi, LATE);
	}
	if (err) {
		ds_rc_free(&m->rc, n, node_size(m, rec->size));
		return err;
	}
	m->pending++;
	if (time > m->max_time_cur)
		m->max_time_cur = time;
	return 0;
}

void ds_merge_round(struct ds_merge *m)
{
	m->watermark = m->max_time_prev;
	m->max_time_prev = m->max_time_cur;
}

void ds_merge_flush(struct ds_merge *m)
{
	m->flushing = true;
}

int ds_merge_pop(struct ds_merge *m, const struct perf_event_header **rec)
{
	struct ds_merge_ent *top;
	struct ds_merge_node *n;

	if (m->out) {
		const struct perf_event_header *h = (const void *)m->out->data;

		ds_rc_free(&m->rc, m->out, node_size(m, h->size));
		m->out = NULL;
	}
	if (!m->pending || !m->nr_heap)
		return 0;
	top = &m->heap[0];
	n = top->n;
	if (!m->flushing && m->pending <= m->max_pending && n->time > m->watermark)
		return 0;
	if (top->q != LATE) {
		struct ds_merge_q *q = &m->q[top->q];

		q->head = (q->head + 1) & (q->cap - 1);
		q->len--;
		if (q->len) {
			/* the queue's next record takes its place */
			struct ds_merge_node *nx = q->v[q->head];

			top->time = nx->time;
			top->seq = nx->seq;
			top->n = nx;
			sift_down(m->heap, m->nr_heap, 0);
			goto out;
		}
	}
	m->heap[0] = m->heap[--m->nr_heap];
	if (m->nr_heap)
		sift_down(m->heap, m->nr_heap, 0);
out:
	m->pending--;
	if (n->time < m->last_released)
		m->nr_out_of_order++;
	else
		m->last_released = n->time;
	m->out = n;
	*rec = (const void *)n->data;
	return 1;
}
