/* SPDX-License-Identifier: MIT */
/* Builders of hand-made perf record streams for the tests. */
#ifndef DS_TEST_STREAMS_H
#define DS_TEST_STREAMS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "deferstack/deferstack.h"

#define TST_ST (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
		PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | \
		PERF_SAMPLE_CALLCHAIN)

#define KADDR(n) ((uint64_t)0xffffffff81000000ULL + (uint64_t)(n))
#define UADDR(n) ((uint64_t)0x0000555555550000ULL + (uint64_t)(n))

struct sbuf {
	uint8_t *b;
	size_t len, cap;
};

static inline void sb_put(struct sbuf *s, const void *p, size_t n)
{
	if (s->len + n > s->cap) {
		s->cap = (s->len + n) * 2 + 256;
		s->b = realloc(s->b, s->cap);
		if (!s->b)
			abort();
	}
	memcpy(s->b + s->len, p, n);
	s->len += n;
}

static inline void sb_u64(struct sbuf *s, uint64_t v) { sb_put(s, &v, 8); }
static inline void sb_u32x2(struct sbuf *s, uint32_t a, uint32_t b)
{
	sb_put(s, &a, 4);
	sb_put(s, &b, 4);
}

static inline size_t sb_begin(struct sbuf *s, uint32_t type, uint16_t misc)
{
	struct perf_event_header h = { type, misc, 0 };
	size_t at = s->len;

	sb_put(s, &h, sizeof(h));
	return at;
}

static inline void sb_end(struct sbuf *s, size_t at)
{
	uint16_t size = (uint16_t)(s->len - at);

	memcpy(s->b + at + 6, &size, 2);
}

/* sample_id trailer for TST_ST: tid, time, cpu, identifier */
static inline void sb_sid(struct sbuf *s, uint32_t pid, uint32_t tid, uint64_t time,
			  uint32_t cpu)
{
	sb_u32x2(s, pid, tid);
	sb_u64(s, time);
	sb_u32x2(s, cpu, 0);
	sb_u64(s, 1);
}

static inline void sb_sample(struct sbuf *s, uint32_t tid, uint64_t time, uint32_t cpu,
			     const uint64_t *chain, uint64_t nr)
{
	size_t at = sb_begin(s, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL);

	sb_u64(s, 1);			/* identifier */
	sb_u64(s, nr > 1 ? chain[1] : 0);	/* ip */
	sb_u32x2(s, tid, tid);
	sb_u64(s, time);
	sb_u32x2(s, cpu, 0);
	sb_u64(s, 1000);		/* period */
	sb_u64(s, nr);
	for (uint64_t i = 0; i < nr; i++)
		sb_u64(s, chain[i]);
	sb_end(s, at);
}

/* sample in the kernel with k kernel frames KADDR(base..), deferred cookie */
static inline void sb_dsample(struct sbuf *s, uint32_t tid, uint64_t time, uint32_t cpu,
			      uint64_t kbase, uint64_t cookie)
{
	uint64_t c[] = { PERF_CONTEXT_KERNEL, KADDR(kbase), KADDR(kbase + 1),
			 DS_CONTEXT_USER_DEFERRED, cookie };

	sb_sample(s, tid, time, cpu, c, 5);
}

static inline void sb_deferred(struct sbuf *s, uint32_t tid, uint64_t time, uint32_t cpu,
			       uint64_t cookie, uint64_t ubase, uint64_t nr)
{
	size_t at = sb_begin(s, DS_RECORD_CALLCHAIN_DEFERRED, PERF_RECORD_MISC_USER);

	sb_u64(s, cookie);
	sb_u64(s, nr);
	for (uint64_t i = 0; i < nr; i++)
		sb_u64(s, UADDR(ubase + i));
	sb_sid(s, tid, tid, time, cpu);
	sb_end(s, at);
}

static inline void sb_exit(struct sbuf *s, uint32_t tid, uint64_t time, uint32_t cpu)
{
	size_t at = sb_begin(s, PERF_RECORD_EXIT, 0);

	sb_u32x2(s, tid, 1);
	sb_u32x2(s, tid, 1);
	sb_u64(s, time);
	sb_sid(s, tid, tid, time, cpu);
	sb_end(s, at);
}

