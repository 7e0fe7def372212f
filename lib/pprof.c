// SPDX-License-Identifier: MIT
/*
 * pprof output: a gzipped profile.proto (github.com/google/pprof
 * proto/profile.proto) written by a small protobuf encoder of our own:
 * varints and length-delimited fields only, nested messages encoded into a
 * scratch buffer and copied behind their length.  Samples carry values
 * [samples count, period], labels comm and pid (and event when a file has
 * several, cpu when known, the caller's labels); time, duration and
 * comments when given; locations (one per ip) point at functions (name, object) and
 * mappings (object, first mapping seen, build-id as hex).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "deferstack/deferstack.h"
#include "internal.h"
#include "profile.h"

struct pb {
	uint8_t *b;
	size_t len, cap;
	int err;
};

static void pb_raw(struct pb *p, const void *d, size_t n)
{
	if (!n || p->err || (p->err = ds_grow(&p->b, &p->cap, p->len + n + 1, 1)))
		return;
	memcpy(p->b + p->len, d, n);
	p->len += n;
}

static void pb_uvarint(struct pb *p, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	do {
		tmp[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	pb_raw(p, tmp, n);
}

/* field with wire type 0 (int64, uint64, bool: all non-negative here) */
static void pb_int(struct pb *p, uint32_t field, uint64_t v)
{
	if (!v)
		return;		/* proto3 default */
	pb_uvarint(p, (uint64_t)field << 3);
	pb_uvarint(p, v);
}

/* field with wire type 2 */
static void pb_bytes(struct pb *p, uint32_t field, const void *d, size_t n)
{
	pb_uvarint(p, (uint64_t)field << 3 | 2);
	pb_uvarint(p, n);
	pb_raw(p, d, n);
}

/* a nested message: its bytes in m, appended to p, m emptied */
static void pb_msg(struct pb *p, uint32_t field, struct pb *m)
{
	if (m->err && !p->err)
		p->err = m->err;
	pb_bytes(p, field, m->b, m->len);
	m->len = 0;
}

/* packed repeated varints */
static void pb_packed(struct pb *p, uint32_t field, struct pb *tmp, const uint64_t *v,
		      size_t n)
{
	tmp->len = 0;
	for (size_t i = 0; i < n; i++)
		pb_uvarint(tmp, v[i]);
	pb_msg(p, field, tmp);
}

/* profile.proto field numbers */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE, PROFILE_MAPPING, PROFILE_LOCATION,
	PROFILE_FUNCTION, PROFILE_STRING_TABLE, PROFILE_PERIOD_TYPE = 11,
	PROFILE_TIME_NANOS = 9, PROFILE_DURATION_NANOS = 10, PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13, PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VT_TYPE = 1, VT_UNIT,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE, SAMPLE_LABEL,
	LABEL_KEY = 1, LABEL_STR, LABEL_NUM,
	MAPPING_ID = 1, MAPPING_START, MAPPING_LIMIT, MAPPING_OFFSET, MAPPING_FILENAME,
	MAPPING_BUILD_ID, MAPPING_HAS_FUNCTIONS,
	LOCATION_ID = 1, LOCATION_MAPPING_ID, LOCATION_ADDRESS, LOCATION_LINE,
	LINE_FUNCTION_ID = 1,
	FUNCTION_ID = 1, FUNCTION_NAME, FUNCTION_SYSTEM_NAME, FUNCTION_FILENAME,
};

/* The string table: the profile's own strings (ids shifted by one, after
 * ""), then the few the writer adds. */
struct strs {
	struct ktab extra;
	uint32_t base;
	int err;
};

static uint64_t sid(struct strs *s, const char *str)
{
	uint32_t id = 0;

	if (!*str)
		return 0;
	if (!s->err)
		s->err = ktab_get(&s->extra, str, strlen(str) + 1, &id, NULL);
	return (uint64_t)s->base + id;
}

static void value_type(struct pb *p, struct pb *m, uint32_t field, struct strs *s,
		       const char *type, const char *unit)
{
	pb_int(m, VT_TYPE, sid(s, type));
	pb_int(m, VT_UNIT, sid(s, unit));
	pb_msg(p, field, m);
}

/* cpu-clock or task-clock, with or without a modifier ("cpu-clock:u", what
 * an unprivileged recording names it): periods in nanoseconds */
static bool is_clock(const char *ev)
{
	size_t n = strcspn(ev, ":");

	return (n == 9 && !strncmp(ev, "cpu-clock", 9)) ||
	       (n == 10 && !strncmp(ev, "task-clock", 10));
}

/* A shared library's name as pprof tells them: ".so" at the end or
 * followed by '.' or '_' and a digit ("libc.so.6"). */
static bool is_library(const char *path)
{
	for (const char *q = strstr(path, ".so"); q; q = strstr(q + 1, ".so")) {
		if (!q[3] || ((q[3] == '.' || q[3] == '_') && q[4] >= '0' && q[4] <= '9'))
			return true;
	}
	return false;
}

