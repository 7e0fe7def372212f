// SPDX-License-Identifier: MIT
/* Unit tests of libdeferstack pieces: ABI helpers, parsing, ring buffer,
 * perf.data reader/writer, merge, symbols, folding. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include <cmocka.h>

#include "streams.h"
#include "hash.h"
#include "internal.h"

static char tmpdir[] = "/tmp/ds-unit-XXXXXX";

static const char *tpath(const char *name)
{
	static char buf[256];

	snprintf(buf, sizeof(buf), "%s/%s", tmpdir, name);
	return buf;
}

static void t_attr_flags(void **state)
{
	struct perf_event_attr a;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.disabled = 1;
	assert_int_equal(ds_attr_flags(&a), 1);		/* bit 0 is disabled */
	memset(&a, 0, sizeof(a));
	a.sample_id_all = 1;
	assert_int_equal(ds_attr_flags(&a), 1ULL << 18);
	a.sample_id_all = 0;
	a.sigtrap = 1;					/* bit 37, last one in 6.1 */
	assert_int_equal(ds_attr_flags(&a), 1ULL << 37);
	memset(&a, 0, sizeof(a));
	ds_attr_set_flag(&a, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
	ds_attr_set_flag(&a, DS_ATTR_BIT_DEFER_OUTPUT, 1);
	assert_int_equal(ds_attr_flags(&a), (1ULL << 38) | (1ULL << 39));
	assert_true(ds_attr_test_flag(&a, 38));
	assert_int_equal(a.read_format, 0);
	assert_int_equal(a.wakeup_events, 0);
	ds_attr_set_flag(&a, DS_ATTR_BIT_DEFER_OUTPUT, 0);
	assert_int_equal(ds_attr_flags(&a), 1ULL << 38);
	assert_int_equal(DS_RECORD_CALLCHAIN_DEFERRED, 22);
	assert_true(DS_CONTEXT_USER_DEFERRED == (uint64_t)-640);
}

static void t_parse_sample(void **state)
{
	struct sbuf s = { 0 };
	struct ds_event ev = { .sz = sizeof(ev) };
	uint64_t nr;

	(void)state;
	sb_dsample(&s, 42, 1000, 3, 0, 0xabc);
	assert_int_equal(ds_event_parse(s.b, s.len, TST_ST, true, &ev), 0);
	assert_int_equal(ev.type, PERF_RECORD_SAMPLE);
	assert_int_equal(ev.tid, 42);
	assert_int_equal(ev.time, 1000);
	assert_int_equal(ev.cpu, 3);
	assert_int_equal(ev.id, 1);
	assert_int_equal(ev.nr, 5);
	assert_true(ev.has_cookie);
	assert_int_equal(ev.cookie, 0xabc);
	/* nr larger than the record */
	nr = 6;
	memcpy(s.b + ev.chain_off, &nr, 8);
	assert_int_equal(ds_event_parse(s.b, s.len, TST_ST, true, &ev), -EINVAL);
	nr = UINT64_MAX / 4;
	memcpy(s.b + 8 + 6 * 8, &nr, 8);
	assert_int_equal(ds_event_parse(s.b, s.len, TST_ST, true, &ev), -EINVAL);
	/* size 0 / larger than the buffer */
	memset(s.b + 6, 0, 2);
	assert_int_equal(ds_event_parse(s.b, s.len, TST_ST, true, &ev), -EINVAL);
	assert_int_equal(ds_event_parse(s.b, 4, TST_ST, true, &ev), -EINVAL);
	free(s.b);
}

static void t_parse_others(void **state)
{
	struct sbuf s = { 0 };
	struct ds_event ev = { .sz = sizeof(ev) };
	uint64_t nr = 1000;

	(void)state;
	sb_deferred(&s, 5, 77, 1, 0x300000001ULL, 0, 3);
	assert_int_equal(ds_event_parse(s.b, s.len, TST_ST, true, &ev), 0);
	assert_int_equal(ev.type, 22);
	assert_int_equal(ev.cookie, 0x300000001ULL);
	assert_int_equal(ev.nr, 3);
	assert_int_equal(ev.chain[2], UADDR(2));
	assert_int_equal(ev.tid, 5);
	assert_int_equal(ev.time, 77);
	assert_int_equal(ev.cpu, 1);
	memcpy(s.b + 16, &nr, 8);	/* nr past the sample_id */
	assert_int_equal(ds_event_parse(s.b, s.len, TST_ST, true, &ev), -EINVAL);
	s.len = 0;
	sb_comm(&s, 9, "hello", 5);
	assert_int_equal(ds_event_parse(s.b, s.len, TST_ST, true, &ev), 0);
	assert_string_equal(ev.comm, "hello");
	assert_int_equal(ev.time, 5);
	memset(s.b + 16, 'x', 16);	/* no NUL before the sample_id */
	assert_int_equal(ds_event_parse(s.b, s.len, TST_ST, true, &ev), -EINVAL);
	s.len = 0;
	sb_unknown(&s, 200);
	assert_int_equal(ds_event_parse(s.b, s.len, TST_ST, true, &ev), 0);
	assert_int_equal(ev.type, 200);
	assert_string_equal(ds_record_name(200), "UNKNOWN");
	free(s.b);
}

static void t_set_callchain(void **state)
{
	struct sbuf s = { 0 };
	struct ds_event ev = { .sz = sizeof(ev) }, ev2 = { .sz = sizeof(ev2) };
	uint64_t chain[] = { PERF_CONTEXT_KERNEL, KADDR(1), PERF_CONTEXT_USER, UADDR(1),
			     UADDR(2), UADDR(3) };
	uint64_t out[64];
	int n;

	(void)state;
	sb_dsample(&s, 1, 2, 0, 0, 7);
	assert_int_equal(ds_event_parse(s.b, s.len, TST_ST, true, &ev), 0);
	n = ds_sample_set_callchain(&ev, chain, 6, out, sizeof(out));
	assert_int_equal(n, (int)s.len + 8);
	assert_int_equal(ds_event_parse(out, (size_t)n, TST_ST, true, &ev2), 0);
	assert_int_equal(ev2.nr, 6);
	assert_false(ev2.has_cookie);
	assert_int_equal(ev2.chain[5], UADDR(3));
	assert_int_equal(ev2.tid, 1);
	assert_int_equal(ds_sample_set_callchain(&ev, chain, 6, out, 16), -ENOSPC);
	free(s.b);
}

/* Fake mmap area: one header page + 2 data pages; records wrap around. */
static void t_ring(void **state)
{
	const size_t ps = 4096, dsz = 2 * ps;
	uint8_t *area = aligned_alloc(ps, ps + dsz);
	struct perf_event_mmap_page *pg = (void *)area;
	struct ds_ring r = { .sz = sizeof(r) };
	struct sbuf s = { 0 };
	const struct perf_event_header *h;
	struct ds_event ev = { .sz = sizeof(ev) };
	uint64_t pos = dsz - 24;	/* next record straddles the end */
	int n = 0;

	(void)state;
	assert_non_null(area);
	memset(area, 0, ps + dsz);
	pg->data_offset = ps;
	pg->data_size = dsz;
	pg->data_tail = pos;
	for (int i = 0; i < 3; i++)
		sb_dsample(&s, 100 + (uint32_t)i, 10 + (uint64_t)i, 0, 0, (uint64_t)i + 1);
	for (size_t k = 0; k < s.len; k++)
		area[ps + ((pos + k) & (dsz - 1))] = s.b[k];
	pg->data_head = pos + s.len;
	assert_int_equal(ds_ring_init(&r, area, ps + dsz, ps), 0);
	assert_int_equal(ds_ring_begin(&r), s.len);
	while (ds_ring_next(&r, &h) == 1) {
		assert_int_equal(ds_event_parse(h, h->size, TST_ST, true, &ev), 0);
		assert_int_equal(ev.tid, 100 + (uint32_t)n);
		assert_int_equal(ev.cookie, (uint64_t)n + 1);
		n++;
	}
	assert_int_equal(n, 3);
	ds_ring_end(&r);
	assert_int_equal(pg->data_tail, pos + s.len);
	/* a size-0 record is an error, and the reader skips to head */
	memset(area + ps + ((pos + s.len) & (dsz - 1)), 0, 8);
	pg->data_head = pos + s.len + 64;
	ds_ring_begin(&r);
	assert_int_equal(ds_ring_next(&r, &h), -EINVAL);
	assert_int_equal(ds_ring_next(&r, &h), 0);
	ds_ring_destroy(&r);
	free(area);
	free(s.b);
}

static void t_perfdata_roundtrip(void **state)
{
	struct sbuf s = { 0 };
	struct ds_reader *rd;
	const struct perf_event_header *h;
	struct ds_event ev = { .sz = sizeof(ev) };
	int n = 0;

	(void)state;
	sb_comm(&s, 3, "abc", 1);
	sb_dsample(&s, 3, 10, 0, 0, 0x5);
	sb_deferred(&s, 3, 20, 1, 0x5, 0, 2);
	sb_round(&s);
	assert_int_equal(sb_write_file(&s, tpath("rt.data")), 0);
	assert_int_equal(ds_reader_open(&rd, tpath("rt.data"), NULL), 0);
	assert_int_equal(ds_reader_nr_attrs(rd), 2);
	assert_int_equal(ds_reader_attr(rd, 1)->ids[0], 2);
	assert_string_equal(ds_reader_attr(rd, 0)->name, "cpu-clock");
	assert_true(ds_attr_test_flag(&ds_reader_attr(rd, 0)->attr, DS_ATTR_BIT_DEFER_CALLCHAIN));
	while (ds_reader_next(rd, &h) == 1) {
		assert_int_equal(ds_reader_parse(rd, h, &ev), 0);
		if (n == 2) {
			assert_int_equal(ev.type, 22);
			assert_int_equal(ev.cpu, 1);
		}
		n++;
	}
	assert_int_equal(n, 4);
	ds_reader_close(rd);
	free(s.b);
}

/* A writer that never gets to ds_writer_close() (a killed recorder) leaves a
 * file that reads up to the end, a cut last record ending it. */
static void t_perfdata_unfinished(void **state)
{
	struct sbuf s = { 0 };
	struct ds_writer *w;
	struct ds_reader *rd;
	struct ds_attr a;
	const struct perf_event_header *h;
	uint64_t id = 1;
	int n = 0;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.attr.size = sizeof(a.attr);
	a.sz = sizeof(a);
	a.attr.sample_type = TST_ST;
	a.attr.sample_id_all = 1;
	a.ids = &id;
	a.nr_ids = 1;
	sb_comm(&s, 3, "abc", 1);
	sb_dsample(&s, 3, 10, 0, 0, 0x5);
	sb_deferred(&s, 3, 20, 1, 0x5, 0, 2);
	assert_int_equal(ds_writer_open(&w, tpath("unf.data"), &a, 1, NULL), 0);
	for (size_t off = 0; off < s.len;) {
		const struct perf_event_header *r = (const void *)(s.b + off);

		assert_int_equal(ds_writer_write(w, r), 0);
		off += r->size;
	}
	assert_int_equal(ds_writer_round(w), 0);	/* flushed */
	/* read while the writer is still open: nothing finished yet */
	assert_int_equal(ds_reader_open(&rd, tpath("unf.data"), NULL), 0);
	assert_true(ds_reader_unfinished(rd));
	while (ds_reader_next(rd, &h) == 1)
		n++;
	assert_int_equal(n, 4);
	assert_int_equal(ds_reader_trailing(rd), 0);
	ds_reader_close(rd);
	/* cut 5 bytes off the deferred record: comm and sample remain, the
	 * deferred record's first size - 5 bytes are trailing */
	assert_int_equal(truncate(tpath("unf.data"), (off_t)(104 + sizeof(struct perf_event_attr) + 16 + 8 + s.len - 5)), 0);
	assert_int_equal(ds_reader_open(&rd, tpath("unf.data"), NULL), 0);
	n = 0;
	while (ds_reader_next(rd, &h) == 1)
		n++;
	assert_int_equal(n, 2);
	assert_int_equal(ds_reader_trailing(rd), 8 + 8 + 8 + 2 * 8 + 32 - 5);
	ds_reader_close(rd);
	/* once closed, the header is final: data size set, features present */
	assert_int_equal(ds_writer_close(w, NULL), 0);
	assert_int_equal(ds_reader_open(&rd, tpath("unf.data"), NULL), 0);
	assert_false(ds_reader_unfinished(rd));
	ds_reader_close(rd);
	free(s.b);
}

/* A write that fails (here EFBIG, a file size limit; ENOSPC alike) leaves
 * the writer with the error; ds_writer_rewind() cuts the file back to its
 * last round and writing goes on there: a finished file of whole records. */
