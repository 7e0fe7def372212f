// SPDX-License-Identifier: MIT
/* The hash table of libdeferstack: see hash.h. */
#include <errno.h>
#include <stdlib.h>

#include "hash.h"
#include "internal.h"

static size_t home(const struct ds_htab *t, uint64_t key)
{
	return (size_t)ds_hash64(key) & (t->cap - 1);
}

void *ds_htab_get(const struct ds_htab *t, uint64_t key, ds_heq eq, const void *arg)
{
	if (!t->cap)
		return NULL;
	for (size_t i = home(t, key);; i = (i + 1) & (t->cap - 1)) {
		const struct ds_hslot *sl = &t->s[i];

		if (!sl->val)
			return NULL;
		if (sl->key == key && (!eq || eq(sl->val, arg)))
			return sl->val;
	}
}

static void place(struct ds_htab *t, uint64_t key, void *val)
{
	size_t i = home(t, key);

	while (t->s[i].val)
		i = (i + 1) & (t->cap - 1);
	t->s[i].key = key;
	t->s[i].val = val;
}

int ds_htab_put(struct ds_htab *t, uint64_t key, void *val)
{
	if ((t->used + 1) * 2 > t->cap) {
		struct ds_htab n = { NULL, t->cap ? t->cap * 2 : 64, t->used };

		if (n.cap > SIZE_MAX / 2 / sizeof(*n.s))
			return -ENOMEM;
		n.s = calloc(n.cap, sizeof(*n.s));
		if (!n.s)
			return -ENOMEM;
		for (size_t i = 0; i < t->cap; i++) {
			if (t->s[i].val)
				place(&n, t->s[i].key, t->s[i].val);
		}
		free(t->s);
		*t = n;
	}
	place(t, key, val);
	t->used++;
	return 0;
}

void *ds_htab_del(struct ds_htab *t, uint64_t key, ds_heq eq, const void *arg)
{
	size_t mask = t->cap - 1, i, j;
	void *val;

	if (!t->cap)
		return NULL;
	for (i = home(t, key);; i = (i + 1) & mask) {
		if (!t->s[i].val)
			return NULL;
		if (t->s[i].key == key && (!eq || eq(t->s[i].val, arg)))
			break;
	}
	val = t->s[i].val;
	t->s[i].val = NULL;
	t->used--;
	/* backward shift: move up every later entry of the run whose home is
	 * not cyclically in (i, j] */
	for (j = (i + 1) & mask; t->s[j].val; j = (j + 1) & mask) {
		size_t k = home(t, t->s[j].key);

		if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
			t->s[i] = t->s[j];
			t->s[j].val = NULL;
			i = j;
		}
	}
	return val;
}

void ds_htab_free(struct ds_htab *t)
{
	free(t->s);
	t->s = NULL;
	t->cap = t->used = 0;
}

/* ---- compact index table */

static size_t ihome(const struct ds_itab *t, uint32_t tag)
{
	return (size_t)((tag * 0x9e3779b97f4a7c15ULL) >> 32) & (t->cap - 1);
}

int64_t ds_itab_get(const struct ds_itab *t, uint64_t hash, ds_ieq eq, const void *arg)
{
	uint32_t tag = (uint32_t)(ds_hash64(hash) >> 32);

	if (!t->cap)
		return -1;
	for (size_t i = ihome(t, tag);; i = (i + 1) & (t->cap - 1)) {
		const struct ds_islot *sl = &t->s[i];

		if (!sl->val)
			return -1;
		if (sl->tag == tag && eq(sl->val - 1, arg))
			return sl->val - 1;
	}
}

static void iplace(struct ds_itab *t, uint32_t tag, uint32_t val)
{
	size_t i = ihome(t, tag);

	while (t->s[i].val)
		i = (i + 1) & (t->cap - 1);
	t->s[i].tag = tag;
	t->s[i].val = val;
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
	iplace(t, (uint32_t)(ds_hash64(hash) >> 32), idx + 1);
	t->used++;
	return 0;
}

void ds_itab_free(struct ds_itab *t)
{
	free(t->s);
	t->s = NULL;
	t->cap = t->used = 0;
}
