// SPDX-License-Identifier: MIT
/* The read path every command shares: read, merge in time order, stitch;
 * summaries and messages. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

struct wrap {
	struct pipeline *p;
	ds_stitch_cb cb;
	void *arg;
};

static int wrap_cb(void *arg, const struct ds_stitch_out *o)
{
	struct wrap *w = arg;

	if (o->kind == DS_OUT_RECORD && w->p->sym) {
		int err = ds_symbols_event(w->p->sym, o->ev);

		if (err)
			return err;
	}
	if (w->cb) {
		int err = w->cb(w->arg, o);

		if (err)
			w->p->cb_err = err;
		return err;
	}
	return 0;
}

static int drain(struct pipeline *p)
{
	const struct perf_event_header *rec;
	struct ds_event ev = { .sz = sizeof(ev) };
	int err;

	while (ds_merge_pop(p->mg, &rec) > 0) {
		err = ds_reader_parse(p->rd, rec, &ev);
		if (!err)
			err = ds_stitch_event(p->st, &ev);
		if (err)
			return err;
	}
	return 0;
}

static const char *parse_err(int err)
{
	if (err == -EOPNOTSUPP)
		return "unsupported sample_type (PERF_SAMPLE_READ before the callchain)";
	return "a count or length does not fit the record (e.g. callchain nr larger "
	       "than the record)";
}

static void warn_build_id(void *arg, const char *path, const char *recorded,
			  const char *on_disk)
{
	(void)arg;
	die_msg("warning: %s has changed since the recording (build-id %s, recorded %s): "
		"its frames are shown as addresses (--force-symbols to symbolize it anyway)",
		path, *on_disk ? on_disk : "none", recorded);
}

/* What record saved beside the recording IN: its vDSO image (IN.vdso) and
 * the perf maps of its processes (IN.perf-maps/perf-PID.map); else the
 * library's defaults (the running kernel's vdso64.so, /tmp). */
static void side_files(const char *in, struct ds_symbols_opts *so, char *vdso, size_t vlen,
		       char *maps, size_t mlen)
{
	struct stat st;

	if (!strcmp(in, "-"))
		return;
	if (snprintf(vdso, vlen, "%s.vdso", in) < (int)vlen && !stat(vdso, &st) &&
	    S_ISREG(st.st_mode))
		so->vdso = vdso;
	if (snprintf(maps, mlen, "%s.perf-maps", in) < (int)mlen && !stat(maps, &st) &&
	    S_ISDIR(st.st_mode))
		so->perf_map_dir = maps;
}

int pipeline_run(struct pipeline *p, const char *in, const char *kallsyms,
		 int sym, ds_stitch_cb cb, void *arg)
{
	const char *path = strcmp(in, "-") ? in : "standard input";
	struct ds_symbols_opts so = { .sz = sizeof(so) };
	const struct perf_event_header *rec;
	struct wrap w = { p, cb, arg };
	char vdso[PATH_MAX], maps[PATH_MAX];
	struct ds_event ev = { .sz = sizeof(ev) };
	int ret;

	memset(p, 0, sizeof(*p));
	ret = open_input(&p->rd, in);
	if (ret)
		return ret;
	if (ds_reader_truncated(p->rd))
		die_msg("warning: %s is truncated: %" PRIu64 " byte%s of the data section "
			"missing; read up to there", path, ds_reader_truncated(p->rd),
			cli_s(ds_reader_truncated(p->rd)));
	if (ds_reader_unfinished(p->rd))
		die_msg("warning: %s: the recording was not finished (was the recorder "
			"killed?); reading its records up to the end of the file", path);
	if (sym) {
		side_files(in, &so, vdso, sizeof(vdso), maps, sizeof(maps));
		so.kallsyms = kallsyms;
		so.build_ids = ds_reader_build_ids(p->rd, &so.nr_build_ids);
		so.force_symbols = sym & PL_FORCE_SYMBOLS;
		so.full_names = sym & PL_FULL_NAMES;
		so.warn = warn_build_id;
		ret = ds_symbols_open(&p->sym, &so);
		if (ret && kallsyms) {
			/* like perf: a -k file that cannot be read is an error */
			bool given = sym & PL_KALLSYMS_GIVEN;

			die_msg("%scannot read kallsyms %s: %s", given ? "" : "warning: ",
				kallsyms, ret == -EINVAL ? "not a regular file" : strerror(-ret));
			if (given)
				return ret;
			so.kallsyms = NULL;
			ret = ds_symbols_open(&p->sym, &so);
		}
		if (ret) {
			die_msg("cannot set up symbolization: %s", strerror(-ret));
			return ret;
		}
	}
	{
		struct ds_stitch_opts so = { .sz = sizeof(so), .cb = wrap_cb, .cb_arg = &w };

		ret = ds_merge_new(&p->mg, NULL);
		if (!ret)
			ret = ds_stitch_new(&p->st, &so);
		if (ret) {
			die_msg("%s", strerror(-ret));
			return ret;
		}
	}
	while ((ret = ds_reader_next(p->rd, &rec)) > 0) {
		if (rec->type == DS_RECORD_FINISHED_ROUND) {
			ds_merge_round(p->mg);
			ret = drain(p);
			if (ret)
				break;
			continue;
		}
		ret = ds_reader_parse(p->rd, rec, &ev);
		if (ret) {
			die_msg("%s: malformed %s record (type %u, size %u) at data offset "
				"%" PRIu64 ": %s", path, ds_record_name(rec->type), rec->type,
				rec->size, ds_reader_offset(p->rd) - rec->size, parse_err(ret));
			return ret;
		}
		ret = ds_merge_push(p->mg, rec, ev.time, (ev.have & DS_EV_CPU) ? ev.cpu : 0);
		if (!ret)
			ret = drain(p);
		if (ret)
			break;
	}
	if (ret < 0 && p->cb_err) {
		return ret;	/* the callback said what went wrong */
	} else if (ret < 0) {
		if (ds_reader_error(p->rd)[0])
			die_msg("%s: %s", path, ds_reader_error(p->rd));
		else
			die_msg("%s: %s", path, strerror(-ret));
		return ret;
	}
	if (ds_reader_trailing(p->rd) && !ds_reader_truncated(p->rd))	/* said once */
		die_msg("warning: %s: the last record is cut off (%" PRIu64 " bytes at the "
			"end of the %s), ignored", path, ds_reader_trailing(p->rd),
			ds_reader_pipe_mode(p->rd) ? "stream" : "file");
	ds_merge_flush(p->mg);
	ret = drain(p);
	if (!ret)
		ret = ds_stitch_finish(p->st);
	p->nr_out_of_order = ds_merge_out_of_order(p->mg);
	if (ret && !p->cb_err)
		die_msg("%s: processing failed: %s", path, strerror(-ret));
	return ret;
}

