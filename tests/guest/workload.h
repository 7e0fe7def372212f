/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The bundled example workload: nested functions built with frame pointers,
 * half of the time in long read() system calls, half in pure user loops, so
 * that a profile shows both kernel-entry samples and user-mode samples.
 */
#ifndef DS_WORKLOAD_H
#define DS_WORKLOAD_H

#include <stddef.h>

struct workload_stats {
	unsigned long reads;		/* read() calls made */
	unsigned long spins;		/* user loop rounds */
};

/* Run for @msec milliseconds, reading @read_size bytes per read() of @path. */
int workload_run(unsigned int msec, size_t read_size, const char *path,
		 struct workload_stats *st);

/* The read path on its own, for tests that drive it directly. */
long wl_read_top(int fd, char *buf, size_t len);
unsigned long wl_spin_top(unsigned long seed);

/* The functions a stitched stack must show, innermost first. */
extern const char *const workload_read_chain[];
extern const char *const workload_spin_chain[];

#endif
