// SPDX-License-Identifier: MIT
/*
 * Folded stacks (the SVG flame graph: flame.c; the text report: ptext.c).
 *
 * Nothing is kept as text until it is written ("comm;root;...;leaf" strings
 * of every distinct stack were most of report --folded's memory and a third
 * of its time).  Frame names are interned once per fold (';' and newlines
 * made ':'), runs of names as segments, and a stack is (comm, root marker,
 * user segment, kernel segment): a stack's samples mostly differ in one of
 * the two parts only.  Stacks are told apart by what they say, whatever
 * their split: their hash is a polynomial one over the names, which
 * segments combine, and stacks of equal hash are compared name by name.
 *
 * ds_fold_add_chain() turns a callchain into its two segments through a
 * cache of the chains' words (with the pid and the generation of its
 * mappings for the user part; bounded: emptied when full), so that a
 * chain seen before costs two hash lookups, not one per frame; a chain not
 * seen goes from the symbols' frame ids to name ids through an array.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deferstack/deferstack.h"
#include "hash.h"
#include "internal.h"
#include "output.h"

#define HASH_B 0x100000001b3ULL	/* odd: powers never vanish mod 2^64 */
/* the chain cache's words: 1 MiB, grown up to 4 MiB while it serves most
 * lookups (raw_put()) */
#define RAW_MIN_WORDS (1u << 17)
#define RAW_MAX_WORDS (1u << 19)
#define PIECE_MAX_WORDS (1u << 16)	/* its pieces' cache: 512 KiB at most */

struct fname {
	size_t off, len;	/* in names_str */
};

/* a sequence of name ids, root first */
struct fseg {
	uint64_t hash;		/* sum of (id + 1) * B^(len - 1 - i) */
	uint64_t pw;		/* B^len */
	size_t off;		/* in seg_ids */
	uint32_t len;
};

/* comm, root marker, the user part (callers, then the leaf), the kernel
 * part (callers, then the leaf): the leaf ips of samples vary a lot more
 * than their callers' return addresses */
struct fstack {
	uint64_t count;		/* weight (the samples' periods, or 1 each) */
	uint64_t samples;	/* number of samples */
	uint32_t comm;		/* name id */
	uint32_t root;		/* name id + 1, 0: none */
	uint32_t useg;		/* segment */
	uint32_t uleaf;		/* name id + 1, 0: none */
	uint32_t kseg;
	uint32_t kleaf;
};

/* a chain's words (user part: with pid and generation) -> its segment */
struct fraw {
	uint64_t ctx;		/* the context marker the words follow, or 0 */
	size_t off;		/* in words */
	uint32_t len;
	uint32_t pid, gen;
	uint32_t seg;
	bool kernel;
};

/* A cache of call paths' words -> segment: entries in an array, their words
 * in one arena, found by hash; bounded (emptied when full). */
struct rawcache {
	struct fraw *raw;
	size_t nr, cap;
	uint64_t *words;
	size_t len, wcap, max;	/* max: words at most */
	size_t limit;		/* what max may grow to */
	uint64_t looks, hits;	/* since the cache last started again */
	struct ds_itab tab;
};

struct ds_fold {
	/* names: id -> string, interned by a hash of the string */
	struct fname *names;
	size_t nr_names, cap_names;
	char *names_str;
	size_t str_len, str_cap;
	struct ds_itab name_tab;	/* name ids by hash */
	/* segments, interned by their ids; segment 0 is the empty one */
	struct fseg *segs;
	size_t nr_segs, cap_segs;
	uint32_t *seg_ids;
	size_t ids_len, ids_cap;
	struct ds_itab seg_tab;		/* segments by hash */
	/* stacks */
	struct fstack *stacks;
	size_t nr_stacks, cap_stacks;
	struct ds_itab stack_tab;	/* stacks by hash */
	uint64_t total, samples;
	/* scratch: a segment being built, a sanitized name, chain words */
	uint32_t *cur;
	size_t cur_cap;
	uint32_t *path;		/* a call path's names, assembled from pieces */
	size_t path_cap;
	char *tmp;
	size_t tmp_cap;
	uint64_t *words;
	size_t words_cap;
	/* ds_fold_add_chain: the ds_symbols used with this fold, its frame
	 * ids -> name id + 1, the chain cache */
	struct ds_symbols *sym;
	uint32_t *chain_ids;
	size_t chain_cap;
	uint32_t *xl;
	size_t xl_cap;
	struct rawcache paths;		/* whole call paths */
	struct rawcache pieces;		/* pieces of missed ones (apart: they
					 * must not push whole paths out) */
	uint32_t kgen;			/* the symbols' kernel generation cached */
	/* comms seen lately and their name ids, by a hash of their text */
	struct {
		char text[24];	/* NUL-terminated; "" : free */
		uint32_t id;
	} comms[16];
};

static const char *name_of(const struct ds_fold *f, uint32_t id, size_t *len)
{
	*len = f->names[id].len;
	return f->names_str + f->names[id].off;
}

