// SPDX-License-Identifier: MIT
/*
 * perf-report-like text of a profile: rows keyed by sort keys with
 * Children (inclusive) and Self overhead, and caller/callee call graphs.
 * Linear in the total length of the distinct stacks (each row counted once
 * per stack by a stamp), whatever the depth.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deferstack/deferstack.h"
#include "internal.h"
#include "profile.h"

struct row {
	uint64_t self, children;
	uint32_t stamp;		/* last stack + 1 that counted children */
	uint32_t comm, pid, func;	/* a representative, for printing */
};

struct tnode {
	uint32_t func;
	uint32_t child, sib;	/* node index + 1, 0 = none */
	uint64_t w;
};

struct text {
	const struct ds_profile *p;
	const struct ds_text_opts *o;
	FILE *out;
	uint64_t total;
	struct tnode *t;
	size_t nt, ct;
	char *prefix;
	size_t plen, pcap;
	int err;
};

static const char *base(const char *s)
{
	const char *b = strrchr(s, '/');

	return b && b[1] ? b + 1 : s;
}

static double pct(const struct text *x, uint64_t w)
{
	return x->total ? 100.0 * (double)w / (double)x->total : 0;
}

/* ------------------------------------------------------- call graph */

static uint32_t tnode_kid(struct text *x, uint32_t n, uint32_t func)
{
	uint32_t k, *link;

	for (k = x->t[n].child; k; k = x->t[k - 1].sib) {
		if (x->t[k - 1].func == func)
			return k - 1;
	}
	if (ds_grow(&x->t, &x->ct, x->nt + 1, sizeof(*x->t))) {
		x->err = -ENOMEM;
		return 0;
	}
	memset(&x->t[x->nt], 0, sizeof(x->t[x->nt]));
	x->t[x->nt].func = func;
	/* append at the head: order does not matter, kids are sorted */
	link = &x->t[n].child;
	x->t[x->nt].sib = *link;
	*link = (uint32_t)x->nt + 1;
	return (uint32_t)x->nt++;
}

/* kids sorted by weight (heaviest first), then by node index */
struct kid {
	uint64_t w;
	uint32_t n;
};

static int cmp_kid(const void *a, const void *b)
{
	const struct kid *x = a, *y = b;

	if (x->w != y->w)
		return x->w > y->w ? -1 : 1;
	return x->n < y->n ? -1 : 1;
}

static int push_prefix(struct text *x, const char *s)
{
	size_t n = strlen(s);

	if (ds_grow(&x->prefix, &x->pcap, x->plen + n + 1, 1))
		return x->err = -ENOMEM;
	memcpy(x->prefix + x->plen, s, n + 1);
	x->plen += n;
	return 0;
}

static const char *fname(const struct text *x, uint32_t func)
{
	return prof_name(x->p, prof_func(x->p, func)->name);
}

/* Print the descendants of node n, whose own line is printed. */
static void print_kids(struct text *x, uint32_t n)
{
	for (;;) {
		struct kid *kids = NULL;
		uint32_t nk = 0, cap = 0, k;
		size_t saved = x->plen;

		for (k = x->t[n].child; k; k = x->t[k - 1].sib) {
			if (pct(x, x->t[k - 1].w) < x->o->graph_min)
				continue;
			if (nk == cap) {
				struct kid *nkids = realloc(kids, (cap = cap ? cap * 2 : 4) *
							    sizeof(*kids));

				if (!nkids) {
					free(kids);
					x->err = -ENOMEM;
					return;
				}
				kids = nkids;
			}
			kids[nk].w = x->t[k - 1].w;
			kids[nk++].n = k - 1;
		}
		if (!nk) {
			free(kids);
			return;
		}
		if (nk == 1 && kids[0].w == x->t[n].w) {
			/* a straight chain: one line per frame, no branch */
			n = kids[0].n;
			free(kids);
			fprintf(x->out, "%s%s\n", x->prefix, fname(x, x->t[n].func));
			continue;
		}
		qsort(kids, nk, sizeof(*kids), cmp_kid);
		for (uint32_t i = 0; i < nk && !x->err; i++) {
			bool last = i + 1 == nk;
			char branch[48];
			int bl;

			bl = snprintf(branch, sizeof(branch), "--%.2f%%--", pct(x, kids[i].w));
			fprintf(x->out, "%s|\n%s%s%s%s\n", x->prefix, x->prefix, last ? " " : "|",
				branch, fname(x, x->t[kids[i].n].func));
			if (push_prefix(x, last ? " " : "|"))
				break;
			for (int j = 0; j < bl; j++)
				push_prefix(x, " ");
			print_kids(x, kids[i].n);
			x->plen = saved;
			x->prefix[saved] = 0;
		}
		free(kids);
		return;
	}
}

