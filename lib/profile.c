// SPDX-License-Identifier: MIT
/*
 * Profile: samples aggregated by (comm, pid, event, stack of locations),
 * each location an (ip, function, mapping), each function a (name, object).
 * Feeds the perf-report-like text (sort keys, caller/callee trees) and the
 * pprof writer (pprof.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deferstack/deferstack.h"
#include "internal.h"
#include "profile.h"

/* ------------------------------------------------- interned byte keys */

static uint64_t hash_bytes(const void *k, size_t n)
{
	const unsigned char *p = k;
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 1099511628211ULL;
	}
	return h;
}

void ktab_free(struct ktab *t)
{
	ds_htab_free(&t->ids);
	free(t->blob);
	free(t->off);
	free(t->len);
	memset(t, 0, sizeof(*t));
}

const void *ktab_key(const struct ktab *t, uint32_t id, size_t *len)
{
	if (len)
		*len = t->len[id];
	return t->blob + t->off[id];
}

struct kref {
	const struct ktab *t;
	const void *key;
	size_t klen;
};

/* is the id (value: id + 1) the one of this key? */
static bool key_is(const void *val, const void *arg)
{
	const struct kref *k = arg;
	uint32_t id = (uint32_t)(uintptr_t)val - 1;

	return k->t->len[id] == k->klen && !memcmp(k->t->blob + k->t->off[id], k->key, k->klen);
}

/* id of key (added if new, *added set).  0 or -ENOMEM. */
int ktab_get(struct ktab *t, const void *key, size_t klen, uint32_t *id, bool *added)
{
	struct kref k = { t, key, klen };
	uint64_t h = hash_bytes(key, klen);
	uintptr_t v = (uintptr_t)ds_htab_get(&t->ids, h, key_is, &k);
	int err;

	if (added)
		*added = false;
	if (v) {
		*id = (uint32_t)v - 1;
		return 0;
	}
	if (t->n >= UINT32_MAX - 1)
		return -ENOMEM;
	/* keys 8-byte aligned in the blob: callers read u32/u64 arrays */
	if ((err = ds_grow(&t->blob, &t->bcap, t->blen + klen + 8, 1)) ||
	    (err = ds_grow(&t->off, &t->ocap, t->n + 1, sizeof(*t->off))) ||
	    (err = ds_grow(&t->len, &t->lcap, t->n + 1, sizeof(*t->len))) ||
	    (err = ds_htab_put(&t->ids, h, (void *)(uintptr_t)(t->n + 1))))
		return err;
	memcpy(t->blob + t->blen, key, klen);
	t->off[t->n] = t->blen;
	t->len[t->n] = klen;
	t->blen += (klen + 7) & ~(size_t)7;
	*id = t->n++;
	if (added)
		*added = true;
	return 0;
}

/* ------------------------------------------------------------ profile */