const char *ds_fold_name(const struct ds_fold *f, uint32_t id)
{
	size_t len;

	return name_of(f, id, &len);
}

struct name_key {
	const struct ds_fold *f;
	const char *s;
	size_t len;
};

static bool name_is(uint32_t id, const void *arg)
{
	const struct name_key *k = arg;
	size_t len;
	const char *s = name_of(k->f, id, &len);

	return len == k->len && !memcmp(s, k->s, len);
}

/* The id of name s (n bytes, ';' and newlines made ':' first). */
static int name_id(struct ds_fold *f, const char *s, size_t n, uint32_t *id)
{
	struct name_key k = { f, NULL, n };
	int64_t at;
	uint64_t h;
	char *d;
	int err;

	if ((err = ds_grow(&f->tmp, &f->tmp_cap, n + 1, 1)))
		return err;
	d = f->tmp;
	for (size_t i = 0; i < n; i++)
		d[i] = s[i] == ';' || s[i] == '\n' ? ':' : s[i];
	k.s = d;
	h = ds_hash_bytes(d, n);
	at = ds_itab_get(&f->name_tab, h, name_is, &k);
	if (at >= 0) {
		*id = (uint32_t)at;
		return 0;
	}
	if (f->nr_names >= UINT32_MAX - 1)
		return -ENOMEM;
	if ((err = ds_grow(&f->names, &f->cap_names, f->nr_names + 1, sizeof(*f->names))) ||
	    (err = ds_grow(&f->names_str, &f->str_cap, f->str_len + n + 1, 1)))
		return err;
	memcpy(f->names_str + f->str_len, d, n);
	f->names_str[f->str_len + n] = 0;
	f->names[f->nr_names].off = f->str_len;
	f->names[f->nr_names].len = n;
	if ((err = ds_itab_put(&f->name_tab, h, (uint32_t)f->nr_names)))
		return err;
	f->str_len += n + 1;
	*id = (uint32_t)f->nr_names++;
	return 0;
}

static int comm_id(struct ds_fold *f, const char *comm, uint32_t *id)
{
	size_t n;
	unsigned k;
	int err;

	if (!comm || !*comm)
		comm = "[unknown]";
	n = strlen(comm);
	if (n >= sizeof(f->comms[0].text))
		return name_id(f, comm, n, id);
	k = (unsigned)(ds_hash_bytes(comm, n) % (sizeof(f->comms) / sizeof(f->comms[0])));
	if (!memcmp(f->comms[k].text, comm, n + 1)) {
		*id = f->comms[k].id;
		return 0;
	}
	err = name_id(f, comm, n, id);
	if (!err) {
		memcpy(f->comms[k].text, comm, n + 1);
		f->comms[k].id = *id;
	}
	return err;
}

/* ---- segments */

static const uint32_t *seg_ids(const struct ds_fold *f, uint32_t seg, size_t *len)
{
	*len = f->segs[seg].len;
	/* An empty segment before any id was stored: no array yet. */
	return f->seg_ids ? f->seg_ids + f->segs[seg].off : NULL;
}

struct seg_key {
	const struct ds_fold *f;
	const uint32_t *ids;
	size_t n;
};

static bool seg_is(uint32_t seg, const void *arg)
{
	const struct seg_key *k = arg;
	size_t len;
	const uint32_t *ids = seg_ids(k->f, seg, &len);

	return len == k->n && (!len || !memcmp(ids, k->ids, len * sizeof(*ids)));
}

static int add_empty_seg(struct ds_fold *f)
{
	int err = ds_grow(&f->segs, &f->cap_segs, 1, sizeof(*f->segs));

	if (err)
		return err;
	memset(f->segs, 0, sizeof(*f->segs));
	f->segs[0].pw = 1;
	f->nr_segs = 1;
	return 0;
}

/* The segment of the n name ids at ids (root first). */
static int seg_id(struct ds_fold *f, const uint32_t *ids, size_t n, uint32_t *seg)
{
	struct seg_key k = { f, ids, n };
	uint64_t hash = 0, pw = 1, h;
	int64_t at;
	struct fseg *sg;
	int err;

	if (!f->nr_segs && (err = add_empty_seg(f)))
		return err;
	if (!n) {
		*seg = 0;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		hash = hash * HASH_B + ids[i] + 1;
		pw *= HASH_B;
	}
	h = ds_hash_bytes(ids, n * sizeof(*ids));
	at = ds_itab_get(&f->seg_tab, h, seg_is, &k);
	if (at >= 0) {
		*seg = (uint32_t)at;
		return 0;
	}
	if (n > UINT32_MAX || f->nr_segs >= UINT32_MAX - 1)
		return -ENOMEM;
	if ((err = ds_grow(&f->segs, &f->cap_segs, f->nr_segs + 1, sizeof(*f->segs))) ||
	    (err = ds_grow(&f->seg_ids, &f->ids_cap, f->ids_len + n, sizeof(*f->seg_ids))))
		return err;
	sg = &f->segs[f->nr_segs];
	sg->hash = hash;
	sg->pw = pw;
	sg->off = f->ids_len;
	sg->len = (uint32_t)n;
	memcpy(f->seg_ids + f->ids_len, ids, n * sizeof(*ids));
	if ((err = ds_itab_put(&f->seg_tab, h, (uint32_t)f->nr_segs)))
		return err;
	f->ids_len += n;
	*seg = (uint32_t)f->nr_segs++;
	return 0;
}