static void t_writer_rewind(void **state)
{
	struct sbuf s = { 0 }, d = { 0 };
	struct ds_writer *w;
	struct ds_reader *rd;
	struct ds_attr a;
	const struct perf_event_header *h;
	struct rlimit old, lim;
	struct stat st;
	uint64_t id = 1, dropped = 0;
	void (*xfsz)(int);
	int n = 0, err = 0;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.sz = sizeof(a);
	a.attr.size = sizeof(a.attr);
	a.attr.sample_type = TST_ST;
	a.attr.sample_id_all = 1;
	a.ids = &id;
	a.nr_ids = 1;
	sb_comm(&s, 3, "abc", 1);
	for (int i = 0; i < 400; i++)
		sb_dsample(&d, 3, 10 + (uint64_t)i, 0, 0, 0x5);
	assert_int_equal(ds_writer_open(&w, tpath("rew.data"), &a, 1, NULL), 0);
	assert_int_equal(ds_writer_write(w, (const void *)s.b), 0);
	assert_int_equal(ds_writer_round(w), 0);
	assert_int_equal(stat(tpath("rew.data"), &st), 0);
	/* room for a few hundred bytes more */
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)st.st_size + 300;
	xfsz = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	for (size_t off = 0; off < d.len && !err;) {
		const struct perf_event_header *r = (const void *)(d.b + off);

		err = ds_writer_write(w, r);
		off += r->size;
	}
	if (!err)
		err = ds_writer_round(w);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, xfsz);
	assert_int_equal(err, -EFBIG);
	assert_int_equal(ds_writer_round(w), -EFBIG);	/* it sticks */
	assert_int_equal(ds_writer_rewind(w, &dropped), 0);
	assert_true(dropped > 0);
	assert_int_equal(stat(tpath("rew.data"), &st), 0);
	assert_true(st.st_size == (off_t)(104 + sizeof(struct perf_event_attr) + 16 + 8 + s.len +
					 8));	/* the comm and its round */
	/* go on writing: a sample, a round, a finished file */
	assert_int_equal(ds_writer_write(w, (const void *)d.b), 0);
	assert_int_equal(ds_writer_round(w), 0);
	assert_int_equal(ds_writer_close(w, NULL), 0);
	assert_int_equal(ds_reader_open(&rd, tpath("rew.data"), NULL), 0);
	assert_false(ds_reader_unfinished(rd));
	while (ds_reader_next(rd, &h) == 1)
		n += h->type == PERF_RECORD_COMM || h->type == PERF_RECORD_SAMPLE;
	assert_int_equal(n, 2);
	assert_int_equal(ds_reader_trailing(rd), 0);
	ds_reader_close(rd);
	free(s.b);
	free(d.b);
}

/* Pipe mode: the writer never seeks (attrs and names as records, tracing
 * data as a record whose data its size does not count, build-ids at the
 * end); the reader takes it from a real pipe. */
static void t_pipe_mode(void **state)
{
	struct sbuf s = { 0 };
	struct ds_writer *w;
	struct ds_reader *rd;
	struct ds_writer_opts wo = { .sz = sizeof(wo), .pipe = true,
				     .tracing_data = "\027\bDtracing0.6", .tracing_data_len = 14 };
	struct ds_writer_info info = { .sz = sizeof(info) };
	struct ds_build_id b;
	const struct ds_build_id *bids;
	struct ds_attr a[2];
	const struct perf_event_header *h;
	struct ds_event ev = { .sz = sizeof(ev) };
	uint64_t id0 = 1, id1 = 2;
	int fds[2], n = 0, deferred = 0;
	size_t nb;

	(void)state;
	memset(a, 0, sizeof(a));
	for (int i = 0; i < 2; i++) {
		a[i].attr.size = sizeof(a[i].attr);
		a[i].sz = sizeof(a[i]);
		a[i].attr.type = PERF_TYPE_SOFTWARE;
		a[i].attr.sample_type = TST_ST;
		a[i].attr.sample_id_all = 1;
	}
	a[0].ids = &id0;
	a[0].nr_ids = 1;
	a[0].name = "cpu-clock:u";
	a[1].attr.config = PERF_COUNT_SW_DUMMY;
	a[1].ids = &id1;
	a[1].nr_ids = 1;
	memset(&b, 0, sizeof(b));
	b.sz = sizeof(b);
	b.pid = -1;
	b.size = 20;
	b.id[19] = 0x42;
	b.path = "/bin/x";
	info.build_ids = &b;
	info.nr_build_ids = 1;
	sb_comm(&s, 3, "abc", 1);
	sb_dsample(&s, 3, 10, 0, 0, 0x5);
	sb_deferred(&s, 3, 20, 1, 0x5, 0, 2);
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(ds_writer_open_fd(&w, fds[1], a, 2, &wo), 0);
	for (size_t off = 0; off < s.len;) {
		const struct perf_event_header *r = (const void *)(s.b + off);

		assert_int_equal(ds_writer_write(w, r), 0);
		off += r->size;
	}
	assert_int_equal(ds_writer_round(w), 0);
	assert_int_equal(ds_writer_close(w, &info), 0);	/* closes fds[1] */
	assert_int_equal(ds_reader_open_fd(&rd, fds[0], "the pipe", NULL), 0);
	assert_true(ds_reader_pipe_mode(rd));
	while (ds_reader_next(rd, &h) == 1) {
		assert_int_equal(ds_reader_parse(rd, h, &ev), 0);
		deferred += ev.type == DS_RECORD_CALLCHAIN_DEFERRED;
		if (ev.type == PERF_RECORD_SAMPLE)
			assert_int_equal(ds_reader_attr_index(rd, h), 0);
		n++;
	}
	assert_int_equal(n, 4);		/* comm, sample, deferred, round */
	assert_int_equal(deferred, 1);
	assert_int_equal(ds_reader_nr_attrs(rd), 2);
	assert_string_equal(ds_reader_attr(rd, 0)->name, "cpu-clock:u");
	assert_string_equal(ds_reader_attr(rd, 1)->name, "dummy");
	bids = ds_reader_build_ids(rd, &nb);
	assert_int_equal(nb, 1);
	assert_string_equal(bids[0].path, "/bin/x");
	assert_int_equal(bids[0].id[19], 0x42);
	assert_int_equal(ds_reader_trailing(rd), 0);
	/* the tracing data with the writer's padding to 8 bytes */
	assert_memory_equal(ds_reader_tracing_data(rd, &nb), "\027\bDtracing0.6\0\0", 16);
	assert_int_equal(nb, 16);
	ds_reader_close(rd);
	free(s.b);
}

/* File mode with tracing data: HEADER_TRACING_DATA is feature bit 1, first
 * in the section table (perf reads it in bit order), so the features after
 * it (build-ids, event names) are still found. */
static void t_tracing_data(void **state)
{
	static const char td[] = "\027\bDtracing0.6";
	struct ds_writer_opts wo = { .sz = sizeof(wo), .tracing_data = td,
				     .tracing_data_len = sizeof(td) };
	struct ds_writer_info info = { .sz = sizeof(info) };
	struct ds_build_id b;
	struct ds_writer *w;
	struct ds_reader *rd;
	struct ds_attr a;
	uint64_t id = 7, hdr[16], sec[2];
	size_t nb;
	FILE *f;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.attr.size = sizeof(a.attr);
	a.sz = sizeof(a);
	a.attr.type = PERF_TYPE_TRACEPOINT;
	a.attr.config = 316;
	a.attr.sample_type = TST_ST;
	a.attr.sample_id_all = 1;
	a.ids = &id;
	a.nr_ids = 1;
	a.name = "sched:sched_switch";
	memset(&b, 0, sizeof(b));
	b.sz = sizeof(b);
	b.pid = -1;
	b.size = 20;
	b.path = "/bin/y";
	info.build_ids = &b;
	info.nr_build_ids = 1;
	assert_int_equal(ds_writer_open(&w, tpath("td.data"), &a, 1, &wo), 0);
	assert_int_equal(ds_writer_close(w, &info), 0);
	f = fopen(tpath("td.data"), "rb");
	assert_non_null(f);
	assert_int_equal(fread(hdr, 8, 16, f), 16);
	/* features after magic, size, attr_size, attrs, data, event_types */
	assert_true(hdr[9] & (1u << 1));
	/* the table after the data: its first section is the tracing data */
	assert_int_equal(fseek(f, (long)(hdr[5] + hdr[6]), SEEK_SET), 0);
	assert_int_equal(fread(sec, 8, 2, f), 2);
	assert_int_equal(sec[1], sizeof(td));
	fclose(f);
	assert_int_equal(ds_reader_open(&rd, tpath("td.data"), NULL), 0);
	assert_string_equal(ds_reader_attr(rd, 0)->name, "sched:sched_switch");
	ds_reader_build_ids(rd, &nb);
	assert_int_equal(nb, 1);
	/* kept for a writer (convert) */
	assert_memory_equal(ds_reader_tracing_data(rd, &nb), td, sizeof(td));
	assert_int_equal(nb, sizeof(td));
	ds_reader_close(rd);
}

/* Records find their attr by id through a hash: right attr for every id,
 * the first attr for an id listed twice, attrs[0] for an unknown id, and
 * fast with many ids (the old scan was O(ids) per record). */
