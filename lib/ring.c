// SPDX-License-Identifier: MIT
/* Reader of a perf mmap ring buffer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "deferstack/deferstack.h"
#include "internal.h"

int ds_ring_init(struct ds_ring *r, void *base, size_t len, size_t page_size)
{
	struct perf_event_mmap_page *pg = base;
	uint64_t off, size;

	size_t sz = r->sz;

	/* every field is needed: an older, smaller struct has none we lack */
	if (sz < sizeof(*r))
		return -EINVAL;
	memset(r, 0, sz);
	r->sz = sz;
	if (!base || !page_size || len <= page_size)
		return -EINVAL;
	off = pg->data_offset;
	size = pg->data_size;
	if (!off || !size) {	/* kernels before 4.1 */
		off = page_size;
		size = len - page_size;
	}
	if (off > len || size > len - off || (size & (size - 1)))
		return -EINVAL;
	r->scratch = malloc(65536);
	if (!r->scratch)
		return -ENOMEM;
	r->page = pg;
	r->data = (uint8_t *)base + off;
	r->data_size = size;
	r->tail = pg->data_tail;
	r->head = r->tail;
	return 0;
}

void ds_ring_destroy(struct ds_ring *r)
{
	size_t sz = r->sz;

	if (sz < sizeof(*r))
		return;
	free(r->scratch);
	memset(r, 0, sz);
	r->sz = sz;
}

uint64_t ds_ring_begin(struct ds_ring *r)
{
	r->head = __atomic_load_n(&r->page->data_head, __ATOMIC_ACQUIRE);
	return r->head - r->tail;
}

int ds_ring_next(struct ds_ring *r, const struct perf_event_header **rec)
{
	uint64_t avail = r->head - r->tail, mask = r->data_size - 1;
	uint64_t pos = r->tail & mask;
	struct perf_event_header h;

	if (avail == 0)
		return 0;
	if (avail < sizeof(h) || avail > r->data_size)
		goto bad;
	if (pos + sizeof(h) <= r->data_size) {
		memcpy(&h, r->data + pos, sizeof(h));
	} else {
		size_t first = r->data_size - pos;

		memcpy(&h, r->data + pos, first);
		memcpy((uint8_t *)&h + first, r->data, sizeof(h) - first);
	}
	if (h.size < sizeof(h) || h.size > avail)
		goto bad;
	if (pos + h.size <= r->data_size && !(pos & 7)) {
		*rec = (const void *)(r->data + pos);
	} else {
		size_t first = r->data_size - pos;

		if (first > h.size)
			first = h.size;
		memcpy(r->scratch, r->data + pos, first);
		memcpy(r->scratch + first, r->data, h.size - first);
		*rec = (const void *)r->scratch;
	}
	r->tail += h.size;
	return 1;
bad:
	r->tail = r->head;
	return -EINVAL;
}

void ds_ring_end(struct ds_ring *r)
{
	__atomic_store_n(&r->page->data_tail, r->tail, __ATOMIC_RELEASE);
}