/* ---- stacks */

/* A stack as runs of name ids: comm (and root), user callers, user leaf,
 * kernel callers, kernel leaf; the empty ones left out. */
struct view {
	uint32_t one[4];	/* comm, root, user leaf, kernel leaf */
	const uint32_t *run[5];
	size_t len[5];
	size_t nr;		/* runs, none empty */
	size_t total;
};

static void view_of(const struct ds_fold *f, const struct fstack *st, struct view *v)
{
	size_t n = 1, ul, kl;
	const uint32_t *u = seg_ids(f, st->useg, &ul), *k = seg_ids(f, st->kseg, &kl);

	v->one[0] = st->comm;
	v->one[1] = st->root - 1;
	v->run[0] = &v->one[0];
	v->len[0] = 1 + (st->root != 0);	/* one[1] follows one[0] */
	if (ul) {
		v->run[n] = u;
		v->len[n++] = ul;
	}
	if (st->uleaf) {
		v->one[2] = st->uleaf - 1;
		v->run[n] = &v->one[2];
		v->len[n++] = 1;
	}
	if (kl) {
		v->run[n] = k;
		v->len[n++] = kl;
	}
	if (st->kleaf) {
		v->one[3] = st->kleaf - 1;
		v->run[n] = &v->one[3];
		v->len[n++] = 1;
	}
	v->nr = n;
	v->total = v->len[0] + ul + (st->uleaf != 0) + kl + (st->kleaf != 0);
}

/* Walk a view, name id by name id (at most total of them). */
struct cursor {
	const struct view *v;
	size_t part, at;
};

static uint32_t cur_next(struct cursor *c)
{
	while (c->at >= c->v->len[c->part]) {
		c->part++;
		c->at = 0;
	}
	return c->v->run[c->part][c->at++];
}

static bool same_names(const struct ds_fold *f, const struct fstack *a, const struct fstack *b)
{
	struct view va, vb;
	struct cursor ca = { &va, 0, 0 }, cb = { &vb, 0, 0 };

	view_of(f, a, &va);
	view_of(f, b, &vb);
	if (va.total != vb.total)
		return false;
	for (size_t i = 0; i < va.total; i++) {
		if (cur_next(&ca) != cur_next(&cb))
			return false;
	}
	return true;
}

struct stack_key {
	const struct ds_fold *f;
	const struct fstack *st;
};

static bool stack_is(uint32_t idx, const void *arg)
{
	const struct stack_key *k = arg;
	const struct fstack *st = &k->f->stacks[idx];

	if (st->comm == k->st->comm && st->root == k->st->root && st->useg == k->st->useg &&
	    st->uleaf == k->st->uleaf && st->kseg == k->st->kseg && st->kleaf == k->st->kleaf)
		return true;
	/* the same names split otherwise (or a hash collision) */
	return same_names(k->f, st, k->st);
}

/* Count a sample of stack k (its counts 0): the hash is a polynomial one
 * over its names, whatever their split in parts. */
static int add_stack(struct ds_fold *f, const struct fstack *k, uint64_t samples,
		     uint64_t count)
{
	struct stack_key sk = { f, k };
	const struct fseg *u = &f->segs[k->useg], *ks = &f->segs[k->kseg];
	uint64_t h = k->comm + 1;
	int64_t at;
	struct fstack *st;
	int err;

	if (k->root)
		h = h * HASH_B + k->root;
	h = h * u->pw + u->hash;
	if (k->uleaf)
		h = h * HASH_B + k->uleaf;
	h = h * ks->pw + ks->hash;
	if (k->kleaf)
		h = h * HASH_B + k->kleaf;
	at = ds_itab_get(&f->stack_tab, h, stack_is, &sk);
	if (at < 0) {
		if (f->nr_stacks >= UINT32_MAX - 1)
			return -ENOMEM;
		if ((err = ds_grow(&f->stacks, &f->cap_stacks, f->nr_stacks + 1,
				   sizeof(*f->stacks))))
			return err;
		f->stacks[f->nr_stacks] = *k;
		if ((err = ds_itab_put(&f->stack_tab, h, (uint32_t)f->nr_stacks)))
			return err;
		at = (int64_t)f->nr_stacks++;
	}
	st = &f->stacks[at];
	st->count += count;
	st->samples += samples;
	f->total += count;
	f->samples += samples;
	return 0;
}