static void t_reader_id_lookup(void **state)
{
	enum { NA = 3, NI = 50000 };
	static uint64_t ids[NA][NI];
	struct ds_attr a[NA];
	struct ds_writer *w;
	struct ds_reader *rd;
	struct timespec t0, t1;
	uint64_t rec[2];
	struct perf_event_header h = { PERF_RECORD_SAMPLE, 0, 16 };
	double secs;

	(void)state;
	memset(a, 0, sizeof(a));
	for (int i = 0; i < NA; i++) {
		a[i].attr.size = sizeof(a[i].attr);
		a[i].sz = sizeof(a[i]);
		a[i].attr.sample_type = TST_ST;
		a[i].attr.sample_id_all = 1;
		a[i].attr.config = (uint64_t)i;
		for (int k = 0; k < NI; k++)
			ids[i][k] = 1000000007ULL * (uint64_t)(i * NI + k) + 12345;
		a[i].ids = ids[i];
		a[i].nr_ids = NI;
	}
	ids[2][7] = ids[1][9];	/* listed by attrs 1 and 2: attr 1 wins */
	ids[2][8] = 0;		/* id 0 is an id like any other */
	assert_int_equal(ds_writer_open(&w, tpath("ids.data"), a, NA, NULL), 0);
	assert_int_equal(ds_writer_close(w, NULL), 0);
	assert_int_equal(ds_reader_open(&rd, tpath("ids.data"), NULL), 0);
	memcpy(rec, &h, 8);
	alarm(120);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = NA - 1; i >= 0; i--) {
		for (int k = 0; k < NI; k++) {
			const struct ds_attr *da;

			rec[1] = ids[i][k];
			da = ds_reader_attr_of(rd, (const void *)rec);
			if (i == 2 && k == 7)
				assert_int_equal(da->attr.config, 1);
			else if (da->attr.config != (uint64_t)i)
				fail_msg("id %d/%d: attr %d", i, k, (int)da->attr.config);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	alarm(0);
	rec[1] = 999;		/* unknown: the first attr */
	assert_int_equal(ds_reader_attr_of(rd, (const void *)rec)->attr.config, 0);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	/* 150k lookups: milliseconds with the hash, ~10^10 compares without */
	assert_true(secs < 5.0);
	ds_reader_close(rd);
}

/* perf 6.x writes several events with PERF_SAMPLE_ID and no IDENTIFIER: the
 * attr is found by the id at its position (samples: after IP, TID, TIME;
 * other records: in the sample_id trailer). */
static void t_reader_sample_id_pos(void **state)
{
	const uint64_t st = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			    PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_ID | PERF_SAMPLE_PERIOD;
	uint64_t id0 = 11, id1 = 22;
	struct ds_attr a[2];
	struct ds_writer *w;
	struct ds_reader *rd;
	uint64_t smp[7] = { 0, 0x1234, 7 | (7ULL << 32), 99, 22, 5, 0 };
	uint64_t comm[6] = { 0, 7 | (7ULL << 32), 0x6d6d6f63, 7 | (7ULL << 32), 1, 22 };
	struct perf_event_header hs = { PERF_RECORD_SAMPLE, 0, sizeof(smp) };
	struct perf_event_header hc = { PERF_RECORD_COMM, 0, sizeof(comm) };
	struct ds_event ev = { .sz = sizeof(ev) };
	char buf[64];

	(void)state;
	memset(a, 0, sizeof(a));
	for (int i = 0; i < 2; i++) {
		a[i].attr.size = sizeof(a[i].attr);
		a[i].sz = sizeof(a[i]);
		a[i].attr.type = PERF_TYPE_SOFTWARE;
		a[i].attr.sample_type = st;
		a[i].attr.sample_id_all = 1;
	}
	a[1].attr.config = PERF_COUNT_SW_PAGE_FAULTS;
	a[0].ids = &id0;
	a[0].nr_ids = 1;
	a[1].ids = &id1;
	a[1].nr_ids = 1;
	assert_int_equal(ds_writer_open(&w, tpath("idpos.data"), a, 2, NULL), 0);
	assert_int_equal(ds_writer_close(w, NULL), 0);
	assert_int_equal(ds_reader_open(&rd, tpath("idpos.data"), NULL), 0);
	/* names: EVENT_DESC written from the generic names */
	assert_string_equal(ds_attr_name(ds_reader_attr(rd, 0), buf, sizeof(buf)), "cpu-clock");
	assert_string_equal(ds_attr_name(ds_reader_attr(rd, 1), buf, sizeof(buf)), "page-faults");
	memcpy(smp, &hs, 8);
	memcpy(comm, &hc, 8);
	assert_int_equal(ds_reader_attr_index(rd, (const void *)smp), 1);
	assert_int_equal(ds_reader_parse(rd, (const void *)smp, &ev), 0);
	assert_int_equal(ev.period, 5);
	assert_int_equal(ds_reader_attr_index(rd, (const void *)comm), 1);
	smp[4] = 11;
	comm[5] = 11;
	assert_int_equal(ds_reader_attr_index(rd, (const void *)smp), 0);
	assert_int_equal(ds_reader_attr_index(rd, (const void *)comm), 0);
	ds_reader_close(rd);
}

/* Ids added after the header (record -a: a CPU came online): the records
 * of the new ids belong to their attr once the writer is closed; a pipe
 * writer cannot take them. */
static void t_writer_add_ids(void **state)
{
	uint64_t id0 = 11, id1 = 22, more[2] = { 33, 44 }, rec[2];
	struct perf_event_header h = { PERF_RECORD_SAMPLE, 0, 16 };
	const struct perf_event_header *got;
	struct ds_attr a[2];
	struct ds_writer *w;
	struct ds_reader *rd;
	char buf[64];
	int fds[2], n = 0;

	(void)state;
	memset(a, 0, sizeof(a));
	for (int i = 0; i < 2; i++) {
		a[i].sz = sizeof(a[i]);
		a[i].attr.size = sizeof(a[i].attr);
		a[i].attr.sample_type = TST_ST;
		a[i].attr.sample_id_all = 1;
		a[i].attr.type = PERF_TYPE_SOFTWARE;
		a[i].attr.config = i ? PERF_COUNT_SW_PAGE_FAULTS : PERF_COUNT_SW_CPU_CLOCK;
	}
	a[0].ids = &id0;
	a[0].nr_ids = 1;
	a[1].ids = &id1;
	a[1].nr_ids = 1;
	assert_int_equal(ds_writer_open(&w, tpath("addids.data"), a, 2, NULL), 0);
	assert_int_equal(ds_writer_add_ids(w, 2, more, 1), -EINVAL);
	assert_int_equal(ds_writer_add_ids(w, 1, NULL, 1), -EINVAL);
	assert_int_equal(ds_writer_add_ids(w, 1, more, 0), 0);
	memcpy(rec, &h, 8);
	rec[1] = 22;
	assert_int_equal(ds_writer_write(w, (const void *)rec), 0);
	assert_int_equal(ds_writer_add_ids(w, 1, more, 2), 0);
	rec[1] = 44;
	assert_int_equal(ds_writer_write(w, (const void *)rec), 0);
	assert_int_equal(ds_writer_round(w), 0);
	assert_int_equal(ds_writer_close(w, NULL), 0);

	assert_int_equal(ds_reader_open(&rd, tpath("addids.data"), NULL), 0);
	assert_int_equal(ds_reader_attr(rd, 1)->nr_ids, 3);
	assert_string_equal(ds_attr_name(ds_reader_attr(rd, 1), buf, sizeof(buf)), "page-faults");
	for (uint64_t id = 22; id <= 44; id += 11) {
		rec[1] = id;
		assert_int_equal(ds_reader_attr_index(rd, (const void *)rec), 1);
	}
	rec[1] = 11;
	assert_int_equal(ds_reader_attr_index(rd, (const void *)rec), 0);
	while (ds_reader_next(rd, &got) == 1)
		n += got->type == PERF_RECORD_SAMPLE;
	assert_int_equal(n, 2);	/* the data where it was */
	ds_reader_close(rd);

	assert_int_equal(pipe(fds), 0);
	{
		struct ds_writer_opts wo = { .sz = sizeof(wo), .pipe = true };

		assert_int_equal(ds_writer_open_fd(&w, fds[1], a, 2, &wo), 0);
		assert_int_equal(ds_writer_add_ids(w, 1, more, 1), -EOPNOTSUPP);
		assert_int_equal(ds_writer_close(w, NULL), 0);
	}
	close(fds[0]);
}

static void write_bytes(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	fclose(f);
}

static void t_perfdata_bad(void **state)
{
	struct sbuf s = { 0 };
	struct ds_reader *rd;
	char eb[256];
	struct ds_reader_opts ro = { .sz = sizeof(ro), .errbuf = eb, .errbuf_len = sizeof(eb) };
	const struct perf_event_header *h;
	uint8_t *file;
	size_t len;
	FILE *f;
	int ret;

	(void)state;
	sb_dsample(&s, 3, 10, 0, 0, 0x5);
	sb_dsample(&s, 3, 11, 0, 0, 0x5);
	assert_int_equal(sb_write_file(&s, tpath("ok.data")), 0);
	f = fopen(tpath("ok.data"), "rb");
	file = malloc(1 << 16);
	len = fread(file, 1, 1 << 16, f);
	fclose(f);

	write_bytes(tpath("b1"), "NOTPERF!and some more bytes", 27);
	assert_int_equal(ds_reader_open(&rd, tpath("b1"), &ro), -EINVAL);
	assert_non_null(strstr(eb, "bad magic"));
	write_bytes(tpath("b2"), file, 60);
	assert_int_equal(ds_reader_open(&rd, tpath("b2"), &ro), -EINVAL);
	assert_non_null(strstr(eb, "truncated header"));
	{	/* absurd attr_size */
		uint64_t v = 1ULL << 40;
		uint8_t *c = malloc(len);

		memcpy(c, file, len);
		memcpy(c + 16, &v, 8);
		write_bytes(tpath("b3"), c, len);
		assert_int_equal(ds_reader_open(&rd, tpath("b3"), &ro), -EINVAL);
		assert_non_null(strstr(eb, "attr section"));
		/* data section larger than the file: cut short, read up to
		 * the end of the file, the bytes missing said */
		memcpy(c, file, len);
		memcpy(c + 48, &v, 8);
		write_bytes(tpath("b4"), c, len);
		assert_int_equal(ds_reader_open(&rd, tpath("b4"), &ro), 0);
		assert_true(ds_reader_truncated(rd) > v - len);
		ds_reader_close(rd);
		/* data section starting past the end of the file */
		memcpy(c, file, len);
		v = len + 64;
		memcpy(c + 40, &v, 8);
		write_bytes(tpath("b4"), c, len);
		assert_int_equal(ds_reader_open(&rd, tpath("b4"), &ro), -EINVAL);
		assert_non_null(strstr(eb, "past end of file"));
		free(c);
	}
	{	/* record of size 0 in the data section */
		uint64_t doff;
		uint8_t *c = malloc(len);

		memcpy(c, file, len);
		memcpy(&doff, c + 40, 8);
		memset(c + doff + 6, 0, 2);
		write_bytes(tpath("b5"), c, len);
		assert_int_equal(ds_reader_open(&rd, tpath("b5"), &ro), 0);
		assert_int_equal(ds_reader_next(rd, &h), -EINVAL);
		assert_non_null(strstr(ds_reader_error(rd), "size 0"));
		ds_reader_close(rd);
		/* record size past the data section */
		memcpy(c, file, len);
		c[doff + 6] = 0xf0;
		c[doff + 7] = 0xff;
		write_bytes(tpath("b6"), c, len);
		assert_int_equal(ds_reader_open(&rd, tpath("b6"), &ro), 0);
		ret = ds_reader_next(rd, &h);
		assert_int_equal(ret, -EINVAL);
		assert_non_null(strstr(ds_reader_error(rd), "past the data"));
		ds_reader_close(rd);
		free(c);
	}
	assert_int_equal(ds_reader_open(&rd, tpath("does-not-exist"), &ro), -ENOENT);
	free(file);
	free(s.b);
}

/* ds_pipeline: what a consumer of the library reads a recording through
 * (reader, merge, stitcher, symbols in one object). */
struct pl_seen {
	struct ds_pipeline *p;
	unsigned kinds[DS_OUT_KERNEL_ONLY + 1];
	unsigned abc;		/* samples of tid 3 named by its COMM */
	char warn[512];
	unsigned warns;
	int stop;		/* return this at the first stitched sample */
};

static int pl_cb(void *arg, const struct ds_stitch_out *o)
{
	struct pl_seen *w = arg;

	assert_non_null(ds_pipeline_reader(w->p));
	if (o->kind != DS_OUT_RECORD && o->ev->tid == 3 &&
	    !strcmp(ds_pipeline_comm(w->p, o->ev), "abc"))
		w->abc++;
	w->kinds[o->kind]++;
	return o->kind == DS_OUT_STITCHED ? w->stop : 0;
}

static void pl_warn(void *arg, const char *msg)
{
	struct pl_seen *w = arg;

	snprintf(w->warn, sizeof(w->warn), "%s", msg);
	w->warns++;
}

static struct ds_pipeline *pl_open(struct pl_seen *w, const char *path, int want)
{
	struct ds_pipeline_opts o = {
		.sz = sizeof(o), .cb = pl_cb, .cb_arg = w, .warn = pl_warn, .warn_arg = w,
		.symbols = true,
	};

	assert_int_equal(ds_pipeline_new(&w->p, &o), 0);
	assert_int_equal(ds_pipeline_open(w->p, path), want);
	return w->p;
}

static void t_pipeline(void **state)
{
	uint64_t classic[] = { PERF_CONTEXT_USER, UADDR(1), UADDR(2) };
	struct ds_pipeline_summary sum = { .sz = sizeof(sum) };
	struct pl_seen w;
	struct sbuf s = { 0 };
	struct ds_pipeline *p;
	uint8_t *file;
	size_t len;
	FILE *f;

	(void)state;
	sb_comm(&s, 3, "abc", 1);
	sb_dsample(&s, 3, 10, 0, 0, 0x5);
	sb_dsample(&s, 3, 11, 0, 0, 0x5);
	sb_dsample(&s, 4, 12, 1, 0, 0x7);	/* its record never comes */
	sb_lost(&s, 3, 13, 1);
	sb_round(&s);
	sb_deferred(&s, 3, 20, 1, 0x5, 0, 2);	/* both of tid 3 stitched */
	sb_sample(&s, 3, 30, 0, classic, 3);
	sb_round(&s);
	assert_int_equal(sb_write_file(&s, tpath("pl.data")), 0);

	memset(&w, 0, sizeof(w));
	p = pl_open(&w, tpath("pl.data"), 0);
	assert_non_null(ds_pipeline_symbols(p));
	assert_int_equal(ds_pipeline_run(p), 0);
	assert_string_equal(ds_pipeline_error(p), "");
	assert_int_equal(ds_pipeline_get_summary(p, &sum), 0);
	assert_int_equal(sum.sz, sizeof(sum));
	assert_int_equal(sum.samples, 4);
	assert_int_equal(sum.deferred, 1);
	assert_int_equal(sum.stitched, 2);
	assert_int_equal(sum.complete, 1);
	assert_int_equal(sum.kernel_only, 1);
	assert_int_equal(sum.unm_end, 1);
	assert_int_equal(sum.lost_events, 3);
	assert_int_equal(sum.lost_records, 1);
	assert_int_equal(sum.truncated, 0);
	assert_false(sum.pipe_mode);
	assert_int_equal(w.kinds[DS_OUT_STITCHED], 2);
	assert_int_equal(w.kinds[DS_OUT_KERNEL_ONLY], 1);
	assert_int_equal(w.kinds[DS_OUT_COMPLETE], 1);
	assert_int_equal(w.abc, 3);	/* two stitched, one classic */
	assert_int_equal(w.warns, 0);
	/* once per pipeline, one input per pipeline */
	assert_int_equal(ds_pipeline_run(p), -EINVAL);
	assert_int_equal(ds_pipeline_open(p, tpath("pl.data")), -EBUSY);
	{	/* an older caller's smaller summary: only what fits written */
		struct { struct ds_pipeline_summary s; uint64_t guard; } old;

		memset(&old, 0xab, sizeof(old));
		old.s.sz = DS_SZ_MIN(struct ds_pipeline_summary, samples);
		assert_int_equal(ds_pipeline_get_summary(p, &old.s), 0);
		assert_int_equal(old.s.samples, 4);
		assert_int_equal(old.s.deferred, 0xababababababababULL);
		old.s.sz = sizeof(size_t);
		assert_int_equal(ds_pipeline_get_summary(p, &old.s), -EINVAL);
	}
	ds_pipeline_free(p);

	/* the callback stops the run: its error, no message */
	memset(&w, 0, sizeof(w));
	w.stop = -ECANCELED;
	p = pl_open(&w, tpath("pl.data"), 0);
	assert_int_equal(ds_pipeline_run(p), -ECANCELED);
	assert_string_equal(ds_pipeline_error(p), "");
	assert_int_equal(w.kinds[DS_OUT_STITCHED], 1);
	ds_pipeline_free(p);

	/* an fd (here a pipe-mode-capable open), no options */
	assert_int_equal(ds_pipeline_new(&p, NULL), 0);
	assert_int_equal(ds_pipeline_open_fd(p, open(tpath("pl.data"), O_RDONLY), "fd"), 0);
	assert_null(ds_pipeline_symbols(p));
	assert_int_equal(ds_pipeline_run(p), 0);
	assert_int_equal(ds_pipeline_get_summary(p, &sum), 0);
	assert_int_equal(sum.stitched, 2);
	ds_pipeline_free(p);

	f = fopen(tpath("pl.data"), "rb");
	assert_non_null(f);
	file = malloc(1 << 16);
	len = fread(file, 1, 1 << 16, f);
	fclose(f);

	/* bad input: a header cut short, the reason naming the file */
	write_bytes(tpath("pl-hdr.data"), file, 60);
	memset(&w, 0, sizeof(w));
	p = pl_open(&w, tpath("pl-hdr.data"), -EINVAL);
	assert_non_null(strstr(ds_pipeline_error(p), "truncated header"));
	assert_null(ds_pipeline_reader(p));
	assert_int_equal(ds_pipeline_run(p), -EINVAL);
	assert_int_equal(ds_pipeline_get_summary(p, &sum), 0);
	assert_int_equal(sum.samples, 0);
	ds_pipeline_free(p);
	/* a file cut in its data section: read up to there, warned about */
	{
		uint64_t doff;

		memcpy(&doff, file + 40, 8);
		write_bytes(tpath("pl-cut.data"), file, doff + 100);
		memset(&w, 0, sizeof(w));
		p = pl_open(&w, tpath("pl-cut.data"), 0);
		assert_non_null(strstr(w.warn, "is truncated"));
		assert_int_equal(ds_pipeline_run(p), 0);
		assert_int_equal(ds_pipeline_get_summary(p, &sum), 0);
		assert_true(sum.truncated > 0);
		assert_true(sum.samples < 4);
		ds_pipeline_free(p);
		/* a record of size 0: -EINVAL, the reader's reason */
		memset(file + doff + 6, 0, 2);
		write_bytes(tpath("pl-bad.data"), file, len);
		memset(&w, 0, sizeof(w));
		p = pl_open(&w, tpath("pl-bad.data"), 0);
		assert_int_equal(ds_pipeline_run(p), -EINVAL);
		assert_non_null(strstr(ds_pipeline_error(p), "pl-bad.data: "));
		assert_non_null(strstr(ds_pipeline_error(p), "size 0"));
		ds_pipeline_free(p);
	}
	/* a kallsyms that was asked for and cannot be read: open fails */
	{
		char ks[256];
		struct ds_pipeline_opts o = { .sz = sizeof(o), .symbols = true, .kallsyms = ks };

		snprintf(ks, sizeof(ks), "%s", tpath("no-kallsyms"));	/* tpath's buffer is reused */
		assert_int_equal(ds_pipeline_new(&p, &o), 0);
		assert_int_equal(ds_pipeline_open(p, tpath("pl.data")), -ENOENT);
		assert_non_null(strstr(ds_pipeline_error(p), "cannot read kallsyms"));
		ds_pipeline_free(p);
	}
	{	/* opts of a newer library with an unknown field set */
		struct { struct ds_pipeline_opts o; uint64_t more; } big;

		memset(&big, 0, sizeof(big));
		big.o.sz = sizeof(big);
		big.more = 1;
		assert_int_equal(ds_pipeline_new(&p, &big.o), -E2BIG);
		assert_null(p);
	}
	assert_int_equal(ds_pipeline_new(&p, NULL), 0);
	assert_int_equal(ds_pipeline_open_fd(p, -1, "x"), -EBADF);
	ds_pipeline_free(p);
	free(file);
	free(s.b);
}

static void t_merge(void **state)
{
	struct ds_merge *m;
	const struct perf_event_header *h;
	struct sbuf s = { 0 };
	uint64_t times[] = { 10, 30, 50, 20, 40, 60 };
	uint32_t cpus[] = { 0, 0, 0, 1, 1, 1 };
	uint64_t got[6];
	int n = 0;

	(void)state;
	sb_unknown(&s, 100);
	assert_int_equal(ds_merge_new(&m, NULL), 0);
	for (int i = 0; i < 6; i++)
		assert_int_equal(ds_merge_push(m, (const void *)s.b, times[i], cpus[i]), 0);
	assert_int_equal(ds_merge_pop(m, &h), 0);	/* nothing final yet */
	ds_merge_round(m);				/* watermark = 0 */
	assert_int_equal(ds_merge_pop(m, &h), 0);
	ds_merge_round(m);				/* watermark = 60 */
	while (ds_merge_pop(m, &h) == 1)
		got[n++] = ds_merge_pop_time(m);
	assert_int_equal(n, 6);
	for (int i = 0; i < 6; i++)
		assert_int_equal(got[i], 10 * (i + 1));
	assert_int_equal(ds_merge_out_of_order(m), 0);
	ds_merge_free(m);
	/* bounded: more than max_pending releases the oldest */
	assert_int_equal(ds_merge_new(&m, &(struct ds_merge_opts){ .sz = sizeof(struct ds_merge_opts),
						      .max_pending = 2 }), 0);
	for (int i = 0; i < 3; i++)
		ds_merge_push(m, (const void *)s.b, 100 - (uint64_t)i, 0);
	assert_int_equal(ds_merge_pop(m, &h), 1);
	assert_int_equal(ds_merge_pop_time(m), 98);
	assert_int_equal(ds_merge_pop(m, &h), 0);
	ds_merge_free(m);
	free(s.b);
}

/* Without rounds, two interleaved sequences on one CPU (every other record
 * goes back in time): 160k records must merge in order, quickly (the old
 * sorted-list insertion was quadratic here). */
static void t_merge_backwards(void **state)
{
	enum { N = 160000 };
	struct ds_merge *m;
	const struct perf_event_header *h;
	struct sbuf s = { 0 };
	struct timespec t0, t1;
	uint64_t prev = 0;
	size_t n = 0;
	double secs;

	(void)state;
	sb_unknown(&s, 100);
	alarm(120);	/* a regression fails instead of hanging the check */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(ds_merge_new(&m, NULL), 0);
	for (uint64_t i = 0; i < N / 2; i++) {
		assert_int_equal(ds_merge_push(m, (const void *)s.b, i + 1, 0), 0);
		assert_int_equal(ds_merge_push(m, (const void *)s.b, N + i, 0), 0);
	}
	assert_int_equal(ds_merge_pop(m, &h), 0);	/* no round: nothing final */
	ds_merge_flush(m);
	while (ds_merge_pop(m, &h) == 1) {
		assert_true(ds_merge_pop_time(m) >= prev);
		prev = ds_merge_pop_time(m);
		n++;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	alarm(0);
	assert_int_equal(n, N);
	assert_int_equal(ds_merge_out_of_order(m), 0);
	ds_merge_free(m);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	/* ~0.1 s with the heap under ASan, ~20 s with the old sorted-list
	 * insertion: 5 s leaves a busy machine 50 times the room */
	assert_true(secs < 5.0);
	/* bounded memory without rounds: max_pending releases the smallest */
	assert_int_equal(ds_merge_new(&m, &(struct ds_merge_opts){ .sz = sizeof(struct ds_merge_opts),
						      .max_pending = 1000 }), 0);
	n = 0;
	for (uint64_t i = 0; i < 5000; i++) {
		assert_int_equal(ds_merge_push(m, (const void *)s.b, 5000 - i, 0), 0);
		while (ds_merge_pop(m, &h) == 1)
			n++;
	}
	assert_int_equal(ds_merge_pending(m), 1000);
	assert_int_equal(n, 4000);
	ds_merge_free(m);
	/* equal times: by cpu, then in arrival order */
	assert_int_equal(ds_merge_new(&m, NULL), 0);
	{
		struct sbuf t = { 0 };
		uint32_t cpus[] = { 1, 0, 1, 0 };
		uint64_t tags[] = { 10, 20, 11, 21 }, want[] = { 20, 21, 10, 11 };
		int k = 0;

		for (int i = 0; i < 4; i++) {
			t.len = 0;
			sb_unknown(&t, 100);
			memcpy(t.b + 8, &tags[i], 8);
			assert_int_equal(ds_merge_push(m, (const void *)t.b, 7, cpus[i]), 0);
		}
		ds_merge_flush(m);
		while (ds_merge_pop(m, &h) == 1) {
			uint64_t tag;

			memcpy(&tag, (const uint8_t *)h + 8, 8);
			assert_int_equal(tag, want[k++]);
		}
		assert_int_equal(k, 4);
		free(t.b);
	}
	ds_merge_free(m);
	free(s.b);
}

/* Pops take the top of one heap: with 4,096 CPU queues (the most the merge
 * keeps) a pop must not scan every queue (1M records x 4,096 queues took
 * tens of seconds; the heap needs well under one). */
static void t_merge_many_cpus(void **state)
{
	enum { NCPU = 4096, N = 1 << 20 };
	struct ds_merge *m;
	struct sbuf s = { 0 };
	const struct perf_event_header *h;
	struct timespec t0, t1;
	uint64_t last = 0, n = 0;
	double secs;

	(void)state;
	sb_unknown(&s, 100);
	assert_int_equal(ds_merge_new(&m, &(struct ds_merge_opts){ .sz = sizeof(struct ds_merge_opts),
						      .max_pending = N + 1 }), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	alarm(120);
	for (uint64_t i = 0; i < N; i++) {
		/* every CPU busy, each queue in order, a few records late */
		uint64_t t = i % 97 == 0 && i > 5000 ? i - 5000 : i;

		assert_int_equal(ds_merge_push(m, (const void *)s.b, t,
					       (uint32_t)(i % NCPU)), 0);
		if (i % 4096 == 4095) {
			ds_merge_round(m);
			while (ds_merge_pop(m, &h) == 1)
				n++;
		}
	}
	ds_merge_flush(m);
	while (ds_merge_pop(m, &h) == 1)
		n++;
	alarm(0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(n, N);
	(void)last;
	secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	print_message("merge of 1M records over 4096 CPUs: %.2f s\n", secs);
	assert_true(secs < 10.0);
	ds_merge_free(m);
	free(s.b);
}

/* perf record --call-graph dwarf: no user part in the callchain, the user
 * ip in PERF_SAMPLE_REGS_USER (and the stack dump after it).  The first
 * user frame must not be dropped: the regs' ip, else the sample ip of a
 * user-mode sample; a chain with user ips is left alone. */
struct chain_cap {
	uint64_t c[16];
	uint64_t nr;
	int n;
};

static int chain_cb(void *arg, const struct ds_stitch_out *o)
{
	struct chain_cap *cc = arg;

	if (o->kind != DS_OUT_COMPLETE)
		return 0;
	assert_true(o->nr <= 16);
	memcpy(cc->c, o->chain, o->nr * 8);
	cc->nr = o->nr;
	cc->n++;
	return 0;
}

static void dwarf_sample(struct sbuf *s, uint16_t misc, uint64_t ip, const uint64_t *chain,
			 uint64_t nr, uint64_t abi, uint64_t uip)
{
	size_t at = sb_begin(s, PERF_RECORD_SAMPLE, misc);

	sb_u64(s, ip);
	sb_u32x2(s, 9, 9);
	sb_u64(s, 100);			/* time */
	sb_u64(s, 1);			/* period */
	sb_u64(s, nr);
	for (uint64_t i = 0; i < nr; i++)
		sb_u64(s, chain[i]);
	sb_u64(s, abi);			/* REGS_USER: abi, regs[popcount(mask)] */
	if (abi) {
		for (int r = 0; r < 10; r++)
			sb_u64(s, r == 8 ? uip : 0x1000 + (uint64_t)r);	/* 8: ip */
	}
	sb_u64(s, 16);			/* STACK_USER: size, data, dyn_size */
	sb_u64(s, 0);
	sb_u64(s, 0);
	sb_u64(s, 16);
	sb_end(s, at);
}

static void t_dwarf_user_ip(void **state)
{
	struct perf_event_attr a;
	struct ds_stitcher *st;
	struct chain_cap cc;
	struct sbuf s = { 0 };
	struct ds_event ev = { .sz = sizeof(ev) };
	uint64_t kchain[] = { PERF_CONTEXT_KERNEL, KADDR(1), KADDR(2) };
	uint64_t uchain[] = { PERF_CONTEXT_USER, UADDR(5), UADDR(6) };
	uint64_t ctxonly[] = { PERF_CONTEXT_USER };

	(void)state;
	memset(&a, 0, sizeof(a));
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER |
			PERF_SAMPLE_STACK_USER;
	a.sample_regs_user = 0x3ff;	/* regs 0..9; the ip (8) is the 9th */
	memset(&cc, 0, sizeof(cc));
	assert_int_equal(ds_stitch_new(&st, &(struct ds_stitch_opts){ .sz = sizeof(struct ds_stitch_opts), .cb = chain_cb, .cb_arg = &cc }), 0);
	/* kernel-mode sample: kernel chain + the user regs' ip */
	dwarf_sample(&s, PERF_RECORD_MISC_KERNEL, KADDR(1), kchain, 3, 2, UADDR(0x77));
	assert_int_equal(ds_event_parse_attr(s.b, s.len, &a, false, &ev), 0);
	assert_true(ev.have & DS_EV_USER_IP);
	assert_int_equal(ev.user_ip, UADDR(0x77));
	assert_int_equal(ds_stitch_event(st, &ev), 0);
	assert_int_equal(cc.nr, 5);
	assert_true(cc.c[3] == PERF_CONTEXT_USER);
	assert_int_equal(cc.c[4], UADDR(0x77));
	/* user-mode sample with an empty chain, no regs (abi NONE): the ip */
	s.len = 0;
	dwarf_sample(&s, PERF_RECORD_MISC_USER, UADDR(0x42), NULL, 0, 0, 0);
	assert_int_equal(ds_event_parse_attr(s.b, s.len, &a, false, &ev), 0);
	assert_false(ev.have & DS_EV_USER_IP);
	assert_int_equal(ds_stitch_event(st, &ev), 0);
	assert_int_equal(cc.nr, 2);
	assert_true(cc.c[0] == PERF_CONTEXT_USER);
	assert_int_equal(cc.c[1], UADDR(0x42));
	/* only a context marker: the ip too */
	s.len = 0;
	dwarf_sample(&s, PERF_RECORD_MISC_USER, UADDR(0x43), ctxonly, 1, 0, 0);
	assert_int_equal(ds_event_parse_attr(s.b, s.len, &a, false, &ev), 0);
	assert_int_equal(ds_stitch_event(st, &ev), 0);
	assert_int_equal(cc.nr, 3);
	assert_int_equal(cc.c[2], UADDR(0x43));
	/* a chain with user ips stays as it is */
	s.len = 0;
	dwarf_sample(&s, PERF_RECORD_MISC_USER, UADDR(5), uchain, 3, 2, UADDR(5));
	assert_int_equal(ds_event_parse_attr(s.b, s.len, &a, false, &ev), 0);
	assert_int_equal(ds_stitch_event(st, &ev), 0);
	assert_int_equal(cc.nr, 3);
	assert_int_equal(cc.c[1], UADDR(5));
	/* a register dump that does not fit the record */
	a.sample_regs_user = ~0ULL;
	assert_int_equal(ds_event_parse_attr(s.b, s.len, &a, false, &ev), -EINVAL);
	assert_int_equal(cc.n, 4);
	ds_stitch_free(st);
	free(s.b);
}

/* The library's one hash table (ids, tasks, pids, dsos, stacks): random
 * puts and deletes against a plain array, with colliding keys told apart
 * by eq(). */
static bool val_is(const void *val, const void *arg)
{
	return val == arg;
}

static void t_htab(void **state)
{
	enum { N = 20000 };
	static uint64_t keys[N];
	static bool live[N];
	struct ds_htab t = { 0 };
	unsigned seed = 12345;
	size_t nlive = 0;

	(void)state;
	for (int i = 0; i < N; i++)
		keys[i] = (uint64_t)(i % 5000) * 0x9e3779b97f4a7c15ULL;	/* dup keys */
	for (int round = 0; round < 200000; round++) {
		int i;

		seed = seed * 1103515245 + 12345;
		i = (int)((seed >> 8) % N);
		if (!live[i]) {
			assert_int_equal(ds_htab_put(&t, keys[i], &keys[i]), 0);
			live[i] = true;
			nlive++;
		} else {
			assert_ptr_equal(ds_htab_del(&t, keys[i], val_is, &keys[i]), &keys[i]);
			live[i] = false;
			nlive--;
		}
		if (round % 10007 == 0) {
			for (int k = 0; k < N; k++)
				assert_true(!!ds_htab_get(&t, keys[k], val_is, &keys[k]) == live[k]);
		}
	}
	assert_int_equal(t.used, nlive);
	assert_int_equal(t.ix.used, nlive);
	for (int k = 0; k < N; k++)
		assert_true(!!ds_htab_get(&t, keys[k], val_is, &keys[k]) == live[k]);
	for (size_t k = 0; k < t.used; k++)	/* the dense entries: the live ones */
		assert_true(live[(uint64_t *)t.e[k].val - keys]);
	assert_null(ds_htab_get(&t, 7, NULL, NULL));
	assert_null(ds_htab_del(&t, 7, NULL, NULL));
	ds_htab_free(&t);
	assert_null(ds_htab_get(&t, keys[0], NULL, NULL));
}

/* sz: a caller built against an older, smaller struct (here: one that
 * ends before the last fields of today's) keeps working, and the library
 * neither writes nor reads past its sz. */
static void t_sz_old_caller(void **state)
{
	union {
		struct ds_event ev;
		unsigned char b[sizeof(struct ds_event) + 64];
	} e;
	union {
		struct ds_sym_info si;
		unsigned char b[sizeof(struct ds_sym_info) + 64];
	} y;
	size_t ev_old = offsetof(struct ds_event, user_ip);	/* user_ip came later */
	size_t si_old = offsetof(struct ds_sym_info, build_id);	/* so did build_id */
	struct sbuf s = { 0 };
	struct ds_stitcher *st;
	struct ds_symbols *sym;
	struct ds_frames fr = { .sz = offsetof(struct ds_frames, store) };
	struct ds_ring r = { .sz = offsetof(struct ds_ring, scratch) };
	char buf[64];
	uint64_t chain[] = { PERF_CONTEXT_USER, 0x1234 };

	(void)state;
	/* parsing into it: the fields within sz, nothing past them */
	sb_dsample(&s, 42, 1000, 3, 0, 0xabc);
	memset(e.b, 0xa5, sizeof(e.b));
	e.ev.sz = ev_old;
	assert_int_equal(ds_event_parse(s.b, s.len, TST_ST, true, &e.ev), 0);
	assert_int_equal(e.ev.sz, ev_old);
	assert_int_equal(e.ev.type, PERF_RECORD_SAMPLE);
	assert_int_equal(e.ev.tid, 42);
	assert_int_equal(e.ev.time, 1000);
	assert_int_equal(e.ev.cpu, 3);
	for (size_t i = ev_old; i < sizeof(e.b); i++)
		assert_int_equal(e.b[i], 0xa5);
	/* a newer, larger one: what this library does not know is zeroed */
	memset(e.b, 0xa5, sizeof(e.b));
	e.ev.sz = sizeof(e.b);
	assert_int_equal(ds_event_parse(s.b, s.len, TST_ST, true, &e.ev), 0);
	assert_int_equal(e.ev.sz, sizeof(e.b));
	assert_int_equal(e.ev.cookie, 0xabc);
	for (size_t i = sizeof(struct ds_event); i < sizeof(e.b); i++)
		assert_int_equal(e.b[i], 0);
	/* too small to hold even hdr: refused, nothing written */
	memset(e.b, 0xa5, sizeof(e.b));
	e.ev.sz = sizeof(size_t);
	assert_int_equal(ds_event_parse(s.b, s.len, TST_ST, true, &e.ev), -EINVAL);
	for (size_t i = sizeof(size_t); i < sizeof(e.b); i++)
		assert_int_equal(e.b[i], 0xa5);

	/* read by the stitcher: a LOST record whose count lies past the old sz
	 * (garbage there) is counted as a record with 0 events lost */
	s.len = 0;
	sb_lost(&s, 7, 50, 0);
	memset(e.b, 0xa5, sizeof(e.b));
	e.ev.sz = sizeof(e.ev);
	assert_int_equal(ds_event_parse(s.b, s.len, TST_ST, true, &e.ev), 0);
	assert_int_equal(e.ev.lost, 7);
	e.ev.sz = offsetof(struct ds_event, lost);
	assert_int_equal(ds_stitch_new(&st, NULL), 0);
	assert_int_equal(ds_stitch_get_stats(st)->sz, sizeof(struct ds_stitch_stats));
	assert_int_equal(ds_stitch_event(st, &e.ev), 0);
	assert_int_equal(ds_stitch_get_stats(st)->lost_records, 1);
	assert_int_equal(ds_stitch_get_stats(st)->lost_events, 0);
	e.ev.sz = sizeof(e.ev);
	assert_int_equal(ds_stitch_event(st, &e.ev), 0);
	assert_int_equal(ds_stitch_get_stats(st)->lost_events, 7);
	e.ev.sz = 4;
	assert_int_equal(ds_stitch_event(st, &e.ev), -EINVAL);
	ds_stitch_free(st);

	/* a symbol lookup into an old ds_sym_info: name and the fields before
	 * build_id, nothing past */
	assert_int_equal(ds_symbols_new(&sym, NULL), 0);
	memset(y.b, 0xa5, sizeof(y.b));
	y.si.sz = si_old;
	assert_int_equal(ds_symbols_lookup(sym, 1, 0x1234, false, &y.si, buf, sizeof(buf)), 0);
	assert_int_equal(y.si.sz, si_old);
	assert_string_equal(y.si.name, "[unknown]");
	assert_null(y.si.dso);
	for (size_t i = si_old; i < sizeof(y.b); i++)
		assert_int_equal(y.b[i], 0xa5);
	y.si.sz = offsetof(struct ds_sym_info, name);	/* no room for name */
	assert_int_equal(ds_symbols_lookup(sym, 1, 0x1234, false, &y.si, buf, sizeof(buf)),
			 -EINVAL);
	/* the library's own frames carry its sz */
	assert_int_equal(ds_symbols_frame_info(sym, 0)->sz, sizeof(struct ds_sym_info));
	/* ds_frames and ds_ring need every field they have today */
	assert_int_equal(ds_symbolize_chain(sym, 1, chain, 2, &fr), -EINVAL);
	ds_frames_free(&fr);	/* nothing to free, nothing written */
	assert_int_equal(fr.sz, offsetof(struct ds_frames, store));
	assert_int_equal(ds_ring_init(&r, buf, sizeof(buf), 16), -EINVAL);
	ds_symbols_free(sym);

	/* ds_writer_info from an older caller: its build-ids lie past its sz
	 * (a pointer that would crash if read): none written; a bad sz: the
	 * file still closed, the error returned */
	{
		char path[] = "/tmp/ds_sz_XXXXXX";
		int fd = mkstemp(path);
		struct ds_writer_info wi = { .sz = offsetof(struct ds_writer_info, build_ids),
					     .hostname = "h", .build_ids = (const void *)8,
					     .nr_build_ids = 5 };
		struct ds_attr a = { .sz = sizeof(a),
				   .attr = { .size = sizeof(a.attr), .sample_type = TST_ST } };
		struct ds_writer *w;
		struct ds_reader *rd;
		size_t nb = 1;

		assert_true(fd >= 0);
		assert_int_equal(ds_writer_open_fd(&w, fd, &a, 1, NULL), 0);
		assert_int_equal(ds_writer_close(w, &wi), 0);
		assert_int_equal(ds_reader_open(&rd, path, NULL), 0);
		ds_reader_build_ids(rd, &nb);
		assert_int_equal(nb, 0);
		ds_reader_close(rd);
		assert_int_equal(ds_writer_open(&w, path, &a, 1, NULL), 0);
		wi.sz = 1;
		assert_int_equal(ds_writer_close(w, &wi), -EINVAL);
		assert_int_equal(ds_reader_open(&rd, path, NULL), 0);
		ds_reader_close(rd);
		unlink(path);
	}

	/* arrays (attrs, build-ids) of a newer caller's larger elements: the
	 * stride is their sz; the reader's carry the library's sz; elements
	 * of mixed sizes are refused */
	{
		char path[] = "/tmp/ds_sz_XXXXXX";
		int fd = mkstemp(path);
		struct {
			struct ds_build_id b;
			uint64_t newer;
		} bb[2];
		struct {
			struct ds_attr a;
			uint64_t newer;
		} ba[2];
		struct ds_writer_info wi = { .sz = sizeof(wi) };
		const struct ds_build_id *bids;
		struct ds_writer *w;
		struct ds_reader *rd;
		char nb[32];
		size_t nbid;

		assert_true(fd >= 0);
		memset(bb, 0, sizeof(bb));
		memset(ba, 0, sizeof(ba));
		for (int i = 0; i < 2; i++) {
			bb[i].b.sz = sizeof(bb[i]);
			bb[i].b.pid = -1;
			bb[i].b.size = 20;
			bb[i].b.id[0] = (uint8_t)(i + 1);
			bb[i].b.path = i ? "/b" : "/a";
			bb[i].newer = 0xdead;
			ba[i].a.sz = sizeof(ba[i]);
			ba[i].a.attr.size = sizeof(ba[i].a.attr);
			ba[i].a.attr.sample_type = TST_ST;
			ba[i].a.name = i ? "two" : "one";
			ba[i].newer = 0xdead;
		}
		wi.build_ids = &bb[0].b;
		wi.nr_build_ids = 2;
		assert_string_equal(ds_attr_name(&ba[1].a, nb, sizeof(nb)), "two");
		assert_int_equal(ds_writer_open_fd(&w, fd, &ba[0].a, 2, NULL), 0);
		assert_int_equal(ds_writer_close(w, &wi), 0);
		assert_int_equal(ds_reader_open(&rd, path, NULL), 0);
		assert_int_equal(ds_reader_nr_attrs(rd), 2);
		assert_int_equal(ds_reader_attr(rd, 1)->sz, sizeof(struct ds_attr));
		assert_string_equal(ds_attr_name(ds_reader_attr(rd, 1), nb, sizeof(nb)), "two");
		bids = ds_reader_build_ids(rd, &nbid);
		assert_int_equal(nbid, 2);
		assert_int_equal(bids[1].sz, sizeof(struct ds_build_id));
		assert_string_equal(bids[1].path, "/b");
		assert_int_equal(bids[1].id[0], 2);
		ds_reader_close(rd);
		ba[1].a.sz = sizeof(struct ds_attr);	/* mixed sizes */
		assert_int_equal(ds_writer_open(&w, path, &ba[0].a, 2, NULL), -EINVAL);
		ba[1].a.sz = sizeof(ba[1]);
		bb[1].b.sz = 4;
		assert_int_equal(ds_writer_open(&w, path, &ba[0].a, 2, NULL), 0);
		assert_int_equal(ds_writer_close(w, &wi), -EINVAL);
		unlink(path);
	}
	free(s.b);
}

/* The options structs of the long positional calls: an older, smaller
 * struct gets 0 for the newer fields, a newer one with fields this library
 * does not know set is refused, and the thin wrappers give the same. */
static void t_add_opts(void **state)
{
	struct {
		struct ds_fold_chain_opts o;
		uint64_t newer;
	} big;
	uint64_t chain[] = { PERF_CONTEXT_USER, 0x1234, 0x5678 };
	struct ds_fold *fa, *fb;
	struct ds_symbols *sym;
	char *pa = NULL, *pb = NULL;
	size_t la = 0, lb = 0;
	FILE *f;

	(void)state;
	assert_int_equal(ds_symbols_new(&sym, NULL), 0);
	assert_int_equal(ds_fold_new(&fa), 0);
	assert_int_equal(ds_fold_new(&fb), 0);
	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big.o);
	big.o.comm = "app";
	big.o.pid = 1;
	big.o.chain = chain;
	big.o.nr = 3;
	big.o.root = "[root]";
	big.o.samples = 2;
	big.o.weight = 30;
	assert_int_equal(ds_fold_add_chain_opts(fa, sym, &big.o), 0);
	assert_int_equal(ds_fold_add_chain(fb, sym, "app", 1, chain, 3, "[root]", 2, 30), 0);
	big.o.sz = sizeof(big);	/* newer, its new field 0: fine */
	assert_int_equal(ds_fold_add_chain_opts(fa, sym, &big.o), 0);
	assert_int_equal(ds_fold_add_chain(fb, sym, "app", 1, chain, 3, "[root]", 2, 30), 0);
	big.newer = 1;		/* ... set: refused */
	assert_int_equal(ds_fold_add_chain_opts(fa, sym, &big.o), -E2BIG);
	big.o.sz = 2;
	assert_int_equal(ds_fold_add_chain_opts(fa, sym, &big.o), -EINVAL);
	assert_int_equal(ds_fold_add_chain_opts(fa, sym, NULL), -EINVAL);
	assert_int_equal(ds_fold_samples(fa), 4);
	assert_int_equal(ds_fold_total(fa), 60);
	f = open_memstream(&pa, &la);
	assert_int_equal(ds_fold_write(fa, f), 0);
	fclose(f);
	f = open_memstream(&pb, &lb);
	assert_int_equal(ds_fold_write(fb, f), 0);
	fclose(f);
	assert_string_equal(pa, pb);
	assert_non_null(strstr(pa, "app;[root];"));
	free(pa);
	free(pb);
	ds_fold_free(fa);
	ds_fold_free(fb);
	ds_symbols_free(sym);
}

/* The index table it is built on: deletion by backward shift keeps the
 * rest findable (colliding hashes, indices told apart by eq). */
static bool idx_is(uint32_t idx, const void *arg)
{
	return idx == *(const uint32_t *)arg;
}

static void t_itab_del(void **state)
{
	enum { N = 5000 };
	struct ds_itab t = { 0 };

	(void)state;
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(ds_itab_put(&t, (i % 97) * 0x9e3779b97f4a7c15ULL, i), 0);
	for (uint32_t i = 0; i < N; i += 2)
		assert_int_equal(ds_itab_del(&t, (i % 97) * 0x9e3779b97f4a7c15ULL, idx_is, &i), i);
	assert_int_equal(t.used, N / 2);
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(ds_itab_get(&t, (i % 97) * 0x9e3779b97f4a7c15ULL, idx_is, &i),
				 i % 2 ? (int64_t)i : -1);
	assert_int_equal(ds_itab_del(&t, 0, idx_is, &(uint32_t){ 0 }), -1);
	ds_itab_free(&t);
}

/* Many tasks exiting (hash deletion) must keep the others findable. */
static int count_cb(void *arg, const struct ds_stitch_out *o)
{
	if (o->kind == DS_OUT_STITCHED)
		++*(int *)arg;
	return 0;
}

/* libbpf-style options: sz is the caller's sizeof; an older, smaller
 * struct gets defaults for the rest, a newer one with unknown fields set
 * is refused (-E2BIG), a size without even sz is -EINVAL. */
static void t_opts(void **state)
{
	struct { struct ds_stitch_opts o; uint64_t newer; } big;
	struct ds_stitch_opts small;
	struct ds_stitcher *st;
	struct ds_merge *m;

	(void)state;
	memset(&small, 0, sizeof(small));
	small.sz = offsetof(struct ds_stitch_opts, cb);	/* before cb existed */
	small.max_pending_per_task = 3;
	small.cb = count_cb;	/* beyond sz: ignored */
	assert_int_equal(ds_stitch_new(&st, &small), 0);
	ds_stitch_free(st);
	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big);
	assert_int_equal(ds_stitch_new(&st, &big.o), 0);
	ds_stitch_free(st);
	big.newer = 1;
	assert_int_equal(ds_stitch_new(&st, &big.o), -E2BIG);
	assert_null(st);
	small.sz = 2;
	assert_int_equal(ds_stitch_new(&st, &small), -EINVAL);
	assert_int_equal(ds_merge_new(&m, NULL), 0);
	assert_int_equal(ds_merge_pending(m), 0);
	ds_merge_free(m);
	ds_merge_free(NULL);
	ds_stitch_free(NULL);
}

static void t_stitch_many_tasks(void **state)
{
	struct ds_stitcher *st;
	struct sbuf s = { 0 };
	struct ds_event ev = { .sz = sizeof(ev) };
	int stitched = 0;

	(void)state;
	assert_int_equal(ds_stitch_new(&st, &(struct ds_stitch_opts){ .sz = sizeof(struct ds_stitch_opts), .cb = count_cb, .cb_arg = &stitched }), 0);
	for (uint32_t t = 1; t <= 2000; t++) {
		s.len = 0;
		sb_dsample(&s, t, t, 0, 0, t * 7);
		assert_int_equal(ds_event_parse(s.b, s.len, TST_ST, true, &ev), 0);
		assert_int_equal(ds_stitch_event(st, &ev), 0);
	}
	for (uint32_t t = 1; t <= 2000; t += 2) {
		s.len = 0;
		sb_exit(&s, t, 5000, 0);
		assert_int_equal(ds_event_parse(s.b, s.len, TST_ST, true, &ev), 0);
		assert_int_equal(ds_stitch_event(st, &ev), 0);
	}
	for (uint32_t t = 2; t <= 2000; t += 2) {
		s.len = 0;
		sb_deferred(&s, t, 6000, 0, t * 7, 0, 1);
		assert_int_equal(ds_event_parse(s.b, s.len, TST_ST, true, &ev), 0);
		assert_int_equal(ds_stitch_event(st, &ev), 0);
	}
	assert_int_equal(stitched, 1000);
	assert_int_equal(ds_stitch_get_stats(st)->unm_exit, 1000);
	assert_int_equal(ds_stitch_nr_tasks(st), 1000);
	assert_int_equal(ds_stitch_finish(st), 0);
	assert_int_equal(ds_stitch_get_stats(st)->kernel_only, 1000);
	ds_stitch_free(st);
	free(s.b);
}

__attribute__((noinline)) int ds_test_marker_function(int x)
{
	return x * 3 + 1;
}

/* Feed our own executable's mappings (/proc/self/maps) as MMAP2 records of
 * pid 77; true if ip is in one of them (its file's path into exe). */
static bool map_self(struct ds_symbols *sym, struct sbuf *sp, uint64_t ip, char *exe)
{
	struct sbuf s = *sp;
	struct ds_event ev = { .sz = sizeof(ev) };
	char line[512];
	bool found = false;
	FILE *f;

	/* map our own executable from /proc/self/maps as MMAP2 records */
	f = fopen("/proc/self/maps", "r");
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, e, off;
		char perms[8], path[400] = "";

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %399s", &a, &e, perms, &off,
			   path) < 5 || perms[2] != 'x' || path[0] != '/')
			continue;
		s.len = 0;
		{
			size_t at = sb_begin(&s, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);
			char name[400] = { 0 };

			sb_u32x2(&s, 77, 77);
			sb_u64(&s, a);
			sb_u64(&s, e - a);
			sb_u64(&s, off);
			sb_u64(&s, 0);
			sb_u64(&s, 0);
			sb_u64(&s, 0);
			sb_u32x2(&s, 5, 2);
			strcpy(name, path);
			sb_put(&s, name, (strlen(path) + 8) & ~7u);
			sb_sid(&s, 77, 77, 0, 0);
			sb_end(&s, at);
		}
		assert_int_equal(ds_event_parse(s.b, s.len, TST_ST, true, &ev), 0);
		assert_int_equal(ds_symbols_event(sym, &ev), 0);
		if (a <= ip && ip < e) {
			found = true;
			if (exe)
				strcpy(exe, path);
		}
	}
	fclose(f);
	*sp = s;
	return found;
}


