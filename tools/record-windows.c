// SPDX-License-Identifier: MIT
/*
 * deferstack record --switch-output: the recording as a series of windows,
 * FILE.<timestamp> (perf's names: YYYYmmddHHMMSS and hundredths, local
 * time), each a whole recording of its own: header and attrs, the kernel
 * MMAP and the processes alive at its start synthesized again, its
 * kallsyms subset, side data and build-ids.
 *
 * Boundary: the events stay enabled; at a switch the rings are drained
 * into the old window, and every later record goes to the new one: each
 * sample is in exactly one window.  The switch itself (the old window's
 * build-ids, kallsyms and side files, the new one's maps of every
 * process) takes a while: between its steps the rings are read into a
 * spool in memory (switch_drain(), tools/record-drain.c), written to the
 * new window once it is open, so that small rings do not overflow.
 * Defer mode: a deferred record follows its sample by up to one return to
 * user space, so it may be drained after the switch.  A window whose tasks' last samples still wait for
 * their records (tid -> cookie) stays open for them, at most CARRY_SECS
 * or until the next switch: such a record is written to its sample's
 * window (and to the new one too when a sample of the new window shares
 * its cookie); any other record goes to the new window.  A record later
 * than that leaves its sample "[user stack not stitched]" in the old
 * window and is unmatched in the new one.
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
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "record.h"

#define TS_LEN 16	/* YYYYmmddHHMMSS + hundredths */
/* how long a window stays open for the deferred records of its samples */
#define CARRY_SECS 1.0
/* paused on a full disk: recording resumes once this much is free */
#define RESUME_FREE (1u << 20)

static bool disk_full(int err)
{
	return err == -ENOSPC || err == -EDQUOT;
}

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
		switch_drain(r);
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
static int add_children(struct rec *r, pid_t **v, size_t *n, size_t *cap)
{
	struct dirent *de;
	DIR *d = opendir("/proc");
	int err = 0;

	if (!d)
		return 0;
	for (unsigned long k = 0; (de = readdir(d)) && !err; k++) {
		char path[64], line[512], *p;
		pid_t pid = (pid_t)atoi(de->d_name), ppid;
		FILE *f;

		if (pid <= 0)
			continue;
		if (k % 64 == 0)
			switch_drain(r);
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
		err = add_children(r, &v, &n, &cap);
	} while (!err && n != before);
	for (size_t i = 0; i < n && !err; i++) {
		switch_drain(r);
		err = synth_process(r, v[i]);
	}
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
	note_round(r);	/* a rewind goes back to the header */
	r->nr_windows++;
	r->win_t0 = now_s();
	r->win_real0 = real_ns();
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
		r->maps_unread = 0;
		err = synth_start(r, false);
		if (!err && r->maps_unread && !r->maps_said) {
			r->maps_said = true;
			die_msg("note: the maps of %lu process%s of other users cannot be read "
				"(CAP_SYS_PTRACE): their frames stay unnamed until they exec; "
				"the maps of processes started from now on are carried from "
				"window to window", r->maps_unread, r->maps_unread == 1 ? "" : "es");
		}
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
	uint64_t bytes;		/* the file, its kallsyms, vDSO and pprof files */
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
static long list_windows(const struct rec *r, const char *dir, const char *base,
			 struct win_file **out)
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
		if (r->o.pprof_dir)
			v[n].bytes += file_size(r->o.pprof_dir, e->d_name, ".pb.gz");
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_win);
	*out = v;
	return (long)n;
}