int ds_fold_new(struct ds_fold **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->paths.max = RAW_MIN_WORDS;
	(*out)->paths.limit = RAW_MAX_WORDS;
	(*out)->pieces.max = (*out)->pieces.limit = PIECE_MAX_WORDS;
	return 0;
}

static void rc_clear(struct rawcache *c)
{
	ds_itab_free(&c->tab);
	c->nr = 0;
	c->len = 0;
	c->looks = c->hits = 0;
}

static void raw_clear(struct ds_fold *f)
{
	rc_clear(&f->paths);
	rc_clear(&f->pieces);
}

void ds_fold_free(struct ds_fold *f)
{
	if (!f)
		return;
	free(f->names);
	free(f->names_str);
	ds_itab_free(&f->name_tab);
	free(f->segs);
	free(f->seg_ids);
	ds_itab_free(&f->seg_tab);
	free(f->stacks);
	ds_itab_free(&f->stack_tab);
	free(f->cur);
	free(f->path);
	free(f->tmp);
	free(f->words);
	free(f->chain_ids);
	free(f->xl);
	raw_clear(f);
	free(f->paths.raw);
	free(f->paths.words);
	free(f->pieces.raw);
	free(f->pieces.words);
	free(f);
}

int ds_fold_add(struct ds_fold *f, const char *comm, const struct ds_frames *fr,
		uint64_t count)
{
	return ds_fold_add_weighted(f, comm, fr, count, count);
}

int ds_fold_add_weighted(struct ds_fold *f, const char *comm, const struct ds_frames *fr,
			 uint64_t samples, uint64_t count)
{
	struct fstack k = { 0 };
	int err;

	/* every field is needed: an older, smaller struct has none we lack */
	if (fr->sz < sizeof(*fr))
		return -EINVAL;
	err = ds_grow(&f->cur, &f->cur_cap, fr->nr + 1, sizeof(*f->cur));
	if (!err)
		err = comm_id(f, comm, &k.comm);
	for (size_t i = 0; i < fr->nr && !err; i++)
		err = name_id(f, fr->names[i], strlen(fr->names[i]), &f->cur[i]);
	if (!err)
		err = seg_id(f, f->cur, fr->nr, &k.useg);
	return err ? err : add_stack(f, &k, samples, count);
}

/* The name id of the symbols' frame fid. */
static int frame_name(struct ds_fold *f, uint32_t fid, uint32_t *id)
{
	int err;

	if (fid >= f->xl_cap) {
		size_t old = f->xl_cap;

		if ((err = ds_grow(&f->xl, &f->xl_cap, (size_t)fid + 1, sizeof(*f->xl))))
			return err;
		memset(f->xl + old, 0, (f->xl_cap - old) * sizeof(*f->xl));
	}
	if (!f->xl[fid]) {
		struct ds_sym_info si = { .sz = sizeof(si) };

		if (ds_symbols_frame_get(f->sym, fid, &si))
			return -EINVAL;
		if ((err = name_id(f, si.name, strlen(si.name), id)))
			return err;
		f->xl[fid] = *id + 1;
	}
	*id = f->xl[fid] - 1;
	return 0;
}

/* The segment of a part of a chain (words as recorded, leaf first, after
 * context marker ctx or 0), symbolized for pid. */
static int resolve_seg(struct ds_fold *f, uint32_t pid, uint64_t ctx, const uint64_t *w,
		       size_t nr, uint32_t *seg)
{
	struct ds_symbols *s = f->sym;
	size_t n = 0;
	int err;

	err = ds_symbols_chain_ids(s, pid, ctx, w, nr, &f->chain_ids, &f->chain_cap, &n);
	if (!err)
		err = ds_grow(&f->cur, &f->cur_cap, n + 1, sizeof(*f->cur));
	/* the chain is leaf first, segments root first */
	for (size_t i = 0; i < n && !err; i++)
		err = frame_name(f, f->chain_ids[n - 1 - i], &f->cur[i]);
	return err ? err : seg_id(f, f->cur, n, seg);
}

struct raw_key {
	struct rawcache *c;
	const uint64_t *w;
	size_t n;
	uint64_t ctx;
	uint32_t pid, gen;
	bool kernel;
};

static bool raw_is(uint32_t idx, const void *arg)
{
	const struct raw_key *k = arg;
	const struct fraw *r = &k->c->raw[idx];

	return r->len == k->n && r->kernel == k->kernel && r->pid == k->pid && r->ctx == k->ctx &&
	       r->gen == k->gen && !memcmp(k->c->words + r->off, k->w, k->n * 8);
}

static uint64_t raw_hash(const struct raw_key *k)
{
	return ds_hash_words(k->w, k->n) ^ (uint64_t)k->pid << 32 ^ k->gen ^ k->ctx ^
	       (uint64_t)k->kernel << 63;
}