static void t_symbols(void **state)
{
	struct ds_symbols *sym;
	struct sbuf s = { 0 };
	char buf[128];
	FILE *f;
	uint64_t ip = (uint64_t)(uintptr_t)&ds_test_marker_function + 4;
	struct ds_frames fr = { .sz = sizeof(fr) };
	uint64_t chain[] = { PERF_CONTEXT_KERNEL, 0xffffffff81000150ULL, PERF_CONTEXT_USER,
			     ip };
	bool found = false;

	(void)state;
	f = fopen(tpath("kallsyms"), "w");
	fputs("ffffffff81000000 T _text\nffffffff81000100 T do_syscall_64\n"
	      "ffffffff81000200 t helper\nffffffff81000300 D some_data\n", f);
	fclose(f);
	assert_int_equal(ds_symbols_new(&sym, tpath("kallsyms")), 0);
	assert_int_equal(ds_symbols_kernel_start(sym), 0xffffffff81000000ULL);
	assert_string_equal(ds_symbols_resolve(sym, 0, 0xffffffff81000150ULL, true, buf,
					       sizeof(buf)), "do_syscall_64");
	assert_string_equal(ds_symbols_resolve(sym, 0, 0xffffffff81000210ULL, true, buf,
					       sizeof(buf)), "helper");
	found = map_self(sym, &s, ip, NULL);
	assert_true(found);
	assert_string_equal(ds_symbols_resolve(sym, 77, ip, false, buf, sizeof(buf)),
			    "ds_test_marker_function");
	assert_string_equal(ds_symbols_resolve(sym, 78, ip, false, buf, sizeof(buf)),
			    "[unknown]");
	assert_int_equal(ds_symbolize_chain(sym, 77, chain, 4, &fr), 0);
	assert_int_equal(fr.nr, 2);
	assert_string_equal(fr.names[0], "ds_test_marker_function");	/* root first */
	assert_string_equal(fr.names[1], "do_syscall_64");
	ds_frames_free(&fr);
	ds_symbols_free(sym);
	free(s.b);
	assert_int_equal(ds_test_marker_function(1), 4);
}

