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
};

struct skey {
	const char *k;
	size_t len;
};

static bool fent_is(const void *val, const void *arg)
{
	const struct fent *e = val;
	const struct skey *k = arg;

	return !strncmp(e->key, k->k, k->len) && !e->key[k->len];
}

static struct fent *smap_get(struct smap *m, const char *key, size_t klen, int *err)
{
	struct skey sk = { key, klen };
	uint64_t h = 1469598103934665603ULL;
	struct fent *e;

	for (size_t k = 0; k < klen; k++) {
		h ^= (unsigned char)key[k];
		h *= 1099511628211ULL;
	}
	e = ds_htab_get(&m->t, h, fent_is, &sk);
	if (e)
		return e;
	e = calloc(1, sizeof(*e) + klen + 1);
	if (!e) {
		*err = -ENOMEM;
		return NULL;
	}
	e->key = (char *)(e + 1);
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
	free(f);
}

static int append(char **b, size_t *len, size_t *cap, const char *s, bool sanitize)
{
	size_t n = strlen(s);
	int err = ds_grow(b, cap, *len + n + 2, 1);

	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (sanitize && (c == ';' || c == '\n'))
			c = ':';
		(*b)[(*len)++] = c;
	}
	(*b)[*len] = 0;
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
	char *b = NULL;
	size_t len = 0, cap = 0;
	struct fent *e;
	int err;

	err = append(&b, &len, &cap, comm && *comm ? comm : "[unknown]", true);
	for (size_t i = 0; i < fr->nr && !err; i++) {
		err = append(&b, &len, &cap, ";", false);
		if (!err)
			err = append(&b, &len, &cap, fr->names[i], true);
	}
	if (!err) {
		e = smap_get(&f->stacks, b, len, &err);
		if (e) {
			e->count += count;
			e->samples += samples;
			f->total += count;
			f->samples += samples;
		}
	}
	free(b);
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
