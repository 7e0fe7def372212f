// SPDX-License-Identifier: MIT
/*
 * Folded stacks (the SVG flame graph: flame.c; the text report: ptext.c).
 *
 * A stack is kept as an array of name ids (comm, root, ..., leaf), names
 * interned once per fold (';' and newlines made ':'), and turned into text
 * only when written: "comm;root;...;leaf" strings of every distinct stack
 * were most of report --folded's memory and a third of its time.  Stacks
 * added from a callchain (ds_fold_add_chain) go from the symbols' frame ids
 * to name ids through an array, so that a frame's name is looked at once.
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

struct fname {
	size_t off, len;	/* in names_str */
};

struct fstack {
	uint64_t count;		/* weight (the samples' periods, or 1 each) */
	uint64_t samples;	/* number of samples */
	size_t off;		/* its name ids in ids[] */
	uint32_t len;
};

struct ds_fold {
	/* names: id -> string, interned by a hash of the string */
	struct fname *names;
	size_t nr_names, cap_names;
	char *names_str;
	size_t str_len, str_cap;
	struct ds_htab name_tab;	/* hash -> id + 1 */
	/* stacks: arrays of name ids in ids[], interned by their hash */
	struct fstack *stacks;
	size_t nr_stacks, cap_stacks;
	uint32_t *ids;
	size_t ids_len, ids_cap;
	struct ds_htab stack_tab;	/* hash -> stack index + 1 */
	uint64_t total, samples;
	/* scratch: the stack being built, a sanitized name */
	uint32_t *cur;
	size_t cur_cap;
	char *tmp;
	size_t tmp_cap;
	/* ds_fold_add_chain: frame ids of the chain; symbols frame id -> name
	 * id + 1 (of the one ds_symbols used with this fold) */
	const struct ds_symbols *sym;
	uint32_t *chain_ids;
	size_t chain_cap;
	uint32_t *xl;
	size_t xl_cap;
	/* the last comm seen, and its name id */
	char last_comm[32];
	size_t last_comm_len;
	uint32_t last_comm_id;
	bool have_last_comm;
};

/* 64-bit multiply-xorshift over 8-byte words */
static uint64_t hash_bytes(const void *v, size_t n)
{
	const unsigned char *p = v;
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n, w;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, p, n);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 29);
}

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

static bool name_is(const void *val, const void *arg)
{
	const struct name_key *k = arg;
	size_t len;
	const char *s = name_of(k->f, (uint32_t)((uintptr_t)val - 1), &len);

	return len == k->len && !memcmp(s, k->s, len);
}

/* The id of name s (n bytes, ';' and newlines made ':' first). */
static int name_id(struct ds_fold *f, const char *s, size_t n, uint32_t *id)
{
	struct name_key k = { f, NULL, n };
	uintptr_t at;
	uint64_t h;
	char *d;
	int err;

	if ((err = ds_grow(&f->tmp, &f->tmp_cap, n + 1, 1)))
		return err;
	d = f->tmp;
	for (size_t i = 0; i < n; i++)
		d[i] = s[i] == ';' || s[i] == '\n' ? ':' : s[i];
	k.s = d;
	h = hash_bytes(d, n);
	at = (uintptr_t)ds_htab_get(&f->name_tab, h, name_is, &k);
	if (at) {
		*id = (uint32_t)(at - 1);
		return 0;
	}
	if (f->nr_names >= UINT32_MAX - 1 ||
	    (err = ds_grow(&f->names, &f->cap_names, f->nr_names + 1, sizeof(*f->names))) ||
	    (err = ds_grow(&f->names_str, &f->str_cap, f->str_len + n + 1, 1)))
		return err ? err : -ENOMEM;
	memcpy(f->names_str + f->str_len, d, n);
	f->names_str[f->str_len + n] = 0;
	f->names[f->nr_names].off = f->str_len;
	f->names[f->nr_names].len = n;
	if ((err = ds_htab_put(&f->name_tab, h, (void *)(uintptr_t)(f->nr_names + 1))))
		return err;
	f->str_len += n + 1;
	*id = (uint32_t)f->nr_names++;
	return 0;
}

