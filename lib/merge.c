// SPDX-License-Identifier: MIT
/*
 * Time-ordered merge of per-CPU record streams.
 *
 * Each CPU's buffer is normally in time order, so a record that is not
 * older than the tail of its CPU's queue is appended to it (O(1)).  A
 * record that goes back in time goes into one binary min-heap of late
 * records instead (O(log late)): the old sorted insertion into the CPU
 * queue was quadratic for inputs that keep going back in time.  Every
 * source is sorted by the key (time, cpu, arrival), so releasing the
 * smallest key among the queue heads and the heap top gives one total,
 * stable order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "deferstack/deferstack.h"
#include "internal.h"

#define MAX_QUEUES 4096

/* 16 bytes before the record, as small as the old list node (allocation
 * size classes matter at these rates) */
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

struct ds_merge_late {
	uint64_t time, seq;
	uint32_t cpu;
	struct ds_merge_node *n;
};

int ds_merge_init(struct ds_merge *m, size_t max_pending)
{
	memset(m, 0, sizeof(*m));
	m->max_pending = max_pending ? max_pending : 1u << 20;
	return 0;
}

void ds_merge_destroy(struct ds_merge *m)
{
	for (size_t i = 0; i < m->nr_q; i++) {
		struct ds_merge_q *q = &m->q[i];

		for (size_t k = 0; k < q->len; k++)
			free(q->v[(q->head + k) & (q->cap - 1)]);
		free(q->v);
	}
	for (size_t i = 0; i < m->nr_late; i++)
		free(m->late[i].n);
	free(m->q);
	free(m->late);
	free(m->out);
	memset(m, 0, sizeof(*m));
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

static struct ds_merge_node *q_first(const struct ds_merge_q *q)
{
	return q->len ? q->v[q->head] : NULL;
}

static bool before(const struct ds_merge_late *a, const struct ds_merge_late *b)
{
	if (a->time != b->time)
		return a->time < b->time;
	if (a->cpu != b->cpu)
		return a->cpu < b->cpu;
	return a->seq < b->seq;
}

static void sift_up(struct ds_merge_late *h, size_t i)
{
	struct ds_merge_late n = h[i];

	while (i) {
		size_t p = (i - 1) / 2;

		if (!before(&n, &h[p]))
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = n;
}

static void sift_down(struct ds_merge_late *h, size_t len, size_t i)
{
	struct ds_merge_late n = h[i];

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

int ds_merge_push(struct ds_merge *m, const struct perf_event_header *rec, uint64_t time,
		  uint32_t cpu)
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
	n = malloc(sizeof(*n) + ((rec->size + 7u) & ~7u));
	if (!n)
		return -ENOMEM;
	n->time = time;
	n->seq = m->seq++;
	memcpy(n->data, rec, rec->size);
	if (!q->len || time >= q->v[(q->head + q->len - 1) & (q->cap - 1)]->time) {
		err = q_append(q, n);
	} else {
		/* back in time within its buffer: the heap of late records */
		err = ds_grow(&m->late, &m->cap_late, m->nr_late + 1, sizeof(*m->late));
		if (!err) {
			m->late[m->nr_late] = (struct ds_merge_late){ time, n->seq,
								     (uint32_t)qi, n };
			sift_up(m->late, m->nr_late);
			m->nr_late++;
		}
	}
	if (err) {
		free(n);
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
	struct ds_merge_node *n = NULL, *h;
	size_t best = SIZE_MAX;

	free(m->out);
	m->out = NULL;
	if (!m->pending)
		return 0;
	/* queues in cpu order, strictly smaller time: ties go to the lower
	 * cpu, which is the key order */
	for (size_t i = 0; i < m->nr_q; i++) {
		h = q_first(&m->q[i]);
		if (h && (!n || h->time < n->time)) {
			n = h;
			best = i;
		}
	}
	if (m->nr_late) {
		const struct ds_merge_late *l = &m->late[0];

		if (!n || l->time < n->time ||
		    (l->time == n->time && (l->cpu < best || (l->cpu == best &&
							       l->seq < n->seq)))) {
			n = l->n;
			best = SIZE_MAX;
		}
	}
	if (!m->flushing && m->pending <= m->max_pending && n->time > m->watermark)
		return 0;
	if (best == SIZE_MAX) {
		m->late[0] = m->late[--m->nr_late];
		if (m->nr_late)
			sift_down(m->late, m->nr_late, 0);
	} else {
		struct ds_merge_q *q = &m->q[best];

		q->head = (q->head + 1) & (q->cap - 1);
		q->len--;
	}
	m->pending--;
	if (n->time < m->last_released)
		m->nr_out_of_order++;
	else
		m->last_released = n->time;
	m->out = n;
	*rec = (const void *)n->data;
	return 1;
}