/* Copy from to to as a build would replace it: a new file renamed over. */
static void replace_file(const char *from, const char *to)
{
	char tmp[300], chunk[65536];
	FILE *in = fopen(from, "rb"), *out;
	size_t n;

	snprintf(tmp, sizeof(tmp), "%s.new", to);
	out = fopen(tmp, "wb");
	assert_non_null(in);
	assert_non_null(out);
	while ((n = fread(chunk, 1, sizeof(chunk), in)) > 0)
		assert_int_equal(fwrite(chunk, 1, n, out), n);
	fclose(in);
	assert_int_equal(fclose(out), 0);
	assert_int_equal(rename(tmp, to), 0);
}

/* The executable mapping of a file whose path contains what: its start,
 * file offset and path. */
static bool exec_map(const char *what, uint64_t *start, uint64_t *pgoff, char *path)
{
	char line[600], perms[8];
	unsigned long long a, e, off;
	FILE *f = fopen("/proc/self/maps", "r");
	bool found = false;

	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f)) {
		found = sscanf(line, "%llx-%llx %7s %llx %*s %*s %399s", &a, &e, perms, &off,
			       path) == 5 && perms[2] == 'x' && strstr(path, what);
	}
	fclose(f);
	*start = a;
	*pgoff = off;
	return found;
}