static int comm_id(struct ds_fold *f, const char *comm, uint32_t *id)
{
	size_t n;
	int err;

	if (!comm || !*comm)
		comm = "[unknown]";
	n = strlen(comm);
	if (f->have_last_comm && n == f->last_comm_len && !memcmp(comm, f->last_comm, n)) {
		*id = f->last_comm_id;
		return 0;
	}
	err = name_id(f, comm, n, id);
	if (!err && n < sizeof(f->last_comm)) {
		memcpy(f->last_comm, comm, n);
		f->last_comm_len = n;
		f->last_comm_id = *id;
		f->have_last_comm = true;
	}
	return err;
}

struct stack_key {
	const struct ds_fold *f;
	const uint32_t *ids;
	size_t n;
};

static bool stack_is(const void *val, const void *arg)
{
	const struct stack_key *k = arg;
	const struct fstack *st = &k->f->stacks[(uintptr_t)val - 1];

	return st->len == k->n && !memcmp(k->f->ids + st->off, k->ids, k->n * sizeof(*k->ids));
}

/* Count the stack of the n name ids in f->cur. */
static int add_stack(struct ds_fold *f, size_t n, uint64_t samples, uint64_t count)
{
	struct stack_key k = { f, f->cur, n };
	uint64_t h = hash_bytes(f->cur, n * sizeof(*f->cur));
	uintptr_t at = (uintptr_t)ds_htab_get(&f->stack_tab, h, stack_is, &k);
	struct fstack *st;
	int err;

	if (!at) {
		if (n > UINT32_MAX ||
		    (err = ds_grow(&f->stacks, &f->cap_stacks, f->nr_stacks + 1,
				   sizeof(*f->stacks))) ||
		    (err = ds_grow(&f->ids, &f->ids_cap, f->ids_len + n, sizeof(*f->ids))))
			return n > UINT32_MAX ? -ENOMEM : err;
		st = &f->stacks[f->nr_stacks];
		memset(st, 0, sizeof(*st));
		st->off = f->ids_len;
		st->len = (uint32_t)n;
		memcpy(f->ids + f->ids_len, f->cur, n * sizeof(*f->cur));
		if ((err = ds_htab_put(&f->stack_tab, h, (void *)(uintptr_t)(f->nr_stacks + 1))))
			return err;
		f->ids_len += n;
		at = ++f->nr_stacks;
	}
	st = &f->stacks[at - 1];
	st->count += count;
	st->samples += samples;
	f->total += count;
	f->samples += samples;
	return 0;
}

