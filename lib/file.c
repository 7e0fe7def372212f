// SPDX-License-Identifier: MIT
/*
 * Opening input files without blocking: what the build-id reader, the
 * symbols (objects, kallsyms) and the JIT maps share.  A module of its
 * own so that none of them depends on another for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* Never blocks (a FIFO), only regular files: see internal.h. */
int ds_open_regular(const char *path, bool *is_chr)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (is_chr)
		*is_chr = false;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		if (is_chr)
			*is_chr = S_ISCHR(st.st_mode);
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	return fd;
}
