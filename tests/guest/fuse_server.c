// SPDX-License-Identifier: GPL-2.0
/*
 * The FUSE protocol's read-only subset: INIT, LOOKUP and GETATTR of the
 * root's files, OPEN, READ, FLUSH, RELEASE; everything else ENOSYS. Node 1
 * is the root, node 2 + i file i.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "fuse_server.h"

static void reply(struct fuse_server *fs, uint64_t unique, int error, const void *body,
		  size_t len)
{
	struct fuse_out_header out = {
		.len = (uint32_t)(sizeof(out) + len), .error = error, .unique = unique,
	};
	struct iovec iov[2] = { { &out, sizeof(out) }, { (void *)body, len } };

	/* ENOENT: the request was interrupted and is gone; nothing to do. */
	if (writev(fs->fd, iov, len ? 2 : 1) < 0 && errno != ENOENT)
		fprintf(stderr, "# fuse reply: %s\n", strerror(errno));
}

static void fill_attr(const struct fuse_server *fs, uint64_t node, struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = node;
	a->nlink = 1;
	a->blksize = 4096;
	if (node == FUSE_ROOT_ID) {
		a->mode = S_IFDIR | 0755;
		return;
	}
	a->mode = S_IFREG | 0755;
	a->size = fs->files[node - 2].size;
	a->blocks = (a->size + 511) / 512;
}

static struct fuse_server_file *file_of(struct fuse_server *fs, uint64_t node)
{
	return node >= 2 && node < 2 + (uint64_t)fs->nfiles ? &fs->files[node - 2] : NULL;
}

static void serve(struct fuse_server *fs, const struct fuse_in_header *in, const void *arg)
{
	struct fuse_server_file *f = file_of(fs, in->nodeid);

	switch (in->opcode) {
	case FUSE_INIT: {
		const struct fuse_init_in *ii = arg;
		struct fuse_init_out o = {
			.major = FUSE_KERNEL_VERSION,
			.minor = ii->minor < FUSE_KERNEL_MINOR_VERSION ? ii->minor :
				 FUSE_KERNEL_MINOR_VERSION,
			.max_readahead = ii->max_readahead,
			.max_write = 4096,
			.max_background = 16,
			.congestion_threshold = 12,
			.time_gran = 1,
		};

		reply(fs, in->unique, 0, &o, sizeof(o));
		return;
	}
	case FUSE_LOOKUP:
		for (int i = 0; in->nodeid == FUSE_ROOT_ID && i < fs->nfiles; i++) {
			struct fuse_entry_out o = { .nodeid = 2 + (uint64_t)i, .entry_valid = 3600,
						    .attr_valid = 3600 };

			if (strcmp(arg, fs->files[i].name))
				continue;
			fill_attr(fs, o.nodeid, &o.attr);
			reply(fs, in->unique, 0, &o, sizeof(o));
			return;
		}
		reply(fs, in->unique, -ENOENT, NULL, 0);
		return;
	case FUSE_GETATTR: {
		struct fuse_attr_out o = { .attr_valid = 3600 };

		if (in->nodeid != FUSE_ROOT_ID && !f)
			break;
		fill_attr(fs, in->nodeid, &o.attr);
		reply(fs, in->unique, 0, &o, sizeof(o));
		return;
	}
	case FUSE_OPEN: {
		struct fuse_open_out o = { .open_flags = FOPEN_KEEP_CACHE };

		if (!f)
			break;
		reply(fs, in->unique, 0, &o, sizeof(o));
		return;
	}
	case FUSE_READ: {
		const struct fuse_read_in *r = arg;
		size_t off, len;

		if (!f)
			break;
		off = r->offset < f->size ? r->offset : f->size;
		len = f->size - off < r->size ? f->size - off : r->size;
		if (f->delay_ms) {
			struct timespec ts = { f->delay_ms / 1000, (f->delay_ms % 1000) * 1000000L };

			nanosleep(&ts, NULL);
		}
		atomic_fetch_add(&f->reads, 1);
		reply(fs, in->unique, 0, f->data + off, len);
		return;
	}
	case FUSE_FLUSH:
	case FUSE_RELEASE:
		reply(fs, in->unique, 0, NULL, 0);
		return;
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_INTERRUPT:
		return;		/* no reply */
	}
	reply(fs, in->unique, f || in->nodeid == FUSE_ROOT_ID ? -ENOSYS : -ENOENT, NULL, 0);
}

static void *server_thread(void *arg)
{
	static unsigned char buf[FUSE_MIN_READ_BUFFER + 4096];
	struct fuse_server *fs = arg;

	for (;;) {
		ssize_t n = read(fs->fd, buf, sizeof(buf));

		if (n < 0 && (errno == EINTR || errno == ENOENT))
			continue;
		if (n < (ssize_t)sizeof(struct fuse_in_header))
			return NULL;	/* ENODEV: unmounted */
		serve(fs, (const void *)buf, buf + sizeof(struct fuse_in_header));
	}
}

int fuse_server_start(struct fuse_server *fs, const char *mnt)
{
	char opts[128];
	int err;

	snprintf(fs->mnt, sizeof(fs->mnt), "%s", mnt);
	mkdir(mnt, 0755);
	fs->fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fs->fd < 0) {
		err = -errno;
		printf("# /dev/fuse: %s\n", strerror(errno));
		return err;
	}
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other",
		 fs->fd);
	if (mount("deferstack", mnt, "fuse", MS_NOSUID | MS_NODEV, opts)) {
		err = -errno;
		printf("# mount fuse: %s\n", strerror(errno));
		close(fs->fd);
		return err;
	}
	err = pthread_create(&fs->thread, NULL, server_thread, fs);
	if (err) {
		umount2(mnt, MNT_DETACH);
		close(fs->fd);
		return -err;
	}
	return 0;
}

void fuse_server_stop(struct fuse_server *fs)
{
	umount2(fs->mnt, MNT_DETACH);
	pthread_join(fs->thread, NULL);
	close(fs->fd);
}