int ds_fold_new(struct ds_fold **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void ds_fold_free(struct ds_fold *f)
{
	if (!f)
		return;
	free(f->names);
	free(f->names_str);
	ds_htab_free(&f->name_tab);
	free(f->stacks);
	free(f->ids);
	ds_htab_free(&f->stack_tab);
	free(f->cur);
	free(f->tmp);
	free(f->chain_ids);
	free(f->xl);
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
	int err = ds_grow(&f->cur, &f->cur_cap, fr->nr + 1, sizeof(*f->cur));

	if (!err)
		err = comm_id(f, comm, &f->cur[0]);
	for (size_t i = 0; i < fr->nr && !err; i++)
		err = name_id(f, fr->names[i], strlen(fr->names[i]), &f->cur[i + 1]);
	return err ? err : add_stack(f, fr->nr + 1, samples, count);
}

int ds_fold_add_chain(struct ds_fold *f, struct ds_symbols *s, const char *comm,
		      uint32_t pid, const uint64_t *chain, uint64_t nr, const char *root,
		      uint64_t samples, uint64_t count)
{
	size_t n = 0, k = 1;
	int err;

	if (f->sym && f->sym != s)
		return -EINVAL;
	f->sym = s;
	err = ds_symbols_chain_ids(s, pid, chain, nr, &f->chain_ids, &f->chain_cap, &n);
	if (!err)
		err = ds_grow(&f->cur, &f->cur_cap, n + 2, sizeof(*f->cur));
	if (!err)
		err = comm_id(f, comm, &f->cur[0]);
	if (!err && root)
		err = name_id(f, root, strlen(root), &f->cur[k++]);
	/* the chain is leaf first, stacks root first */
	for (size_t i = n; i-- > 0 && !err;) {
		uint32_t fid = f->chain_ids[i];

		if (fid >= f->xl_cap) {
			size_t old = f->xl_cap;

			if ((err = ds_grow(&f->xl, &f->xl_cap, (size_t)fid + 1, sizeof(*f->xl))))
				break;
			memset(f->xl + old, 0, (f->xl_cap - old) * sizeof(*f->xl));
		}
		if (!f->xl[fid]) {
			const struct ds_sym_info *si = ds_symbols_frame_info(s, fid);
			uint32_t id;

			if (!si)
				return -EINVAL;
			if ((err = name_id(f, si->name, strlen(si->name), &id)))
				break;
			f->xl[fid] = id + 1;
		}
		f->cur[k++] = f->xl[fid] - 1;
	}
	return err ? err : add_stack(f, k, samples, count);
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

static int cmp_key(const void *pa, const void *pb, void *arg)
{
	const struct ds_fold *f = arg;
	const struct fstack *x = &f->stacks[*(const uint32_t *)pa];
	const struct fstack *y = &f->stacks[*(const uint32_t *)pb];
	const uint32_t *p = f->ids + x->off, *q = f->ids + y->off;
	size_t n = x->len < y->len ? x->len : y->len;

	for (size_t i = 0; i < n; i++) {
		if (p[i] != q[i])
			return cmp_names(f, p[i], i + 1 < x->len, q[i], i + 1 < y->len);
	}
	return x->len < y->len ? -1 : x->len > y->len;
}

/* Decimal digits of v at the end of buf[20]: the first one. */
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
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	int err = 0;

	if (!order || !buf) {
		free(order);
		free(buf);
		return -ENOMEM;
	}
	for (size_t i = 0; i < f->nr_stacks; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, f->nr_stacks, sizeof(*order), cmp_key, (void *)f);
	/* by hand into a buffer, written in big pieces */
	for (size_t i = 0; i < f->nr_stacks && !err; i++) {
		const struct fstack *st = &f->stacks[order[i]];
		const uint32_t *ids = f->ids + st->off;
		char num[20], *d = fmt_u64(num + sizeof(num), st->count);
		size_t need = (size_t)(num + sizeof(num) - d) + 2;

		for (uint32_t k = 0; k < st->len; k++)
			need += f->names[ids[k]].len + 1;
		if (len + need > cap) {
			if (len && fwrite(buf, 1, len, out) != len)
				break;
			len = 0;
			if (need > cap && (err = ds_grow(&buf, &cap, need, 1)))
				break;
		}
		for (uint32_t k = 0; k < st->len; k++) {
			size_t nl;
			const char *nm = name_of(f, ids[k], &nl);

			if (k)
				buf[len++] = ';';
			memcpy(buf + len, nm, nl);
			len += nl;
		}
		buf[len++] = ' ';
		memcpy(buf + len, d, (size_t)(num + sizeof(num) - d));
		len += (size_t)(num + sizeof(num) - d);
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
	struct ds_fold_entry *v = malloc((f->nr_stacks + 1) * sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < f->nr_stacks; i++) {
		const struct fstack *st = &f->stacks[i];

		v[i].ids = f->ids + st->off;
		v[i].nr = st->len;
		v[i].count = st->count;
		v[i].samples = st->samples;
	}
	*n = f->nr_stacks;
	return v;
}