struct rb_warns {
	int n;
	char rec[64], now[64];
};

static void rb_warn(void *arg, const char *path, const char *rec, const char *now)
{
	struct rb_warns *w = arg;

	(void)path;
	w->n++;
	snprintf(w->rec, sizeof(w->rec), "%s", rec);
	snprintf(w->now, sizeof(w->now), "%s", now);
}

/* A session of t_rebuilt: the symbols open, the program's mapping seen. */
static struct ds_symbols *rb_session(const struct ds_symbols_opts *so,
				     const struct ds_event *ev)
{
	struct ds_symbols *sym;

	assert_int_equal(ds_symbols_open(&sym, so), 0);
	assert_int_equal(ds_symbols_event(sym, ev), 0);
	return sym;
}

/* One path, two contents (a program rebuilt in place): objects are kept
 * per path and their symbols read once, at their first address, after the
 * file's build-id was checked against the recorded one.  So a session
 * whose file was replaced before it started shows the recorded object's
 * addresses (one warning), never the new file's names; recorded with the
 * new build-id, the new file is symbolized; and a file replaced during a
 * session does not change what that session shows. */
static void t_rebuilt(void **state)
{
	char exe[400], libc[400], prog[300], pbuf[64], want[64];
	uint64_t ea, eoff, la, loff, base = 0x10000000, fo, fo2;
	uint64_t marker = (uint64_t)(uintptr_t)&ds_test_marker_function;
	struct ds_build_id rec = { .sz = sizeof(rec) };
	struct ds_symbols_opts so = { 0 };
	struct rb_warns wn = { 0 };
	struct ds_symbols *sym;
	struct ds_sym_info si = { .sz = sizeof(si) };
	struct sbuf s = { 0 };
	struct ds_event ev = { .sz = sizeof(ev) };
	uint8_t idx[DS_BUILD_ID_MAX], idy[DS_BUILD_ID_MAX];
	char hex[2 * DS_BUILD_ID_MAX + 1];
	int nx, ny;

	(void)state;
	assert_true(exec_map("test_lib", &ea, &eoff, exe));
	if (!exec_map("/libc.so", &la, &loff, libc))
		skip();
	snprintf(prog, sizeof(prog), "%s", tpath("prog"));
	/* file offsets of two addresses of ds_test_marker_function */
	fo = marker + 4 - ea + eoff;
	fo2 = marker + 1 - ea + eoff;
	replace_file(exe, prog);
	nx = ds_build_id_of_file(prog, idx, sizeof(idx));
	ny = ds_build_id_of_file(libc, idy, sizeof(idy));
	assert_true(nx > 0 && ny > 0);
	assert_true(nx != ny || memcmp(idx, idy, (size_t)nx));
	rec.pid = -1;
	rec.path = prog;
	so.sz = sizeof(so);
	so.build_ids = &rec;
	so.nr_build_ids = 1;
	so.warn = rb_warn;
	so.warn_arg = &wn;
	sb_mmap2(&s, 5, base, 64 << 20, prog, 1);
	assert_int_equal(ds_event_parse(s.b, s.len, TST_ST, true, &ev), 0);

	/* recorded as the program: its names */
	rec.size = (uint8_t)nx;
	memcpy(rec.id, idx, (size_t)nx);
	sym = rb_session(&so, &ev);
	assert_int_equal(ds_symbols_lookup(sym, 5, base + fo, false, &si, pbuf, sizeof(pbuf)), 0);
	assert_non_null(si.sym);
	assert_string_equal(si.sym, "ds_test_marker_function");
	assert_int_equal(si.sym_off, 4);
	assert_false(si.mismatch);
	/* rebuilt during the session: the session goes on with what it read
	 * (a new address of the same object, no new warning) */
	replace_file(libc, prog);
	assert_int_equal(ds_symbols_lookup(sym, 5, base + fo2, false, &si, pbuf, sizeof(pbuf)), 0);
	assert_non_null(si.sym);
	assert_string_equal(si.sym, "ds_test_marker_function");
	assert_int_equal(si.sym_off, 1);
	assert_int_equal(wn.n, 0);
	ds_symbols_free(sym);

	/* the same recording read after the rebuild: addresses, one warning
	 * naming both build-ids, the recorded one kept on the frames */
	sym = rb_session(&so, &ev);
	assert_int_equal(ds_symbols_lookup(sym, 5, base + fo, false, &si, pbuf, sizeof(pbuf)), 0);
	assert_null(si.sym);
	assert_true(si.mismatch);
	snprintf(want, sizeof(want), "[prog+0x%" PRIx64 "]", fo);
	assert_string_equal(si.name, want);
	assert_int_equal(si.build_id_len, (size_t)nx);
	assert_memory_equal(si.build_id, idx, (size_t)nx);
	assert_int_equal(ds_symbols_lookup(sym, 5, base + fo2, false, &si, pbuf, sizeof(pbuf)), 0);
	assert_null(si.sym);
	assert_int_equal(wn.n, 1);
	assert_string_equal(wn.rec, ds_build_id_hex(idx, (size_t)nx, hex, sizeof(hex)));
	assert_string_equal(wn.now, ds_build_id_hex(idy, (size_t)ny, hex, sizeof(hex)));
	ds_symbols_free(sym);

	/* recorded as the new content: symbolized from the new file, never
	 * with the old one's names */
	rec.size = (uint8_t)ny;
	memcpy(rec.id, idy, (size_t)ny);
	sym = rb_session(&so, &ev);
	assert_int_equal(ds_symbols_lookup(sym, 5, base + fo, false, &si, pbuf, sizeof(pbuf)), 0);
	assert_false(si.mismatch);
	assert_true(!si.sym || strcmp(si.sym, "ds_test_marker_function"));
	fo = (uint64_t)(uintptr_t)&getpid - la + loff;	/* libc's own */
	assert_int_equal(ds_symbols_lookup(sym, 5, base + fo, false, &si, pbuf, sizeof(pbuf)), 0);
	assert_non_null(si.sym);
	assert_non_null(strstr(si.sym, "getpid"));
	assert_int_equal(wn.n, 1);
	ds_symbols_free(sym);
	free(s.b);
}

