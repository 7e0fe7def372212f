/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A read-only FUSE file system of a few files held in memory, served by a
 * thread of the test through /dev/fuse (no libfuse: the guest is static and
 * small), with an optional delay on every read of one file: an object that
 * a slow network file system serves.
 */
#ifndef DS_FUSE_SERVER_H
#define DS_FUSE_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#define FUSE_SERVER_FILES	4

struct fuse_server_file {
	const char *name;
	const unsigned char *data;
	size_t size;
	unsigned int delay_ms;		/* before each read's reply */
	atomic_long reads;		/* FUSE_READ requests served */
};

struct fuse_server {
	struct fuse_server_file files[FUSE_SERVER_FILES];
	int nfiles;
	int fd;
	char mnt[64];
	pthread_t thread;
};

/*
 * Mount @fs (files filled in by the caller) at @mnt and start serving.
 * Returns 0 or -errno (printed).
 */
int fuse_server_start(struct fuse_server *fs, const char *mnt);

/* Unmount and stop the server thread. */
void fuse_server_stop(struct fuse_server *fs);

#endif
