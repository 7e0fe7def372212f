// SPDX-License-Identifier: MIT
/* Folded stacks and the text report (the SVG flame graph: flame.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deferstack/deferstack.h"
#include "internal.h"
#include "output.h"

struct fent {
	char *key;
	uint64_t count, total;	/* total: used by the function table only */
};

/* string -> counts, open addressing */
struct smap {
	struct fent *e;
	size_t cap, used;
};

struct ds_fold {
	struct smap stacks;
	uint64_t total;
};

static struct fent *smap_get(struct smap *m, const char *key, size_t klen, int *err)
{
	size_t mask, i;
	uint64_t h = 1469598103934665603ULL;

	if ((m->used + 1) * 2 > m->cap) {
		struct smap n = { NULL, m->cap ? m->cap * 2 : 256, 0 };

		n.e = calloc(n.cap, sizeof(*n.e));
		if (!n.e) {
			*err = -ENOMEM;
			return NULL;
		}
		for (size_t k = 0; k < m->cap; k++) {
			if (m->e[k].key) {
				size_t j = ds_hash_str(m->e[k].key) & (n.cap - 1);

				while (n.e[j].key)
					j = (j + 1) & (n.cap - 1);
				n.e[j] = m->e[k];
			}
		}
		n.used = m->used;
		free(m->e);
		*m = n;
	}
	for (size_t k = 0; k < klen; k++) {
		h ^= (unsigned char)key[k];
		h *= 1099511628211ULL;
	}
	mask = m->cap - 1;
	i = h & mask;
	while (m->e[i].key) {
		if (!strncmp(m->e[i].key, key, klen) && !m->e[i].key[klen])
			return &m->e[i];
		i = (i + 1) & mask;
	}
	m->e[i].key = malloc(klen + 1);
	if (!m->e[i].key) {
		*err = -ENOMEM;
		return NULL;
	}
	memcpy(m->e[i].key, key, klen);
	m->e[i].key[klen] = 0;
	m->used++;
	return &m->e[i];
}

static void smap_free(struct smap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->e[i].key);
	free(m->e);
	memset(m, 0, sizeof(*m));
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
			f->total += count;
		}
	}
	free(b);
	return err;
}

uint64_t ds_fold_total(const struct ds_fold *f)
{
	return f->total;
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(((const struct fent *)a)->key, ((const struct fent *)b)->key);
}

static int cmp_count(const void *a, const void *b)
{
	const struct fent *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->key, y->key);
}

static int cmp_total(const void *a, const void *b)
{
	const struct fent *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->key, y->key);
}

/* Dense sorted copy of the entries (keys shared, not owned). */
static struct fent *sorted(const struct smap *m, int (*cmp)(const void *, const void *))
{
	struct fent *v = malloc((m->used + 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		return NULL;
	for (size_t i = 0; i < m->cap; i++) {
		if (m->e[i].key)
			v[n++] = m->e[i];
	}
	qsort(v, n, sizeof(*v), cmp);
	return v;
}

int ds_fold_write(const struct ds_fold *f, FILE *out)
{
	struct fent *v = sorted(&f->stacks, cmp_key);

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < f->stacks.used; i++)
		fprintf(out, "%s %" PRIu64 "\n", v[i].key, v[i].count);
	free(v);
	return ds_stream_err(out);
}

int ds_fold_write_text(const struct ds_fold *f, FILE *out, size_t top)
{
	struct smap funcs = { 0 };
	struct fent *v = NULL;
	int err = 0;

	/* self = leaf frame; total = every distinct frame of the stack once */
	for (size_t i = 0; i < f->stacks.cap && !err; i++) {
		const struct fent *e = &f->stacks.e[i];
		const char *k, *p, *leaf;
		char **seen = NULL;
		size_t nseen = 0, cseen = 0;

		if (!e->key)
			continue;
		k = strchr(e->key, ';');
		if (!k)
			continue;	/* no frames */
		k++;
		leaf = strrchr(k, ';');
		leaf = leaf ? leaf + 1 : k;
		for (p = k; *p && !err;) {
			const char *q = strchr(p, ';');
			size_t l = q ? (size_t)(q - p) : strlen(p);
			struct fent *fe = smap_get(&funcs, p, l, &err);
			bool dup = false;

			if (!fe)
				break;
			for (size_t j = 0; j < nseen; j++)
				dup |= seen[j] == fe->key;
			if (!dup) {
				fe->total += e->count;
				if (!ds_grow(&seen, &cseen, nseen + 1, sizeof(*seen)))
					seen[nseen++] = fe->key;
			}
			if (p == leaf)
				fe->count += e->count;
			p = q ? q + 1 : p + l;
		}
		free(seen);
	}
	if (err)
		goto out;
	fprintf(out, "# %" PRIu64 " samples, %zu distinct stacks\n\n", f->total,
		f->stacks.used);
	fprintf(out, "# top functions by self samples\n#   self%%  total%%  function\n");
	v = sorted(&funcs, cmp_count);
	if (!v) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < funcs.used && i < top; i++) {
		if (!v[i].count)
			break;
		fprintf(out, "%8.2f%% %6.2f%%  %s\n", 100.0 * v[i].count / f->total,
			100.0 * v[i].total / f->total, v[i].key);
	}
	qsort(v, funcs.used, sizeof(*v), cmp_total);
	fprintf(out, "\n# top functions by total (inclusive) samples\n#  total%%  function\n");
	for (size_t i = 0; i < funcs.used && i < top; i++)
		fprintf(out, "%8.2f%%  %s\n", 100.0 * v[i].total / f->total, v[i].key);
	free(v);
	v = sorted(&f->stacks, cmp_count);
	if (!v) {
		err = -ENOMEM;
		goto out;
	}
	fprintf(out, "\n# top stacks (comm;root;...;leaf)\n");
	for (size_t i = 0; i < f->stacks.used && i < top; i++)
		fprintf(out, "%8.2f%% %8" PRIu64 "  %s\n", 100.0 * v[i].count / f->total,
			v[i].count, v[i].key);
out:
	free(v);
	smap_free(&funcs);
	return err ? err : ds_stream_err(out);
}

struct ds_fold_entry *ds_fold_entries(const struct ds_fold *f, size_t *n)
{
	struct ds_fold_entry *v = malloc((f->stacks.used + 1) * sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < f->stacks.cap; i++) {
		if (f->stacks.e[i].key) {
			v[*n].key = f->stacks.e[i].key;
			v[(*n)++].count = f->stacks.e[i].count;
		}
	}
	return v;
}
