// SPDX-License-Identifier: MIT
/* The hash table of libdeferstack: see hash.h. */
#include <errno.h>
#include <stdlib.h>

#include "hash.h"
#include "internal.h"

/* ---- the index table */

static void iplace(struct ds_itab *t, uint32_t tag, uint32_t val)
{
	size_t i = ds_ihome(t, tag);

	while (t->s[i].val)
		i = (i + 1) & (t->cap - 1);
	t->s[i].tag = tag;
	t->s[i].val = val;
}

/* Remove slot i: backward shift, moving up every later entry of the run
 * whose home is not cyclically in (i, j]. */
static void idel_at(struct ds_itab *t, size_t i)
{
	size_t mask = t->cap - 1;

	t->s[i].val = 0;
	t->used--;
	for (size_t j = (i + 1) & mask; t->s[j].val; j = (j + 1) & mask) {
		size_t k = ds_ihome(t, t->s[j].tag);

		if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
			t->s[i] = t->s[j];
			t->s[j].val = 0;
			i = j;
		}
	}
}

int64_t ds_itab_del(struct ds_itab *t, uint64_t hash, ds_ieq eq, const void *arg)
{
	struct ds_ictx c = { eq, arg };
	size_t i = ds_ifind(t, hash, ds_match_ieq, &c);
	int64_t idx;

	if (i == SIZE_MAX)
		return -1;
	idx = t->s[i].val - 1;
	idel_at(t, i);
	return idx;
}

int ds_itab_put(struct ds_itab *t, uint64_t hash, uint32_t idx)
{
	if (idx >= UINT32_MAX)
		return -ENOMEM;
	if ((t->used + 1) * 4 > t->cap * 3) {
		struct ds_itab n = { NULL, t->cap ? t->cap * 2 : 64, t->used };

		if (n.cap > ((size_t)1 << 32) || n.cap > SIZE_MAX / sizeof(*n.s))
			return -ENOMEM;
		n.s = calloc(n.cap, sizeof(*n.s));
		if (!n.s)
			return -ENOMEM;
		for (size_t i = 0; i < t->cap; i++) {
			if (t->s[i].val)
				iplace(&n, t->s[i].tag, t->s[i].val);
		}
		free(t->s);
		*t = n;
	}
	iplace(t, ds_itag(hash), idx + 1);
	t->used++;
	return 0;
}

void ds_itab_free(struct ds_itab *t)
{
	free(t->s);
	t->s = NULL;
	t->cap = t->used = 0;
}

/* ---- the (key, pointer) table: entries in e, indexed by ix */

int ds_htab_put(struct ds_htab *t, uint64_t key, void *val)
{
	int err;

	if (t->used >= UINT32_MAX - 1)
		return -ENOMEM;
	if ((err = ds_grow(&t->e, &t->cap, t->used + 1, sizeof(*t->e))) ||
	    (err = ds_itab_put(&t->ix, key, (uint32_t)t->used)))
		return err;
	t->e[t->used].key = key;
	t->e[t->used].val = val;
	t->used++;
	return 0;
}

void *ds_htab_del(struct ds_htab *t, uint64_t key, ds_heq eq, const void *arg)
{
	size_t i = ds_hfind(t, key, eq, arg), last;
	uint32_t idx;
	void *val;

	if (i == SIZE_MAX)
		return NULL;
	idx = t->ix.s[i].val - 1;
	val = t->e[idx].val;
	idel_at(&t->ix, i);
	last = --t->used;
	if (idx != last) {
		/* the last entry moves into the hole: its slot follows */
		size_t j = ds_ihome(&t->ix, ds_itag(t->e[last].key));

		while (t->ix.s[j].val != last + 1)
			j = (j + 1) & (t->ix.cap - 1);
		t->ix.s[j].val = idx + 1;
		t->e[idx] = t->e[last];
	}
	return val;
}

void ds_htab_free(struct ds_htab *t)
{
	ds_itab_free(&t->ix);
	free(t->e);
	t->e = NULL;
	t->used = t->cap = 0;
}

/* ---- u64 keys -> u32 values, keys in the slots */

static void kplace(struct ds_ktab *t, uint64_t key, uint32_t val)
{
	size_t i = ds_hash64(key) & (t->cap - 1);

	while (t->s[i].val)
		i = (i + 1) & (t->cap - 1);
	t->s[i].key = key;
	t->s[i].val = val;
}

int ds_ktab_put(struct ds_ktab *t, uint64_t key, uint32_t val)
{
	if (!val)
		return -EINVAL;
	if ((t->used + 1) * 4 > t->cap * 3) {
		struct ds_ktab n = { NULL, t->cap ? t->cap * 2 : 64, t->used };

		if (n.cap > SIZE_MAX / sizeof(*n.s))
			return -ENOMEM;
		n.s = calloc(n.cap, sizeof(*n.s));
		if (!n.s)
			return -ENOMEM;
		for (size_t i = 0; i < t->cap; i++) {
			if (t->s[i].val)
				kplace(&n, t->s[i].key, t->s[i].val);
		}
		free(t->s);
		*t = n;
	}
	kplace(t, key, val);
	t->used++;
	return 0;
}

void ds_ktab_free(struct ds_ktab *t)
{
	free(t->s);
	t->s = NULL;
	t->cap = t->used = 0;
}