/* Remove a window and what record wrote beside it. */
static void remove_window(const struct rec *r, const char *dir, const char *name)
{
	char p[PATH_MAX];

	if (r->o.pprof_dir && !pprof_path(r, name, p, sizeof(p)) && unlink(p) != 0 &&
	    errno != ENOENT)
		die_msg("cannot remove %s: %s", p, strerror(errno));

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
	n = list_windows(r, dir, basename(d2), &v);
	if (n < 0) {
		die_msg("cannot list the windows of %s: %s", r->o.out, strerror((int)-n));
		return;
	}
	/* the window being written is not a candidate (the previous one is
	 * closed while the next one is open) */
	if (n > 0 && r->w && !strcmp(v[n - 1].name, basename(strcpy(d1, r->win_path))))
		n--;
	for (long i = n - 1; i >= 0; i--) {
		bool keep = i == n - 1;

		total += v[i].bytes;
		if (!keep)
			keep = (!r->o.keep || (unsigned long)(n - i) <= r->o.keep) &&
			       (!r->o.max_size || total <= r->o.max_size);
		if (!keep) {
			remove_window(r, dir, v[i].name);
			switch_drain(r);
		}
	}
	free(v);
}

/* ------------------------------------------------------------ switch */

static void say_window(const char *path, uint64_t samples, uint64_t deferred, uint64_t lost,
		       uint64_t bytes)
{
	fprintf(stderr, PROG ": window %s: %" PRIu64 " samples, %" PRIu64 " deferred records, %"
		PRIu64 " lost, %.1f KiB\n", path, samples, deferred, lost, bytes / 1024.0);
}

/* Close the previous window, kept open for deferred records. */
static int close_prev(struct rec *r)
{
	struct rec_prev *p = &r->prev;
	struct ds_writer *cur = r->w;
	struct tab objs = r->objs;
	const char *path = r->path;
	int err;

	if (!p->w)
		return 0;
	/* close_output() closes r->w with the build-ids of r->objs */
	r->w = p->w;
	r->objs = p->objs;
	r->path = p->path;
	err = close_output(r, r->ncpu, r->argc, r->argv);
	tab_free_strs(&r->objs);
	r->w = cur;
	r->objs = objs;
	r->path = path;
	p->w = NULL;
	tab_free(&p->pend);
	memset(&p->pend, 0, sizeof(p->pend));
	if (err)
		return write_err(r, err);
	say_window(p->path, p->samples, p->deferred, p->lost, p->bytes);
	pprof_window(r, p->path, p->real0, p->real1);
	retain(r);
	return 0;
}

int window_note(struct rec *r, const struct perf_event_header *h)
{
	struct ds_event ev = { .sz = sizeof(ev) };
	void *c, *cur;
	int err;

	if (ds_event_parse(h, h->size, SAMPLE_TYPE, true, &ev) || !ev.has_cookie || !ev.cookie)
		return 0;
	c = (void *)(uintptr_t)ev.cookie;
	if (h->type == PERF_RECORD_SAMPLE) {
		/* the task's latest sample waits for the record of its cookie
		 * (unless the record was read first) */
		tab_del(&r->pend, ev.tid, NULL, NULL);
		if (tab_get(&r->done, ev.tid, NULL, NULL) == c)
			return 0;
		return tab_put(&r->pend, ev.tid, c);
	}
	cur = tab_get(&r->pend, ev.tid, NULL, NULL);
	if (cur == c)
		tab_del(&r->pend, ev.tid, NULL, NULL);
	if (!r->prev.w || tab_get(&r->prev.pend, ev.tid, NULL, NULL) != c) {
		/* in this window: a later sample of its cookie needs no wait */
		tab_del(&r->done, ev.tid, NULL, NULL);
		return tab_put(&r->done, ev.tid, c);
	}
	/* its sample is in the previous window: the record goes there (and
	 * here too when a sample of this window shares the cookie) */
	tab_del(&r->prev.pend, ev.tid, NULL, NULL);
	err = write_err(r, ds_writer_write(r->prev.w, h));
	if (err)
		return err;
	r->nr_deferred++;
	r->nr_records++;
	r->bytes += h->size;
	r->win_bytes0 += h->size;	/* not the current window's size */
	r->prev.deferred++;
	r->prev.bytes += h->size;
	if (cur != c)
		return 1;
	tab_del(&r->done, ev.tid, NULL, NULL);
	return tab_put(&r->done, ev.tid, c);
}