/* A PERF_RECORD_COMPRESSED (perf record -z) holding one zstd frame of
 * bytes p[0, n), its size not a multiple of 8 (as perf writes it). */
static void sb_compressed(struct sbuf *s, const uint8_t *p, size_t n, int corrupt)
{
	size_t cap = ZSTD_compressBound(n), len;
	uint8_t *z = malloc(cap);
	struct perf_event_header h = { 81, 0, 0 };

	assert_non_null(z);
	len = ZSTD_compress(z, cap, p, n, 3);
	assert_false(ZSTD_isError(len));
	if (corrupt)
		memset(z + len / 2, 0xa5, len - len / 2);
	h.size = (uint16_t)(sizeof(h) + len);
	sb_put(s, &h, sizeof(h));
	sb_put(s, z, len);
	free(z);
}

/* perf record -z files: the records of the compressed records' zstd data
 * come back in order, with the plain records between them, a record cut
 * between two compressed records joined; damaged zstd data is a clear
 * error. */
static void t_compressed(void **state)
{
	struct sbuf plain = { 0 }, z = { 0 }, tail = { 0 };
	const struct perf_event_header *rec;
	struct ds_reader *rd;
	struct ds_reader_opts ro = { .sz = sizeof(ro) };
	char eb[256];
	size_t at = 0, n = 0, cut;
	uint64_t chain[] = { PERF_CONTEXT_KERNEL, KADDR(0x100), PERF_CONTEXT_USER, UADDR(0x40),
			     UADDR(0x80) };

	(void)state;
	sb_comm(&plain, 7, "zworker", 1);
	for (int i = 0; i < 40; i++)
		sb_sample(&plain, 7, 10 + (uint64_t)i, 0, chain, 5);
	/* the first frame ends inside a sample, the second holds the rest */
	cut = plain.len / 2 + 4;
	sb_compressed(&z, plain.b, cut, 0);
	sb_round(&z);
	sb_compressed(&z, plain.b + cut, plain.len - cut, 0);
	sb_sample(&tail, 7, 100, 1, chain, 5);	/* a plain record after them */
	sb_put(&z, tail.b, tail.len);
	assert_int_equal(sb_write_file(&z, tpath("z.data")), 0);
	assert_int_equal(ds_reader_open(&rd, tpath("z.data"), NULL), 0);
	for (int ret; (ret = ds_reader_next(rd, &rec)) > 0;) {
		if (rec->type == DS_RECORD_FINISHED_ROUND) {
			assert_true(at > 0 && at < plain.len);	/* between the two */
			continue;
		}
		assert_int_equal((uintptr_t)rec & 7, 0);
		if (at < plain.len) {
			assert_true(at + rec->size <= plain.len);
			assert_memory_equal(rec, plain.b + at, rec->size);
			at += rec->size;
		} else {
			assert_memory_equal(rec, tail.b, tail.len);
		}
		n++;
	}
	assert_int_equal(at, plain.len);
	assert_int_equal(n, 1 + 40 + 1);
	assert_int_equal(ds_reader_trailing(rd), 0);
	ds_reader_close(rd);

	/* damaged zstd data: an error that says so, at its offset */
	z.len = 0;
	sb_compressed(&z, plain.b, plain.len, 1);
	assert_int_equal(sb_write_file(&z, tpath("zbad.data")), 0);
	ro.errbuf = eb;
	ro.errbuf_len = sizeof(eb);
	assert_int_equal(ds_reader_open(&rd, tpath("zbad.data"), &ro), 0);
	while ((n = (size_t)ds_reader_next(rd, &rec)) == 1)
		;
	assert_int_equal((int)n, -EINVAL);
	assert_non_null(strstr(ds_reader_error(rd), "compressed record at data offset 0: zstd: "));
	ds_reader_close(rd);
	free(plain.b);
	free(z.b);
	free(tail.b);
}

/* An MMAP record naming a FIFO (or a device, or a directory) must not hang
 * or read it: the frame resolves to the file's name. */
/* Build-ids: perf's HEADER_BUILD_ID written and read back; a file whose
 * build-id differs from the recorded one is not symbolized (offsets, one
 * warning), unless force_symbols. */
struct warns {
	int n;
	char path[400];
};

static void warn_cb(void *arg, const char *path, const char *rec, const char *now)
{
	struct warns *w = arg;

	w->n++;
	snprintf(w->path, sizeof(w->path), "%s", path);
	assert_string_equal(rec, "0102030405060708090a0b0c0d0e0f1011121314");
	assert_int_equal(strlen(now), 40);
}

static void t_build_ids(void **state)
{
	struct ds_build_id b[2];
	const struct ds_build_id *bids;
	size_t nb;
	struct ds_writer *w;
	struct ds_writer_info info = { .sz = sizeof(info) };
	struct ds_reader *rd;
	struct ds_attr a;
	struct ds_symbols *sym;
	struct ds_symbols_opts so;
	struct sbuf s = { 0 };
	struct warns wn = { 0 };
	struct ds_sym_info si = { .sz = sizeof(si) };
	char exe[400] = "", buf[128], want[480];
	uint8_t id[DS_BUILD_ID_MAX];
	uint64_t ip = (uint64_t)(uintptr_t)&ds_test_marker_function + 4;
	static const uint8_t notes[] = { 4, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0,
					 0xaa, 0xbb, 0xcc, 0 };
	int n;

	(void)state;
	/* notes parsing: a 3-byte id; cut off: none */
	assert_int_equal(ds_build_id_from_notes(notes, sizeof(notes), 4, id, sizeof(id)), 3);
	assert_int_equal(id[2], 0xcc);
	assert_int_equal(ds_build_id_from_notes(notes, sizeof(notes) - 2, 4, id, sizeof(id)),
			 -ENOENT);
	assert_int_equal(ds_build_id_of_file("/dev/null", id, sizeof(id)), -EINVAL);
	assert_int_equal(ds_build_id_of_file(tpath("nope"), id, sizeof(id)), -ENOENT);
	/* file round trip */
	memset(b, 0, sizeof(b));
	b[0].sz = b[1].sz = sizeof(b[0]);
	b[0].pid = -1;
	b[0].kernel = true;
	b[0].size = 20;
	b[0].id[0] = 0x7d;
	b[0].path = "[kernel.kallsyms]";
	b[1].pid = -1;
	b[1].size = 20;
	for (int i = 0; i < 20; i++)
		b[1].id[i] = (uint8_t)(i + 1);
	b[1].path = "/usr/lib/a-rather-long-path/of/a/library/libsomething.so.1.2.3";
	memset(&a, 0, sizeof(a));
	a.attr.size = sizeof(a.attr);
	a.sz = sizeof(a);
	a.attr.sample_type = TST_ST;
	info.build_ids = b;
	info.nr_build_ids = 2;
	info.hostname = "h";
	assert_int_equal(ds_writer_open(&w, tpath("bid.data"), &a, 1, NULL), 0);
	assert_int_equal(ds_writer_close(w, &info), 0);
	assert_int_equal(ds_reader_open(&rd, tpath("bid.data"), NULL), 0);
	bids = ds_reader_build_ids(rd, &nb);
	assert_int_equal(nb, 2);
	assert_true(bids[0].kernel);
	assert_int_equal(bids[0].pid, -1);
	assert_string_equal(bids[0].path, "[kernel.kallsyms]");
	assert_false(bids[1].kernel);
	assert_int_equal(bids[1].size, 20);
	assert_memory_equal(bids[1].id, b[1].id, 20);
	assert_string_equal(bids[1].path, b[1].path);
	ds_reader_close(rd);
	/* our own executable, with its real build-id: symbolized, no warning */
	assert_int_equal(ds_symbols_new(&sym, NULL), 0);
	assert_true(map_self(sym, &s, ip, exe));
	ds_symbols_free(sym);
	n = ds_build_id_of_file(exe, id, sizeof(id));
	assert_int_equal(n, 20);
	memset(&so, 0, sizeof(so));
	so.sz = sizeof(so);
	so.warn = warn_cb;
	so.warn_arg = &wn;
	b[1].path = exe;
	memcpy(b[1].id, id, 20);
	so.build_ids = &b[1];
	so.nr_build_ids = 1;
	assert_int_equal(ds_symbols_open(&sym, &so), 0);
	map_self(sym, &s, ip, NULL);
	assert_string_equal(ds_symbols_resolve(sym, 77, ip, false, buf, sizeof(buf)),
			    "ds_test_marker_function");
	assert_int_equal(wn.n, 0);
	assert_int_equal(ds_symbols_lookup(sym, 77, ip, false, &si, buf, sizeof(buf)), 0);
	assert_false(si.mismatch);
	assert_string_equal(si.sym, "ds_test_marker_function");
	assert_int_equal(si.build_id_len, 20);
	assert_memory_equal(si.build_id, id, 20);
	ds_symbols_free(sym);
	/* recorded with another build-id: offsets, one warning */
	for (int i = 0; i < 20; i++)
		b[1].id[i] = (uint8_t)(i + 1);
	assert_int_equal(ds_symbols_open(&sym, &so), 0);
	map_self(sym, &s, ip, NULL);
	snprintf(want, sizeof(want), "[%s+0x", strrchr(exe, '/') + 1);
	assert_non_null(strstr(ds_symbols_resolve(sym, 77, ip, false, buf, sizeof(buf)), want));
	assert_non_null(strstr(ds_symbols_resolve(sym, 77, ip + 1, false, buf, sizeof(buf)),
			       want));
	assert_int_equal(wn.n, 1);
	assert_string_equal(wn.path, exe);
	/* the object profiled is the recorded one: its build-id, no symbol */
	assert_int_equal(ds_symbols_lookup(sym, 77, ip, false, &si, buf, sizeof(buf)), 0);
	assert_true(si.mismatch);
	assert_null(si.sym);
	assert_string_equal(si.dso, exe);
	assert_int_equal(si.build_id_len, 20);
	assert_memory_equal(si.build_id, b[1].id, 20);
	assert_int_equal(wn.n, 1);
	ds_symbols_free(sym);
	/* --force-symbols */
	so.force_symbols = true;
	assert_int_equal(ds_symbols_open(&sym, &so), 0);
	map_self(sym, &s, ip, NULL);
	assert_string_equal(ds_symbols_resolve(sym, 77, ip, false, buf, sizeof(buf)),
			    "ds_test_marker_function");
	assert_int_equal(wn.n, 2);
	ds_symbols_free(sym);
	/* options of a newer library: unknown fields set -> -E2BIG */
	{
		struct { struct ds_symbols_opts o; uint64_t more; } big;

		memset(&big, 0, sizeof(big));
		big.o.sz = sizeof(big);
		assert_int_equal(ds_symbols_open(&sym, &big.o), 0);
		ds_symbols_free(sym);
		big.more = 1;
		assert_int_equal(ds_symbols_open(&sym, &big.o), -E2BIG);
	}
	/* options of an older caller: the fields past its sz are not read */
	memset(&so, 0, sizeof(so));
	so.sz = offsetof(struct ds_symbols_opts, build_ids);
	so.build_ids = (const struct ds_build_id *)(uintptr_t)8;	/* not ours */
	so.nr_build_ids = 3;
	assert_int_equal(ds_symbols_open(&sym, &so), 0);
	ds_symbols_free(sym);
	free(s.b);
}

