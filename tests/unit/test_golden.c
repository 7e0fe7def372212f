// SPDX-License-Identifier: MIT
/*
 * Golden tests of stitching: hand-built record streams go through the
 * time-ordered merge and the stitcher; the rendered output must equal
 * tests/golden/<name>.txt (DS_UPDATE_GOLDEN=1 rewrites them), and key
 * facts are asserted directly as well.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "streams.h"

struct out {
	char *text;
	size_t len;
	FILE *f;
};

static void chain_str(FILE *f, const uint64_t *c, uint64_t nr)
{
	for (uint64_t i = 0; i < nr; i++) {
		uint64_t v = c[i];

		if (i)
			fputc(',', f);
		if (v == PERF_CONTEXT_KERNEL)
			fputs("K", f);
		else if (v == PERF_CONTEXT_USER)
			fputs("U", f);
		else if (v == DS_CONTEXT_USER_DEFERRED)
			fputs("D", f);
		else if (v >= KADDR(0) && v < KADDR(0x100000))
			fprintf(f, "k%" PRIu64, v - KADDR(0));
		else if (v >= UADDR(0) && v < UADDR(0x100000))
			fprintf(f, "u%" PRIu64, v - UADDR(0));
		else
			fprintf(f, "%#" PRIx64, v);
	}
}

static const char *reason(enum ds_unmatched_reason r)
{
	static const char *n[] = { "none", "cookie-changed", "exit", "end", "overflow" };

	return n[r];
}

static int render(void *arg, const struct ds_stitch_out *o)
{
	FILE *f = ((struct out *)arg)->f;
	const struct ds_event *ev = o->ev;

	switch (o->kind) {
	case DS_OUT_RECORD:
		if (ev->type == PERF_RECORD_SAMPLE || ev->type == PERF_RECORD_COMM)
			return 0;
		fprintf(f, "record %s tid=%u t=%" PRIu64, ds_record_name(ev->type), ev->tid,
			ev->time);
		if (ev->type == DS_RECORD_CALLCHAIN_DEFERRED)
			fprintf(f, " cookie=%#" PRIx64, ev->cookie);
		if (ev->type == PERF_RECORD_LOST)
			fprintf(f, " lost=%" PRIu64, ev->lost);
		fputc('\n', f);
		return 0;
	case DS_OUT_STITCHED:
		fprintf(f, "stitched%s", o->record_first ? "(record-first)" : "");
		break;
	case DS_OUT_KERNEL_ONLY:
		fprintf(f, "kernel-only(%s)", reason(o->reason));
		break;
	case DS_OUT_COMPLETE:
		fprintf(f, "complete");
		break;
	default:
		fprintf(f, "nochain");
		break;
	}
	fprintf(f, " tid=%u t=%" PRIu64 " cpu=%u", ev->tid, ev->time, ev->cpu);
	if (ev->has_cookie)
		fprintf(f, " cookie=%#" PRIx64, ev->cookie);
	fprintf(f, " chain=");
	chain_str(f, o->chain, o->nr);
	fputc('\n', f);
	return 0;
}

/* Run a stream through merge + stitcher; returns the reader-ish error. */
static int run(const struct sbuf *s, struct out *o, struct ds_stitch_stats *st,
	       size_t max_pending_task)
{
	struct ds_merge *m;
	struct ds_stitcher *sti;
	struct ds_stitch_opts so = { .sz = sizeof(so), .cb = render };
	const struct perf_event_header *rec;
	struct ds_event ev = { .sz = sizeof(ev) };
	int err = 0;
	size_t off = 0;

	o->text = NULL;
	o->len = 0;
	o->f = open_memstream(&o->text, &o->len);
	assert_non_null(o->f);
	so.max_pending_per_task = max_pending_task;
	so.cb_arg = o;
	assert_int_equal(ds_merge_new(&m, NULL), 0);
	assert_int_equal(ds_stitch_new(&sti, &so), 0);
	while (off < s->len) {
		struct perf_event_header h;

		if (s->len - off < sizeof(h)) {
			err = -EINVAL;
			break;
		}
		memcpy(&h, s->b + off, sizeof(h));
		if (h.size < sizeof(h) || h.size > s->len - off) {
			err = -EINVAL;	/* truncated: process what we have */
			break;
		}
		if (h.type == DS_RECORD_FINISHED_ROUND) {
			ds_merge_round(m);
		} else {
			assert_int_equal(ds_event_parse(s->b + off, h.size, TST_ST, true, &ev), 0);
			assert_int_equal(ds_merge_push(m, (const void *)(s->b + off), ev.time,
						       ev.cpu), 0);
		}
		off += h.size;
		while (ds_merge_pop(m, &rec) > 0) {
			assert_int_equal(ds_event_parse(rec, rec->size, TST_ST, true, &ev), 0);
			assert_int_equal(ds_stitch_event(sti, &ev), 0);
		}
	}
	ds_merge_flush(m);
	while (ds_merge_pop(m, &rec) > 0) {
		assert_int_equal(ds_event_parse(rec, rec->size, TST_ST, true, &ev), 0);
		assert_int_equal(ds_stitch_event(sti, &ev), 0);
	}
	assert_int_equal(ds_stitch_finish(sti), 0);
	*st = *ds_stitch_get_stats(sti);
	fprintf(o->f, "stats samples=%" PRIu64 " deferred=%" PRIu64 " stitched=%" PRIu64
		" record_first=%" PRIu64 " complete=%" PRIu64 " kernel_only=%" PRIu64
		" lost=%" PRIu64 " unknown=%" PRIu64 "\n", st->samples, st->deferred,
		st->stitched, st->record_first, st->complete, st->kernel_only,
		st->lost_events, st->unknown);
	fclose(o->f);
	ds_stitch_free(sti);
	ds_merge_free(m);
	return err;
}

