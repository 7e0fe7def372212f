// SPDX-License-Identifier: GPL-2.0
/*
 * The object sf_multi maps many times by itself (no dynamic loader): one
 * function, hop(), its ELF entry point, that calls the next copy of itself
 * through a ring of function pointers it is given, and a leaf of the
 * caller's at the bottom. No relocations, no imports, no data: a copy works
 * wherever it is mapped. Built without frame pointers, with SFrame (and, for
 * libsfbig.so, linked with a few hundred thousand more tiny functions, so
 * that its table is over 4 MiB).
 */
#include "sf_hop.h"

long hop(long depth, const struct hop_ring *r, long i)
{
	volatile long pad[3];
	long next = i + 1 == r->n ? 0 : i + 1;
	long v;

	pad[depth % 3] = depth;
	v = depth ? r->fn[next](depth - 1, r, next) : r->leaf(i);
	__asm__ volatile("" ::: "memory");	/* no tail call */
	return v + pad[depth % 3];
}