int window_tick(struct rec *r, double now)
{
	if (!r->prev.w || (r->prev.pend.used && now < r->prev.until))
		return 0;
	return close_prev(r);
}

static bool remove_oldest(struct rec *r);
static uint64_t free_bytes(const struct rec *r);

/* DEFERSTACK_TEST_SWITCH_DELAY: a slow switch (a big machine, a debug
 * kernel) made on purpose, for the test that the rings are read during
 * it (tests/cli/check-winrobust.sh). */
static void test_delay(struct rec *r)
{
	if (r->test_delay <= 0)
		return;
	for (double end = now_s() + r->test_delay; now_s() < end;) {
		switch_drain(r);
		usleep(10000);
	}
}

/* Close the current window: side files (unless err), header, retention,
 * and a line; the per-window notes are emptied for the next one.  In
 * defer mode, a window (not the last) whose samples wait for their
 * deferred records stays open for them, CARRY_SECS at most. */
static int window_close(struct rec *r, int err, bool last)
{
	struct rec_prev *p = &r->prev;
	int e2;

	/* --keep, --max-size on a nearly full disk: room first for the side
	 * files and the features (build-ids, names: a few KiB) */
	while (!err && (r->o.keep || r->o.max_size) &&
	       free_bytes(r) < 131072 + 256 * r->objs.used && remove_oldest(r))
		;
	if (!err) {
		/* report falls back to /proc/kallsyms without it: a full disk
		 * does not stop the window for it (said) */
		int e2 = save_kallsyms(r, r->win_path);

		if (e2 && !disk_full(e2))
			err = e2;
	}
	switch_drain(r);
	if (!err)
		side_save(&r->side, r->win_path);
	switch_drain(r);
	test_delay(r);
	tab_free(&r->kips);
	tab_free(&r->done);
	memset(&r->kips, 0, sizeof(r->kips));
	memset(&r->done, 0, sizeof(r->done));
	if (!err && !last && r->pend.used) {
		p->w = r->w;
		p->objs = r->objs;
		p->pend = r->pend;
		strcpy(p->path, r->win_path);
		p->until = now_s() + CARRY_SECS;
		p->real0 = r->win_real0;
		p->real1 = real_ns();
		p->samples = r->nr_samples - r->win_samples0;
		p->deferred = r->nr_deferred - r->win_deferred0;
		p->lost = r->nr_lost - r->win_lost0;
		p->bytes = r->bytes - r->win_bytes0;
		r->w = NULL;
		memset(&r->objs, 0, sizeof(r->objs));
		memset(&r->pend, 0, sizeof(r->pend));
		return 0;
	}
	tab_free(&r->pend);
	memset(&r->pend, 0, sizeof(r->pend));
	e2 = close_output(r, r->ncpu, r->argc, r->argv);
	tab_free_strs(&r->objs);
	if (!err && e2)
		err = write_err(r, e2);
	if (err)
		return err;
	say_window(r->win_path, r->nr_samples - r->win_samples0,
		   r->nr_deferred - r->win_deferred0, r->nr_lost - r->win_lost0,
		   r->bytes - r->win_bytes0);
	pprof_window(r, r->win_path, r->win_real0, real_ns());
	retain(r);
	return 0;
}

/* The spooled records of a switch that opened no window (paused). */
static void spool_discard(struct rec *r)
{
	for (size_t off = 0; off < r->spool.len;) {
		struct perf_event_header h;

		memcpy(&h, r->spool.buf + off, sizeof(h));
		r->paused_samples += h.type == PERF_RECORD_SAMPLE;
		off += h.size;
	}
	free(r->spool.buf);
	memset(&r->spool, 0, sizeof(r->spool));
}

/* Open the next window; on a full disk, make room or pause (up to a few
 * windows removed for it). */