static void golden(const char *name, const struct out *o)
{
	const char *dir = getenv("DS_GOLDEN_DIR") ? getenv("DS_GOLDEN_DIR") : "tests/golden";
	char path[512], *want = NULL;
	size_t wlen = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.txt", dir, name);
	if (getenv("DS_UPDATE_GOLDEN")) {
		f = fopen(path, "w");
		assert_non_null(f);
		fwrite(o->text, 1, o->len, f);
		fclose(f);
		return;
	}
	f = fopen(path, "r");
	if (!f)
		fail_msg("missing golden file %s", path);
	want = malloc(1 << 16);
	assert_non_null(want);
	wlen = fread(want, 1, (1 << 16) - 1, f);
	want[wlen] = 0;
	fclose(f);
	if (wlen != o->len || memcmp(want, o->text, wlen)) {
		fprintf(stderr, "--- expected %s\n%s--- got\n%s", path, want, o->text);
		free(want);
		fail_msg("output differs from %s", path);
	}
	free(want);
}

static void count_lines(const char *text, const char *prefix, int want)
{
	int n = 0;

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, prefix, strlen(prefix)))
			n++;
	}
	assert_int_equal(n, want);
}

/* Several samples of one kernel entry share one record. */
static void t_basic(void **state)
{
	struct sbuf s = { 0 };
	struct out o;
	struct ds_stitch_stats st;

	(void)state;
	sb_comm(&s, 10, "work", 1);
	sb_dsample(&s, 10, 100, 0, 0, 0x100000001ULL);
	sb_dsample(&s, 10, 110, 0, 10, 0x100000001ULL);
	sb_dsample(&s, 10, 120, 0, 20, 0x100000001ULL);
	sb_deferred(&s, 10, 130, 0, 0x100000001ULL, 0, 3);
	assert_int_equal(run(&s, &o, &st, 0), 0);
	assert_int_equal(st.stitched, 3);
	assert_int_equal(st.kernel_only, 0);
	assert_non_null(strstr(o.text, "chain=K,k10,k11,U,u0,u1,u2"));
	golden("basic", &o);
	free(o.text);
	free(s.b);
}

/*
 * CPU 0's buffer is read before CPU 1's: in file order the second kernel
 * entry's sample (t=200) comes before the first entry's record (t=150, on
 * CPU 1 after a migration).  Only the time-ordered merge stitches it.
 */
