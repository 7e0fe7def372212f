// SPDX-License-Identifier: MIT
/* k-way merge of per-CPU record streams by time. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "deferstack/deferstack.h"
#include "internal.h"

#define MAX_QUEUES 4096

struct ds_merge_node {
	struct ds_merge_node *next;
	uint64_t time;
	uint64_t data[];	/* the record, 8-byte aligned */
};

int ds_merge_init(struct ds_merge *m, size_t max_pending)
{
	memset(m, 0, sizeof(*m));
	m->max_pending = max_pending ? max_pending : 1u << 20;
	return 0;
}

static void free_list(struct ds_merge_node *n)
{
	while (n) {
		struct ds_merge_node *next = n->next;

		free(n);
		n = next;
	}
}

void ds_merge_destroy(struct ds_merge *m)
{
	for (size_t i = 0; i < m->nr_q; i++)
		free_list(m->q_head[i]);
	free(m->out);
	free(m->q_head);
	free(m->q_tail);
	free(m->q_len);
	memset(m, 0, sizeof(*m));
}

static int ensure_queue(struct ds_merge *m, size_t q)
{
	size_t n = q + 1;
	void *a, *b, *c;

	if (q < m->nr_q)
		return 0;
	a = realloc(m->q_head, n * sizeof(*m->q_head));
	if (a)
		m->q_head = a;
	b = realloc(m->q_tail, n * sizeof(*m->q_tail));
	if (b)
		m->q_tail = b;
	c = realloc(m->q_len, n * sizeof(*m->q_len));
	if (c)
		m->q_len = c;
	if (!a || !b || !c)
		return -ENOMEM;
	for (size_t i = m->nr_q; i < n; i++) {
		m->q_head[i] = m->q_tail[i] = NULL;
		m->q_len[i] = 0;
	}
	m->nr_q = n;
	return 0;
}

int ds_merge_push(struct ds_merge *m, const struct perf_event_header *rec, uint64_t time,
		  uint32_t cpu)
{
	size_t q = cpu < MAX_QUEUES ? cpu : MAX_QUEUES - 1;
	struct ds_merge_node *n;
	int err;

	if (rec->size < sizeof(*rec))
		return -EINVAL;
	err = ensure_queue(m, q);
	if (err)
		return err;
	n = malloc(sizeof(*n) + ((rec->size + 7u) & ~7u));
	if (!n)
		return -ENOMEM;
	n->next = NULL;
	n->time = time;
	memcpy(n->data, rec, rec->size);
	if (!m->q_head[q]) {
		m->q_head[q] = m->q_tail[q] = n;
		m->nr_nonempty++;
	} else if (time >= m->q_tail[q]->time) {
		m->q_tail[q]->next = n;
		m->q_tail[q] = n;
	} else {
		/* out of order within one buffer: insert sorted (rare) */
		struct ds_merge_node **pp = &m->q_head[q];

		while (*pp && (*pp)->time <= time)
			pp = &(*pp)->next;
		n->next = *pp;
		*pp = n;
	}
	m->q_len[q]++;
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
	size_t best = SIZE_MAX;
	struct ds_merge_node *n;

	free(m->out);
	m->out = NULL;
	if (!m->pending)
		return 0;
	for (size_t i = 0; i < m->nr_q; i++) {
		if (m->q_head[i] && (best == SIZE_MAX || m->q_head[i]->time <
						       m->q_head[best]->time))
			best = i;
	}
	n = m->q_head[best];
	if (!m->flushing && m->pending <= m->max_pending && n->time > m->watermark)
		return 0;
	m->q_head[best] = n->next;
	if (!n->next) {
		m->q_tail[best] = NULL;
		m->nr_nonempty--;
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