static void t_symbols_not_regular(void **state)
{
	const char *paths[] = { tpath("fifo"), "/dev/zero", "/tmp" };
	struct ds_symbols *sym;
	struct ds_event ev = { .sz = sizeof(ev) };
	struct sbuf s = { 0 };
	char buf[128];

	(void)state;
	assert_int_equal(mkfifo(paths[0], 0600), 0);
	alarm(20);	/* a hang fails the test instead of the whole check */
	assert_int_equal(ds_symbols_new(&sym, NULL), 0);
	for (int i = 0; i < 3; i++) {
		s.len = 0;
		sb_mmap2(&s, 10 + i, UADDR(0), 0x10000, paths[i], 1);
		assert_int_equal(ds_event_parse(s.b, s.len, TST_ST, true, &ev), 0);
		assert_int_equal(ds_symbols_event(sym, &ev), 0);
		assert_string_equal(ds_symbols_resolve(sym, 10 + i, UADDR(0x40), false, buf,
						       sizeof(buf)),
				    i == 0 ? "[fifo+0x40]" : i == 1 ? "[zero+0x40]" : "[tmp+0x40]");
	}
	/* kallsyms: a FIFO is refused, a character device means none */
	assert_int_equal(ds_symbols_load_kallsyms(sym, paths[0]), -EINVAL);
	assert_int_equal(ds_symbols_load_kallsyms(sym, "/dev/zero"), 0);
	assert_int_equal(ds_symbols_load_kallsyms(sym, "/tmp"), -EISDIR);
	alarm(0);
	ds_symbols_free(sym);
	free(s.b);
}

/* A stripped binary: an ELF with a PT_LOAD and no symbol table at all. */
static void t_symbols_stripped(void **state)
{
	struct {
		Elf64_Ehdr eh;
		Elf64_Phdr ph;
		uint8_t text[256];
	} elf;
	struct ds_symbols *sym;
	struct ds_event ev = { .sz = sizeof(ev) };
	struct sbuf s = { 0 };
	char buf[128];

	(void)state;
	memset(&elf, 0, sizeof(elf));
	memcpy(elf.eh.e_ident, ELFMAG, SELFMAG);
	elf.eh.e_ident[EI_CLASS] = ELFCLASS64;
	elf.eh.e_ident[EI_DATA] = ELFDATA2LSB;
	elf.eh.e_ident[EI_VERSION] = EV_CURRENT;
	elf.eh.e_type = ET_DYN;
	elf.eh.e_machine = EM_X86_64;
	elf.eh.e_version = EV_CURRENT;
	elf.eh.e_phoff = sizeof(elf.eh);
	elf.eh.e_ehsize = sizeof(elf.eh);
	elf.eh.e_phentsize = sizeof(elf.ph);
	elf.eh.e_phnum = 1;
	elf.ph.p_type = PT_LOAD;
	elf.ph.p_flags = PF_R | PF_X;
	elf.ph.p_filesz = elf.ph.p_memsz = sizeof(elf);
	elf.ph.p_align = 4096;
	write_bytes(tpath("stripped.so"), &elf, sizeof(elf));
	assert_int_equal(ds_symbols_new(&sym, NULL), 0);
	sb_mmap2(&s, 42, UADDR(0), 0x1000, tpath("stripped.so"), 1);
	assert_int_equal(ds_event_parse(s.b, s.len, TST_ST, true, &ev), 0);
	assert_int_equal(ds_symbols_event(sym, &ev), 0);
	assert_string_equal(ds_symbols_resolve(sym, 42, UADDR(0x80), false, buf, sizeof(buf)),
			    "[stripped.so+0x80]");
	ds_symbols_free(sym);
	free(s.b);
}

/* C++ names as perf prints them (libiberty without DMGL_PARAMS, as
 * c++filt -p): no parameters, qualifiers or template return type */
static void t_cxx_perf_name(void **state)
{
	static const char *const cases[][2] = {
		{ "work::Spinner<long>::spin(long)", "work::Spinner<long>::spin" },
		{ "void std::sort<int*>(int*, int*)", "std::sort<int*>" },
		{ "unsigned long foo<int>(int)", "foo<int>" },
		{ "A::f(int) const &", "A::f" },
		{ "A::g() volatile && noexcept", "A::g" },
		{ "main::{lambda(int)#1}::operator()(int) const",
		  "main::{lambda(int)#1}::operator()" },
		{ "bool operator< <int>(X<int> const&, X<int> const&)", "operator< <int>" },
		{ "bool __gnu_cxx::operator==<int*>(It<int*> const&, It<int*> const&)",
		  "__gnu_cxx::operator==<int*>" },
		{ "operator<<(std::ostream&, A const&)", "operator<<" },
		{ "A::operator->() const", "A::operator->" },
		{ "std::vector<int, std::allocator<int> >::operator[](unsigned long)",
		  "std::vector<int, std::allocator<int> >::operator[]" },
		{ "operator new(unsigned long)", "operator new" },
		{ "operator delete[](void*)", "operator delete[]" },
		{ "X::operator unsigned long() const", "X::operator unsigned long" },
		{ "(anonymous namespace)::helper(int)", "(anonymous namespace)::helper" },
		{ "foo(int) [clone .cold]", "foo [clone .cold]" },
		{ "void bar<1>(char (&) [4]) [clone .isra.0] [clone .cold]",
		  "bar<1> [clone .isra.0] [clone .cold]" },
		{ "std::string::_M_data[abi:cxx11]() const", "std::string::_M_data[abi:cxx11]" },
		/* left alone: data, C names, what does not parse */
		{ "(anonymous namespace)::counter", "(anonymous namespace)::counter" },
		{ "plain_c_name", "plain_c_name" },
		{ "f(int", "f(int" },
		{ "f(int) junk", "f(int) junk" },
		{ "", "" },
	};
	char buf[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(buf, sizeof(buf), "%s", cases[i][0]);
		ds_cxx_perf_name(buf);
		if (strcmp(buf, cases[i][1]))
			fail_msg("'%s' -> '%s', want '%s'", cases[i][0], buf, cases[i][1]);
	}
}

/* The folded lines in strcmp order of their stacks' texts, whatever the
 * names: names that begin others, followed by a byte below or above ';'
 * ("a", "a b", "a.b", "a0", "a:", "ab", "a<"), as a last frame and as a
 * caller; random stacks, shallow and deep, each line's stack after the one
 * before. */
static void t_fold_order(void **state)
{
	static const char *pool[] = { "a", "a b", "a.b", "a0", "a:", "ab", "a<", "b", "[x]",
				      "a.", "a.bc" };
	static const char *comms[] = { "c", "c.x", "c x", "cc" };
	struct ds_fold *fo;
	char *text = NULL, *line, *prev = NULL, *save = NULL;
	size_t len = 0, lines = 0;
	unsigned seed = 12345;
	FILE *f;

	(void)state;
	assert_int_equal(ds_fold_new(&fo), 0);
	for (int i = 0; i < 3000; i++) {
		char *names[7];
		struct ds_frames fr = { sizeof(fr), names, 0, 7, NULL, 0, 0 };
		const char *comm;

		seed = seed * 1103515245u + 12345u;
		comm = comms[(seed >> 16) % 4];
		fr.nr = (seed >> 8) % 7;
		for (size_t k = 0; k < fr.nr; k++) {
			seed = seed * 1103515245u + 12345u;
			names[k] = (char *)pool[(seed >> 16) % 11];
		}
		assert_int_equal(ds_fold_add(fo, comm, &fr, 1), 0);
	}
	/* deep ones: 250 to 299 frames the same, then up to 3 random ones
	 * (the sort keeps a shared beginning up to 255 frames) */
	for (int i = 0; i < 600; i++) {
		char *names[302];
		struct ds_frames fr = { sizeof(fr), names, 0, 302, NULL, 0, 0 };
		size_t same;

		seed = seed * 1103515245u + 12345u;
		same = 250 + (seed >> 16) % 50;
		fr.nr = same + (seed >> 8) % 4;
		for (size_t k = 0; k < fr.nr; k++) {
			seed = seed * 1103515245u + 12345u;
			names[k] = (char *)pool[k < same ? k % 3 : (seed >> 16) % 11];
		}
		assert_int_equal(ds_fold_add(fo, comms[i % 2], &fr, 1), 0);
	}
	f = open_memstream(&text, &len);
	assert_int_equal(ds_fold_write(fo, f), 0);
	fclose(f);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' ');

		assert_non_null(sp);
		*sp = 0;	/* the stack's text */
		if (prev && strcmp(prev, line) >= 0)
			fail_msg("'%s' before '%s'", prev, line);
		prev = line;
		lines++;
	}
	assert_true(lines > 1000);
	free(text);
	ds_fold_free(fo);
}

static void t_fold(void **state)
{
	struct ds_fold *fo;
	char *names1[] = { "main", "work", "leaf" }, *names2[] = { "main", "other" };
	struct ds_frames a = { sizeof(a), names1, 3, 3, NULL, 0, 0 };
	struct ds_frames b = { sizeof(b), names2, 2, 2, NULL, 0, 0 };
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(ds_fold_new(&fo), 0);
	assert_int_equal(ds_fold_add(fo, "app", &a, 3), 0);
	assert_int_equal(ds_fold_add(fo, "app", &b, 1), 0);
	assert_int_equal(ds_fold_add(fo, "app", &a, 2), 0);
	assert_int_equal(ds_fold_total(fo), 6);
	f = open_memstream(&text, &len);
	assert_int_equal(ds_fold_write(fo, f), 0);
	fclose(f);
	assert_string_equal(text, "app;main;other 1\napp;main;work;leaf 5\n");
	free(text);
	{	/* weights other than sample counts (periods): 3 samples of
		 * period 100, 1 of 700 */
		struct ds_fold *fw;

		assert_int_equal(ds_fold_new(&fw), 0);
		assert_int_equal(ds_fold_add_weighted(fw, "app", &a, 3, 300), 0);
		assert_int_equal(ds_fold_add_weighted(fw, "app", &b, 1, 700), 0);
		assert_int_equal(ds_fold_samples(fw), 4);
		assert_int_equal(ds_fold_total(fw), 1000);
		f = open_memstream(&text, &len);
		assert_int_equal(ds_fold_write(fw, f), 0);
		fclose(f);
		assert_string_equal(text, "app;main;other 700\napp;main;work;leaf 300\n");
		free(text);
		f = open_memstream(&text, &len);
		assert_int_equal(ds_fold_write_svg(fw, f, "w"), 0);
		fclose(f);
		assert_non_null(strstr(text, "<title>other (1 sample, 70.00%)</title>"));
		assert_non_null(strstr(text, "<title>leaf (3 samples, 30.00%)</title>"));
		assert_non_null(strstr(text, "data-total=\"1000\" data-samples=\"4\""));
		free(text);
		ds_fold_free(fw);
	}
	f = open_memstream(&text, &len);
	assert_int_equal(ds_fold_write_svg(fo, f, "t<1>"), 0);
	fclose(f);
	assert_non_null(strstr(text, "<svg"));
	assert_non_null(strstr(text, "t&lt;1&gt;"));
	assert_non_null(strstr(text, "<title>leaf (5 samples, 83.33%)</title>"));
	assert_non_null(strstr(text, "</svg>"));
	free(text);
	ds_fold_free(fo);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_attr_flags),
		cmocka_unit_test(t_tracing_data),
		cmocka_unit_test(t_parse_sample),
		cmocka_unit_test(t_parse_others),
		cmocka_unit_test(t_set_callchain),
		cmocka_unit_test(t_ring),
		cmocka_unit_test(t_perfdata_roundtrip),
		cmocka_unit_test(t_perfdata_bad),
		cmocka_unit_test(t_perfdata_unfinished),
		cmocka_unit_test(t_writer_rewind),
		cmocka_unit_test(t_pipe_mode),
		cmocka_unit_test(t_reader_id_lookup),
		cmocka_unit_test(t_reader_sample_id_pos),
		cmocka_unit_test(t_writer_add_ids),
		cmocka_unit_test(t_pipeline),
		cmocka_unit_test(t_merge),
		cmocka_unit_test(t_merge_backwards),
		cmocka_unit_test(t_merge_many_cpus),
		cmocka_unit_test(t_htab),
		cmocka_unit_test(t_itab_del),
		cmocka_unit_test(t_sz_old_caller),
		cmocka_unit_test(t_add_opts),
		cmocka_unit_test(t_opts),
		cmocka_unit_test(t_stitch_many_tasks),
		cmocka_unit_test(t_dwarf_user_ip),
		cmocka_unit_test(t_symbols),
		cmocka_unit_test(t_build_ids),
		cmocka_unit_test(t_rebuilt),
		cmocka_unit_test(t_compressed),
		cmocka_unit_test(t_symbols_not_regular),
		cmocka_unit_test(t_symbols_stripped),
		cmocka_unit_test(t_fold),
		cmocka_unit_test(t_fold_order),
		cmocka_unit_test(t_cxx_perf_name),
	};

	return cmocka_run_group_tests_name("libdeferstack", tests, setup, teardown);
}