static void t_out_of_order_cpus(void **state)
{
	struct sbuf s = { 0 };
	struct out o;
	struct ds_stitch_stats st;

	(void)state;
	sb_dsample(&s, 7, 100, 0, 0, 0xa);	/* cpu0 buffer */
	sb_dsample(&s, 7, 200, 0, 5, 0xb);
	sb_dsample(&s, 8, 210, 0, 9, 0xc);
	sb_deferred(&s, 7, 150, 1, 0xa, 100, 2);	/* cpu1 buffer */
	sb_deferred(&s, 7, 250, 1, 0xb, 200, 2);
	sb_deferred(&s, 8, 260, 1, 0xc, 300, 1);
	sb_round(&s);
	assert_int_equal(run(&s, &o, &st, 0), 0);
	assert_int_equal(st.stitched, 3);
	assert_int_equal(st.kernel_only, 0);
	assert_non_null(strstr(o.text, "tid=7 t=100 cpu=0 cookie=0xa chain=K,k0,k1,U,u100,u101"));
	assert_non_null(strstr(o.text, "tid=7 t=200 cpu=0 cookie=0xb chain=K,k5,k6,U,u200,u201"));
	golden("out_of_order_cpus", &o);
	free(o.text);
	free(s.b);
}

/* The record of cookie 0x2 was lost: its sample is kernel-only, the next
 * entry stitches normally. */
static void t_lost(void **state)
{
	struct sbuf s = { 0 };
	struct out o;
	struct ds_stitch_stats st;

	(void)state;
	sb_dsample(&s, 3, 100, 0, 0, 0x1);
	sb_deferred(&s, 3, 110, 0, 0x1, 0, 2);
	sb_dsample(&s, 3, 120, 0, 2, 0x2);
	sb_lost(&s, 5, 130, 0);
	sb_dsample(&s, 3, 140, 0, 4, 0x3);
	sb_deferred(&s, 3, 150, 0, 0x3, 50, 2);
	assert_int_equal(run(&s, &o, &st, 0), 0);
	assert_int_equal(st.stitched, 2);
	assert_int_equal(st.kernel_only, 1);
	assert_int_equal(st.unm_cookie, 1);
	assert_int_equal(st.lost_events, 5);
	count_lines(o.text, "kernel-only(cookie-changed) tid=3 t=120", 1);
	golden("lost_records", &o);
	free(o.text);
	free(s.b);
}

/* The same cookie value on two tids must never cross. */
static void t_cookie_reuse_across_tasks(void **state)
{
	struct sbuf s = { 0 };
	struct out o;
	struct ds_stitch_stats st;

	(void)state;
	sb_dsample(&s, 1, 100, 0, 0, 0x42);
	sb_dsample(&s, 2, 101, 1, 10, 0x42);
	sb_deferred(&s, 2, 110, 1, 0x42, 200, 2);
	sb_dsample(&s, 1, 120, 0, 20, 0x42);
	sb_dsample(&s, 3, 130, 0, 30, 0x42);	/* never gets a record */
	sb_deferred(&s, 1, 140, 0, 0x42, 100, 2);
	assert_int_equal(run(&s, &o, &st, 0), 0);
	assert_int_equal(st.stitched, 3);
	assert_int_equal(st.kernel_only, 1);
	count_lines(o.text, "stitched tid=1 t=100 cpu=0 cookie=0x42 chain=K,k0,k1,U,u100,u101", 1);
	count_lines(o.text, "stitched tid=2 t=101 cpu=1 cookie=0x42 chain=K,k10,k11,U,u200,u201", 1);
	count_lines(o.text, "kernel-only(end) tid=3", 1);
	assert_null(strstr(o.text, "tid=3 t=130 cpu=0 cookie=0x42 chain=K,k30,k31,U"));
	golden("cookie_reuse_across_tasks", &o);
	free(o.text);
	free(s.b);
}

/* Task exit before the record: kernel-only, and the exit frees the task. */
static void t_exit_before_record(void **state)
{
	struct sbuf s = { 0 };
	struct out o;
	struct ds_stitch_stats st;

	(void)state;
	sb_dsample(&s, 5, 100, 0, 0, 0x77);
	sb_dsample(&s, 5, 105, 0, 2, 0x77);
	sb_exit(&s, 5, 110, 0);
	sb_deferred(&s, 6, 120, 0, 0x77, 0, 1);	/* other task, same value */
	assert_int_equal(run(&s, &o, &st, 0), 0);
	assert_int_equal(st.stitched, 0);
	assert_int_equal(st.unm_exit, 2);
	count_lines(o.text, "kernel-only(exit) tid=5", 2);
	golden("exit_before_record", &o);
	free(o.text);
	free(s.b);
}

