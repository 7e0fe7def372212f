// SPDX-License-Identifier: MIT
/*
 * record's side data beside FILE, for report and script (found by lib/pipeline.c):
 * FILE.vdso, this machine's vDSO image, and FILE.perf-maps/perf-PID.map, the
 * perf maps (/tmp/perf-PID.map) of the processes that mapped anonymous
 * memory (where JITs put code).  record calls side_note_mmap() for each
 * MMAP/MMAP2 record it writes and side_save() at the end.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static bool is_anon(const char *f)
{
	return !*f || !strcmp(f, "//anon") || !strncmp(f, "[anon:", 6) ||
	       !strncmp(f, "/anon_hugepage", 14);
}

int side_note_mmap(struct side_data *sd, const struct perf_event_header *h,
		   uint64_t sample_type)
{
	struct ds_event ev = { .sz = sizeof(ev) };

	if ((h->type != PERF_RECORD_MMAP && h->type != PERF_RECORD_MMAP2) ||
	    (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL ||
	    ds_event_parse(h, h->size, sample_type, true, &ev) || !ev.filename ||
	    !is_anon(ev.filename))
		return 0;
	/* A few processes map anonymous memory; each is noted once. */
	for (size_t i = 0; i < sd->n; i++)
		if (sd->pids[i] == ev.pid)
			return 0;
	if (sd->n == sd->cap) {
		size_t cap = sd->cap ? 2 * sd->cap : 16;
		uint32_t *p = realloc(sd->pids, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		sd->pids = p;
		sd->cap = cap;
	}
	sd->pids[sd->n++] = ev.pid;
	return 0;
}

int side_save(struct side_data *sd, const char *out)
{
	char path[PATH_MAX];
	int err;

	if (is_special(out))
		goto done;	/* no /dev/null.vdso, no -.vdso */
	if (snprintf(path, sizeof(path), "%s.vdso", out) < (int)sizeof(path)) {
		err = ds_vdso_save(path);
		if (err && err != -ENOENT)
			die_msg("note: cannot save the vDSO image as %s: %s", path, strerror(-err));
	}
	if (snprintf(path, sizeof(path), "%s.perf-maps", out) >= (int)sizeof(path))
		goto done;
	for (size_t i = 0; i < sd->n; i++) {
		err = ds_perf_map_save(path, sd->pids[i]);
		if (err && err != -ENOENT)
			die_msg("note: cannot save /tmp/perf-%u.map in %s: %s", sd->pids[i],
				path, strerror(-err));
	}
done:
	free(sd->pids);
	memset(sd, 0, sizeof(*sd));
	return 0;
}

/* Remove base's side data (only what side_save() writes). */
static int side_remove(const char *base)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int err = 0;

	if (snprintf(path, sizeof(path), "%s.vdso", base) < (int)sizeof(path) &&
	    unlink(path) != 0 && errno != ENOENT)
		return -errno;
	if (snprintf(path, sizeof(path), "%s.perf-maps", base) >= (int)sizeof(path))
		return 0;
	d = opendir(path);
	if (!d)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	while ((e = readdir(d))) {
		char f[PATH_MAX];

		if (strncmp(e->d_name, "perf-", 5) ||
		    snprintf(f, sizeof(f), "%s/%s", path, e->d_name) >= (int)sizeof(f))
			continue;
		if (unlink(f) != 0 && errno != ENOENT)
			err = -errno;
	}
	closedir(d);
	if (!err && rmdir(path) != 0 && errno != ENOENT)
		err = -errno;
	return err;
}

int side_rotate(const char *out, const char *old)
{
	static const char *const suffix[] = { ".vdso", ".perf-maps" };
	int err = side_remove(old ? old : out);

	for (size_t i = 0; !err && old && i < 2; i++) {
		char from[PATH_MAX], to[PATH_MAX];

		if (snprintf(from, sizeof(from), "%s%s", out, suffix[i]) >= (int)sizeof(from) ||
		    snprintf(to, sizeof(to), "%s%s", old, suffix[i]) >= (int)sizeof(to))
			continue;
		if (rename(from, to) != 0 && errno != ENOENT)
			err = -errno;
	}
	if (!err && old)
		err = side_remove(out);	/* what could not move */
	if (err)
		die_msg("cannot move the side data of %s: %s", out, strerror(-err));
	return err;
}