/* The segment cached for k (in the cache k names), or -1. */
static int64_t raw_get(const struct raw_key *k, uint64_t h)
{
	int64_t at = ds_itab_get(&k->c->tab, h, raw_is, k);

	k->c->looks++;
	k->c->hits += at >= 0;
	return at < 0 ? -1 : (int64_t)k->c->raw[at].seg;
}

/* Remember in c that k's words resolve to segment seg (bounded: c starts
 * again when full; without memory, only slower). */
static void raw_put(struct rawcache *c, const struct raw_key *k, uint64_t h, uint32_t seg)
{
	struct fraw *r;

	if (k->n > c->max / 4)
		return;
	if (c->len + k->n > c->max) {
		/* full: a cache that serves three lookups in four grows (a
		 * few thousand call paths met again and again: 85 to 95 %
		 * on bench/mkbench's file), one that does less is emptied
		 * at the size it has (a busy host's system-wide recording:
		 * 40 to 55 %, where 4 MiB of cache saved no time) */
		if (c->max < c->limit && c->hits * 4 >= c->looks * 3)
			c->max *= 2;
		else
			rc_clear(c);
	}
	if (ds_grow(&c->raw, &c->cap, c->nr + 1, sizeof(*c->raw)) ||
	    ds_grow(&c->words, &c->wcap, c->len + k->n, sizeof(*c->words)) ||
	    ds_itab_put(&c->tab, h, (uint32_t)c->nr))
		return;
	r = &c->raw[c->nr++];
	r->ctx = k->ctx;
	r->off = c->len;
	r->len = (uint32_t)k->n;
	r->pid = k->pid;
	r->gen = k->gen;
	r->seg = seg;
	r->kernel = k->kernel;
	memcpy(c->words + c->len, k->w, k->n * 8);
	c->len += k->n;
}

/*
 * A call path missed as a whole is resolved in pieces of CHUNK return
 * addresses counted from its root end, each through the chain cache:
 * paths that differ near the leaf share the pieces towards the root, so
 * their addresses are not looked up again.  Words with context markers
 * (a part that is not one kernel or one user run) go whole.
 */
#define CHUNK 8

static int resolve_chunked(struct ds_fold *f, const struct raw_key *whole, bool marker,
			   uint32_t *seg)
{
	size_t nr = whole->n, at = 0;
	int err;

	for (size_t i = 0; marker && i < nr; i++) {
		if (whole->w[i] >= PERF_CONTEXT_MAX)
			return resolve_seg(f, whole->pid, whole->ctx, whole->w, nr, seg);
	}
	if ((err = ds_grow(&f->path, &f->path_cap, nr + 1, sizeof(*f->path))))
		return err;
	for (size_t end = nr; end > 0;) {
		size_t start = end > CHUNK ? end - CHUNK : 0, len;
		struct raw_key k = *whole;
		const uint32_t *ids;
		uint32_t cs;
		uint64_t h;
		int64_t got;

		k.c = &f->pieces;
		k.w = whole->w + start;
		k.n = end - start;
		h = raw_hash(&k);
		got = raw_get(&k, h);
		if (got >= 0) {
			cs = (uint32_t)got;
		} else {
			if ((err = resolve_seg(f, whole->pid, whole->ctx, k.w, k.n, &cs)))
				return err;
			raw_put(&f->pieces, &k, h, cs);
		}
		ids = seg_ids(f, cs, &len);
		if (len)
			memcpy(f->path + at, ids, len * sizeof(*ids));
		at += len;
		end = start;
	}
	return seg_id(f, f->path, at, seg);
}

/* The segment of words w[0, nr) after context marker ctx (or 0), through
 * the chain cache: a kernel part resolves alike in every process, a user
 * part for pid while its mappings are unchanged.  The cookie after
 * USER_DEFERRED (never symbolized) is not part of the key. */
static int raw_seg(struct ds_fold *f, bool kernel, uint32_t pid, uint64_t ctx,
		   const uint64_t *w, size_t nr, uint32_t *seg)
{
	struct raw_key k = { &f->paths, w, nr, ctx, kernel ? 0 : pid, 0, kernel };
	bool marker = false;
	int64_t at;
	uint64_t h;
	int err;

	if (!nr) {
		*seg = 0;
		return f->nr_segs ? 0 : add_empty_seg(f);
	}
	if (!kernel)
		k.gen = ds_symbols_user_gen(f->sym, pid);
	/* context markers (USER_DEFERRED among them) are rare in the words:
	 * one pass without a branch per word tells whether to look */
	for (size_t i = 0; i < nr; i++)
		marker |= (w[i] | 0xfff) == UINT64_MAX;
	_Static_assert(PERF_CONTEXT_MAX == (uint64_t)-4095,
		       "markers are among the top 4096 values");
	for (size_t i = 0; marker && i + 1 < nr; i++) {
		if (w[i] == DS_CONTEXT_USER_DEFERRED) {
			if ((err = ds_grow(&f->words, &f->words_cap, nr, sizeof(*w))))
				return err;
			memcpy(f->words, w, nr * sizeof(*w));
			for (size_t j = i; j + 1 < nr; j++) {
				if (f->words[j] == DS_CONTEXT_USER_DEFERRED)
					f->words[++j] = 0;
			}
			k.w = f->words;
			break;
		}
	}
	h = raw_hash(&k);
	at = raw_get(&k, h);
	if (at >= 0) {
		*seg = (uint32_t)at;
		return 0;
	}
	/* pieces only when the words are the callers after a context marker */
	if (ctx && nr > CHUNK)
		err = resolve_chunked(f, &k, marker, seg);
	else
		err = resolve_seg(f, pid, ctx, w, nr, seg);
	if (!err)
		raw_put(&f->paths, &k, h, *seg);
	return err;
}

