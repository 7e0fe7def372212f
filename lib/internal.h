/* SPDX-License-Identifier: MIT */
/* Private helpers of libdeferstack. */
#ifndef DEFERSTACK_INTERNAL_H
#define DEFERSTACK_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

static inline uint32_t ds_rd32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint64_t ds_rd64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Open a file to read without blocking (a FIFO), regular files only: fd,
 * or -errno (-EISDIR, -EINVAL for FIFOs, sockets, devices; *is_chr set
 * for a character device).  lib/file.c. */
int ds_open_regular(const char *path, bool *is_chr);

/* *f: fd (a ds_open_regular() one) as a stream to read; 0, or -errno
 * and fd closed. */
static inline int ds_fdopen_read(int fd, FILE **f)
{
	int err;

	*f = fdopen(fd, "r");
	if (*f)
		return 0;
	err = -errno;
	close(fd);
	return err;
}

struct ds_symbols;
/* ds_symbolize_chain()'s frames as frame ids (ds_symbols_frame()), in the
 * chain's order (leaf first), into *ids (grown, *cap elements); *n set.
 * ctx: the context marker the words follow (PERF_CONTEXT_KERNEL, _USER...),
 * 0 if none.  0 or -ENOMEM.  lib/symbols.c. */
int ds_symbols_chain_ids(struct ds_symbols *s, uint32_t pid, uint64_t ctx,
			 const uint64_t *chain, uint64_t nr, uint32_t **ids, size_t *cap,
			 size_t *n);

struct ds_merge;
struct perf_event_header;
/* Keep extra bytes (at most 4096) after each record of m, set before the
 * first push: ds_merge_push_extra() copies them in (NULL: zeros), and
 * ds_merge_extra() gives those of the record the last ds_merge_pop()
 * released (NULL: none).  0 or -EINVAL.  lib/merge.c. */
int ds_merge_set_extra(struct ds_merge *m, size_t extra);
int ds_merge_push_extra(struct ds_merge *m, const struct perf_event_header *rec, uint64_t time,
			uint32_t cpu, const void *extra);
void *ds_merge_extra(const struct ds_merge *m);

/*
 * libbpf-style options: copy the caller's struct of size sz (its
 * sizeof when it was built) into dst (ours, zeroed first).  An older,
 * smaller struct leaves our newer fields 0; a newer, larger one is
 * accepted if the fields we do not know are 0, else -E2BIG.  NULL = all
 * defaults.
 */
static inline int ds_opts_copy(void *dst, size_t dst_size, const void *src, size_t sz)
{
	const unsigned char *p = src;

	memset(dst, 0, dst_size);
	if (!src)
		return 0;
	if (sz < sizeof(size_t))
		return -EINVAL;
	for (size_t i = dst_size; i < sz; i++) {
		if (p[i])
			return -E2BIG;
	}
	memcpy(dst, src, sz < dst_size ? sz : dst_size);
	return 0;
}

/*
 * Caller-allocated structs whose first field is sz (ds_event, ds_sym_info,
 * ...; deferstack.h): DS_SZ_MIN is the least sz that holds field.
 * ds_sz_in(): the caller's struct p to read, as ours (size ours): p itself
 * when it is as large, else its sz bytes copied into tmp and the rest 0;
 * NULL when sz < min.  ds_sz_out(): fill the caller's struct dst from ours
 * (full): the bytes within its sz, a larger one's tail zeroed, its sz kept.
 */
#define DS_SZ_MIN(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

static inline const void *ds_sz_in(const void *p, void *tmp, size_t ours, size_t min)
{
	size_t sz = *(const size_t *)p;

	if (sz >= ours)
		return p;
	if (sz < min)
		return NULL;
	memset(tmp, 0, ours);
	memcpy(tmp, p, sz);
	return tmp;
}

static inline void ds_sz_out(void *dst, const void *full, size_t ours)
{
	size_t sz = *(const size_t *)dst;

	memcpy(dst, full, sz < ours ? sz : ours);
	if (sz > ours)
		memset((char *)dst + ours, 0, sz - ours);
	memcpy(dst, &sz, sizeof(sz));
}

/* A caller's array of n sz'd structs: every element's sz that of the
 * first (the stride), at least min: 0 or -EINVAL.  Element i. */
static inline int ds_sz_array_ok(const void *v, size_t n, size_t min)
{
	size_t sz;

	if (!n)
		return 0;
	if (!v)
		return -EINVAL;
	sz = *(const size_t *)v;
	if (sz < min)
		return -EINVAL;
	for (size_t i = 1; i < n; i++) {
		if (*(const size_t *)(const void *)((const char *)v + i * sz) != sz)
			return -EINVAL;
	}
	return 0;
}

static inline const void *ds_sz_elem(const void *v, size_t i)
{
	return (const char *)v + i * *(const size_t *)v;
}

/*
 * Freed blocks kept for reuse (records queued and released by the million:
 * the merge's copies, the stitcher's pending samples): a free list per
 * 64-byte size class up to 4 KiB, 4 MiB kept at most; other sizes go to
 * malloc.  Blocks are malloc'd: free() takes any of them.
 */
#define DS_RC_CLASSES 64
#define DS_RC_KEEP (4u << 20)

struct ds_recycle {
	void *head[DS_RC_CLASSES];
	size_t kept;		/* bytes */
};

static inline void *ds_rc_alloc(struct ds_recycle *r, size_t size)
{
	size_t c = (size + 63) / 64;
	void *p;

	if (!c || c > DS_RC_CLASSES)
		return malloc(size);
	p = r->head[c - 1];
	if (!p)
		return malloc(c * 64);
	memcpy(&r->head[c - 1], p, sizeof(void *));
	r->kept -= c * 64;
	return p;
}

/* p: a block of ds_rc_alloc(r, size), or NULL. */
static inline void ds_rc_free(struct ds_recycle *r, void *p, size_t size)
{
	size_t c = (size + 63) / 64;

	if (!p)
		return;
	if (!c || c > DS_RC_CLASSES || r->kept + c * 64 > DS_RC_KEEP) {
		free(p);
		return;
	}
	memcpy(p, &r->head[c - 1], sizeof(void *));
	r->head[c - 1] = p;
	r->kept += c * 64;
}

static inline void ds_rc_destroy(struct ds_recycle *r)
{
	for (size_t c = 0; c < DS_RC_CLASSES; c++) {
		while (r->head[c]) {
			void *p = r->head[c];

			memcpy(&r->head[c], p, sizeof(void *));
			free(p);
		}
	}
	r->kept = 0;
}

/* How many of n elements at base, stride bytes apart and sorted by a
 * uint64_t start at their beginning, start at or below addr (binary
 * search; the last of them is the one addr falls in, if any).  Symbol
 * tables, kallsyms, mappings and named ranges are such arrays. */
static inline size_t ds_count_starts(const void *base, size_t n, size_t stride, uint64_t addr)
{
	const unsigned char *p = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ds_rd64(p + mid * stride) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The hex digits at p (no prefix): how many, and the value of the last 16
 * in *v. */
static inline size_t ds_hex_run(const char *p, uint64_t *v)
{
	size_t n = 0;

	*v = 0;
	for (;; n++) {
		unsigned c = (unsigned char)p[n], d;

		if (c - '0' < 10)
			d = c - '0';
		else if ((c | 0x20) - 'a' < 6)
			d = (c | 0x20) - 'a' + 10;
		else
			return n;
		*v = *v << 4 | d;
	}
}

/* In place: a demangled C++ name as perf prints it (lib/cxxname.c). */
void ds_cxx_perf_name(char *name);

#endif