/*
 * pprof takes the first mapping for the main binary ("File:" and "Build
 * ID:" of its reports): the first object that is neither "[...]" (the
 * kernel, [vdso], [unknown]) nor a shared library goes first, whatever
 * frame the first sample began with.  UINT32_MAX: none.
 */
static uint32_t main_map(const struct ds_profile *pr)
{
	for (uint32_t i = 0; i < pr->maps.n; i++) {
		const char *f = prof_name(pr, pr->mv[i].dso);

		if (*f && *f != '[' && !is_library(f))
			return i;
	}
	return UINT32_MAX;
}

/* The mapping id of the profile's mapping m, main first. */
static uint64_t map_id(uint32_t main, uint32_t m)
{
	if (main == UINT32_MAX || m > main)
		return (uint64_t)m + 1;
	return m == main ? 1 : (uint64_t)m + 2;
}

/* The labels every sample has: o's, then cpu when known. */
static void common_labels(struct pb *m, struct pb *l, struct strs *s,
			  const struct ds_pprof_opts *o, uint32_t cpu1)
{
	for (size_t i = 0; o && i < o->nr_labels; i++) {
		pb_int(l, LABEL_KEY, sid(s, o->labels[2 * i]));
		pb_int(l, LABEL_STR, sid(s, o->labels[2 * i + 1]));
		pb_msg(m, SAMPLE_LABEL, l);
	}
	if (cpu1) {
		/* a string: pprof drops a number label of 0 (cpu 0), and
		 * servers group by string labels */
		char cpu[16];

		snprintf(cpu, sizeof(cpu), "%" PRIu32, cpu1 - 1);
		pb_int(l, LABEL_KEY, sid(s, "cpu"));
		pb_int(l, LABEL_STR, sid(s, cpu));
		pb_msg(m, SAMPLE_LABEL, l);
	}
}