/* A part of a chain: a context marker and its leaf ip (resolved each
 * time: it varies), then the callers (through the chain cache); or words
 * that do not start so (all through the cache). */
static int part(struct ds_fold *f, bool kernel, uint32_t pid, const uint64_t *w, size_t nr,
		uint32_t *seg, uint32_t *leaf)
{
	uint32_t fid, id = 0;
	int err;

	*leaf = 0;
	if (nr >= 2 && w[0] >= PERF_CONTEXT_MAX && w[0] != DS_CONTEXT_USER_DEFERRED &&
	    w[1] < PERF_CONTEXT_MAX) {
		err = ds_symbols_frame(f->sym, pid, w[1], w[0] == PERF_CONTEXT_KERNEL, &fid);
		if (!err)
			err = frame_name(f, fid, &id);
		if (!err)
			err = raw_seg(f, kernel, pid, w[0], w + 2, nr - 2, seg);
		*leaf = id + 1;
		return err;
	}
	return raw_seg(f, kernel, pid, 0, w, nr, seg);
}

static int add_chain(struct ds_fold *f, struct ds_symbols *s, const char *comm,
		     uint32_t pid, const uint64_t *chain, uint64_t nr, const char *root,
		     uint64_t samples, uint64_t count);

int ds_fold_add_chain_opts(struct ds_fold *f, struct ds_symbols *s,
			   const struct ds_fold_chain_opts *o)
{
	struct ds_fold_chain_opts c;
	int err;

	if (!o)
		return -EINVAL;
	if (o->sz != sizeof(c)) {	/* another size: ours, the rest 0 */
		if ((err = ds_opts_copy(&c, sizeof(c), o, o->sz)))
			return err;
		o = &c;
	}
	return add_chain(f, s, o->comm, o->pid, o->chain, o->nr, o->root, o->samples,
			 o->weight);
}

int ds_fold_add_chain(struct ds_fold *f, struct ds_symbols *s, const char *comm,
		      uint32_t pid, const uint64_t *chain, uint64_t nr, const char *root,
		      uint64_t samples, uint64_t count)
{
	struct ds_fold_chain_opts o = {
		.sz = sizeof(o), .comm = comm, .pid = pid, .chain = chain, .nr = nr,
		.root = root, .samples = samples, .weight = count,
	};

	return ds_fold_add_chain_opts(f, s, &o);
}

static int add_chain(struct ds_fold *f, struct ds_symbols *s, const char *comm,
		     uint32_t pid, const uint64_t *chain, uint64_t nr, const char *root,
		     uint64_t samples, uint64_t count)
{
	struct fstack k = { 0 };
	size_t u = 0;
	bool kernel = false;
	int err;

	if (f->sym && f->sym != s)
		return -EINVAL;
	f->sym = s;
	if (f->kgen != ds_symbols_kernel_gen(s)) {
		raw_clear(f);	/* kallsyms loaded again */
		f->kgen = ds_symbols_kernel_gen(s);
	}
	/*
	 * Split at the first PERF_CONTEXT_USER: before it a kernel part if it
	 * is PERF_CONTEXT_KERNEL and kernel ips only (a USER_DEFERRED and its
	 * cookie at most), resolved alike in every process; otherwise the
	 * whole chain is one part, resolved for pid.
	 */
	if (nr && chain[0] == PERF_CONTEXT_KERNEL) {
		kernel = true;
		for (u = 1; u < nr && chain[u] != PERF_CONTEXT_USER; u++) {
			if (chain[u] == DS_CONTEXT_USER_DEFERRED)
				u++;
			else if (chain[u] >= PERF_CONTEXT_MAX)
				kernel = false;
		}
		if (u > nr)
			u = nr;
	}
	if (!kernel)
		u = 0;
	/* the user leaf's frame will be a cache miss: start it now */
	if (u + 1 < nr && chain[u] == PERF_CONTEXT_USER && chain[u + 1] < PERF_CONTEXT_MAX)
		ds_symbols_prefetch(s, pid, chain[u + 1]);
	err = comm_id(f, comm, &k.comm);
	if (!err && root && !(err = name_id(f, root, strlen(root), &k.root)))
		k.root++;
	if (!err)
		err = part(f, true, pid, chain, u, &k.kseg, &k.kleaf);
	if (!err)
		err = part(f, false, pid, chain + u, nr - u, &k.useg, &k.uleaf);
	return err ? err : add_stack(f, &k, samples, count);
}