static int open_or_full(struct rec *r)
{
	int err = window_open(r);

	for (int i = 0; i < 16 && disk_full(err) && !r->paused; i++) {
		if (r->w) {
			/* its maps did not fit: not a window without them */
			close_output(r, r->ncpu, r->argc, r->argv);
			unlink(r->win_path);
			tab_free_strs(&r->objs);
			tab_free(&r->kips);
			memset(&r->kips, 0, sizeof(r->kips));
			r->nr_windows--;
			r->werr = 0;
		}
		err = window_full(r, err);
		if (!err && !r->w && !r->paused)
			err = window_open(r);
	}
	return err;
}

/* The rings were just drained into the current window: what they bring
 * from now on is the next one's, spooled while this one is closed and the
 * next one opened (switch_drain() between the steps), then written to it. */
int window_switch(struct rec *r)
{
	int err;

	r->spooling = true;
	err = close_prev(r);
	if (!err)
		err = window_close(r, 0, false);
	if (disk_full(err))
		err = window_full(r, err);
	if (!err && !r->paused)
		err = open_or_full(r);
	switch_drain(r);
	r->spooling = false;
	if (!err && r->w)
		return spool_replay(r);
	spool_discard(r);
	return err;
}

/* The oldest window but the ones open, removed: true, or false (none). */
static bool remove_oldest(struct rec *r)
{
	char d1[PATH_MAX], d2[PATH_MAX], dir[PATH_MAX], cur[PATH_MAX], prev[PATH_MAX];
	struct win_file *v = NULL;
	bool done = false;
	long n;

	snprintf(d1, sizeof(d1), "%s", r->o.out);
	snprintf(d2, sizeof(d2), "%s", r->o.out);
	snprintf(dir, sizeof(dir), "%s", dirname(d1));
	snprintf(cur, sizeof(cur), "%s", r->w ? r->win_path : "");
	snprintf(prev, sizeof(prev), "%s", r->prev.w ? r->prev.path : "");
	n = list_windows(r, dir, basename(d2), &v);
	for (long i = 0; i < n && !done; i++) {
		char pp[PATH_MAX];

		if ((*cur && !strcmp(v[i].name, basename(cur))) ||
		    (*prev && !strcmp(v[i].name, basename(prev))))
			continue;
		/* nor the one whose pprof profile is being written from it */
		if (r->pprof_pid > 0 && !pprof_path(r, v[i].name, pp, sizeof(pp)) &&
		    !strcmp(pp, r->pprof_out))
			continue;
		remove_window(r, dir, v[i].name);
		die_msg("disk full: removed the oldest window %s/%s to make room", dir, v[i].name);
		done = true;
	}
	free(v);
	return done;
}

/* A writer back to its last round (a failed write leaves its error). */
static int rewind_writer(struct ds_writer *w, bool cur, struct rec *r)
{
	int err;

	if (!w)
		return 0;
	if (!ds_writer_round(w)) {
		if (cur)
			note_round(r);
		return 0;
	}
	err = ds_writer_rewind(w, NULL);
	if (err || !cur)
		return err;
	/* the records since the last round are not in the window */
	r->nr_dropped += r->nr_records - r->at_round.records;
	r->nr_samples = r->at_round.samples;
	r->nr_deferred = r->at_round.deferred;
	r->nr_lost = r->at_round.lost;
	r->nr_records = r->at_round.records;
	r->bytes = r->at_round.bytes;
	return 0;
}

static uint64_t free_bytes(const struct rec *r)
{
	char d[PATH_MAX];
	struct statvfs sv;

	snprintf(d, sizeof(d), "%s", r->o.out);
	if (statvfs(dirname(d), &sv) != 0)
		return UINT64_MAX;	/* cannot tell: try */
	return (uint64_t)sv.f_bavail * sv.f_frsize;
}

