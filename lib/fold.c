// SPDX-License-Identifier: MIT
/* Folded stacks, text report and SVG flame graph. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deferstack/deferstack.h"
#include "hash.h"
#include "internal.h"

struct fent {
	char *key;
	uint64_t count;		/* weight (the samples' periods, or 1 each) */
	uint64_t total;		/* function table: inclusive weight */
	uint64_t samples;	/* number of samples */
	size_t mark;		/* function table: last stack counted in total */
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

/* a share in percent; 0 of 0 is 0 (all periods 0) */
static double pct(uint64_t part, uint64_t total)
{
	return total ? 100.0 * (double)part / (double)total : 0.0;
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

int ds_fold_write_text(const struct ds_fold *f, FILE *out, size_t top)
{
	struct smap funcs = { 0 };
	struct fent *v = NULL;
	int err = 0;

	/* self = leaf frame; total = every distinct frame of the stack once:
	 * a function's mark says which stack counted it last, so recursion
	 * and repeated frames cost O(1) each (linear in the stack depth) */
	for (size_t i = 0; i < f->stacks.t.cap && !err; i++) {
		const struct fent *e = f->stacks.t.s[i].val;
		const char *k, *p, *leaf;

		if (!e)
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

			if (!fe)
				break;
			if (fe->mark != i + 1) {
				fe->mark = i + 1;
				fe->total += e->count;
			}
			if (p == leaf)
				fe->count += e->count;
			p = q ? q + 1 : p + l;
		}
	}
	if (err)
		goto out;
	fprintf(out, "# %" PRIu64 " samples, weight %" PRIu64 ", %zu distinct stacks\n\n",
		f->samples, f->total, f->stacks.t.used);
	fprintf(out, "# top functions by self share (period-weighted)\n"
		"#   self%%  total%%  function\n");
	v = sorted(&funcs, cmp_count);
	if (!v) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < funcs.t.used && i < top; i++) {
		if (!v[i].count)
			break;
		fprintf(out, "%8.2f%% %6.2f%%  %s\n", pct(v[i].count, f->total),
			pct(v[i].total, f->total), v[i].key);
	}
	qsort(v, funcs.t.used, sizeof(*v), cmp_total);
	fprintf(out, "\n# top functions by total (inclusive) share\n#  total%%  function\n");
	for (size_t i = 0; i < funcs.t.used && i < top; i++)
		fprintf(out, "%8.2f%%  %s\n", pct(v[i].total, f->total), v[i].key);
	free(v);
	v = sorted(&f->stacks, cmp_count);
	if (!v) {
		err = -ENOMEM;
		goto out;
	}
	fprintf(out, "\n# top stacks (comm;root;...;leaf)\n#   share  samples  stack\n");
	for (size_t i = 0; i < f->stacks.t.used && i < top; i++)
		fprintf(out, "%8.2f%% %8" PRIu64 "  %s\n", pct(v[i].count, f->total),
			v[i].samples, v[i].key);
out:
	free(v);
	smap_free(&funcs);
	return err ? err : ds_stream_err(out);
}

/* ----------------------------------------------------------- flame graph */

struct fnode {
	char *name;
	uint64_t value, samples;
	struct fnode **kids;
	size_t nkids, ckids;
};

static void fnode_free(struct fnode *n)
{
	for (size_t i = 0; i < n->nkids; i++)
		fnode_free(n->kids[i]);
	free(n->kids);
	free(n->name);
	free(n);
}

static struct fnode *fnode_child(struct fnode *n, const char *name, size_t l)
{
	struct fnode *c;

	/* stacks arrive sorted: the matching child, if any, is the last one */
	if (n->nkids) {
		c = n->kids[n->nkids - 1];
		if (!strncmp(c->name, name, l) && !c->name[l])
			return c;
	}
	if (ds_grow(&n->kids, &n->ckids, n->nkids + 1, sizeof(*n->kids)))
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c || !(c->name = malloc(l + 1))) {
		free(c);
		return NULL;
	}
	memcpy(c->name, name, l);
	c->name[l] = 0;
	n->kids[n->nkids++] = c;
	return c;
}

