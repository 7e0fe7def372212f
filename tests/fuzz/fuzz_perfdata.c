// SPDX-License-Identifier: MIT
/*
 * libFuzzer target.  The first input byte selects what the rest is:
 *   0: a perf.data file -> reader, merge, stitcher, symbols, folding (from
 *      names and from chains), profile
 *      (perf-report text with a call graph, pprof), flame graph
 *   1: u64 sample_type + raw record stream -> parse, merge, stitcher, rewrite
 *   2: u64 tail + u64 head + ring data -> ring buffer reader
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deferstack/deferstack.h"

struct ctx {
	struct ds_symbols *sym;
	struct ds_fold *fold;
	struct ds_fold *cfold;	/* the same stacks from the chains */
	struct ds_profile *prof;
	struct ds_frames fr;
	uint8_t out[65536];
};

static int cb(void *arg, const struct ds_stitch_out *o)
{
	struct ctx *c = arg;

	if (o->kind == DS_OUT_RECORD) {
		if (c->sym)
			ds_symbols_event(c->sym, o->ev);
		return 0;
	}
	if (o->kind == DS_OUT_STITCHED || o->kind == DS_OUT_KERNEL_ONLY)
		ds_sample_set_callchain(o->ev, o->chain, o->nr, c->out, sizeof(c->out));
	if (c->sym && o->chain &&
	    !ds_symbolize_chain(c->sym, o->ev->pid, o->chain, o->nr, &c->fr) && c->fold)
		ds_fold_add_weighted(c->fold, "x", &c->fr, 1, o->ev->period);
	if (c->sym && o->chain && c->cfold)
		ds_fold_add_chain(c->cfold, c->sym, "x", o->ev->pid, o->chain, o->nr,
				  o->kind == DS_OUT_KERNEL_ONLY ? "[marker]" : NULL, 1,
				  o->ev->period);
	if (c->sym && o->chain && c->prof)
		ds_profile_add(c->prof, c->sym, "x", o->ev->pid, "e", o->chain, o->nr,
			       o->ev->period, o->kind == DS_OUT_KERNEL_ONLY ? "[marker]" : NULL);
	return 0;
}

static void run_events(struct ds_merge *m, struct ds_stitcher *s, uint64_t st, bool sid_all)
{
	const struct perf_event_header *rec;
	struct ds_event ev = { .sz = sizeof(ev) };

	while (ds_merge_pop(m, &rec) > 0) {
		if (!ds_event_parse(rec, rec->size, st, sid_all, &ev))
			ds_stitch_event(s, &ev);
	}
}

static void fuzz_file(const uint8_t *d, size_t n)
{
	char path[64];
	FILE *f;
	struct ds_reader *rd;
	struct ds_merge *m;
	struct ds_stitcher *s;
	struct ctx c;
	const struct perf_event_header *rec;
	struct ds_event ev = { .sz = sizeof(ev) };

	snprintf(path, sizeof(path), "/tmp/ds-fuzz-%d.data", (int)getpid());
	f = fopen(path, "wb");
	if (!f)
		return;
	fwrite(d, 1, n, f);
	fclose(f);
	if (ds_reader_open(&rd, path, NULL))
		return;
	memset(&c, 0, sizeof(c));
	c.fr.sz = sizeof(c.fr);
	ds_symbols_new(&c.sym, NULL);
	ds_fold_new(&c.fold);
	ds_fold_new(&c.cfold);
	ds_profile_new(&c.prof);
	if (ds_merge_new(&m, &(struct ds_merge_opts){ .sz = sizeof(struct ds_merge_opts),
						      .max_pending = 64 }) ||
	    ds_stitch_new(&s, &(struct ds_stitch_opts){ .sz = sizeof(struct ds_stitch_opts),
						       .max_pending_per_task = 8, .cb = cb,
						       .cb_arg = &c }))
		abort();
	while (ds_reader_next(rd, &rec) > 0) {
		if (rec->type == DS_RECORD_FINISHED_ROUND) {
			ds_merge_round(m);
		} else if (!ds_reader_parse(rd, rec, &ev)) {
			ds_merge_push(m, rec, ev.time, ev.cpu);
		}
		{
			const struct perf_event_header *r2;

			while (ds_merge_pop(m, &r2) > 0) {
				if (!ds_reader_parse(rd, r2, &ev))
					ds_stitch_event(s, &ev);
			}
		}
	}
	ds_merge_flush(m);
	while (ds_merge_pop(m, &rec) > 0) {
		if (!ds_reader_parse(rd, rec, &ev))
			ds_stitch_event(s, &ev);
	}
	ds_stitch_finish(s);
	{
		FILE *nul = fopen("/dev/null", "w");

		if (nul) {
			ds_fold_write(c.fold, nul);
			ds_fold_write_svg(c.fold, nul, "f");
			ds_fold_write(c.cfold, nul);
			ds_fold_write_svg(c.cfold, nul, "f");
			ds_profile_write_text(c.prof, nul,
					      &(struct ds_text_opts){ .sz = sizeof(struct ds_text_opts),
								      .graph = DS_GRAPH_CALLER,
								      .top = 5 });
			ds_profile_write_pprof(c.prof, nul);
			fclose(nul);
		}
	}
	ds_stitch_free(s);
	ds_merge_free(m);
	ds_frames_free(&c.fr);
	ds_fold_free(c.fold);
	ds_fold_free(c.cfold);
	ds_profile_free(c.prof);
	ds_symbols_free(c.sym);
	ds_reader_close(rd);
	unlink(path);
}