int ds_profile_new(struct ds_profile **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void ds_profile_free(struct ds_profile *p)
{
	if (!p)
		return;
	ktab_free(&p->strs);
	ktab_free(&p->funcs);
	ktab_free(&p->locs);
	ktab_free(&p->maps);
	ktab_free(&p->stacks);
	free(p->mv);
	free(p->sv);
	free(p->scratch);
	free(p);
}

uint32_t prof_str(struct ds_profile *p, const char *s, int *err)
{
	uint32_t id = 0;

	if (!*err)
		*err = ktab_get(&p->strs, s, strlen(s) + 1, &id, NULL);
	return id;
}

const char *prof_name(const struct ds_profile *p, uint32_t str)
{
	return ktab_key(&p->strs, str, NULL);
}

static uint32_t intern_map(struct ds_profile *p, const struct ds_sym_info *si, uint32_t dso,
			   int *err)
{
	uint32_t id = 0;
	bool added;

	if (*err || (*err = ktab_get(&p->maps, &dso, sizeof(dso), &id, &added)))
		return 0;
	if (added) {
		struct prof_map *m;

		if ((*err = ds_grow(&p->mv, &p->mcap, id + 1, sizeof(*p->mv))))
			return 0;
		m = &p->mv[id];
		memset(m, 0, sizeof(*m));
		m->dso = dso;
		m->kernel = si->kernel;
		m->start = si->map_start;
		m->end = si->map_end;
		m->pgoff = si->map_pgoff;
		if (si->build_id && si->build_id_len <= sizeof(m->build_id)) {
			memcpy(m->build_id, si->build_id, si->build_id_len);
			m->build_id_len = si->build_id_len;
		}
	}
	return id;
}

/* location of one frame: function (name, object), mapping, ip */
static uint32_t intern_loc(struct ds_profile *p, const struct ds_sym_info *si, uint64_t ip,
			   int *err)
{
	struct prof_func fk;
	struct prof_loc lk;
	uint32_t id = 0;

	memset(&fk, 0, sizeof(fk));
	memset(&lk, 0, sizeof(lk));
	fk.name = prof_str(p, si->name, err);
	fk.dso = prof_str(p, si->dso ? si->dso : "[unknown]", err);
	fk.kernel = si->kernel;
	if (!*err)
		*err = ktab_get(&p->funcs, &fk, sizeof(fk), &lk.func, NULL);
	lk.map = intern_map(p, si, fk.dso, err);
	lk.ip = ip;
	lk.dso_off = si->dso_off;
	if (!*err)
		*err = ktab_get(&p->locs, &lk, sizeof(lk), &id, NULL);
	return id;
}

int ds_profile_add(struct ds_profile *p, struct ds_symbols *sym, const char *comm,
		   uint32_t pid, const char *event, const uint64_t *chain, uint64_t nr,
		   uint64_t period, const char *root_marker)
{
	struct ds_profile_sample s = {
		.sz = sizeof(s), .comm = comm, .pid = pid, .cpu = -1, .event = event,
		.chain = chain, .nr = nr, .period = period, .root_marker = root_marker,
	};

	return ds_profile_add_sample(p, sym, &s);
}

int ds_profile_add_sample(struct ds_profile *p, struct ds_symbols *sym,
			  const struct ds_profile_sample *s)
{
	bool kernel = false, have_ctx = false;
	struct prof_stack *st;
	size_t n = PROF_KEYS;	/* comm, event, pid, cpu + 1, then location ids */
	const uint64_t *chain = s->chain;
	uint64_t nr = s->nr, period = s->period;
	const char *comm = s->comm, *event = s->event, *root_marker = s->root_marker;
	uint32_t id, pid = s->pid;
	bool added;
	int err = 0;

	if (s->sz < sizeof(*s))
		return -EINVAL;
	if ((err = ds_grow(&p->scratch, &p->scap, n + 1, sizeof(uint32_t))))
		return err;
	p->scratch[0] = prof_str(p, comm && *comm ? comm : "[unknown]", &err);
	p->scratch[1] = prof_str(p, event ? event : "", &err);
	p->scratch[2] = pid;
	p->scratch[3] = s->cpu < 0 ? 0 : (uint32_t)s->cpu + 1;
	for (uint64_t i = 0; i < nr && !err; i++) {
		uint64_t ip = chain[i];
		struct ds_sym_info si = { .sz = sizeof(si) };

		if (ip >= PERF_CONTEXT_MAX) {
			if (ip == DS_CONTEXT_USER_DEFERRED) {
				i++;	/* skip the cookie */
				continue;
			}
			have_ctx = true;
			kernel = ip == PERF_CONTEXT_KERNEL;
			continue;
		}
		ds_symbols_lookup(sym, pid, ip, have_ctx ? kernel : ip >= 0xffff800000000000ULL,
				  &si, p->buf, sizeof(p->buf));
		id = intern_loc(p, &si, ip, &err);
		if (!err && !(err = ds_grow(&p->scratch, &p->scap, n + 1, sizeof(uint32_t))))
			p->scratch[n++] = id;
	}
	if (root_marker && !err) {
		struct ds_sym_info si;

		memset(&si, 0, sizeof(si));
		si.name = root_marker;
		id = intern_loc(p, &si, 0, &err);
		if (!err && !(err = ds_grow(&p->scratch, &p->scap, n + 1, sizeof(uint32_t))))
			p->scratch[n++] = id;
	}
	if (!err)
		err = ktab_get(&p->stacks, p->scratch, n * sizeof(uint32_t), &id, &added);
	if (err)
		return err;
	if (added) {
		if ((err = ds_grow(&p->sv, &p->svcap, id + 1, sizeof(*p->sv))))
			return err;
		memset(&p->sv[id], 0, sizeof(p->sv[id]));
	}
	st = &p->sv[id];
	st->samples++;
	st->period += period;
	p->total_samples++;
	p->total_period += period;
	return 0;
}

const uint32_t *prof_stack(const struct ds_profile *p, uint32_t id, size_t *nlocs)
{
	size_t len;
	const uint32_t *k = ktab_key(&p->stacks, id, &len);

	*nlocs = len / sizeof(uint32_t) - PROF_KEYS;
	return k;	/* [comm, event, pid, cpu + 1, loc...] */
}

const struct prof_loc *prof_loc(const struct ds_profile *p, uint32_t id)
{
	return ktab_key(&p->locs, id, NULL);
}

const struct prof_func *prof_func(const struct ds_profile *p, uint32_t id)
{
	return ktab_key(&p->funcs, id, NULL);
}

uint64_t prof_weight(const struct ds_profile *p, uint32_t stack)
{
	/* period when the samples carry one (perf's overhead), else samples */
	return p->total_period ? p->sv[stack].period : p->sv[stack].samples;
}

uint64_t ds_profile_samples(const struct ds_profile *p)
{
	return p->total_samples;
}
