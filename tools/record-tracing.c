// SPDX-License-Identifier: MIT
/*
 * deferstack record: perf's tracing data for the recorded tracepoints.
 * perf (report, script) refuses a file with tracepoint events unless the
 * file carries their formats (HEADER_TRACING_DATA), so they are copied
 * from tracefs: the ring buffer's header_page/header_event and each
 * event's format file, in perf's layout (version 0.6, nothing of kallsyms,
 * printk formats or saved comms).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record.h"

/* The whole of a (tracefs) file, whose stat size says nothing. */
static int slurp(const char *path, char **buf, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *b = NULL;
	size_t n = 0, cap = 0;

	if (!f)
		return -errno;
	for (;;) {
		size_t got;

		if (ds_grow(&b, &cap, n + 4096, 1)) {
			free(b);
			fclose(f);
			return -ENOMEM;
		}
		got = fread(b + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		free(b);
		fclose(f);
		return -EIO;
	}
	fclose(f);
	*buf = b;
	*len = n;
	return 0;
}

/* A file of DIR/events: its u64 size (after tag, if any), then itself. */
static int put_file(FILE *f, const char *dir, const char *rel, const char *tag)
{
	char path[512], *b = NULL;
	size_t n = 0;
	uint64_t n64;
	int err;

	snprintf(path, sizeof(path), "%s/events/%s", dir, rel);
	err = slurp(path, &b, &n);
	if (err) {
		die_msg("cannot read %s: %s", path, strerror(-err));
		return err;
	}
	n64 = n;
	if (tag)
		fwrite(tag, 1, strlen(tag) + 1, f);
	fwrite(&n64, 8, 1, f);
	fwrite(b, 1, n, f);
	free(b);
	return 0;
}

/* Is ev the first of the events with its name (sys:name) or, with sys
 * set, the first of its system? */
static bool first_of(const struct ropts *o, size_t i, size_t sys_len)
{
	const struct rec_event *ev = &o->ev[i];

	for (size_t k = 0; k < i; k++) {
		const struct rec_event *e = &o->ev[k];

		if (e->type != PERF_TYPE_TRACEPOINT)
			continue;
		if (sys_len ? !strncmp(e->name, ev->name, sys_len + 1) : !strcmp(e->name, ev->name))
			return false;
	}
	return true;
}

/* A system's name, its number of events and their formats, for the
 * system of o->ev[first]. */
static int put_system(FILE *f, const char *dir, const struct ropts *o, size_t first)
{
	const char *sys = o->ev[first].name;
	size_t sl = strcspn(sys, ":");
	uint32_t count = 0;
	int err = 0;

	for (int pass = 0; pass < 2 && !err; pass++) {
		if (pass) {
			fprintf(f, "%.*s", (int)sl, sys);
			fputc(0, f);
			fwrite(&count, 4, 1, f);
		}
		for (size_t i = first; i < o->nr_ev && !err; i++) {
			const struct rec_event *e = &o->ev[i];
			char rel[160];

			if (e->type != PERF_TYPE_TRACEPOINT || strncmp(e->name, sys, sl + 1) ||
			    !first_of(o, i, 0))
				continue;
			if (!pass) {
				count++;
				continue;
			}
			snprintf(rel, sizeof(rel), "%.*s/%s/format", (int)sl, e->name,
				 e->name + sl + 1);
			err = put_file(f, dir, rel, NULL);
		}
	}
	return err;
}

int tracing_data(const struct ropts *o, char **out, size_t *len)
{
	static const char magic[] = { 23, 8, 68, 't', 'r', 'a', 'c', 'i', 'n', 'g' };
	const char *dir = tracefs_dir();
	uint32_t u32 = 0, nsys = 0;
	uint64_t u64 = 0;
	FILE *f;
	int err;

	*out = NULL;
	*len = 0;
	for (size_t i = 0; i < o->nr_ev; i++) {
		const struct rec_event *e = &o->ev[i];

		if (e->type == PERF_TYPE_TRACEPOINT && first_of(o, i, strcspn(e->name, ":")))
			nsys++;
	}
	if (!nsys)
		return 0;
	if (!dir) {
		die_msg("tracefs is gone: cannot save the tracepoint formats");
		return -ENOENT;
	}
	f = open_memstream(out, len);
	if (!f)
		return -errno;
	fwrite(magic, 1, sizeof(magic), f);
	fwrite("0.6", 1, 4, f);
	fputc(0, f);				/* little-endian */
	fputc((int)sizeof(long), f);
	u32 = (uint32_t)getpagesize();
	fwrite(&u32, 4, 1, f);
	err = put_file(f, dir, "header_page", "header_page");
	if (!err)
		err = put_file(f, dir, "header_event", "header_event");
	u32 = 0;
	fwrite(&u32, 4, 1, f);			/* no ftrace formats */
	fwrite(&nsys, 4, 1, f);
	for (size_t i = 0; i < o->nr_ev && !err; i++) {
		const struct rec_event *e = &o->ev[i];

		if (e->type == PERF_TYPE_TRACEPOINT && first_of(o, i, strcspn(e->name, ":")))
			err = put_system(f, dir, o, i);
	}
	fwrite(&u32, 4, 1, f);			/* no kallsyms */
	fwrite(&u32, 4, 1, f);			/* no printk formats */
	fwrite(&u64, 8, 1, f);			/* no saved comms */
	if (fclose(f) && !err)
		err = -ENOMEM;
	if (err) {
		free(*out);
		*out = NULL;
		*len = 0;
	}
	return err;
}