int open_input(struct ds_reader **rd, const char *in)
{
	struct ds_reader_opts o = { .sz = sizeof(o) };
	char why[256] = "";
	int err;

	o.errbuf = why;
	o.errbuf_len = sizeof(why);
	if (!strcmp(in, "-")) {
		int fd = dup(0);

		if (fd < 0) {
			err = -errno;
			die_msg("standard input: %s", strerror(-err));
			return err;
		}
		err = ds_reader_open_fd(rd, fd, "standard input", &o);
	} else {
		err = ds_reader_open(rd, in, &o);
	}
	if (err)
		die_msg("%s", why[0] ? why : strerror(-err));
	return err;
}

void pipeline_close(struct pipeline *p)
{
	ds_stitch_free(p->st);
	ds_merge_free(p->mg);
	p->st = NULL;
	p->mg = NULL;
	ds_reader_close(p->rd);
	p->rd = NULL;
	ds_symbols_free(p->sym);
	p->sym = NULL;
}

/* The losses, ", lost N events in N LOST records, N lost samples" (if
 * all is false, only when something was lost) */
static void print_lost(FILE *out, const struct ds_stitch_stats *st, bool all)
{
	if (!all && !st->lost_events && !st->lost_records && !st->lost_samples)
		return;
	fprintf(out, ", lost %" PRIu64 " event%s in %" PRIu64 " LOST record%s, %" PRIu64
		" lost sample%s", st->lost_events, cli_s(st->lost_events), st->lost_records,
		cli_s(st->lost_records), st->lost_samples, cli_s(st->lost_samples));
}

void print_summary(FILE *out, const struct ds_stitch_stats *st)
{
	fprintf(out, "summary: %" PRIu64 " sample%s", st->samples, cli_s(st->samples));
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
		PRIu64 ")", st->deferred, cli_s(st->deferred), st->stitched, st->record_first,
		st->complete, st->kernel_only, st->unm_cookie, st->unm_exit, st->unm_end,
		st->unm_overflow);
	print_lost(out, st, true);
	fputc('\n', out);
}

struct ds_stitch_stats pipeline_stats(const struct pipeline *p)
{
	struct ds_stitch_stats z;

	if (p->st)
		return *ds_stitch_get_stats(p->st);
	memset(&z, 0, sizeof(z));
	return z;
}

void print_pipeline_summary(FILE *out, const struct pipeline *p)
{
	struct ds_stitch_stats st = pipeline_stats(p);

	print_summary(out, &st);
}

const char *default_kallsyms(const char *data, char *buf, size_t len)
{
	snprintf(buf, len, "%s.kallsyms", data);
	if (strcmp(data, "-") && access(buf, R_OK) == 0)
		return buf;
	if (access("/proc/kallsyms", R_OK) == 0)
		return "/proc/kallsyms";
	return NULL;
}

const char *pipeline_comm(struct pipeline *p, const struct ds_event *ev)
{
	const char *c = p->sym ? ds_symbols_comm(p->sym, ev->tid) : NULL;

	if (!c && p->sym)
		c = ds_symbols_comm(p->sym, ev->pid);
	return c ? c : "[unknown]";
}

const char *pipeline_event(const struct pipeline *p, const struct perf_event_header *rec,
			   char *buf, size_t len)
{
	const struct ds_attr *a = p->rd ? ds_reader_attr_of(p->rd, rec) : NULL;

	return a ? ds_attr_name(a, buf, len) : "unknown";
}