uint64_t ds_fold_total(const struct ds_fold *f)
{
	return f->total;
}

uint64_t ds_fold_samples(const struct ds_fold *f)
{
	return f->samples;
}

/*
 * The order of the keys "comm;root;...;leaf" by strcmp, without building
 * them: names hold no ';', so the first frame that differs decides, as its
 * two names, each followed by ';' (more frames) or NUL (the last one).
 */
static int cmp_names(const struct ds_fold *f, uint32_t a, bool amore, uint32_t b, bool bmore)
{
	size_t la, lb;
	const unsigned char *sa = (const unsigned char *)name_of(f, a, &la);
	const unsigned char *sb = (const unsigned char *)name_of(f, b, &lb);
	size_t n = la < lb ? la : lb;
	int c = memcmp(sa, sb, n);
	unsigned ca, cb;

	if (c)
		return c < 0 ? -1 : 1;
	ca = la > n ? sa[n] : amore ? ';' : 0;
	cb = lb > n ? sb[n] : bmore ? ';' : 0;
	return ca < cb ? -1 : ca > cb;
}

/* Where position h of a view is: its run and the offset in it. */
static void seek(const struct view *v, size_t h, size_t *p, size_t *a)
{
	size_t k = 0;

	while (k < v->nr && h >= v->len[k])
		h -= v->len[k++];
	*p = k;
	*a = h;
}

/*
 * The order of two stacks' texts (their views), given that their first h
 * frames are the same; *lcp is set to how many frames the two have the
 * same, a frame being its name and whether more follow (the last frame of
 * [a, b] is not the same as the second one of [a, b, c]).
 */
static int cmp_from(const struct ds_fold *f, const struct view *vx, const struct view *vy,
		    size_t h, size_t *lcp)
{
	size_t px, py, ax, ay, done = h;

	seek(vx, h, &px, &ax);
	seek(vy, h, &py, &ay);
	/* run against run: a span both have is compared as two arrays, and
	 * skipped at once when it is the same memory (a shared segment) */
	while (px < vx->nr && py < vy->nr) {
		const uint32_t *rx = vx->run[px] + ax, *ry = vy->run[py] + ay;
		size_t lx = vx->len[px] - ax, ly = vy->len[py] - ay, n = lx < ly ? lx : ly;

		if (rx != ry) {
			for (size_t i = 0; i < n; i++) {
				if (rx[i] != ry[i]) {
					*lcp = done + i;
					return cmp_names(f, rx[i], done + i + 1 < vx->total, ry[i],
							 done + i + 1 < vy->total);
				}
			}
		}
		done += n;
		if (n == lx) {
			px++;
			ax = 0;
		} else {
			ax += n;
		}
		if (n == ly) {
			py++;
			ay = 0;
		} else {
			ay += n;
		}
	}
	/* one is the other's beginning: their last common frame differs */
	*lcp = done ? done - 1 : 0;
	return vx->total < vy->total ? -1 : vx->total > vy->total;
}

/*
 * Sort the stack indices a[0, n) by their texts: a bottom-up merge sort
 * that knows, for each element of a run, how many frames it has the same as
 * the one before it (its lcp), and for each head of a merge how many it has
 * the same as the last one written out.  The head that shares more with
 * that one comes first without a comparison; a comparison starts where both
 * heads stop sharing it.  So a long common beginning (a process's stacks
 * from main down) is not read again at each comparison.  It keeps the views
 * of the two heads (one view per step, not two per comparison); tmp holds n.
 * No two stacks have the same text.
 *
 * An element's lcp rides in the top byte of its index (no memory of its
 * own), up to LCP_MAX: a head at LCP_MAX may share more, and a tie there
 * compares from LCP_MAX, which both heads share.  With 2^24 stacks or more
 * every lcp is 0: every step compares, from the first frame.
 */
#define LCP_SHIFT 24
#define LCP_MAX 255u

