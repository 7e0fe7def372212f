/* SPDX-License-Identifier: GPL-2.0 */
/* sf_hop.c's calling convention, shared with sf_multi.c. */
#ifndef SF_HOP_H
#define SF_HOP_H

#define HOP_MAX_COPIES	64

struct hop_ring;
typedef long (*hop_fn)(long depth, const struct hop_ring *r, long i);

/* hop(depth, r, i) in copy i calls copy i + 1 (mod n), depth times, then leaf. */
struct hop_ring {
	hop_fn fn[HOP_MAX_COPIES];
	long n;
	long (*leaf)(long i);
};

long hop(long depth, const struct hop_ring *r, long i);

#endif
