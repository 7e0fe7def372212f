/* SPDX-License-Identifier: MIT */
/*
 * The one hash table of libdeferstack (internal): open addressing with
 * linear probing, u64 keys, non-NULL pointer values, deletion by backward
 * shift (no tombstones), grown at half load.  Integer keys (ids, pids,
 * tids) are compared as they are; string keys are stored as their hash and
 * told apart by an eq() callback on the value.
 */
#ifndef DEFERSTACK_HASH_H
#define DEFERSTACK_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ds_hslot {
	uint64_t key;
	void *val;		/* NULL: free slot */
};

struct ds_htab {
	struct ds_hslot *s;
	size_t cap, used;	/* cap: 0 or a power of two */
};

/* eq(val, arg): is val the one looked for (among values of equal key)?
 * NULL: the key alone decides. */
typedef bool (*ds_heq)(const void *val, const void *arg);

/* The value of key (and eq), or NULL. */
void *ds_htab_get(const struct ds_htab *t, uint64_t key, ds_heq eq, const void *arg);
/* Add val under key (no check for an existing one): 0 or -ENOMEM. */
int ds_htab_put(struct ds_htab *t, uint64_t key, void *val);
/* Remove and return the value of key (and eq), or NULL. */
void *ds_htab_del(struct ds_htab *t, uint64_t key, ds_heq eq, const void *arg);
/* Free the slots (not the values). */
void ds_htab_free(struct ds_htab *t);

/* Iterate: for (size_t i = 0; i < t->cap; i++) if (t->s[i].val) ... */

#endif
