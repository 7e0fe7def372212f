/* SPDX-License-Identifier: MIT */
/* Private interfaces between the aggregation (fold.c) and the writers
 * built on it (flame.c). */
#ifndef DEFERSTACK_OUTPUT_H
#define DEFERSTACK_OUTPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ds_fold;

struct ds_fold_entry {
	const uint32_t *ids;	/* name ids: comm, root, ..., leaf; owned by the fold */
	size_t nr;
	uint64_t count;		/* weight: the samples' periods, or 1 each */
	uint64_t samples;	/* number of samples */
};

/* Dense copy of the fold's stacks, unsorted (free() it), or NULL (-ENOMEM). */
struct ds_fold_entry *ds_fold_entries(const struct ds_fold *f, size_t *n);
/* The name of a name id (';' and newlines made ':'), owned by the fold. */
const char *ds_fold_name(const struct ds_fold *f, uint32_t id);

/* Write s as XML text (escaped, control characters dropped, invalid UTF-8
 * bytes as '?'), at most max characters (UTF-8 sequences count one). */
void ds_xml_puts(FILE *out, const char *s, size_t max);

/* Order of folded stacks frame by frame (';' before any other byte), so
 * that the stacks through one frame are adjacent; strcmp-like result. */
int ds_fold_cmp_stacks(const char *a, const char *b);

#endif