static inline void sb_lost(struct sbuf *s, uint64_t lost, uint64_t time, uint32_t cpu)
{
	size_t at = sb_begin(s, PERF_RECORD_LOST, 0);

	sb_u64(s, 1);
	sb_u64(s, lost);
	sb_sid(s, 0, 0, time, cpu);
	sb_end(s, at);
}

static inline void sb_comm(struct sbuf *s, uint32_t tid, const char *comm, uint64_t time)
{
	size_t at = sb_begin(s, PERF_RECORD_COMM, 0);
	char name[16] = { 0 };

	strncpy(name, comm, 15);
	sb_u32x2(s, tid, tid);
	sb_put(s, name, 16);
	sb_sid(s, tid, tid, time, 0);
	sb_end(s, at);
}

/* MMAP2 of path at [start, start + len) for pid, from file offset pgoff */
static inline void sb_mmap2_at(struct sbuf *s, uint32_t pid, uint64_t start, uint64_t len,
			       uint64_t pgoff, const char *path, uint64_t time)
{
	size_t at = sb_begin(s, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);
	size_t n = strlen(path) + 1;
	static const char zero[8];

	sb_u32x2(s, pid, pid);
	sb_u64(s, start);
	sb_u64(s, len);
	sb_u64(s, pgoff);
	sb_u32x2(s, 0, 0);		/* maj, min */
	sb_u64(s, 0);			/* ino */
	sb_u64(s, 0);			/* ino_generation */
	sb_u32x2(s, 5, 2);		/* prot, flags */
	sb_put(s, path, n);
	sb_put(s, zero, (8 - n % 8) % 8);
	sb_sid(s, pid, pid, time, 0);
	sb_end(s, at);
}

/* MMAP2 of path at [start, start + len) for pid, file offset 0 */
static inline void sb_mmap2(struct sbuf *s, uint32_t pid, uint64_t start, uint64_t len,
			    const char *path, uint64_t time)
{
	sb_mmap2_at(s, pid, start, len, 0, path, time);
}

static inline void sb_round(struct sbuf *s)
{
	size_t at = sb_begin(s, DS_RECORD_FINISHED_ROUND, 0);

	sb_end(s, at);
}

/* A record of an unknown type with arbitrary payload. */
static inline void sb_unknown(struct sbuf *s, uint32_t type)
{
	size_t at = sb_begin(s, type, 0);

	sb_u64(s, 0x1234);
	sb_u64(s, 0x5678);
	sb_end(s, at);
}

/* Write the stream as a perf.data file like deferstack record does. */
static inline int sb_write_file(const struct sbuf *s, const char *path)
{
	struct ds_writer *w;
	struct ds_attr a[2];
	uint64_t id0 = 1, id1 = 2;
	int err;

	memset(a, 0, sizeof(a));
	for (int i = 0; i < 2; i++) {
		a[i].attr.size = sizeof(a[i].attr);
		a[i].sz = sizeof(a[i]);
		a[i].attr.type = PERF_TYPE_SOFTWARE;
		a[i].attr.sample_type = TST_ST;
		a[i].attr.sample_id_all = 1;
		a[i].attr.sample_period = 1000;
	}
	a[0].attr.config = PERF_COUNT_SW_CPU_CLOCK;
	a[0].ids = &id0;
	a[0].nr_ids = 1;
	a[0].name = "cpu-clock";
	ds_attr_set_flag(&a[0].attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
	a[1].attr.config = PERF_COUNT_SW_DUMMY;
	a[1].attr.mmap = a[1].attr.comm = a[1].attr.task = 1;
	a[1].ids = &id1;
	a[1].nr_ids = 1;
	a[1].name = "dummy:u";
	ds_attr_set_flag(&a[1].attr, DS_ATTR_BIT_DEFER_OUTPUT, 1);
	err = ds_writer_open(&w, path, a, 2, NULL);
	if (err)
		return err;
	for (size_t off = 0; off < s->len;) {
		struct perf_event_header h;
		uint64_t rec[65536 / 8];	/* aligned: sizes need not be multiples of 8 */

		memcpy(&h, s->b + off, sizeof(h));
		memcpy(rec, s->b + off, h.size);
		ds_writer_write(w, (const void *)rec);
		off += h.size;
	}
	return ds_writer_close(w, NULL);
}

#endif