static void fuzz_stream(const uint8_t *d, size_t n)
{
	uint64_t st;
	uint64_t *buf;
	struct ds_merge *m;
	struct ds_stitcher *s;
	struct ctx *c;
	struct ds_event ev = { .sz = sizeof(ev) };
	size_t off = 0;

	if (n < 8)
		return;
	memcpy(&st, d, 8);
	d += 8;
	n -= 8;
	buf = malloc(n + 8);	/* 8-byte aligned copy */
	c = calloc(1, sizeof(*c));
	if (!buf || !c)
		goto out;
	memcpy(buf, d, n);
	if (ds_merge_new(&m, &(struct ds_merge_opts){ .sz = sizeof(struct ds_merge_opts),
						      .max_pending = 16 }))
		abort();
	if (ds_stitch_new(&s, &(struct ds_stitch_opts){ .sz = sizeof(struct ds_stitch_opts),
						       .max_pending_per_task = 4, .cb = cb,
						       .cb_arg = c }))
		abort();
	/* off may pass n after rounding sz up: compare without underflow. */
	while (off <= n && n - off >= sizeof(struct perf_event_header)) {
		const struct perf_event_header *h = (const void *)((uint8_t *)buf + off);
		size_t sz = h->size;

		if (sz < 8 || sz > n - off)
			break;
		if (h->type == DS_RECORD_FINISHED_ROUND)
			ds_merge_round(m);
		else if (!ds_event_parse(h, sz, st, true, &ev))
			ds_merge_push(m, h, ev.time, ev.cpu);
		run_events(m, s, st, true);
		off += (sz + 7) & ~(size_t)7;
	}
	ds_merge_flush(m);
	run_events(m, s, st, true);
	ds_stitch_finish(s);
	ds_stitch_free(s);
	ds_merge_free(m);
out:
	free(c);
	free(buf);
}

static void fuzz_ring(const uint8_t *d, size_t n)
{
	const size_t ps = 4096, dsz = 4096;
	uint8_t *area;
	struct perf_event_mmap_page *pg;
	struct ds_ring r = { .sz = sizeof(r) };
	const struct perf_event_header *h;
	uint64_t tail, head;

	if (n < 16)
		return;
	area = aligned_alloc(ps, ps + dsz);
	if (!area)
		return;
	memset(area, 0, ps + dsz);
	pg = (void *)area;
	memcpy(&tail, d, 8);
	memcpy(&head, d + 8, 8);
	head = tail + (head % (2 * dsz));
	pg->data_offset = ps;
	pg->data_size = dsz;
	pg->data_tail = tail;
	pg->data_head = head;
	memcpy(area + ps, d + 16, n - 16 < dsz ? n - 16 : dsz);
	if (!ds_ring_init(&r, area, ps + dsz, ps)) {
		int k = 0;

		ds_ring_begin(&r);
		while (ds_ring_next(&r, &h) > 0 && k++ < 10000) {
			struct ds_event ev = { .sz = sizeof(ev) };

			ds_event_parse(h, h->size, PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
				       PERF_SAMPLE_CALLCHAIN, true, &ev);
		}
		ds_ring_end(&r);
		ds_ring_destroy(&r);
	}
	free(area);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0: fuzz_file(data + 1, size - 1); break;
	case 1: fuzz_stream(data + 1, size - 1); break;
	default: fuzz_ring(data + 1, size - 1); break;
	}
	return 0;
}
