// SPDX-License-Identifier: MIT
/*
 * deferstack record --switch-output: the recording as a series of windows,
 * FILE.<timestamp> (perf's names: YYYYmmddHHMMSS and hundredths, local
 * time), each a whole recording of its own: header and attrs, the kernel
 * MMAP and the processes alive at its start synthesized again, its
 * kallsyms subset, side data and build-ids.
 *
 * Boundary: the events stay enabled; at a switch the rings are drained
 * into the old window, which is then closed, and every later record goes
 * to the new one: each record is in exactly one window.  A deferred
 * record goes to the window it is drained into: when it follows its
 * sample across a switch, the old window shows that sample as
 * "[user stack not stitched]" (end of data) and the new one counts the
 * record as unmatched.
 *
 * Retention (--keep N, --max-size SIZE) runs after each window is closed,
 * over every FILE.<timestamp> of FILE's directory (an earlier run's
 * windows too), oldest first, never the window just closed.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "record.h"

#define TS_LEN 16	/* YYYYmmddHHMMSS + hundredths */

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The wall-clock timestamp of a window name, as perf writes it. */
static void timestamp(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	char s[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(s, sizeof(s), "%Y%m%d%H%M%S", &tm);
	snprintf(buf, len, "%.14s%02d", s, (int)(ts.tv_nsec / 10000000) % 100);
}

/* The next window's name, later than the last one's (two switches within
 * a hundredth of a second wait for the next hundredth). */
static int window_name(struct rec *r)
{
	char ts[32];

	/* up to a second for the clock to pass the last name (it went back) */
	for (int i = 0; i < 500; i++) {
		timestamp(ts, sizeof(ts));
		if (strcmp(ts, r->win_ts) > 0)
			break;
		usleep(2000);
	}
	if (strcmp(ts, r->win_ts) <= 0) {
		die_msg("cannot name a window after %s.%s: the clock went back", r->o.out,
			r->win_ts);
		return -EAGAIN;
	}
	if (snprintf(r->win_path, sizeof(r->win_path), "%s.%s", r->o.out, ts) >=
	    (int)sizeof(r->win_path)) {
		die_msg("%s: file name too long", r->o.out);
		return -ENAMETOOLONG;
	}
	strcpy(r->win_ts, ts);
	return 0;
}

/* The processes of /proc whose parent is in v[0, n), added to v (the
 * target's tree; v[0] is the target): 0 or -ENOMEM. */
static int add_children(pid_t **v, size_t *n, size_t *cap)
{
	struct dirent *de;
	DIR *d = opendir("/proc");
	int err = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) && !err) {
		char path[64], line[512], *p;
		pid_t pid = (pid_t)atoi(de->d_name), ppid;
		FILE *f;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		f = fopen(path, "r");
		if (!f)
			continue;
		p = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
		fclose(f);
		/* "PID (COMM) S PPID ...": the comm may hold anything */
		if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
			continue;
		for (size_t i = 0; i < *n; i++) {
			if ((*v)[i] == pid)
				break;
			if ((*v)[i] != ppid)
				continue;
			if (ds_grow(v, cap, *n + 1, sizeof(**v)))
				err = -ENOMEM;
			else
				(*v)[(*n)++] = pid;
			break;
		}
	}
	closedir(d);
	return err;
}

/* COMM and mappings of root and its descendants alive now. */
static int synth_tree(struct rec *r, pid_t root)
{
	pid_t *v = NULL;
	size_t n = 0, cap = 0, before;
	int err = 0;

	if (root <= 0)
		return 0;
	if (ds_grow(&v, &cap, 1, sizeof(*v)))
		return -ENOMEM;
	v[n++] = root;
	/* a pass per generation (a child listed before its parent) */
	do {
		before = n;
		err = add_children(&v, &n, &cap);
	} while (!err && n != before);
	for (size_t i = 0; i < n && !err; i++)
		err = synth_process(r, v[i]);
	free(v);
	return err;
}

int window_open(struct rec *r)
{
	int err = window_name(r);

	if (err)
		return err;
	err = open_output(r, r->win_path, !r->o.all);
	if (err)
		return err;
	r->nr_windows++;
	r->win_t0 = now_s();
	r->win_samples0 = r->nr_samples;
	r->win_deferred0 = r->nr_deferred;
	r->win_lost0 = r->nr_lost;
	/* later windows of a command or -p: the target and the children
	 * it started meanwhile */
	if (r->nr_windows > 1 && !r->o.all) {
		err = synth_kernel(r);
		if (!err)
			err = synth_tree(r, r->o.cmd ? r->child : r->o.pid);
	} else {
		err = synth_start(r, false);
	}
	/* SIZE counts what the rings bring, not the maps synthesized here */
	r->win_bytes0 = r->bytes;
	return err;
}

bool window_due(const struct rec *r, double now, bool asked)
{
	switch (r->o.switch_mode) {
	case SW_TIME: return asked || now - r->win_t0 >= r->o.switch_secs;
	case SW_SIZE: return asked || r->bytes - r->win_bytes0 >= r->o.switch_bytes;
	case SW_SIGNAL: return asked;
	default: return false;
	}
}

/* ------------------------------------------------------------ retention */

struct win_file {
	char name[NAME_MAX + 1];
	uint64_t bytes;		/* the file, its kallsyms and vDSO files */
};

