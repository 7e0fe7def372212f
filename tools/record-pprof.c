// SPDX-License-Identifier: MIT
/*
 * deferstack record --pprof-dir DIR: when a window is closed, a child
 * process writes DIR/<window name>.pb.gz, the window as report --pprof
 * writes it (report_pprof(): stitched, symbolized), with what a server
 * merging the windows of many machines needs: the window's start and
 * duration (time_nanos, duration_nanos), hostname and kernel_release
 * labels on every sample (and as comments), build-ids per mapping.  The
 * recorder goes on draining its rings meanwhile; it waits for a window's
 * child only before starting the next one's and at the end.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "record.h"

int64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int pprof_dir_check(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		int err = -errno;

		die_msg("record: --pprof-dir %s: %s", dir, strerror(-err));
		return err;
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		die_msg("record: --pprof-dir %s: not a directory", dir);
		return -ENOTDIR;
	}
	return 0;
}

int pprof_path(const struct rec *r, const char *name, char *buf, size_t len)
{
	if (snprintf(buf, len, "%s/%s.pb.gz", r->o.pprof_dir, name) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

void pprof_wait(struct rec *r)
{
	pid_t p;
	int st = 0;

	if (r->pprof_pid <= 0)
		return;
	/* in a window switch, the rings are read while the writer finishes */
	while ((p = waitpid(r->pprof_pid, &st, r->spooling ? WNOHANG : 0)) == 0 ||
	       (p < 0 && errno == EINTR)) {
		if (p == 0) {
			switch_drain(r);
			usleep(5000);
		}
	}
	/* an exit status of 1 was said by the child */
	if (p == r->pprof_pid && WIFSIGNALED(st))
		die_msg("%s: not written: its writer was killed by signal %d", r->pprof_out,
			WTERMSIG(st));
	r->pprof_pid = 0;
}

/* In the child: the window's profile, its exit status. */
static int write_window(const char *path, const char *out, int64_t t0, int64_t t1)
{
	struct utsname u;
	char host[300], kernel[300];
	const char *labels[4], *comments[2];
	struct ds_pprof_opts po = {
		.sz = sizeof(po), .time_nanos = t0, .duration_nanos = t1 - t0,
		.labels = labels, .nr_labels = 2, .comments = comments, .nr_comments = 2,
	};

	if (uname(&u) != 0)
		memset(&u, 0, sizeof(u));
	labels[0] = "hostname";
	labels[1] = u.nodename;
	labels[2] = "kernel_release";
	labels[3] = u.release;
	snprintf(host, sizeof(host), "hostname: %s", u.nodename);
	snprintf(kernel, sizeof(kernel), "kernel_release: %s", u.release);
	comments[0] = host;
	comments[1] = kernel;
	return report_pprof(path, out, &po) ? 1 : 0;
}

void pprof_window(struct rec *r, const char *path, int64_t t0, int64_t t1)
{
	char out[PATH_MAX], name[PATH_MAX], *base;
	pid_t pid;

	if (!r->o.pprof_dir)
		return;
	pprof_wait(r);
	snprintf(name, sizeof(name), "%s", path);
	base = basename(name);
	if (pprof_path(r, base, out, sizeof(out))) {
		die_msg("window %s: no pprof profile: %s/%s.pb.gz: file name too long", path,
			r->o.pprof_dir, base);
		return;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		die_msg("window %s: no pprof profile %s: %s", path, out, strerror(errno));
		return;
	}
	if (pid == 0)
		_exit(write_window(path, out, t0, t1));
	r->pprof_pid = pid;
	snprintf(r->pprof_out, sizeof(r->pprof_out), "%s", out);
}
