// SPDX-License-Identifier: MIT
/* deferstack script: every sample with its stitch status and frames. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "cli.h"
#include "tab.h"

/*
 * The output is built by hand in a big buffer and written in 1 MiB pieces
 * (a 1 M-sample file gives 2 GB of text: printf per field was most of the
 * time), and each frame's "symbol+0xoff (object)" is formatted once per
 * frame (ds_symbols_frame()).
 */
#define OUT_CHUNK (1u << 17)
#define SLACK 32		/* bytes copy_over() may copy past the end */
/* a sample's first line besides comm and event name: the numbers (16-byte
 * stores each), the status and cookie (under 200 bytes) */
#define HEADER_ROOM 512

struct tail {
	uint32_t off, len;	/* in tails; len 0: not formatted yet */
};

/* The lines of a run of return addresses (the ips after a context
 * marker's first one, which varies), by their words: a call path seen
 * before is not looked up address by address again.  One arena of u64:
 * per run, (len << 32 | pid), (gen << 1 | kernel), its words, and per word
 * its frame's tail (offset << 32 | length).  User runs with the pid and
 * the generation of its mappings, kernel ones with the kernel symbols'
 * generation; bounded (emptied when full).  A run missed as a whole is
 * looked up in pieces of RUN_PIECE words counted from its root end, kept
 * in an arena of their own (so that they never push whole runs out): runs
 * that differ near the leaf share the pieces towards the root. */
#define RUN_MAX (1u << 19)	/* u64 in the arena: 4 MiB */
#define PIECE_MAX (1u << 16)	/* u64 in the pieces' arena: 512 KiB */
#define RUN_PIECE 8

struct arena {
	uint64_t *a;
	size_t len, cap, max;
	struct tab tab;		/* runs by hash: their offset in a, + 1 */
};

struct script {
	struct ds_pipeline *p;
	struct ds_symbols *sym;	/* p's, taken at the first output */
	bool all;
	struct arena runs, pieces;
	uint32_t kgen;		/* the symbols' kernel generation of the runs */
	uint64_t *tl;		/* a missed run's tails, assembled */
	size_t tl_cap;
	char *out;		/* OUT_CHUNK bytes and room for one line */
	size_t len, cap;
	struct tail *tails;	/* per frame id */
	size_t cap_tails;
	char *tstr;		/* the tails' text */
	size_t tstr_len, tstr_cap;
	size_t last_attr;	/* the event name of the last sample's attr */
	char event[64];
	size_t event_len;
	bool have_event;
};

static const char *unm_name(enum ds_unmatched_reason r)
{
	switch (r) {
	case DS_UNM_COOKIE_CHANGED: return "cookie-changed";
	case DS_UNM_EXIT: return "exit";
	case DS_UNM_END: return "end-of-data";
	case DS_UNM_OVERFLOW: return "pending-overflow";
	default: return "none";
	}
}

/* Stop at the first failed write to stdout (a full disk, a closed pipe),
 * with the errno of that write. */
static int stdout_failed(void)
{
	int saved = errno, err;

	if (!ferror(stdout))
		return 0;
	/* the failed write's errno, if the flush cannot tell it again */
	err = ds_stream_err(stdout);
	if ((!err || err == -EIO) && saved)
		err = -saved;
	if (!err)
		err = -EIO;
	die_msg("writing standard output: %s", strerror(-err));
	return err;
}

static int flush_out(struct script *s)
{
	if (s->len) {
		errno = 0;
		fwrite(s->out, 1, s->len, stdout);
		s->len = 0;
	}
	return stdout_failed();
}

/* Room for n more bytes: 0, or the write error. */
static int room(struct script *s, size_t n)
{
	int err;

	if (s->len + n <= s->cap)
		return 0;
	if ((err = flush_out(s)))
		return err;
	if (n > s->cap) {
		char *b = realloc(s->out, n);

		if (!b)
			return -ENOMEM;
		s->out = b;
		s->cap = n;
	}
	return 0;
}

