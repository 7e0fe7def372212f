// SPDX-License-Identifier: MIT
/* The CLI's hash table: see tab.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tab.h"

static size_t home(const struct tab *t, uint64_t key)
{
	return (size_t)ds_hash64(key) & (t->cap - 1);
}

void *tab_get(const struct tab *t, uint64_t key, tab_eq eq, const void *arg)
{
	if (!t->cap)
		return NULL;
	for (size_t i = home(t, key);; i = (i + 1) & (t->cap - 1)) {
		const struct tab_slot *sl = &t->s[i];

		if (!sl->val)
			return NULL;
		if (sl->key == key && (!eq || eq(sl->val, arg)))
			return sl->val;
	}
}

static void place(struct tab *t, uint64_t key, void *val)
{
	size_t i = home(t, key);

	while (t->s[i].val)
		i = (i + 1) & (t->cap - 1);
	t->s[i].key = key;
	t->s[i].val = val;
}

int tab_put(struct tab *t, uint64_t key, void *val)
{
	if ((t->used + 1) * 2 > t->cap) {
		struct tab n = { NULL, t->cap ? t->cap * 2 : 64, t->used };

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

void *tab_del(struct tab *t, uint64_t key, tab_eq eq, const void *arg)
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

void tab_free(struct tab *t)
{
	free(t->s);
	t->s = NULL;
	t->cap = t->used = 0;
}

bool tab_same_str(const void *val, const void *arg)
{
	return !strcmp(val, arg);
}

const char *tab_intern(struct tab *t, const char *s)
{
	uint64_t key = ds_hash_str(s);
	char *p = tab_get(t, key, tab_same_str, s);

	if (p)
		return p;
	p = strdup(s);
	if (!p || tab_put(t, key, p)) {
		free(p);
		return NULL;
	}
	return p;
}

void tab_free_strs(struct tab *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->s[i].val);
	tab_free(t);
}
