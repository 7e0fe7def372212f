// SPDX-License-Identifier: MIT
/* Folded stacks (the SVG flame graph: flame.c; the text report: ptext.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deferstack/deferstack.h"
#include "hash.h"
#include "internal.h"
#include "output.h"

struct fent {
	char *key;
	size_t len;		/* strlen(key) */
	uint64_t count;		/* weight (the samples' periods, or 1 each) */
	uint64_t samples;	/* number of samples */
};

/* string -> counts: the library's hash table, keyed by the string's hash,
 * values struct fent with the string after them */
struct smap {
	struct ds_htab t;
};

struct ds_fold {
	struct smap stacks;
	uint64_t total, samples;
	char *buf;		/* the key being built, reused */
	size_t cap;
};

struct skey {
	const char *k;
	size_t len;
};

static bool fent_is(const void *val, const void *arg)
{
	const struct fent *e = val;
	const struct skey *k = arg;

	return e->len == k->len && !memcmp(e->key, k->k, k->len);
}

/* 64-bit multiply-xorshift over 8-byte words (FNV-1a per byte was a tenth
 * of report --folded's time on long stacks) */
static uint64_t hash_bytes(const char *p, size_t n)
{
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

static struct fent *smap_get(struct smap *m, const char *key, size_t klen, int *err)
{
	struct skey sk = { key, klen };
	uint64_t h = hash_bytes(key, klen);
	struct fent *e;

	e = ds_htab_get(&m->t, h, fent_is, &sk);
	if (e)
		return e;
	e = calloc(1, sizeof(*e) + klen + 1);
	if (!e) {
		*err = -ENOMEM;
		return NULL;
	}
	e->key = (char *)(e + 1);
	e->len = klen;
	memcpy(e->key, key, klen);
	e->key[klen] = 0;
	*err = ds_htab_put(&m->t, h, e);
	if (*err) {
		free(e);
		return NULL;
	}
	return e;
}

static void smap_free(struct smap *m)
{
	for (size_t i = 0; i < m->t.cap; i++)
		free(m->t.s[i].val);
	ds_htab_free(&m->t);
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
	smap_free(&f->stacks);
	free(f->buf);
	free(f);
}

/* Append ";" (sep) and s, ';' and newlines in s made ':'. */
static int append(struct ds_fold *f, size_t *len, const char *s, bool sep)
{
	size_t n = strlen(s);
	int err = ds_grow(&f->buf, &f->cap, *len + n + 2, 1);
	char *d;

	if (err)
		return err;
	d = f->buf + *len;
	if (sep)
		*d++ = ';';
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		d[i] = c == ';' || c == '\n' ? ':' : c;
	}
	d[n] = 0;
	*len += n + sep;
	return 0;
}

int ds_fold_add(struct ds_fold *f, const char *comm, const struct ds_frames *fr,
		uint64_t count)
{
	return ds_fold_add_weighted(f, comm, fr, count, count);
}

int ds_fold_add_weighted(struct ds_fold *f, const char *comm, const struct ds_frames *fr,
			 uint64_t samples, uint64_t count)
{
	size_t len = 0;
	struct fent *e;
	int err;

	err = append(f, &len, comm && *comm ? comm : "[unknown]", false);
	for (size_t i = 0; i < fr->nr && !err; i++)
		err = append(f, &len, fr->names[i], true);
	if (!err) {
		e = smap_get(&f->stacks, f->buf, len, &err);
		if (e) {
			e->count += count;
			e->samples += samples;
			f->total += count;
			f->samples += samples;
		}
	}
	return err;
}

uint64_t ds_fold_total(const struct ds_fold *f)
{
	return f->total;
}

uint64_t ds_fold_samples(const struct ds_fold *f)
{
	return f->samples;
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(((const struct fent *)a)->key, ((const struct fent *)b)->key);
}

/* Dense sorted copy of the entries (keys shared, not owned). */
static struct fent *sorted(const struct smap *m, int (*cmp)(const void *, const void *))
{
	struct fent *v = malloc((m->t.used + 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		return NULL;
	for (size_t i = 0; i < m->t.cap; i++) {
		if (m->t.s[i].val)
			v[n++] = *(const struct fent *)m->t.s[i].val;
	}
	qsort(v, n, sizeof(*v), cmp);
	return v;
}

int ds_fold_write(const struct ds_fold *f, FILE *out)
{
	struct fent *v = sorted(&f->stacks, cmp_key);

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < f->stacks.t.used; i++)
		fprintf(out, "%s %" PRIu64 "\n", v[i].key, v[i].count);
	free(v);
	return ds_stream_err(out);
}

struct ds_fold_entry *ds_fold_entries(const struct ds_fold *f, size_t *n)
{
	struct ds_fold_entry *v = malloc((f->stacks.t.used + 1) * sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < f->stacks.t.cap; i++) {
		const struct fent *e = f->stacks.t.s[i].val;

		if (e) {
			v[*n].key = e->key;
			v[*n].count = e->count;
			v[(*n)++].samples = e->samples;
		}
	}
	return v;
}