static uint64_t file_size(const char *dir, const char *name, const char *suffix)
{
	char p[PATH_MAX];
	struct stat st;

	if (snprintf(p, sizeof(p), "%s/%s%s", dir, name, suffix) >= (int)sizeof(p) ||
	    stat(p, &st) != 0 || !S_ISREG(st.st_mode))
		return 0;
	return (uint64_t)st.st_size;
}

static int cmp_win(const void *a, const void *b)
{
	return strcmp(((const struct win_file *)a)->name, ((const struct win_file *)b)->name);
}

/* Is name base.<TS_LEN digits>? */
static bool is_window(const char *name, const char *base, size_t blen)
{
	if (strncmp(name, base, blen) || name[blen] != '.' || strlen(name) != blen + 1 + TS_LEN)
		return false;
	for (const char *p = name + blen + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

/* The windows of out in its directory, sorted oldest first (*out
 * malloc'ed): their number or -errno. */
static long list_windows(const char *dir, const char *base, struct win_file **out)
{
	struct win_file *v = NULL;
	size_t n = 0, cap = 0, blen = strlen(base);
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (!is_window(e->d_name, base, blen))
			continue;
		if (ds_grow(&v, &cap, n + 1, sizeof(*v))) {
			closedir(d);
			free(v);
			return -ENOMEM;
		}
		strcpy(v[n].name, e->d_name);
		v[n].bytes = file_size(dir, e->d_name, "") +
			     file_size(dir, e->d_name, ".kallsyms") +
			     file_size(dir, e->d_name, ".vdso");
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_win);
	*out = v;
	return (long)n;
}

/* Remove a window and what record wrote beside it. */
static void remove_window(const char *dir, const char *name)
{
	char p[PATH_MAX];

	if (snprintf(p, sizeof(p), "%s/%s.kallsyms", dir, name) < (int)sizeof(p) &&
	    unlink(p) != 0 && errno != ENOENT)
		die_msg("cannot remove %s: %s", p, strerror(errno));
	if (snprintf(p, sizeof(p), "%s/%s", dir, name) >= (int)sizeof(p))
		return;
	side_rotate(p, NULL);	/* FILE.vdso, FILE.perf-maps/ (said) */
	if (unlink(p) != 0 && errno != ENOENT)
		die_msg("cannot remove %s: %s", p, strerror(errno));
}

/* --keep and --max-size over the windows of r->o.out, the newest kept. */
static void retain(struct rec *r)
{
	char d1[PATH_MAX], d2[PATH_MAX], dir[PATH_MAX];
	struct win_file *v = NULL;
	uint64_t total = 0;
	long n;

	if (!r->o.keep && !r->o.max_size)
		return;
	snprintf(d1, sizeof(d1), "%s", r->o.out);
	snprintf(d2, sizeof(d2), "%s", r->o.out);
	snprintf(dir, sizeof(dir), "%s", dirname(d1));
	n = list_windows(dir, basename(d2), &v);
	if (n < 0) {
		die_msg("cannot list the windows of %s: %s", r->o.out, strerror((int)-n));
		return;
	}
	for (long i = n - 1; i >= 0; i--) {
		bool keep = i == n - 1;

		total += v[i].bytes;
		if (!keep)
			keep = (!r->o.keep || (unsigned long)(n - i) <= r->o.keep) &&
			       (!r->o.max_size || total <= r->o.max_size);
		if (!keep)
			remove_window(dir, v[i].name);
	}
	free(v);
}

/* ------------------------------------------------------------ switch */

/* Close the current window: side files (unless err), header, retention,
 * and a line; the per-window notes are emptied for the next one. */
static int window_close(struct rec *r, int err)
{
	int e2;

	if (!err)
		err = save_kallsyms(r, r->win_path);
	if (!err)
		side_save(&r->side, r->win_path);
	e2 = close_output(r, r->ncpu, r->argc, r->argv);
	if (!err && e2)
		err = write_err(r, e2);
	if (!err)
		fprintf(stderr, PROG ": window %s: %" PRIu64 " samples, %" PRIu64
			" deferred records, %" PRIu64 " lost, %.1f KiB\n", r->win_path,
			r->nr_samples - r->win_samples0, r->nr_deferred - r->win_deferred0,
			r->nr_lost - r->win_lost0, (r->bytes - r->win_bytes0) / 1024.0);
	for (size_t i = 0; i < r->objs.cap; i++)
		free(r->objs.s[i].val);
	ds_htab_free(&r->objs);
	ds_htab_free(&r->kips);
	memset(&r->objs, 0, sizeof(r->objs));
	memset(&r->kips, 0, sizeof(r->kips));
	retain(r);
	return err;
}

int window_switch(struct rec *r)
{
	int err = window_close(r, 0);

	return err ? err : window_open(r);
}

int window_finish(struct rec *r, int err)
{
	return r->w ? window_close(r, err) : err;
}

void window_summary(const struct rec *r)
{
	fprintf(stderr, PROG ": wrote %lu windows %s.<timestamp> (%s mode, %" PRIu64
		" records, %.1f KiB)\n", r->nr_windows, r->o.out,
		r->defer ? "defer" : "classic", r->nr_records, r->bytes / 1024.0);
	fprintf(stderr, PROG ": summary of all windows: %" PRIu64 " samples, %" PRIu64
		" deferred records, %" PRIu64 " lost\n", r->nr_samples, r->nr_deferred,
		r->nr_lost);
}
