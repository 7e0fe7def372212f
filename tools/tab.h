/* SPDX-License-Identifier: MIT */
/*
 * The CLI's hash table: open addressing with linear probing, u64 keys,
 * non-NULL pointer values, deletion by backward shift, grown at half load.
 * Integer keys (tids, addresses) are compared as they are; string keys are
 * stored as their hash and told apart by an eq() callback on the value.
 *
 * The CLI's own, not the library's: libdeferstack keeps its table hidden
 * (a generic container is no part of a perf.data library's API), and the
 * CLI links only what libdeferstack.so exports.
 */
#ifndef DEFERSTACK_TOOLS_TAB_H
#define DEFERSTACK_TOOLS_TAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tab_slot {
	uint64_t key;
	void *val;		/* NULL: free slot */
};

struct tab {
	struct tab_slot *s;
	size_t cap, used;	/* cap: 0 or a power of two */
};

/* eq(val, arg): is val the one looked for (among values of equal key)?
 * NULL: the key alone decides. */
typedef bool (*tab_eq)(const void *val, const void *arg);

/* The value of key (and eq), or NULL. */
void *tab_get(const struct tab *t, uint64_t key, tab_eq eq, const void *arg);
/* Add val under key (no check for an existing one): 0 or -ENOMEM. */
int tab_put(struct tab *t, uint64_t key, void *val);
/* Remove and return the value of key (and eq), or NULL. */
void *tab_del(struct tab *t, uint64_t key, tab_eq eq, const void *arg);
/* Free the slots (not the values); the table is empty after. */
void tab_free(struct tab *t);
/* A tab_eq for values that are strings: val equals the string arg. */
bool tab_same_str(const void *val, const void *arg);
/* A table of strings keyed by ds_hash_str(): the copy of s in t, made if
 * there is none; NULL when out of memory. */
const char *tab_intern(struct tab *t, const char *s);
/* Free such a table, its strings with it; it is empty after. */
void tab_free_strs(struct tab *t);

/* Iterate: for (size_t i = 0; i < t->cap; i++) if (t->s[i].val) ... */

#endif