static void xml_puts(FILE *out, const char *s, size_t max)
{
	for (size_t i = 0; s[i] && i < max; i++) {
		switch (s[i]) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		default:
			if ((unsigned char)s[i] >= 0x20)
				fputc(s[i], out);
		}
	}
}

#define SVG_W 1200.0
#define SVG_PAD 10.0
#define FRAME_H 16

static int depth_of(const struct fnode *n)
{
	int d = 0;

	for (size_t i = 0; i < n->nkids; i++) {
		int k = depth_of(n->kids[i]);

		if (k > d)
			d = k;
	}
	return d + 1;
}

static void svg_node(FILE *out, const struct fnode *n, double x, int depth, double scale,
		     uint64_t total, int height)
{
	double w = n->value * scale, cx = x;
	double y = height - (depth + 1) * FRAME_H - 2 * SVG_PAD;
	uint64_t h = ds_hash_str(n->name);

	if (w < 0.1)
		return;
	fprintf(out, "<g><title>");
	xml_puts(out, n->name, 4096);
	fprintf(out, " (%" PRIu64 " samples, %.2f%%)</title>", n->samples,
		pct(n->value, total));
	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" "
		"fill=\"rgb(%d,%d,%d)\" rx=\"2\"/>", x, y, w, FRAME_H - 1,
		205 + (int)(h % 50), 80 + (int)((h >> 8) % 150), (int)((h >> 16) % 55));
	if (w > 24) {
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">", x + 3, y + FRAME_H - 4);
		xml_puts(out, n->name, (size_t)((w - 6) / 7));
		fprintf(out, "</text>");
	}
	fprintf(out, "</g>\n");
	for (size_t i = 0; i < n->nkids; i++) {
		svg_node(out, n->kids[i], cx, depth + 1, scale, total, height);
		cx += n->kids[i]->value * scale;
	}
}

int ds_fold_write_svg(const struct ds_fold *f, FILE *out, const char *title)
{
	struct fent *v = sorted(&f->stacks, cmp_key);
	struct fnode *root = calloc(1, sizeof(*root));
	int err = 0, height;
	double scale;

	if (!v || !root || !(root->name = strdup("all"))) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < f->stacks.t.used && !err; i++) {
		struct fnode *n = root;
		const char *p = v[i].key;

		root->value += v[i].count;
		root->samples += v[i].samples;
		while (*p) {
			const char *q = strchr(p, ';');
			size_t l = q ? (size_t)(q - p) : strlen(p);

			n = fnode_child(n, p, l);
			if (!n) {
				err = -ENOMEM;
				break;
			}
			n->value += v[i].count;
			n->samples += v[i].samples;
			p = q ? q + 1 : p + l;
		}
	}
	if (err)
		goto out;
	height = depth_of(root) * FRAME_H + 4 * (int)SVG_PAD + 20;
	scale = root->value ? (SVG_W - 2 * SVG_PAD) / (double)root->value : 0;
	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<style>text{font-family:monospace;font-size:12px;fill:#000}"
		"rect:hover{stroke:#000;stroke-width:0.5}</style>\n"
		"<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f0\"/>\n"
		"<text x=\"%d\" y=\"20\" style=\"font-size:16px\">", (int)SVG_W, height,
		(int)SVG_W, height, (int)SVG_PAD);
	xml_puts(out, title ? title : "Flame Graph", 200);
	fprintf(out, " (%" PRIu64 " samples)</text>\n", root->samples);
	if (root->value)
		svg_node(out, root, SVG_PAD, 0, scale, root->value, height);
	fprintf(out, "</svg>\n");
	err = ds_stream_err(out);
out:
	free(v);
	if (root)
		fnode_free(root);
	return err;
}
