// SPDX-License-Identifier: MIT
/* Unit and golden tests of the outputs (the SVG flame graph) and of the
 * names they show (swapper, [vdso]). */
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
#include <zlib.h>

#include "deferstack/deferstack.h"
#include "output.h"
#include "streams.h"

static void add(struct ds_fold *fo, const char *comm, const char *stack, uint64_t n)
{
	char *copy = strdup(stack), *names[64], *save = NULL;
	struct ds_frames fr = { sizeof(fr), names, 0, 64, NULL, 0, 0 };

	for (char *p = strtok_r(copy, ";", &save); p; p = strtok_r(NULL, ";", &save))
		names[fr.nr++] = p;
	assert_int_equal(ds_fold_add(fo, comm, &fr, n), 0);
	free(copy);
}

static char *svg_of(struct ds_fold *fo)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_int_equal(ds_fold_write_svg(fo, f, "t"), 0);
	fclose(f);
	return text;
}

/* "name x width label" per frame box, in document order. */
static char *boxes(const char *svg)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	const char *p = strstr(svg, "<g id=\"frames\">");

	assert_non_null(p);
	while ((p = strstr(p, "<title>"))) {
		const char *t = p + 7, *e = strstr(t, " (");
		const char *r = strstr(t, "<rect x=\""), *w = strstr(t, "width=\"");
		const char *l = strstr(t, "<text "), *le;
		double x, wd;

		assert_non_null(e);
		assert_non_null(r);
		assert_non_null(w);
		assert_non_null(l);
		l = strchr(l, '>') + 1;
		le = strstr(l, "</text>");
		assert_int_equal(sscanf(r + 9, "%lf", &x), 1);
		assert_int_equal(sscanf(w + 7, "%lf", &wd), 1);
		fprintf(f, "%.*s %.2f %.2f '%.*s'\n", (int)(e - t), t, x, wd, (int)(le - l), l);
		p = le;
	}
	fclose(f);
	return out;
}

/* The sibling-merge bug: with strcmp order "main;f.cold" sat between
 * "main;f" and "main;f;g", and "f" came out as two boxes. */
static void t_flame_sibling_merge(void **state)
{
	struct ds_fold *fo;
	char *svg, *b;

	(void)state;
	assert_true(ds_fold_cmp_stacks("a;main;f;g", "a;main;f.cold") < 0);
	assert_true(ds_fold_cmp_stacks("a;main;f", "a;main;f;g") < 0);
	assert_true(ds_fold_cmp_stacks("a;main;f.cold", "a;main;f;g") > 0);
	assert_int_equal(ds_fold_cmp_stacks("a;b", "a;b"), 0);
	assert_int_equal(ds_fold_new(&fo), 0);
	add(fo, "app", "main;f", 1);
	add(fo, "app", "main;f.cold", 1);
	add(fo, "app", "main;f;g", 1);
	svg = svg_of(fo);
	b = boxes(svg);
	assert_string_equal(b,
		"all 10.00 1180.00 'all'\n"
		"app 10.00 1180.00 'app'\n"
		"main 10.00 1180.00 'main'\n"
		"f 10.00 786.67 'f'\n"
		"g 10.00 393.33 'g'\n"
		"f.cold 796.67 393.33 'f.cold'\n");
	assert_non_null(strstr(svg, "<title>f (2 samples, 66.67%)</title>"));
	assert_non_null(strstr(svg, "<title>f.cold (1 sample, 33.33%)</title>"));
	free(b);
	free(svg);
	ds_fold_free(fo);
}

/* Weights whose sum does not fit in 64 bits (a fuzzed recording's periods):
 * the sums stay at the top instead of wrapping, so no box is wider than the
 * graph (before: a root of 32 and boxes 1.5e21 pixels wide, and an
 * out-of-range conversion in the label's width). */
static void t_flame_huge_weights(void **state)
{
	struct ds_fold *fo;
	char *svg, *b;

	(void)state;
	assert_int_equal(ds_fold_new(&fo), 0);
	add(fo, "app", "main;a", 0x8000000000000010ULL);
	add(fo, "app", "main;b", 0x8000000000000010ULL);
	svg = svg_of(fo);
	b = boxes(svg);
	assert_string_equal(b,
		"all 10.00 1180.00 'all'\n"
		"app 10.00 1180.00 'app'\n"
		"main 10.00 1180.00 'main'\n"
		"a 10.00 590.00 'a'\n"
		"b 600.00 590.00 'b'\n");
	free(b);
	free(svg);
	ds_fold_free(fo);
}

