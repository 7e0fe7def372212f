// SPDX-License-Identifier: MIT
/* deferstack CLI helpers: messages, output files (.old rotation, temp + rename, the
 * same-file check), write errors of stdout, strict number options. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* ------------------------------------------------------------ messages */

void die_msg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ------------------------------------------------------------ .old */

static int path_fmt(char *buf, size_t len, const char *fmt, const char *a, const char *b)
{
	int n = snprintf(buf, len, fmt, a, b);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int rotate_old(const char *out)
{
	char old[PATH_MAX], side[PATH_MAX], oldside[PATH_MAX];
	struct stat st;

	if (stat(out, &st) != 0) {
		if (errno == ENOENT)
			return side_rotate(out, NULL);	/* no stale side data */
		die_msg("cannot access %s: %s", out, strerror(errno));
		return -errno;
	}
	/* like perf: only a non-empty regular file is kept (not /dev/null) */
	if (!S_ISREG(st.st_mode) || st.st_size == 0)
		return 0;
	if (path_fmt(old, sizeof(old), "%s%s", out, ".old") ||
	    path_fmt(side, sizeof(side), "%s%s", out, ".kallsyms") ||
	    path_fmt(oldside, sizeof(oldside), "%s%s", out, ".old.kallsyms")) {
		die_msg("%s: file name too long", out);
		return -ENAMETOOLONG;
	}
	if (rename(out, old) != 0) {
		int err = -errno;

		die_msg("cannot rename %s to %s: %s", out, old, strerror(-err));
		return err;
	}
	/* the side file follows its data, and a stale one must not pair
	 * with the new .old */
	if (rename(side, oldside) != 0) {
		int err = -errno;

		if (err != -ENOENT) {
			die_msg("cannot rename %s to %s: %s", side, oldside, strerror(-err));
			return err;
		}
		if (unlink(oldside) != 0 && errno != ENOENT) {
			err = -errno;
			die_msg("cannot remove %s: %s", oldside, strerror(-err));
			return err;
		}
	}
	return side_rotate(out, old);
}

/* ------------------------------------------------- SIGXFSZ, SIGPIPE */

/* the dispositions deferstack was started with (CLI state, not lib/) */
static struct sigaction saved_xfsz, saved_pipe;
static bool have_xfsz, have_pipe;

void ignore_write_signals(bool pipe)
{
	struct sigaction ign;

	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	if (!have_xfsz && sigaction(SIGXFSZ, &ign, &saved_xfsz) == 0)
		have_xfsz = true;
	if (pipe && !have_pipe && sigaction(SIGPIPE, &ign, &saved_pipe) == 0)
		have_pipe = true;
}

void restore_write_signals(void)
{
	if (have_xfsz)
		sigaction(SIGXFSZ, &saved_xfsz, NULL);
	if (have_pipe)
		sigaction(SIGPIPE, &saved_pipe, NULL);
}

/* ------------------------------------------------- temp + rename */

int is_special(const char *path)
{
	struct stat st;

	return !strcmp(path, "-") || (stat(path, &st) == 0 && !S_ISREG(st.st_mode));
}

int same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (stat(a, &sa) != 0 || stat(b, &sb) != 0)
		return 0;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int outfile_create(struct outfile *of, const char *path)
{
	struct stat st;
	const char *slash = strrchr(path, '/');
	int fd;

	memset(of, 0, sizeof(*of));
	of->path = path;
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		/* a device, FIFO or symlink: write through it, no rename */
		of->direct = true;
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
		if (fd < 0) {
			fd = -errno;
			die_msg("cannot create %s: %s", path, strerror(-fd));
		}
		return fd;
	}
	if (slash) {
		int dl = (int)(slash - path + 1);

		if (snprintf(of->tmp, sizeof(of->tmp), "%.*s.%s.XXXXXX", dl, path,
			     slash + 1) >= (int)sizeof(of->tmp))
			goto toolong;
	} else if (snprintf(of->tmp, sizeof(of->tmp), ".%s.XXXXXX", path) >=
		   (int)sizeof(of->tmp)) {
		goto toolong;
	}
	fd = mkostemp(of->tmp, O_CLOEXEC);
	if (fd < 0) {
		fd = -errno;
		die_msg("cannot create a temporary file next to %s: %s", path,
			strerror(-fd));
		of->tmp[0] = 0;
		return fd;
	}
	{
		mode_t um = umask(0);

		umask(um);
		if (fchmod(fd, 0666 & ~um) != 0) {
			int err = -errno;

			die_msg("cannot create %s: %s", path, strerror(-err));
			close(fd);
			outfile_abort(of);
			return err;
		}
	}
	return fd;
toolong:
	die_msg("%s: file name too long", path);
	of->tmp[0] = 0;
	return -ENAMETOOLONG;
}

int outfile_commit(struct outfile *of)
{
	if (of->direct || !of->tmp[0])
		return 0;
	if (rename(of->tmp, of->path) != 0) {
		int err = -errno;

		die_msg("cannot rename %s to %s: %s", of->tmp, of->path, strerror(-err));
		outfile_abort(of);
		return err;
	}
	of->tmp[0] = 0;
	return 0;
}

void outfile_abort(struct outfile *of)
{
	if (!of->direct && of->tmp[0])
		unlink(of->tmp);
	of->tmp[0] = 0;
}

/* ------------------------------------------------------ stdout */

int finish_stdout(void)
{
	int err = ds_stream_err(stdout);

	if (err)
		die_msg("writing standard output: %s", strerror(-err));
	return err;
}

/* -------------------------------------------------------- numbers */

int parse_ulong(const char *opt, const char *s, unsigned long min, unsigned long max,
		unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	/* digits only: strtoul would take "-1", " 5" and "" */
	if (*s < '0' || *s > '9')
		goto bad;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		goto bad;
	*out = v;
	return 0;
bad:
	die_msg("bad %s '%s' (a number from %lu to %lu)", opt, s, min, max);
	return -EINVAL;
}

int parse_seconds(const char *opt, const char *s, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	if ((*s < '0' || *s > '9') && *s != '.')
		goto bad;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v <= 0 || v > max)
		goto bad;
	*out = v;
	return 0;
bad:
	die_msg("bad %s '%s' (seconds, more than 0 and at most %.0f)", opt, s, max);
	return -EINVAL;
}
