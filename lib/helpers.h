/* SPDX-License-Identifier: MIT */
/*
 * Helpers without state or types of the library's, compiled into both the
 * library and the CLI: hashes, a growing array, plurals, a stream's error.
 * The CLI is built on the public headers only (it is compiled without
 * -Ilib) and includes this one file by its path.
 */
#ifndef DEFERSTACK_HELPERS_H
#define DEFERSTACK_HELPERS_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 64-bit finalizer (murmur3's), for integer keys */
static inline uint64_t ds_hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* 64-bit multiply-xorshift over 8-byte words, for byte keys */
static inline uint64_t ds_hash_bytes(const void *v, size_t n)
{
	const unsigned char *p = v;
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n, w;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, p, n);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 29);
}

/* The same kind of hash over n 8-byte words, in four independent lanes
 * (words i, i + 4, ... each): a chain's words are hashed at the
 * multiplier's throughput, not its latency */
static inline uint64_t ds_hash_words(const uint64_t *w, size_t n)
{
	const uint64_t m = 0xff51afd7ed558ccdULL;
	uint64_t a = 0x9e3779b97f4a7c15ULL ^ n, b = 0xc2b2ae3d27d4eb4fULL;
	uint64_t c = 0x165667b19e3779f9ULL, d = 0x27d4eb2f165667c5ULL, h;
	size_t i = 0;

	for (; i + 4 <= n; i += 4) {
		a = (a ^ w[i]) * m;
		b = (b ^ w[i + 1]) * m;
		c = (c ^ w[i + 2]) * m;
		d = (d ^ w[i + 3]) * m;
		a ^= a >> 32;
		b ^= b >> 32;
		c ^= c >> 32;
		d ^= d >> 32;
	}
	for (; i < n; i++) {
		a = (a ^ w[i]) * m;
		a ^= a >> 32;
	}
	h = a ^ (b << 16 | b >> 48) ^ (c << 32 | c >> 32) ^ (d << 48 | d >> 16);
	h = (h ^ (h >> 29)) * 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 29);
}

/* FNV-1a of a string */
static inline uint64_t ds_hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 1099511628211ULL;
	}
	return h;
}

/* Plural ending of a count: "%" PRIu64 " sample%s", n, ds_s(n) */
static inline const char *ds_s(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/* Flush a stream: 0, or the errno of the failed write (-EIO if unknown). */
static inline int ds_stream_err(FILE *f)
{
	errno = 0;
	if (fflush(f) != 0)
		return errno ? -errno : -EIO;
	return ferror(f) ? -EIO : 0;
}

/* Grow *buf (element size esz) to hold at least need elements: 0 or
 * -ENOMEM. */
static inline int ds_grow(void *pbuf, size_t *cap, size_t need, size_t esz)
{
	void **buf = pbuf;
	size_t n = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2 / esz)
			return -ENOMEM;
		n *= 2;
	}
	p = realloc(*buf, n * esz);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = n;
	return 0;
}

#endif