/* Labels that do not fit end in "…"; the script and the controls are there;
 * names that are not valid UTF-8 or hold markup still give valid XML. */
static void t_flame_labels(void **state)
{
	struct ds_fold *fo;
	char *svg, *b;
	char name[80];

	(void)state;
	assert_int_equal(ds_fold_new(&fo), 0);
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	memcpy(name, "long_", 5);
	add(fo, "app", name, 1);		/* 1180/20 = 59 px: 7 chars */
	add(fo, "app", "a<b>&\xff", 1);
	add(fo, "app", "wide", 18);
	svg = svg_of(fo);
	b = boxes(svg);
	assert_non_null(strstr(b, "\nlong_xxxxxxxx"));
	assert_non_null(strstr(b, " 59.00 'long_x\xe2\x80\xa6'\n"));
	assert_non_null(strstr(b, "a&lt;b&gt;&amp;? "));
	assert_non_null(strstr(b, "wide 128.00 1062.00 'wide'\n"));
	assert_non_null(strstr(svg, "data-total=\"20\""));
	assert_non_null(strstr(svg, "<script type=\"text/ecmascript\"><![CDATA["));
	assert_non_null(strstr(svg, "id=\"search\""));
	assert_non_null(strstr(svg, "id=\"unzoom\""));
	assert_non_null(strstr(svg, "id=\"matched\""));
	assert_null(strstr(svg, "\xff"));
	free(b);
	free(svg);
	ds_fold_free(fo);
}

/* pid 0 is swapper (no COMM record for it), the vDSO is [vdso], a stripped
 * or unreadable object is [name+0xoff] per address. */
static void t_names(void **state)
{
	struct ds_symbols *sym;
	struct sbuf s = { 0 };
	struct ds_event ev = { .sz = sizeof(ev) };
	struct ds_sym_info si = { .sz = sizeof(si) };
	char buf[128];

	(void)state;
	assert_int_equal(ds_symbols_new(&sym, NULL), 0);
	assert_string_equal(ds_symbols_comm(sym, 0), "swapper");
	assert_null(ds_symbols_comm(sym, 5));
	sb_mmap2(&s, 7, UADDR(0), 0x2000, "[vdso]", 1);
	sb_mmap2(&s, 7, UADDR(0x10000), 0x1000, "/nonexistent/libx.so", 1);
	for (size_t off = 0; off < s.len; off += ((struct perf_event_header *)(s.b + off))->size) {
		assert_int_equal(ds_event_parse(s.b + off,
						((struct perf_event_header *)(s.b + off))->size,
						TST_ST, true, &ev), 0);
		assert_int_equal(ds_symbols_event(sym, &ev), 0);
	}
	assert_int_equal(ds_symbols_lookup(sym, 7, UADDR(0x123), false, &si, buf, sizeof(buf)),
			 0);
	assert_string_equal(si.name, "[vdso]");
	assert_string_equal(si.dso, "[vdso]");
	assert_null(si.sym);
	ds_symbols_lookup(sym, 7, UADDR(0x10456), false, &si, buf, sizeof(buf));
	assert_string_equal(si.name, "[libx.so+0x456]");
	assert_string_equal(si.dso_short, "libx.so");
	assert_int_equal(si.dso_off, 0x456);
	assert_int_equal(si.map_start, UADDR(0x10000));
	ds_symbols_lookup(sym, 7, UADDR(0x20000), false, &si, buf, sizeof(buf));
	assert_string_equal(si.name, "[unknown]");
	assert_null(si.dso);
	ds_symbols_free(sym);
	free(s.b);
}

static char *text_of(struct ds_profile *pr, const struct ds_text_opts *o)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_int_equal(ds_profile_write_text(pr, f, o), 0);
	fclose(f);
	return text;
}