static void print_graph(struct text *x, const uint32_t *leafrow, uint32_t row)
{
	x->nt = 0;
	if (ds_grow(&x->t, &x->ct, 1, sizeof(*x->t))) {
		x->err = -ENOMEM;
		return;
	}
	memset(&x->t[0], 0, sizeof(x->t[0]));
	x->nt = 1;
	for (uint32_t s = 0; s < x->p->stacks.n && !x->err; s++) {
		size_t nl;
		const uint32_t *st;
		uint64_t w;
		uint32_t n = 0;

		if (leafrow[s] != row + 1)
			continue;
		st = prof_stack(x->p, s, &nl) + PROF_KEYS;
		w = prof_weight(x->p, s);
		x->t[0].w += w;
		for (size_t i = 0; i < nl && !x->err; i++) {
			size_t at = x->o->graph == DS_GRAPH_CALLEE ? i : nl - 1 - i;

			n = tnode_kid(x, n, prof_loc(x->p, st[at])->func);
			x->t[n].w += w;
		}
	}
	if (x->err)
		return;
	x->plen = 0;
	if (push_prefix(x, "            "))
		return;
	/* the first level: one chain (---name) or a branch per root */
	if (x->t[0].child && !x->t[x->t[0].child - 1].sib) {
		uint32_t k = x->t[0].child - 1;

		fprintf(x->out, "%s|\n%s---%s\n", x->prefix, x->prefix, fname(x, x->t[k].func));
		push_prefix(x, "   ");
		print_kids(x, k);
	} else {
		print_kids(x, 0);
	}
	fputc('\n', x->out);
}

/* ------------------------------------------------------------- table */

/* a row's place in the order: its two overheads, then first seen first */
struct rowkey {
	uint64_t k1, k2;
	uint32_t id;
};

static int cmp_row(const void *a, const void *b)
{
	const struct rowkey *x = a, *y = b;

	if (x->k1 != y->k1)
		return x->k1 > y->k1 ? -1 : 1;
	if (x->k2 != y->k2)
		return x->k2 > y->k2 ? -1 : 1;
	return x->id < y->id ? -1 : 1;
}

static const char *key_title(enum ds_sort_key k)
{
	switch (k) {
	case DS_SORT_COMM: return "Command";
	case DS_SORT_PID: return "Pid";
	case DS_SORT_DSO: return "Shared Object";
	default: return "Symbol";
	}
}

/* the row's cell for key k, in buf */
static const char *cell(const struct text *x, const struct row *r, enum ds_sort_key k,
			char *buf, size_t len)
{
	const struct prof_func *f = prof_func(x->p, r->func);

	switch (k) {
	case DS_SORT_COMM:
		return prof_name(x->p, r->comm);
	case DS_SORT_PID:
		snprintf(buf, len, "%" PRIu32, r->pid);
		return buf;
	case DS_SORT_DSO:
		return base(prof_name(x->p, f->dso));
	default:
		snprintf(buf, len, "[%c] %s", f->kernel ? 'k' : '.', prof_name(x->p, f->name));
		return buf;
	}
}