int window_full(struct rec *r, int err)
{
	bool retention = r->o.keep || r->o.max_size;
	char path[PATH_MAX];

	if (!disk_full(err) || !r->o.switch_mode)
		return err;
	snprintf(path, sizeof(path), "%s", r->w ? r->win_path : r->prev.w ? r->prev.path :
		 r->win_path);
	r->werr = 0;	/* handled here: not the end of the recording */
	if (rewind_writer(r->prev.w, false, r) || rewind_writer(r->w, true, r))
		return write_err(r, err);
	if (retention && remove_oldest(r))
		return 0;
	/* no room to make: a pause (said first, not again when a resume
	 * finds no room: it waits longer), the windows open closed (a close
	 * that cannot write its features leaves the file at its last round);
	 * a pause soon after a resume (a quota statvfs does not show) doubles
	 * the wait, up to a minute */
	if (r->resuming || now_s() - r->resumed_at < 10)
		r->pause_wait = r->pause_wait < 32 ? r->pause_wait * 2 : 64;
	else
		r->pause_wait = 1;
	r->paused = true;
	r->pause_check = now_s() + r->pause_wait;
	if (r->resuming)
		return 0;
	die_msg("writing %s: %s (disk full): recording paused until %u MiB are free%s", path,
		strerror(-err), RESUME_FREE >> 20,
		retention ? " (no older window left to remove)" :
			    " (--keep or --max-size would remove the oldest windows)");
	close_prev(r);
	if (r->w) {
		/* the window's own features first, its side files after */
		close_output(r, r->ncpu, r->argc, r->argv);
		window_close(r, 0, true);
	}
	r->werr = 0;
	r->nr_pauses++;
	return 0;
}

int window_resume(struct rec *r, double now)
{
	uint64_t before = r->paused_samples, avail;
	int err;

	if (!r->paused || now < r->pause_check)
		return 0;
	r->pause_check = now + r->pause_wait;
	avail = free_bytes(r);
	if (avail < RESUME_FREE)
		return 0;
	r->paused = false;
	r->resuming = true;
	err = open_or_full(r);
	r->resuming = false;
	if (err || r->paused)
		return err;
	r->resumed_at = now;
	fprintf(stderr, PROG ": %.1f MiB free: recording resumed in window %s (%" PRIu64
		" samples not recorded while paused)\n", avail / 1048576.0, r->win_path, before);
	return 0;
}

int window_finish(struct rec *r, int err)
{
	int e2 = close_prev(r);

	if (!err)
		err = e2;
	if (r->w)
		err = window_close(r, err, true);
	if (disk_full(err)) {
		/* the last window stays as at its last round (said) */
		die_msg("writing %s: %s (disk full): the window ends at its last round",
			r->win_path, strerror(-err));
		r->werr = 0;
		err = 0;
	}
	pprof_wait(r);
	return err;
}

void window_summary(const struct rec *r)
{
	fprintf(stderr, PROG ": wrote %lu windows %s.<timestamp> (%s mode, %" PRIu64
		" records, %.1f KiB)\n", r->nr_windows, r->o.out,
		r->defer ? "defer" : "classic", r->nr_records, r->bytes / 1024.0);
	fprintf(stderr, PROG ": summary of all windows: %" PRIu64 " samples, %" PRIu64
		" deferred records, %" PRIu64 " lost\n", r->nr_samples, r->nr_deferred,
		r->nr_lost);
	if (getenv("DEFERSTACK_TEST_KALLSYMS_READS"))
		fprintf(stderr, PROG ": /proc/kallsyms read %lu times\n", r->kallsyms_reads);
	if (r->nr_pauses || r->nr_dropped)
		fprintf(stderr, PROG ": disk full: %lu pause%s, %" PRIu64 " samples not recorded "
			"while paused, %" PRIu64 " records dropped at a failed write\n", r->nr_pauses,
			ds_s(r->nr_pauses), r->paused_samples, r->nr_dropped);
}
