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

/*
 * The same, compact, for values that are dense indices into an array the
 * caller keeps (stacks, segments): 8-byte slots of 32 bits of the key's
 * hash and the index + 1, grown at 3/4 load, no deletion.  eq(idx, arg)
 * tells keys of equal hash bits apart.  Hot tables of many entries: half
 * the memory of ds_htab at a quarter of its load.
 */
struct ds_islot {
	uint32_t tag;		/* the hash's high 32 bits */
	uint32_t val;		/* index + 1; 0: free slot */
};

struct ds_itab {
	struct ds_islot *s;
	size_t cap, used;	/* cap: 0 or a power of two, at most 2^32 */
};

typedef bool (*ds_ieq)(uint32_t idx, const void *arg);

/* The index stored for hash (and eq), or -1. */
int64_t ds_itab_get(const struct ds_itab *t, uint64_t hash, ds_ieq eq, const void *arg);
/* Add idx (< UINT32_MAX) under hash (no check for an existing one): 0 or
 * -ENOMEM. */
int ds_itab_put(struct ds_itab *t, uint64_t hash, uint32_t idx);
void ds_itab_free(struct ds_itab *t);

#endif
