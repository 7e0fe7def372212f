// SPDX-License-Identifier: MIT
/* The CLI's side of the library's read pipeline (ds_pipeline): standard
 * input for "-", the library's messages printed, the summary line. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void warn_input(void *arg, const char *msg)
{
	(void)arg;
	die_msg("warning: %s", msg);
}

static void warn_build_id(void *arg, const char *path, const char *recorded,
			  const char *on_disk)
{
	(void)arg;
	die_msg("warning: %s has changed since the recording (build-id %s, recorded %s): "
		"its frames are shown as addresses (--force-symbols to symbolize it anyway)",
		path, *on_disk ? on_disk : "none", recorded);
}

int pipeline_run(struct ds_pipeline **pp, const char *in, struct ds_pipeline_opts *o)
{
	struct ds_pipeline *p;
	int err;

	o->warn = warn_input;
	o->build_id_warn = warn_build_id;
	/* what record saved beside IN: FILE.kallsyms, FILE.vdso, FILE.perf-maps/ */
	o->side_files = true;
	err = ds_pipeline_new(pp, o);
	if (err) {
		die_msg("%s", strerror(-err));
		return err;
	}
	p = *pp;
	if (!strcmp(in, "-")) {
		int fd = dup(0);

		if (fd < 0) {
			err = -errno;
			die_msg("standard input: %s", strerror(-err));
			return err;
		}
		err = ds_pipeline_open_fd(p, fd, "standard input");
	} else {
		err = ds_pipeline_open(p, in);
	}
	if (!err)
		err = ds_pipeline_run(p);
	/* "": the command's callback stopped it and said why */
	if (err && ds_pipeline_error(p)[0])
		die_msg("%s", ds_pipeline_error(p));
	return err;
}

/* The losses, ", lost N events in N LOST records, N lost samples" (if
 * all is false, only when something was lost) */
static void print_lost(FILE *out, const struct ds_pipeline_summary *st, bool all)
{
	if (!all && !st->lost_events && !st->lost_records && !st->lost_samples)
		return;
	fprintf(out, ", lost %" PRIu64 " event%s in %" PRIu64 " LOST record%s, %" PRIu64
		" lost sample%s", st->lost_events, ds_s(st->lost_events), st->lost_records,
		ds_s(st->lost_records), st->lost_samples, ds_s(st->lost_samples));
}

void print_summary(FILE *out, const struct ds_pipeline_summary *st)
{
	fprintf(out, "summary: %" PRIu64 " sample%s", st->samples, ds_s(st->samples));
	if (!st->deferred && !st->stitched && !st->kernel_only) {
		/* classic callchains only: nothing was stitched, one line says so */
		fprintf(out, ", classic callchains (no deferred ones to stitch)");
		print_lost(out, st, false);
		fputc('\n', out);
		return;
	}
	fprintf(out,
		", %" PRIu64 " deferred record%s, %" PRIu64 " stitched (%" PRIu64
		" record-first), %" PRIu64 " complete, %" PRIu64 " unmatched/kernel-only "
		"(cookie-changed %" PRIu64 ", exit %" PRIu64 ", end %" PRIu64 ", overflow %"
		PRIu64 ")", st->deferred, ds_s(st->deferred), st->stitched, st->record_first,
		st->complete, st->kernel_only, st->unm_cookie, st->unm_exit, st->unm_end,
		st->unm_overflow);
	print_lost(out, st, true);
	fputc('\n', out);
}

struct ds_pipeline_summary pipeline_stats(const struct ds_pipeline *p)
{
	struct ds_pipeline_summary s = { .sz = sizeof(s) };

	if (p)
		ds_pipeline_get_summary(p, &s);
	return s;
}

void print_pipeline_summary(FILE *out, const struct ds_pipeline *p)
{
	struct ds_pipeline_summary st = pipeline_stats(p);

	print_summary(out, &st);
}

int input_status(const char *in, const struct ds_pipeline_summary *st)
{
	const char *name = strcmp(in, "-") ? in : "standard input";

	/* the warnings came when the input was opened, before a long output:
	 * the last line says why the exit status is not 0 */
	if (st->truncated)
		die_msg("%s is incomplete (its data section is cut short): the output "
			"ends at the cut", name);
	else if (st->unfinished)
		die_msg("%s is incomplete (the recording was not finished): the output "
			"ends where the file ends", name);
	else if (st->trailing)
		die_msg("%s is incomplete (its last record is cut off): the output ends "
			"before it", name);
	else
		return 0;
	return 1;
}

const char *pipeline_event(const struct ds_pipeline *p, const struct perf_event_header *rec,
			   char *buf, size_t len)
{
	const struct ds_reader *rd = ds_pipeline_reader(p);
	const struct ds_attr *a = rd ? ds_reader_attr_of(rd, rec) : NULL;

	return a ? ds_attr_name(a, buf, len) : "unknown";
}