static void put(struct script *s, const char *p, size_t n)
{
	memcpy(s->out + s->len, p, n);
	s->len += n;
}

static void put_c(struct script *s, char c, size_t n)
{
	memset(s->out + s->len, c, n);
	s->len += n;
}

static const char digits2[] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* Decimal digits of v before end: the first one. */
static char *dec(char *end, uint64_t v)
{
	while (v >= 100) {
		end -= 2;
		memcpy(end, digits2 + v % 100 * 2, 2);
		v /= 100;
	}
	if (v >= 10) {
		end -= 2;
		memcpy(end, digits2 + v * 2, 2);
	} else {
		*--end = (char)('0' + v);
	}
	return end;
}

static char *hex(char *end, uint64_t v)
{
	do {
		*--end = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	return end;
}

/* printf's %<w>u (left: %-<w>u, zero: %0<w>u) of v. */
/* printf's %<w>u (left: %-<w>u, zero: %0<w>u) of v, w <= 16: the field
 * is filled first (8-byte stores), the digits put in it. */
static inline void put_u(struct script *s, uint64_t v, size_t w, bool left, bool zero)
{
	char b[20], *d = dec(b + sizeof(b), v);
	size_t n = (size_t)(b + sizeof(b) - d);
	uint64_t fill = zero ? 0x3030303030303030ULL : 0x2020202020202020ULL;
	char *o = s->out + s->len;

	if (n >= w) {
		memcpy(o, d, n);
		s->len += n;
		return;
	}
	memcpy(o, &fill, 8);
	memcpy(o + 8, &fill, 8);
	memcpy(o + (left ? 0 : w - n), d, n);
	s->len += w;
}

/* %#llx */
static void put_xalt(struct script *s, uint64_t v)
{
	char b[16], *d = hex(b + sizeof(b), v);

	if (v)
		put(s, "0x", 2);
	put(s, d, (size_t)(b + sizeof(b) - d));
}

/* Room, then like snprintf into the buffer (the rare lines). */
static int put_fmt(struct script *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int put_fmt(struct script *s, const char *fmt, ...)
{
	va_list ap;
	int n, err;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((err = room(s, (size_t)n + 1)))
		return err;
	va_start(ap, fmt);
	vsnprintf(s->out + s->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	s->len += (size_t)n;
	return 0;
}

/* The text after a frame's address, like perf script: "symbol+0xoff
 * (object)\n" ("[unknown]" when no symbol), formatted once per frame. */
static int frame_tail(struct script *s, uint32_t id, const char **t, size_t *n)
{
	struct ds_sym_info info = { .sz = sizeof(info) }, *si = &info;
	struct tail *tl;
	char off[16], *o = off;
	const char *name, *dso;
	size_t nn, nd, no = 0, need;
	int err;

	if (id < s->cap_tails && s->tails[id].len) {
		*t = s->tstr + s->tails[id].off;
		*n = s->tails[id].len;
		return 0;
	}
	if (ds_symbols_frame_get(s->sym, id, si))
		return -EINVAL;
	if (id >= s->cap_tails) {
		size_t old = s->cap_tails;

		if ((err = ds_grow(&s->tails, &s->cap_tails, (size_t)id + 1, sizeof(*s->tails))))
			return err;
		memset(s->tails + old, 0, (s->cap_tails - old) * sizeof(*s->tails));
	}
	if (si->sym) {
		name = si->sym;
		o = hex(off + sizeof(off), si->sym_off);
		no = (size_t)(off + sizeof(off) - o) + 3;	/* "+0x" */
	} else {
		name = si->dso && si->dso[0] == '[' ? "[unknown]" : si->dso ? "[unknown]" : si->name;
	}
	dso = si->dso ? si->dso : "[unknown]";
	nn = strlen(name);
	nd = strlen(dso);
	need = nn + no + nd + 4;	/* " (", ")\n" */
	if (need > UINT32_MAX || s->tstr_len > UINT32_MAX - need)
		return -ENOMEM;
	if ((err = ds_grow(&s->tstr, &s->tstr_cap, s->tstr_len + need + SLACK, 1)))
		return err;
	tl = &s->tails[id];
	tl->off = (uint32_t)s->tstr_len;
	tl->len = (uint32_t)need;
	{
		char *d = s->tstr + s->tstr_len;

		memcpy(d, name, nn);
		d += nn;
		if (no) {
			memcpy(d, "+0x", 3);
			memcpy(d + 3, o, no - 3);
			d += no;
		}
		memcpy(d, " (", 2);
		memcpy(d + 2, dso, nd);
		memcpy(d + 2 + nd, ")\n", 2);
	}
	s->tstr_len += need;
	*t = s->tstr + tl->off;
	*n = need;
	return 0;
}

/* 8 hex digits of x (32 bits) as 8 bytes in memory order: each nibble
 * spread to a byte, made a digit or a letter, all at once. */
static inline uint64_t hex8(uint32_t x)
{
	uint64_t v = x, letters;

	v = ((v & 0xffff0000ULL) << 16) | (v & 0xffffULL);
	v = ((v & 0x0000ff000000ff00ULL) << 8) | (v & 0x000000ff000000ffULL);
	v = ((v & 0x00f000f000f000f0ULL) << 4) | (v & 0x000f000f000f000fULL);
	/* v's bytes: the nibbles, the most significant in the top byte */
	letters = ((v + 0x0606060606060606ULL) >> 4) & 0x0101010101010101ULL;
	v += 0x3030303030303030ULL + letters * ('a' - '0' - 10);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

/* Copy n bytes in 32-byte pieces: may copy up to 31 bytes more (the
 * tails and the output keep that much room). */
static inline void copy_over(char *d, const char *t, size_t n)
{
	for (size_t i = 0; i < n; i += 32)
		memcpy(d + i, t + i, 32);
}

#ifdef __SSE2__
/* "%16" PRIx64 of ip into d[0, 16): the 16 digits in one SSE2 register
 * (each byte's two nibbles spread to two bytes, made digits or letters),
 * leading zeros made spaces (a zero keeps its last digit). */
static inline void hex16(char *d, uint64_t ip)
{
	const __m128i low4 = _mm_set1_epi8(0x0f);
	__m128i x = _mm_cvtsi64_si128((long long)__builtin_bswap64(ip));
	__m128i hi = _mm_and_si128(_mm_srli_epi16(x, 4), low4);
	__m128i nib = _mm_unpacklo_epi8(hi, _mm_and_si128(x, low4));
	__m128i letter = _mm_and_si128(_mm_cmpgt_epi8(nib, _mm_set1_epi8(9)),
				       _mm_set1_epi8('a' - '0' - 10));
	__m128i dig = _mm_add_epi8(nib, _mm_add_epi8(_mm_set1_epi8('0'), letter));
	int nz = ip ? __builtin_clzll(ip) / 4 : 15;
	__m128i lead = _mm_cmplt_epi8(_mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
						    13, 14, 15),
				      _mm_set1_epi8((char)nz));

	dig = _mm_or_si128(_mm_andnot_si128(lead, dig), _mm_and_si128(lead, _mm_set1_epi8(' ')));
	_mm_storeu_si128((__m128i *)(void *)d, dig);
}
#else
/* "%16" PRIx64 of ip into d[0, 16): the digits, leading zeros made
 * spaces (a zero keeps its last digit), by 8-byte words. */
static inline void hex16(char *d, uint64_t ip)
{
	uint64_t hi = hex8((uint32_t)(ip >> 32)), lo = hex8((uint32_t)ip);
	unsigned nz = ip ? (unsigned)__builtin_clzll(ip) / 4 : 15;
	const uint64_t sp = 0x2020202020202020ULL;

	/* the first nz bytes in memory are spaces */
	if (nz >= 8) {
		hi = sp;
		nz -= 8;
		if (nz) {
			uint64_t m = nz >= 8 ? ~0ULL : (((uint64_t)1 << (8 * nz)) - 1);
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
			m = __builtin_bswap64(m);
#endif
			lo = (lo & ~m) | (sp & m);
		}
	} else if (nz) {
		uint64_t m = ((uint64_t)1 << (8 * nz)) - 1;

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
		m = __builtin_bswap64(m);
#endif
		hi = (hi & ~m) | (sp & m);
	}
	memcpy(d, &hi, 8);
	memcpy(d + 8, &lo, 8);
}
#endif

/* One frame like perf script: address, then its tail t[0, n)
 * ("symbol+offset (object)\n"), which has SLACK bytes after it. */
static inline int print_line(struct script *s, uint64_t ip, const char *t, size_t n)
{
	char *d;
	int err;

	if (s->len + n + 18 + SLACK > s->cap && (err = room(s, n + 18 + SLACK)))
		return err;
	/* "\t%16" PRIx64 " " */
	d = s->out + s->len;
	d[0] = '\t';
	hex16(d + 1, ip);
	d[17] = ' ';
	copy_over(d + 18, t, n);
	s->len += n + 18;
	return 0;
}

static int print_id(struct script *s, uint64_t ip, uint32_t id)
{
	const char *t;
	size_t n;
	int err = frame_tail(s, id, &t, &n);

	return err ? err : print_line(s, ip, t, n);
}

static int print_frame(struct script *s, const struct ds_event *ev, uint64_t ip, bool kernel)
{
	uint32_t id;
	int err = ds_symbols_frame(s->sym, ev->pid, ip, kernel, &id);

	return err ? err : print_id(s, ip, id);
}

struct run_key {
	const struct arena *ar;
	const uint64_t *w;
	size_t n;
	uint64_t h0, h1;	/* the two header words */
};

static bool run_is(const void *val, const void *arg)
{
	const struct run_key *k = arg;
	const uint64_t *r = k->ar->a + ((uintptr_t)val - 1);

	return r[0] == k->h0 && r[1] == k->h1 && !memcmp(r + 2, k->w, k->n * 8);
}

static void arena_clear(struct arena *ar)
{
	tab_free(&ar->tab);
	ar->len = 0;
}

static void runs_clear(struct script *s)
{
	arena_clear(&s->runs);
	arena_clear(&s->pieces);
}

static uint64_t run_hash(const struct run_key *k)
{
	return ds_hash_words(k->w, k->n) ^ k->h0 ^ k->h1 << 20;
}

/* The tails kept for k in its arena, or NULL. */
static const uint64_t *run_get(const struct run_key *k, uint64_t h)
{
	uintptr_t at = (uintptr_t)tab_get(&k->ar->tab, h, run_is, k);

	return !at ? NULL : k->ar->a + (at - 1) + 2 + k->n;
}

/* Keep k's words and tails in ar (emptied when full; a run too long to
 * keep is not kept). */
static int run_put(struct arena *ar, const struct run_key *k, uint64_t h, const uint64_t *tl)
{
	size_t n = k->n, need = 2 + 2 * n;
	uint64_t *r;
	int err;

	if (need > ar->max / 4)
		return 0;
	if (ar->len + need > ar->max)
		arena_clear(ar);
	if ((err = ds_grow(&ar->a, &ar->cap, ar->len + need, sizeof(*ar->a))) ||
	    (err = tab_put(&ar->tab, h, (void *)(uintptr_t)(ar->len + 1))))
		return err;
	r = ar->a + ar->len;
	r[0] = k->h0;
	r[1] = k->h1;
	memcpy(r + 2, k->w, n * 8);
	memcpy(r + 2 + n, tl, n * 8);
	ar->len += need;
	return 0;
}

/* The tails of words w[start, end) into s->tl, resolved one by one. */
static int resolve_tails(struct script *s, uint32_t pid, bool kernel, const uint64_t *w,
			 size_t start, size_t end)
{
	for (size_t i = start; i < end; i++) {
		const char *t;
		size_t tn;
		uint32_t id;
		int err;

		if ((err = ds_symbols_frame(s->sym, pid, w[i], kernel, &id)) ||
		    (err = frame_tail(s, id, &t, &tn)))
			return err;
		s->tl[i] = (uint64_t)(t - s->tstr) << 32 | tn;
	}
	return 0;
}

/* A run missed as a whole: its tails into s->tl, piece by piece. */
static int run_resolve(struct script *s, uint32_t pid, bool kernel, const struct run_key *whole)
{
	int err;

	if ((err = ds_grow(&s->tl, &s->tl_cap, whole->n, sizeof(*s->tl))))
		return err;
	if (whole->n <= RUN_PIECE)
		return resolve_tails(s, pid, kernel, whole->w, 0, whole->n);
	for (size_t end = whole->n; end > 0;) {
		size_t start = end > RUN_PIECE ? end - RUN_PIECE : 0, m = end - start;
		struct run_key k = { &s->pieces, whole->w + start, m,
				     (uint64_t)m << 32 | (uint32_t)whole->h0, whole->h1 };
		uint64_t h = run_hash(&k);
		const uint64_t *got = run_get(&k, h);

		if (got) {
			memcpy(s->tl + start, got, m * 8);
		} else if ((err = resolve_tails(s, pid, kernel, whole->w, start, end)) ||
			   (err = run_put(&s->pieces, &k, h, s->tl + start))) {
			return err;
		}
		end = start;
	}
	return 0;
}

/* Print the n ips at w, all kernel ones or all user ones of pid. */
static int print_run(struct script *s, uint32_t pid, bool kernel, const uint64_t *w, size_t n)
{
	struct ds_symbols *sym = s->sym;
	struct run_key k = { &s->runs, w, n, 0, 0 };
	uint32_t kgen = ds_symbols_kernel_gen(sym);
	uint32_t gen = kernel ? kgen : ds_symbols_user_gen(sym, pid);
	const uint64_t *tl;
	uint64_t h;
	int err;

	if (kgen != s->kgen) {
		runs_clear(s);	/* kallsyms loaded again, generations wrapped */
		s->kgen = kgen;
	}
	if (kernel)
		pid = 0;
	k.h0 = (uint64_t)n << 32 | pid;
	k.h1 = (uint64_t)gen << 1 | kernel;
	h = run_hash(&k);
	tl = run_get(&k, h);
	if (!tl) {
		if ((err = run_resolve(s, pid, kernel, &k)) ||
		    (err = run_put(&s->runs, &k, h, s->tl)))
			return err;
		tl = s->tl;
	}
	for (size_t i = 0; i < n; i++) {
		if ((err = print_line(s, w[i], s->tstr + (tl[i] >> 32), (uint32_t)tl[i])))
			return err;
	}
	return 0;
}

static const char *event_of(struct script *s, const struct ds_event *ev, size_t *n)
{
	size_t ai = ds_reader_attr_index(ds_pipeline_reader(s->p), ev->hdr);

	if (!s->have_event || ai != s->last_attr) {
		char nbuf[64];
		const char *e = pipeline_event(s->p, ev->hdr, nbuf, sizeof(nbuf));

		s->event_len = strlen(e);
		if (s->event_len >= sizeof(s->event)) {
			s->have_event = false;
			*n = s->event_len;
			return e;
		}
		memcpy(s->event, e, s->event_len);
		s->last_attr = ai;
		s->have_event = true;
	}
	*n = s->event_len;
	return s->event;
}

static int script_cb(void *arg, const struct ds_stitch_out *o)
{
	struct script *s = arg;
	const struct ds_event *ev = o->ev;
	bool kernel = false, ctx = false;
	const char *comm, *event;
	size_t ncomm, nevent;
	int err;

	if (!s->sym)
		s->sym = ds_pipeline_symbols(s->p);
	if (o->kind == DS_OUT_RECORD) {
		if (!s->all)
			return 0;
		err = put_fmt(s, "%-16s %6u/%-6u [%03u] %llu.%06llu: %s", ds_pipeline_comm(s->p, ev),
			      ev->pid, ev->tid, ev->cpu,
			      (unsigned long long)(ev->time / 1000000000),
			      (unsigned long long)(ev->time % 1000000000 / 1000),
			      ds_record_name(ev->type));
		if (err)
			return err;
		if (ev->type == DS_RECORD_CALLCHAIN_DEFERRED)
			err = put_fmt(s, " cookie=%#" PRIx64 " nr=%" PRIu64, ev->cookie, ev->nr);
		else if (ev->type == PERF_RECORD_MMAP || ev->type == PERF_RECORD_MMAP2)
			err = put_fmt(s, " %#" PRIx64 "-%#" PRIx64 " %s", ev->start,
				      ev->start + ev->len, ev->filename);
		else if (ev->type == PERF_RECORD_COMM)
			err = put_fmt(s, " %s", ev->comm);
		else if (ev->type == PERF_RECORD_LOST || ev->type == PERF_RECORD_LOST_SAMPLES)
			err = put_fmt(s, " lost=%" PRIu64, ev->lost);
		return err ? err : put_fmt(s, "\n");
	}
	/* the first user ip's frame will be a cache miss: start it now */
	for (uint64_t i = 0; i + 1 < o->nr; i++) {
		if (o->chain[i] == PERF_CONTEXT_USER) {
			ds_symbols_prefetch(s->sym, ev->pid, o->chain[i + 1]);
			break;
		}
	}
	/* like perf script: comm pid/tid [cpu] time: period event: */
	comm = ds_pipeline_comm(s->p, ev);
	ncomm = strlen(comm);
	event = event_of(s, ev, &nevent);
	if ((err = room(s, ncomm + nevent + HEADER_ROOM)))
		return err;
	put(s, comm, ncomm);
	if (ncomm < 16)
		put_c(s, ' ', 16 - ncomm);
	s->out[s->len++] = ' ';
	put_u(s, ev->pid, 6, false, false);
	s->out[s->len++] = '/';
	put_u(s, ev->tid, 6, true, false);
	put(s, " [", 2);
	put_u(s, ev->cpu, 3, false, true);
	put(s, "] ", 2);
	put_u(s, ev->time / 1000000000, 0, false, false);
	s->out[s->len++] = '.';
	put_u(s, ev->time % 1000000000 / 1000, 6, false, true);
	put(s, ": ", 2);
	put_u(s, (ev->have & DS_EV_PERIOD) ? ev->period : 1, 10, false, false);
	s->out[s->len++] = ' ';
	put(s, event, nevent);
	put(s, ": ", 2);
	switch (o->kind) {
	case DS_OUT_STITCHED:
		put(s, "stitched cookie=", 16);
		put_xalt(s, o->cookie);
		if (o->record_first)
			put(s, " (record before sample)", 23);
		s->out[s->len++] = '\n';
		break;
	case DS_OUT_KERNEL_ONLY: {
		const char *why = unm_name(o->reason);

		put(s, "kernel-only cookie=", 19);
		put_xalt(s, o->cookie);
		put(s, " (user stack not stitched: ", 27);
		put(s, why, strlen(why));
		put(s, ")\n", 2);
		break;
	}
	case DS_OUT_COMPLETE:
		put(s, "complete\n", 9);
		break;
	default:
		put(s, "no-callchain\n", 13);
		err = print_frame(s, ev, ev->ip, (ev->misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
						 PERF_RECORD_MISC_KERNEL);
		return err ? err : put_fmt(s, "\n");
	}
	for (uint64_t i = 0; i < o->nr; i++) {
		uint64_t ip = o->chain[i], j;

		if (ip >= PERF_CONTEXT_MAX) {
			ctx = true;
			kernel = ip == PERF_CONTEXT_KERNEL;
			if (ip == DS_CONTEXT_USER_DEFERRED && i + 1 < o->nr)
				i++;
			continue;
		}
		if ((err = print_frame(s, ev, ip, ctx ? kernel : ip >= 0xffff800000000000ULL)))
			return err;
		if (!ctx)
			continue;	/* each ip by its address: no run */
		/* the callers after a context's first ip */
		for (j = i + 1; j < o->nr && o->chain[j] < PERF_CONTEXT_MAX; j++)
			;
		if (j > i + 1 &&
		    (err = print_run(s, ev->pid, kernel, o->chain + i + 1, (size_t)(j - i - 1))))
			return err;
		i = j - 1;
	}
	if ((err = room(s, 1)))
		return err;
	s->out[s->len++] = '\n';
	return s->len >= OUT_CHUNK ? flush_out(s) : 0;
}

static void usage_script(FILE *f)
{
	fprintf(f,
		"usage: deferstack script [-i FILE|-] [-k KALLSYMS] [-a|--all] [--force-symbols]\n"
		"                         [--full-names]\n"
		"Print every sample like perf script: comm, pid/tid, [cpu], time, period,\n"
		"event, then the stitch status (stitched / kernel-only with the reason /\n"
		"complete) and the cookie, and the frames, leaf first: address,\n"
		"symbol+offset (or [unknown]) and (object).\n"
		"  -i FILE    input (default perf.data; -: standard input, pipe mode)\n"
		"  -k FILE    kallsyms (default FILE.kallsyms, then /proc/kallsyms)\n"
		"  -a, --all  also print non-sample records (deferred, mmap, comm, ...)\n"
		"  --force-symbols  symbolize objects whose build-id differs from the\n"
		"             recorded one (by default their frames are addresses)\n"
		"  --full-names  C++ functions with their parameters and return type\n"
		"             (by default without, as perf script: std::sort<It, Cmp>)\n");
}

int cmd_script(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "kallsyms", required_argument, NULL, 'k' },
		{ "all", no_argument, NULL, 'a' },
		{ "force-symbols", no_argument, NULL, 'Y' },
		{ "full-names", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *in = "perf.data", *ks = NULL;
	struct script s;
	struct ds_pipeline_opts po = {
		.sz = sizeof(po), .cb = script_cb, .cb_arg = &s,
		.symbols = true, .find_kallsyms = true,
	};
	int c, err, rc = 0;
	bool cb_nomem;

	memset(&s, 0, sizeof(s));
	s.runs.max = RUN_MAX;
	s.pieces.max = PIECE_MAX;
	while ((c = getopt_long(argc, argv, "i:k:ah", opts, NULL)) != -1) {
		switch (c) {
		case 'i': in = optarg; break;
		case 'k': ks = optarg; break;
		case 'a': s.all = true; break;
		case 'Y': po.force_symbols = true; break;
		case 'N': po.full_names = true; break;
		case 'h': usage_script(stdout); return 0;
		default: usage_script(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage_script(stderr);
		return 2;
	}
	/* NULL: FILE.kallsyms, else /proc/kallsyms (find_kallsyms) */
	po.kallsyms = ks;
	s.cap = OUT_CHUNK + 4096;
	s.out = malloc(s.cap);
	if (!s.out) {
		die_msg("script: out of memory");
		return 1;
	}
	err = pipeline_run(&s.p, in, &po);
	/* no message from the pipeline: the callback (out of memory) stopped it */
	cb_nomem = err == -ENOMEM && s.p && !ds_pipeline_error(s.p)[0];
	if (!err)
		err = flush_out(&s);
	if (!err)
		err = finish_stdout();
	if (!err) {
		struct ds_pipeline_summary st = pipeline_stats(s.p);

		print_summary(stderr, &st);
		rc = input_status(in, &st);
	} else if (cb_nomem) {
		die_msg("script: out of memory");
	}
	ds_pipeline_free(s.p);
	free(s.out);
	free(s.tails);
	free(s.tstr);
	runs_clear(&s);
	free(s.runs.a);
	free(s.pieces.a);
	free(s.tl);
	return err ? 1 : rc;
}