int ds_profile_write_text(const struct ds_profile *p, FILE *out,
			  const struct ds_text_opts *opts)
{
	static const enum ds_sort_key dflt[] = { DS_SORT_COMM, DS_SORT_DSO, DS_SORT_SYM };
	struct ds_text_opts oc;
	const struct ds_text_opts *o = &oc;
	const enum ds_sort_key *keys;
	size_t nkeys, nrows_print, width[4] = { 0 };
	struct text x = { .p = p, .o = o, .out = out };
	struct ktab rows = { 0 };
	struct row *rv = NULL;
	size_t rcap = 0;
	uint32_t *leafrow = NULL;
	struct rowkey *order = NULL;
	char buf[600];
	int err = 0;

	/* libbpf-style options: an older caller's smaller struct gets defaults */
	err = ds_opts_copy(&oc, sizeof(oc), opts, opts ? opts->sz : 0);
	if (err)
		return err;
	keys = oc.nr_keys ? oc.keys : dflt;
	nkeys = oc.nr_keys ? oc.nr_keys : 3;
	if (nkeys > 4)
		return -EINVAL;
	leafrow = calloc(p->stacks.n + 1, sizeof(*leafrow));
	if (!leafrow)
		return -ENOMEM;
	for (uint32_t s = 0; s < p->stacks.n && !err; s++) {
		size_t nl;
		const uint32_t *st = prof_stack(p, s, &nl);
		uint64_t w = prof_weight(p, s);

		x.total += w;
		for (size_t i = 0; i < nl && !err; i++) {
			const struct prof_loc *l = prof_loc(p, st[PROF_KEYS + i]);
			uint32_t key[4], id;
			bool added;

			for (size_t k = 0; k < nkeys; k++) {
				switch (keys[k]) {
				case DS_SORT_COMM: key[k] = st[0]; break;
				case DS_SORT_PID: key[k] = st[2]; break;
				case DS_SORT_DSO: key[k] = prof_func(p, l->func)->dso; break;
				default: key[k] = l->func;
				}
			}
			err = ktab_get(&rows, key, nkeys * sizeof(uint32_t), &id, &added);
			if (!err && added && !(err = ds_grow(&rv, &rcap, id + 1, sizeof(*rv)))) {
				memset(&rv[id], 0, sizeof(rv[id]));
				rv[id].comm = st[0];
				rv[id].pid = st[2];
				rv[id].func = l->func;
			}
			if (err)
				break;
			if (rv[id].stamp != s + 1) {
				rv[id].stamp = s + 1;
				rv[id].children += w;
			}
			if (i == 0) {
				rv[id].self += w;
				leafrow[s] = id + 1;
			}
		}
	}
	if (err)
		goto out;
	order = malloc((rows.n + 1) * sizeof(*order));
	if (!order) {
		err = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < rows.n; i++) {
		order[i].k1 = o->by_children ? rv[i].children : rv[i].self;
		order[i].k2 = o->by_children ? rv[i].self : rv[i].children;
		order[i].id = i;
	}
	qsort(order, rows.n, sizeof(*order), cmp_row);
	nrows_print = o->top && o->top < rows.n ? o->top : rows.n;
	for (size_t k = 0; k < nkeys; k++) {
		width[k] = strlen(key_title(keys[k]));
		for (size_t i = 0; i < nrows_print; i++) {
			size_t l = strlen(cell(&x, &rv[order[i].id], keys[k], buf, sizeof(buf)));

			if (l > width[k] && k + 1 < nkeys)
				width[k] = l < 40 ? l : 40;
		}
	}
	fprintf(out, "# Samples: %" PRIu64 "  Total %s: %" PRIu64 "\n", p->total_samples,
		p->total_period ? "period" : "samples", x.total);
	fprintf(out, "# Overhead by %s, %zu of %" PRIu32 " %s%s\n#\n",
		o->by_children ? "children (inclusive)" : "self", nrows_print, rows.n,
		rows.n == 1 ? "entry" : "entries",
		o->graph == DS_GRAPH_CALLER ? ", call graph caller-first" :
		o->graph == DS_GRAPH_CALLEE ? ", call graph callee-first" : "");
	fprintf(out, "# Children      Self");
	for (size_t k = 0; k < nkeys; k++)
		fprintf(out, "  %-*s", k + 1 < nkeys ? (int)width[k] : 0, key_title(keys[k]));
	fprintf(out, "\n#\n");
	for (size_t i = 0; i < nrows_print && !x.err; i++) {
		const struct row *r = &rv[order[i].id];

		fprintf(out, "%9.2f%% %8.2f%%", pct(&x, r->children), pct(&x, r->self));
		for (size_t k = 0; k < nkeys; k++)
			fprintf(out, "  %-*s", k + 1 < nkeys ? (int)width[k] : 0,
				cell(&x, r, keys[k], buf, sizeof(buf)));
		fputc('\n', out);
		if (o->graph != DS_GRAPH_NONE && r->self) {
			print_graph(&x, leafrow, order[i].id);
		}
	}
	err = x.err;
out:
	ktab_free(&rows);
	free(rv);
	free(leafrow);
	free(order);
	free(x.t);
	free(x.prefix);
	return err ? err : ds_stream_err(out);
}
