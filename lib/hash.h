/* SPDX-License-Identifier: MIT */
/*
 * The one hash table of libdeferstack (internal).
 *
 * ds_itab is the implementation: open addressing with linear probing over
 * 8-byte slots, each 32 bits of a key's hash (the tag, which also gives
 * the home slot) and a dense index + 1 into an array the user keeps;
 * grown at 3/4 load, deletion by backward shift (no tombstones).  eq(idx,
 * arg) tells apart keys of equal tags.  Hot tables of many entries
 * (strings, segments, stacks, frames): half the memory of a table of
 * (key, pointer) slots at a quarter of its load.
 *
 * ds_htab is built on it: u64 keys and non-NULL pointer values kept in a
 * dense array of (key, value) entries that an ds_itab indexes.  Integer
 * keys (ids, pids, tids) are compared as they are; string keys are stored
 * as their hash and told apart by an eq() callback on the value.
 */
#ifndef DEFERSTACK_HASH_H
#define DEFERSTACK_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

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
static inline int64_t ds_itab_get(const struct ds_itab *t, uint64_t hash, ds_ieq eq,
				  const void *arg);
/* Add idx (< UINT32_MAX) under hash (no check for an existing one): 0 or
 * -ENOMEM. */
int ds_itab_put(struct ds_itab *t, uint64_t hash, uint32_t idx);
/* Remove the index stored for hash (and eq); returns it, or -1. */
int64_t ds_itab_del(struct ds_itab *t, uint64_t hash, ds_ieq eq, const void *arg);
void ds_itab_free(struct ds_itab *t);

struct ds_hent {
	uint64_t key;
	void *val;
};

struct ds_htab {
	struct ds_itab ix;	/* key -> index into e */
	struct ds_hent *e;	/* the entries, dense */
	size_t used, cap;	/* entries in e, room */
};

/* eq(val, arg): is val the one looked for (among values of equal key)?
 * NULL: the key alone decides. */
typedef bool (*ds_heq)(const void *val, const void *arg);

/* The value of key (and eq), or NULL. */
static inline void *ds_htab_get(const struct ds_htab *t, uint64_t key, ds_heq eq,
				const void *arg);
/* Add val (non-NULL) under key (no check for an existing one): 0 or
 * -ENOMEM. */
int ds_htab_put(struct ds_htab *t, uint64_t key, void *val);
/* Remove and return the value of key (and eq), or NULL.  The last entry
 * takes the removed one's place in e. */
void *ds_htab_del(struct ds_htab *t, uint64_t key, ds_heq eq, const void *arg);
/* Free the table (not the values). */
void ds_htab_free(struct ds_htab *t);

/* Iterate: for (size_t i = 0; i < t->used; i++) ... t->e[i].val ... */

/* ---- lookups, inline: the probe loop with its match known to the
 * compiler (no call per lookup, none per probe for integer keys) */

static inline uint32_t ds_itag(uint64_t hash)
{
	return (uint32_t)(ds_hash64(hash) >> 32);
}

/* The tag's low bits (well mixed by ds_hash64) pick the home slot. */
static inline size_t ds_ihome(const struct ds_itab *t, uint32_t tag)
{
	return tag & (t->cap - 1);
}

/* The slot of hash whose index match(idx, ctx) accepts, or SIZE_MAX. */
static inline size_t ds_ifind(const struct ds_itab *t, uint64_t hash,
			      bool (*match)(uint32_t idx, const void *ctx), const void *ctx)
{
	uint32_t tag = ds_itag(hash);

	if (!t->cap)
		return SIZE_MAX;
	for (size_t i = ds_ihome(t, tag);; i = (i + 1) & (t->cap - 1)) {
		const struct ds_islot *sl = &t->s[i];

		if (!sl->val)
			return SIZE_MAX;
		if (sl->tag == tag && match(sl->val - 1, ctx))
			return i;
	}
}

struct ds_ictx {
	ds_ieq eq;
	const void *arg;
};

static inline bool ds_match_ieq(uint32_t idx, const void *ctx)
{
	const struct ds_ictx *c = ctx;

	return c->eq(idx, c->arg);
}

static inline int64_t ds_itab_get(const struct ds_itab *t, uint64_t hash, ds_ieq eq,
				  const void *arg)
{
	struct ds_ictx c = { eq, arg };
	size_t i = ds_ifind(t, hash, ds_match_ieq, &c);

	return i == SIZE_MAX ? -1 : (int64_t)t->s[i].val - 1;
}

struct ds_hctx {
	const struct ds_hent *e;
	uint64_t key;
	ds_heq eq;
	const void *arg;
};

static inline bool ds_match_hent(uint32_t idx, const void *ctx)
{
	const struct ds_hctx *c = ctx;
	const struct ds_hent *e = &c->e[idx];

	return e->key == c->key && (!c->eq || c->eq(e->val, c->arg));
}

static inline size_t ds_hfind(const struct ds_htab *t, uint64_t key, ds_heq eq, const void *arg)
{
	struct ds_hctx c = { t->e, key, eq, arg };

	return ds_ifind(&t->ix, key, ds_match_hent, &c);
}

static inline void *ds_htab_get(const struct ds_htab *t, uint64_t key, ds_heq eq,
				const void *arg)
{
	size_t i = ds_hfind(t, key, eq, arg);

	return i == SIZE_MAX ? NULL : t->e[t->ix.s[i].val - 1].val;
}

/*
 * ds_ktab: u64 keys -> non-zero u32 values, the key in the slot (open
 * addressing, linear probing, grown at 3/4 load, no deletion): one cache
 * line per lookup where ds_htab reads a slot, then an entry.  For the hot
 * tables of frames (an object's file offsets, kernel addresses -> frame
 * id + 1), looked up once per frame of every sample.
 */
struct ds_kslot {
	uint64_t key;
	uint32_t val;		/* 0: free slot */
};

struct ds_ktab {
	struct ds_kslot *s;
	size_t cap, used;	/* cap: 0 or a power of two */
};

/* The value of key, or 0. */
static inline uint32_t ds_ktab_get(const struct ds_ktab *t, uint64_t key)
{
	if (!t->cap)
		return 0;
	for (size_t i = ds_hash64(key) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		const struct ds_kslot *sl = &t->s[i];

		if (sl->key == key || !sl->val)
			return sl->val;
	}
}

/* Add key -> val (non-zero; key not in t yet): 0 or -ENOMEM. */
int ds_ktab_put(struct ds_ktab *t, uint64_t key, uint32_t val);
void ds_ktab_free(struct ds_ktab *t);

#endif