static void sort_stacks(const struct ds_fold *f, uint32_t *a, uint32_t *tmp, size_t n)
{
	const uint32_t mask = n < 1u << LCP_SHIFT ? (1u << LCP_SHIFT) - 1 : UINT32_MAX;
	const size_t cap = mask == UINT32_MAX ? 0 : LCP_MAX;
	uint32_t *src = a, *dst = tmp;

#define LCP_OF(e) (mask == UINT32_MAX ? 0 : (e) >> LCP_SHIFT)
#define WITH_LCP(e, l) (((e) & mask) | (mask == UINT32_MAX ? 0 : (uint32_t)(l) << LCP_SHIFT))
	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, o = lo, li = 0, lj = 0, h;
			struct view vi, vj;

			if (i < mid && j < hi) {
				view_of(f, &f->stacks[src[i] & mask], &vi);
				view_of(f, &f->stacks[src[j] & mask], &vj);
			}
			while (i < mid && j < hi) {
				bool left;

				if (li != lj) {
					left = li > lj;
				} else {
					left = cmp_from(f, &vi, &vj, li, &h) < 0;
					h = h < cap ? h : cap;
					if (left)
						lj = h;
					else
						li = h;
				}
				if (left) {
					dst[o++] = WITH_LCP(src[i], li);
					if (++i < mid) {
						li = LCP_OF(src[i]);
						view_of(f, &f->stacks[src[i] & mask], &vi);
					}
				} else {
					dst[o++] = WITH_LCP(src[j], lj);
					if (++j < hi) {
						lj = LCP_OF(src[j]);
						view_of(f, &f->stacks[src[j] & mask], &vj);
					}
				}
			}
			/* the rest of a run: its first one's lcp is to the last out */
			if (i < mid) {
				dst[o++] = WITH_LCP(src[i], li);
				i++;
			}
			while (i < mid)
				dst[o++] = src[i++];
			if (j < hi) {
				dst[o++] = WITH_LCP(src[j], lj);
				j++;
			}
			while (j < hi)
				dst[o++] = src[j++];
		}
		/* the runs twice as long are in dst now */
		dst = src;
		src = src == a ? tmp : a;
	}
#undef LCP_OF
#undef WITH_LCP
	for (size_t i = 0; i < n; i++)
		a[i] = src[i] & mask;
}

/* Decimal digits of v before end: the first one. */
static char *fmt_u64(char *end, uint64_t v)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

int ds_fold_write(const struct ds_fold *f, FILE *out)
{
	uint32_t *order = malloc((f->nr_stacks + 1) * sizeof(*order));
	uint32_t *tmp = malloc((f->nr_stacks + 1) * sizeof(*tmp));
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	int err = 0;

	if (!order || !tmp || !buf) {
		free(order);
		free(tmp);
		free(buf);
		return -ENOMEM;
	}
	for (size_t i = 0; i < f->nr_stacks; i++)
		order[i] = (uint32_t)i;
	sort_stacks(f, order, tmp, f->nr_stacks);
	free(tmp);
	/* by hand into a buffer, written in big pieces */
	for (size_t i = 0; i < f->nr_stacks && !err; i++) {
		const struct fstack *st = &f->stacks[order[i]];
		struct view v;
		struct cursor c = { &v, 0, 0 };
		char num[20], *d = fmt_u64(num + sizeof(num), st->count);
		size_t nd = (size_t)(num + sizeof(num) - d), need = nd + 2;

		view_of(f, st, &v);
		for (size_t k = 0; k < v.total; k++)
			need += f->names[cur_next(&c)].len + 1;
		if (len + need > cap) {
			if (len && fwrite(buf, 1, len, out) != len)
				break;
			len = 0;
			if (need > cap && (err = ds_grow(&buf, &cap, need, 1)))
				break;
		}
		c.part = c.at = 0;
		for (size_t k = 0; k < v.total; k++) {
			size_t nl;
			const char *nm = name_of(f, cur_next(&c), &nl);

			if (k)
				buf[len++] = ';';
			memcpy(buf + len, nm, nl);
			len += nl;
		}
		buf[len++] = ' ';
		memcpy(buf + len, d, nd);
		len += nd;
		buf[len++] = '\n';
	}
	if (!err && len)
		fwrite(buf, 1, len, out);
	free(buf);
	free(order);
	return err ? err : ds_stream_err(out);
}

struct ds_fold_entry *ds_fold_entries(const struct ds_fold *f, size_t *n)
{
	size_t ids = 0, sz;
	struct ds_fold_entry *v;
	uint32_t *p;

	*n = 0;
	for (size_t i = 0; i < f->nr_stacks; i++) {
		const struct fstack *st = &f->stacks[i];

		ids += 1 + !!st->root + f->segs[st->useg].len + !!st->uleaf +
		       f->segs[st->kseg].len + !!st->kleaf;
	}
	/* the entries, then their name ids: one block */
	sz = (f->nr_stacks + 1) * sizeof(*v);
	if (ids > (SIZE_MAX - sz) / sizeof(*p) || !(v = malloc(sz + ids * sizeof(*p))))
		return NULL;
	p = (uint32_t *)(void *)((char *)v + sz);
	for (size_t i = 0; i < f->nr_stacks; i++) {
		const struct fstack *st = &f->stacks[i];
		struct view vw;
		struct cursor c = { &vw, 0, 0 };

		view_of(f, st, &vw);
		v[i].ids = p;
		v[i].nr = vw.total;
		v[i].count = st->count;
		v[i].samples = st->samples;
		for (size_t k = 0; k < vw.total; k++)
			*p++ = cur_next(&c);
	}
	*n = f->nr_stacks;
	return v;
}