/* report --text: rows by sort keys (self, children), caller/callee graphs */
static void t_profile_text(void **state)
{
	struct ds_symbols *sym;
	struct ds_profile *pr;
	FILE *f;
	char ks[] = "/tmp/ds-ks-XXXXXX", *t;
	uint64_t a[] = { PERF_CONTEXT_KERNEL, KADDR(2), KADDR(1), KADDR(0) };
	uint64_t b[] = { PERF_CONTEXT_KERNEL, KADDR(3), KADDR(1), KADDR(0) };
	uint64_t c[] = { PERF_CONTEXT_KERNEL, KADDR(2), KADDR(0) };
	struct ds_text_opts o = { .sz = sizeof(o), .keys = { DS_SORT_SYM }, .nr_keys = 1,
				  .graph = DS_GRAPH_CALLEE, .graph_min = 0.5, .top = 2 };
	int fd = mkstemp(ks);

	(void)state;
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs("ffffffff81000000 T k0\nffffffff81000001 T k1\nffffffff81000002 T k2\n"
	      "ffffffff81000003 T k3\n", f);
	fclose(f);
	assert_int_equal(ds_symbols_new(&sym, ks), 0);
	unlink(ks);
	assert_int_equal(ds_profile_new(&pr), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(ds_profile_add(pr, sym, "app", 1, "cpu-clock", a, 4, 10, NULL), 0);
	assert_int_equal(ds_profile_add(pr, sym, "app", 1, "cpu-clock", b, 4, 10, NULL), 0);
	assert_int_equal(ds_profile_add(pr, sym, "app", 2, "cpu-clock", c, 3, 10, NULL), 0);
	assert_int_equal(ds_profile_samples(pr), 5);
	t = text_of(pr, &o);
	assert_string_equal(t,
		"# Samples: 5  Total period: 50\n"
		"# Overhead by self, 2 of 4 entries, call graph callee-first\n"
		"#\n"
		"# Children      Self  Symbol\n"
		"#\n"
		"    80.00%    80.00%  [k] k2\n"
		"            |\n"
		"            ---k2\n"
		"               |\n"
		"               |--60.00%--k1\n"
		"               |          k0\n"
		"               |\n"
		"                --20.00%--k0\n"
		"\n"
		"    20.00%    20.00%  [k] k3\n"
		"            |\n"
		"            ---k3\n"
		"               k1\n"
		"               k0\n"
		"\n");
	free(t);
	o.graph = DS_GRAPH_CALLER;
	o.top = 1;
	t = text_of(pr, &o);
	assert_non_null(strstr(t,
		"    80.00%    80.00%  [k] k2\n"
		"            |\n"
		"            ---k0\n"
		"               |\n"
		"               |--60.00%--k1\n"
		"               |          k2\n"
		"               |\n"
		"                --20.00%--k2\n"));
	free(t);
	/* by inclusive overhead, keyed by pid and symbol, no graph */
	o.graph = DS_GRAPH_NONE;
	o.by_children = true;
	o.keys[0] = DS_SORT_PID;
	o.keys[1] = DS_SORT_SYM;
	o.nr_keys = 2;
	o.top = 0;
	t = text_of(pr, &o);
	assert_string_equal(t,
		"# Samples: 5  Total period: 50\n"
		"# Overhead by children (inclusive), 6 of 6 entries\n"
		"#\n"
		"# Children      Self  Pid  Symbol\n"
		"#\n"
		"    80.00%     0.00%  1    [k] k1\n"	/* ties: first seen first */
		"    80.00%     0.00%  1    [k] k0\n"
		"    60.00%    60.00%  1    [k] k2\n"
		"    20.00%    20.00%  1    [k] k3\n"
		"    20.00%    20.00%  2    [k] k2\n"
		"    20.00%     0.00%  2    [k] k0\n");
	free(t);
	/* a deep stack: linear, one row per frame */
	{
		enum { DEPTH = 20000 };
		uint64_t *deep = calloc(DEPTH + 1, sizeof(*deep));

		deep[0] = PERF_CONTEXT_KERNEL;
		for (int i = 1; i <= DEPTH; i++)
			deep[i] = KADDR(i % 4);
		assert_int_equal(ds_profile_add(pr, sym, "app", 3, "cpu-clock", deep, DEPTH + 1,
						10, "[user stack not stitched]"), 0);
		o.nr_keys = 0;
		o.graph = DS_GRAPH_CALLER;
		t = text_of(pr, &o);
		assert_non_null(strstr(t, "[.] [user stack not stitched]"));
		free(t);
		free(deep);
	}
	ds_profile_free(pr);
	ds_symbols_free(sym);
}

/* Children counts a function once per stack (recursion), Self the leaf's;
 * weights are periods; options in libbpf's style. */
static void t_profile_recursion(void **state)
{
	struct ds_symbols *sym;
	struct ds_profile *pr;
	FILE *f;
	char ks[] = "/tmp/ds-ks-XXXXXX", *t;
	/* leaf first: rec <- rec <- rec <- main, and leaf <- work <- main */
	uint64_t r[] = { PERF_CONTEXT_KERNEL, KADDR(1), KADDR(1), KADDR(1), KADDR(0) };
	uint64_t a[] = { PERF_CONTEXT_KERNEL, KADDR(3), KADDR(2), KADDR(0) };
	struct ds_text_opts o = { .sz = sizeof(o), .keys = { DS_SORT_SYM }, .nr_keys = 1,
				  .by_children = true };
	int fd = mkstemp(ks);

	(void)state;
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs("ffffffff81000000 T main\nffffffff81000001 T rec\nffffffff81000002 T work\n"
	      "ffffffff81000003 T leaf\n", f);
	fclose(f);
	assert_int_equal(ds_symbols_new(&sym, ks), 0);
	unlink(ks);
	assert_int_equal(ds_profile_new(&pr), 0);
	assert_int_equal(ds_profile_add(pr, sym, "app", 1, "cpu-clock", r, 5, 30, NULL), 0);
	assert_int_equal(ds_profile_add(pr, sym, "app", 1, "cpu-clock", a, 4, 10, NULL), 0);
	t = text_of(pr, &o);
	assert_string_equal(t,
		"# Samples: 2  Total period: 40\n"
		"# Overhead by children (inclusive), 4 of 4 entries\n"
		"#\n"
		"# Children      Self  Symbol\n"
		"#\n"
		"   100.00%     0.00%  [k] main\n"
		"    75.00%    75.00%  [k] rec\n"
		"    25.00%    25.00%  [k] leaf\n"
		"    25.00%     0.00%  [k] work\n");
	free(t);
	/* NULL options: the defaults (comm, dso, sym by self) */
	t = text_of(pr, NULL);
	assert_non_null(strstr(t, "    75.00%    75.00%  app      [kernel.kallsyms]  [k] rec\n"));
	free(t);
	/* options of a newer library: unknown fields set -> -E2BIG */
	{
		struct { struct ds_text_opts o; uint64_t more; } big;
		char *text = NULL;
		size_t len = 0;

		memset(&big, 0, sizeof(big));
		big.o.sz = sizeof(big);
		t = text_of(pr, &big.o);
		free(t);
		big.more = 1;
		f = open_memstream(&text, &len);
		assert_int_equal(ds_profile_write_text(pr, f, &big.o), -E2BIG);
		fclose(f);
		free(text);
	}
	ds_profile_free(pr);
	ds_symbols_free(sym);
}

/* The pprof file: gzip, sample types by event (a clock with a modifier,
 * as an unprivileged recording names it, is still cpu/nanoseconds). */
static void t_pprof_types(void **state)
{
	struct ds_symbols *sym;
	struct ds_profile *pr;
	uint64_t c[] = { PERF_CONTEXT_KERNEL, KADDR(1) };
	const char *events[] = { "cpu-clock:u", "page-faults" };

	(void)state;
	assert_int_equal(ds_symbols_new(&sym, NULL), 0);
	for (int i = 0; i < 2; i++) {
		char *gz = NULL, raw[4096];
		size_t len = 0;
		FILE *f = open_memstream(&gz, &len);
		z_stream z;

		assert_int_equal(ds_profile_new(&pr), 0);
		assert_int_equal(ds_profile_add(pr, sym, "app", 1, events[i], c, 2, 250, NULL), 0);
		assert_int_equal(ds_profile_write_pprof(pr, f), 0);
		fclose(f);
		assert_true(len > 2 && (unsigned char)gz[0] == 0x1f && (unsigned char)gz[1] == 0x8b);
		memset(&z, 0, sizeof(z));
		assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
		z.next_in = (unsigned char *)gz;
		z.avail_in = (unsigned)len;
		z.next_out = (unsigned char *)raw;
		z.avail_out = sizeof(raw);
		assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
		inflateEnd(&z);
		if (i == 0) {
			assert_non_null(memmem(raw, z.total_out, "nanoseconds", 11));
		} else {
			assert_null(memmem(raw, z.total_out, "nanoseconds", 11));
			assert_non_null(memmem(raw, z.total_out, "page-faults", 11));
		}
		free(gz);
		ds_profile_free(pr);
	}
	ds_symbols_free(sym);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_flame_sibling_merge),
		cmocka_unit_test(t_flame_huge_weights),
		cmocka_unit_test(t_flame_labels),
		cmocka_unit_test(t_names),
		cmocka_unit_test(t_profile_text),
		cmocka_unit_test(t_profile_recursion),
		cmocka_unit_test(t_pprof_types),
	};

	return cmocka_run_group_tests_name("outputs", tests, NULL, NULL);
}
