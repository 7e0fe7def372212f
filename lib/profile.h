/* SPDX-License-Identifier: MIT */
/* Private: the profile's tables (profile.c), read by its writers
 * (ptext.c: perf-report-like text, pprof.c: profile.proto). */
#ifndef DEFERSTACK_PROFILE_H
#define DEFERSTACK_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "deferstack/deferstack.h"

#include "hash.h"

/* byte keys -> dense ids 0..n-1: the keys in a blob, found through the
 * library's hash table (key: hash of the bytes, value: id + 1) */
struct ktab {
	struct ds_htab ids;
	uint8_t *blob;		/* keys, each 8-byte aligned */
	size_t blen, bcap;
	size_t *off, ocap;
	size_t *len, lcap;
	uint32_t n;
};

int ktab_get(struct ktab *t, const void *key, size_t klen, uint32_t *id, bool *added);
const void *ktab_key(const struct ktab *t, uint32_t id, size_t *len);
void ktab_free(struct ktab *t);

struct prof_func {		/* key of funcs */
	uint32_t name, dso;	/* string ids */
	uint32_t kernel;
};

struct prof_loc {		/* key of locs */
	uint32_t func, map;
	uint64_t ip, dso_off;
};

struct prof_map {		/* per object (key of maps: its dso string id) */
	uint32_t dso;
	bool kernel;
	uint64_t start, end, pgoff;	/* the first mapping seen */
	unsigned char build_id[DS_BUILD_ID_MAX];
	size_t build_id_len;
};

struct prof_stack {
	uint64_t samples, period;
};

struct ds_profile {
	struct ktab strs, funcs, locs, maps;
	/* [comm, event, pid, cpu + 1 (0: none), loc ids leaf first] */
	struct ktab stacks;
	struct prof_map *mv;
	size_t mcap;
	struct prof_stack *sv;
	size_t svcap;
	uint64_t total_samples, total_period;
	uint32_t *scratch;
	size_t scap;
	char buf[512];
};

uint32_t prof_str(struct ds_profile *p, const char *s, int *err);
const char *prof_name(const struct ds_profile *p, uint32_t str);
/* the keys of a stack before its locations */
#define PROF_KEYS 4
/* [comm, event, pid, cpu + 1, loc...]; *nlocs locations follow the keys */
const uint32_t *prof_stack(const struct ds_profile *p, uint32_t id, size_t *nlocs);
const struct prof_loc *prof_loc(const struct ds_profile *p, uint32_t id);
const struct prof_func *prof_func(const struct ds_profile *p, uint32_t id);
/* the stack's weight: its period, or its samples when there are no periods */
uint64_t prof_weight(const struct ds_profile *p, uint32_t stack);

#endif