/* Record before its sample (the sample was taken after the unwind ran). */
static void t_record_before_sample(void **state)
{
	struct sbuf s = { 0 };
	struct out o;
	struct ds_stitch_stats st;

	(void)state;
	sb_dsample(&s, 9, 100, 0, 0, 0x5);
	sb_deferred(&s, 9, 110, 0, 0x5, 0, 2);
	sb_dsample(&s, 9, 115, 0, 8, 0x5);	/* same entry, after the unwind */
	sb_dsample(&s, 9, 130, 0, 3, 0x6);	/* next entry: must not use 0x5 */
	assert_int_equal(run(&s, &o, &st, 0), 0);
	assert_int_equal(st.stitched, 2);
	assert_int_equal(st.record_first, 1);
	assert_int_equal(st.unm_end, 1);
	count_lines(o.text, "stitched(record-first) tid=9 t=115 cpu=0 cookie=0x5 "
			    "chain=K,k8,k9,U,u0,u1", 1);
	count_lines(o.text, "kernel-only(end) tid=9 t=130 cpu=0 cookie=0x6 chain=K,k3,k4", 1);
	golden("record_before_sample", &o);
	free(o.text);
	free(s.b);
}

/* A stream cut inside a record: what came before is still processed and
 * pending samples come out kernel-only at the end. */
static void t_truncated(void **state)
{
	struct sbuf s = { 0 };
	struct out o;
	struct ds_stitch_stats st;

	(void)state;
	sb_dsample(&s, 4, 100, 0, 0, 0x9);
	sb_dsample(&s, 4, 101, 0, 1, 0x9);
	sb_deferred(&s, 4, 110, 0, 0x9, 0, 4);
	s.len -= 20;		/* cut the record in the middle */
	assert_int_equal(run(&s, &o, &st, 0), -EINVAL);
	assert_int_equal(st.stitched, 0);
	assert_int_equal(st.unm_end, 2);
	golden("truncated", &o);
	free(o.text);
	free(s.b);
}

/* Samples with classic chains are complete and leave pending state alone;
 * unknown record types are skipped. */
static void t_classic_chains(void **state)
{
	struct sbuf s = { 0 };
	struct out o;
	struct ds_stitch_stats st;
	uint64_t classic[] = { PERF_CONTEXT_KERNEL, KADDR(50), PERF_CONTEXT_USER, UADDR(7),
			       UADDR(8) };
	uint64_t user[] = { PERF_CONTEXT_USER, UADDR(9) };

	(void)state;
	sb_dsample(&s, 11, 100, 0, 0, 0x21);
	sb_sample(&s, 11, 105, 0, classic, 5);
	sb_unknown(&s, 99);
	sb_sample(&s, 12, 106, 1, user, 2);
	sb_deferred(&s, 11, 110, 0, 0x21, 0, 2);
	assert_int_equal(run(&s, &o, &st, 0), 0);
	assert_int_equal(st.complete, 2);
	assert_int_equal(st.stitched, 1);
	assert_int_equal(st.unknown, 1);
	count_lines(o.text, "complete tid=11 t=105 cpu=0 chain=K,k50,U,u7,u8", 1);
	golden("classic_chains", &o);
	free(o.text);
	free(s.b);
}

/* Bounded pending queue per task: the oldest overflows kernel-only. */
static void t_pending_overflow(void **state)
{
	struct sbuf s = { 0 };
	struct out o;
	struct ds_stitch_stats st;

	(void)state;
	for (int i = 0; i < 6; i++)
		sb_dsample(&s, 20, 100 + i, 0, (uint64_t)i * 2, 0x33);
	sb_deferred(&s, 20, 200, 0, 0x33, 0, 1);
	assert_int_equal(run(&s, &o, &st, 4), 0);
	assert_int_equal(st.unm_overflow, 2);
	assert_int_equal(st.stitched, 4);
	assert_true(st.pending_peak <= 4);
	golden("pending_overflow", &o);
	free(o.text);
	free(s.b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_basic),
		cmocka_unit_test(t_out_of_order_cpus),
		cmocka_unit_test(t_lost),
		cmocka_unit_test(t_cookie_reuse_across_tasks),
		cmocka_unit_test(t_exit_before_record),
		cmocka_unit_test(t_record_before_sample),
		cmocka_unit_test(t_truncated),
		cmocka_unit_test(t_classic_chains),
		cmocka_unit_test(t_pending_overflow),
	};

	return cmocka_run_group_tests_name("golden stitching", tests, NULL, NULL);
}