static int encode(const struct ds_profile *pr, struct pb *p, const struct ds_pprof_opts *o)
{
	struct pb m = { 0 }, l = { 0 }, t = { 0 };
	struct strs s = { .base = 1 };
	uint64_t *v = NULL;
	size_t vcap = 0;
	const char *event = NULL;
	bool one_event = true;
	uint32_t event_key, main;
	int err = 0;

	/* profile strings are ids 1..n of the table ("" is 0) */
	s.base = 1 + pr->strs.n;
	for (uint32_t i = 0; i < pr->stacks.n; i++) {
		size_t nl;
		const char *ev = prof_name(pr, prof_stack(pr, i, &nl)[1]);

		if (event && strcmp(event, ev))
			one_event = false;
		event = ev;
	}
	if (!event)
		event = "";
	/* sample types: samples/count, then the period (the default) */
	value_type(p, &m, PROFILE_SAMPLE_TYPE, &s, "samples", "count");
	if (one_event && is_clock(event))
		value_type(p, &m, PROFILE_SAMPLE_TYPE, &s, "cpu", "nanoseconds");
	else
		value_type(p, &m, PROFILE_SAMPLE_TYPE, &s, one_event && *event ? event : "period",
			   "count");
	event_key = (uint32_t)sid(&s, "event");
	for (uint32_t i = 0; i < pr->stacks.n && !err; i++) {
		size_t nl;
		const uint32_t *st = prof_stack(pr, i, &nl);
		uint64_t val[2] = { pr->sv[i].samples, pr->sv[i].period };

		if ((err = ds_grow(&v, &vcap, nl + 1, sizeof(*v))))
			break;
		for (size_t k = 0; k < nl; k++)
			v[k] = (uint64_t)st[PROF_KEYS + k] + 1;		/* location ids, leaf first */
		pb_packed(&m, SAMPLE_LOCATION_ID, &t, v, nl);
		if (!pr->total_period)
			val[1] = val[0];
		pb_packed(&m, SAMPLE_VALUE, &t, val, 2);
		pb_int(&l, LABEL_KEY, sid(&s, "comm"));
		pb_int(&l, LABEL_STR, (uint64_t)st[0] + 1);
		pb_msg(&m, SAMPLE_LABEL, &l);
		pb_int(&l, LABEL_KEY, sid(&s, "pid"));
		pb_int(&l, LABEL_NUM, st[2]);
		pb_msg(&m, SAMPLE_LABEL, &l);
		if (!one_event) {
			pb_int(&l, LABEL_KEY, event_key);
			pb_int(&l, LABEL_STR, (uint64_t)st[1] + 1);
			pb_msg(&m, SAMPLE_LABEL, &l);
		}
		common_labels(&m, &l, &s, o, st[3]);
		pb_msg(p, PROFILE_SAMPLE, &m);
	}
	main = main_map(pr);
	for (uint32_t k = 0; k < pr->maps.n && !err; k++) {
		/* in id order: the main binary, then the others as seen */
		uint32_t i = main == UINT32_MAX ? k : k == 0 ? main : k <= main ? k - 1 : k;
		const struct prof_map *mp = &pr->mv[i];
		char hex[2 * DS_BUILD_ID_MAX + 1];

		for (size_t k = 0; k < mp->build_id_len; k++)
			snprintf(hex + 2 * k, 3, "%02x", mp->build_id[k]);
		hex[2 * mp->build_id_len] = 0;
		pb_int(&m, MAPPING_ID, map_id(main, i));
		pb_int(&m, MAPPING_START, mp->start);
		pb_int(&m, MAPPING_LIMIT, mp->end);
		pb_int(&m, MAPPING_OFFSET, mp->pgoff);
		pb_int(&m, MAPPING_FILENAME, (uint64_t)mp->dso + 1);
		pb_int(&m, MAPPING_BUILD_ID, sid(&s, hex));
		pb_int(&m, MAPPING_HAS_FUNCTIONS, 1);
		pb_msg(p, PROFILE_MAPPING, &m);
	}
	for (uint32_t i = 0; i < pr->locs.n && !err; i++) {
		const struct prof_loc *lc = prof_loc(pr, i);

		pb_int(&m, LOCATION_ID, (uint64_t)i + 1);
		pb_int(&m, LOCATION_MAPPING_ID, map_id(main, lc->map));
		pb_int(&m, LOCATION_ADDRESS, lc->ip);
		pb_int(&l, LINE_FUNCTION_ID, (uint64_t)lc->func + 1);
		pb_msg(&m, LOCATION_LINE, &l);
		pb_msg(p, PROFILE_LOCATION, &m);
	}
	for (uint32_t i = 0; i < pr->funcs.n && !err; i++) {
		const struct prof_func *f = prof_func(pr, i);

		pb_int(&m, FUNCTION_ID, (uint64_t)i + 1);
		pb_int(&m, FUNCTION_NAME, (uint64_t)f->name + 1);
		pb_int(&m, FUNCTION_SYSTEM_NAME, (uint64_t)f->name + 1);
		pb_int(&m, FUNCTION_FILENAME, (uint64_t)f->dso + 1);
		pb_msg(p, PROFILE_FUNCTION, &m);
	}
	if (one_event && is_clock(event)) {
		value_type(p, &m, PROFILE_PERIOD_TYPE, &s, "cpu", "nanoseconds");
	}
	if (o) {
		pb_int(p, PROFILE_TIME_NANOS, (uint64_t)(o->time_nanos > 0 ? o->time_nanos : 0));
		pb_int(p, PROFILE_DURATION_NANOS,
		       (uint64_t)(o->duration_nanos > 0 ? o->duration_nanos : 0));
		for (size_t i = 0; i < o->nr_comments; i++)
			pb_int(p, PROFILE_COMMENT, sid(&s, o->comments[i]));
	}
	pb_int(p, PROFILE_DEFAULT_SAMPLE_TYPE,
	       one_event && is_clock(event) ? sid(&s, "cpu") :
	       sid(&s, one_event && *event ? event : "period"));
	/* string_table: "", the profile's strings, the writer's */
	pb_bytes(p, PROFILE_STRING_TABLE, "", 0);
	for (uint32_t i = 0; i < pr->strs.n; i++) {
		size_t n;
		const char *str = ktab_key(&pr->strs, i, &n);

		pb_bytes(p, PROFILE_STRING_TABLE, str, n - 1);
	}
	for (uint32_t i = 0; i < s.extra.n; i++) {
		size_t n;
		const char *str = ktab_key(&s.extra, i, &n);

		pb_bytes(p, PROFILE_STRING_TABLE, str, n - 1);
	}
	if (!err)
		err = s.err ? s.err : m.err ? m.err : l.err ? l.err : t.err ? t.err : p->err;
	free(v);
	free(m.b);
	free(l.b);
	free(t.b);
	ktab_free(&s.extra);
	return err;
}

int ds_profile_write_pprof(const struct ds_profile *pr, FILE *out)
{
	return ds_profile_write_pprof_opts(pr, out, NULL);
}

int ds_profile_write_pprof_opts(const struct ds_profile *pr, FILE *out,
				const struct ds_pprof_opts *o)
{
	struct pb p = { 0 };
	z_stream z;
	uint8_t buf[65536];
	int err, zr;

	if (o && o->sz < sizeof(*o))
		return -EINVAL;
	err = encode(pr, &p, o);
	if (err) {
		free(p.b);
		return err;
	}
	memset(&z, 0, sizeof(z));
	/* windowBits 15 + 16: a gzip stream */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		free(p.b);
		return -ENOMEM;
	}
	z.next_in = p.b;
	z.avail_in = (uInt)p.len;	/* < 4 GiB: checked below */
	if (p.len > UINT32_MAX) {
		deflateEnd(&z);
		free(p.b);
		return -EFBIG;
	}
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		zr = deflate(&z, Z_FINISH);
		if (zr == Z_STREAM_ERROR) {
			err = -EIO;
			break;
		}
		if (fwrite(buf, 1, sizeof(buf) - z.avail_out, out) != sizeof(buf) - z.avail_out) {
			err = ds_stream_err(out);
			if (!err)
				err = -EIO;
			break;
		}
	} while (zr != Z_STREAM_END);
	deflateEnd(&z);
	free(p.b);
	return err ? err : ds_stream_err(out);
}
