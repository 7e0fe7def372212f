// SPDX-License-Identifier: MIT
/*
 * The read pipeline: reader -> time merge -> stitcher (-> symbols), driven
 * as one object.  It lives in the library, not in the CLI, so that every
 * consumer of libdeferstack reads a recording the way deferstack's own
 * commands do (same rounds, same order, same counts, same messages)
 * instead of composing the pieces again.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deferstack/deferstack.h"
#include "internal.h"

/* a message names the input and may quote a path of its own */
#define PL_MSG_MAX (2 * PATH_MAX + 256)

struct ds_pipeline {
	struct ds_pipeline_opts o;
	struct ds_reader *rd;
	struct ds_merge *mg;
	struct ds_stitcher *st;
	struct ds_symbols *sym;		/* NULL without opts.symbols */
	char *name;			/* the input, for messages */
	bool ran;
	bool cb_failed;			/* the caller's callback stopped the run */
	char err[PL_MSG_MAX];
};

static void set_err(struct ds_pipeline *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void set_err(struct ds_pipeline *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->err, sizeof(p->err), fmt, ap);
	va_end(ap);
}

static void warn(struct ds_pipeline *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void warn(struct ds_pipeline *p, const char *fmt, ...)
{
	char msg[PL_MSG_MAX];
	va_list ap;

	if (!p->o.warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p->o.warn(p->o.warn_arg, msg);
}

int ds_pipeline_new(struct ds_pipeline **out, const struct ds_pipeline_opts *opts)
{
	struct ds_pipeline *p;
	int err;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	err = ds_opts_copy(&p->o, sizeof(p->o), opts, opts ? opts->sz : 0);
	if (err) {
		free(p);
		return err;
	}
	p->o.sz = sizeof(p->o);
	*out = p;
	return 0;
}

void ds_pipeline_free(struct ds_pipeline *p)
{
	if (!p)
		return;
	ds_stitch_free(p->st);
	ds_merge_free(p->mg);
	ds_reader_close(p->rd);
	ds_symbols_free(p->sym);
	free(p->name);
	free(p);
}

const char *ds_pipeline_error(const struct ds_pipeline *p)
{
	return p->err;
}

const struct ds_reader *ds_pipeline_reader(const struct ds_pipeline *p)
{
	return p->rd;
}

struct ds_symbols *ds_pipeline_symbols(const struct ds_pipeline *p)
{
	return p->sym;
}

const char *ds_pipeline_comm(const struct ds_pipeline *p, const struct ds_event *ev)
{
	const char *c = p->sym ? ds_symbols_comm(p->sym, ev->tid) : NULL;

	if (!c && p->sym)
		c = ds_symbols_comm(p->sym, ev->pid);
	return c ? c : "[unknown]";
}

int ds_pipeline_get_summary(const struct ds_pipeline *p, struct ds_pipeline_summary *out)
{
	struct ds_pipeline_summary s;

	if (!out || out->sz < DS_SZ_MIN(struct ds_pipeline_summary, records))
		return -EINVAL;
	memset(&s, 0, sizeof(s));
	s.sz = sizeof(s);
	if (p->st) {
		const struct ds_stitch_stats *t = ds_stitch_get_stats(p->st);

		s.records = t->records;
		s.samples = t->samples;
		s.deferred = t->deferred;
		s.stitched = t->stitched;
		s.record_first = t->record_first;
		s.complete = t->complete;
		s.nochain = t->nochain;
		s.kernel_only = t->kernel_only;
		s.unm_cookie = t->unm_cookie;
		s.unm_exit = t->unm_exit;
		s.unm_end = t->unm_end;
		s.unm_overflow = t->unm_overflow;
		s.lost_events = t->lost_events;
		s.lost_samples = t->lost_samples;
		s.lost_records = t->lost_records;
		s.unknown = t->unknown;
		s.pending_peak = t->pending_peak;
	}
	if (p->mg)
		s.out_of_order = ds_merge_out_of_order(p->mg);
	if (p->rd) {
		s.truncated = ds_reader_truncated(p->rd);
		s.trailing = ds_reader_trailing(p->rd);
		s.unfinished = ds_reader_unfinished(p->rd);
		s.pipe_mode = ds_reader_pipe_mode(p->rd);
	}
	ds_sz_out(out, &s, sizeof(s));
	return 0;
}

/* Every output: the symbols follow the records (MMAP, COMM, FORK) before
 * the caller sees them, so its lookups see the process as it was then. */
static int out_cb(void *arg, const struct ds_stitch_out *o)
{
	struct ds_pipeline *p = arg;
	int err;

	if (o->kind == DS_OUT_RECORD && p->sym) {
		err = ds_symbols_event(p->sym, o->ev);
		if (err)
			return err;
	}
	if (!p->o.cb)
		return 0;
	err = p->o.cb(p->o.cb_arg, o);
	if (err)
		p->cb_failed = true;
	return err;
}

/* What record saved beside the recording PATH: its vDSO image
 * (PATH.vdso) and the perf maps of its processes
 * (PATH.perf-maps/perf-PID.map); else the symbols' defaults. */
static void side_files(const char *path, struct ds_symbols_opts *so, char *vdso, size_t vlen,
		       char *maps, size_t mlen)
{
	struct stat st;

	if (!so->vdso && snprintf(vdso, vlen, "%s.vdso", path) < (int)vlen &&
	    !stat(vdso, &st) && S_ISREG(st.st_mode))
		so->vdso = vdso;
	if (!so->perf_map_dir && snprintf(maps, mlen, "%s.perf-maps", path) < (int)mlen &&
	    !stat(maps, &st) && S_ISDIR(st.st_mode))
		so->perf_map_dir = maps;
}

/* PATH.kallsyms (what record saved), else the running kernel's. */
static const char *find_kallsyms(const char *path, char *buf, size_t len)
{
	if (path && snprintf(buf, len, "%s.kallsyms", path) < (int)len &&
	    access(buf, R_OK) == 0)
		return buf;
	if (access("/proc/kallsyms", R_OK) == 0)
		return "/proc/kallsyms";
	return NULL;
}

static int open_symbols(struct ds_pipeline *p, const char *path)
{
	struct ds_symbols_opts so = { .sz = sizeof(so) };
	char vdso[PATH_MAX], maps[PATH_MAX], ks[PATH_MAX];
	bool given = p->o.kallsyms;
	int err;

	so.vdso = p->o.vdso;
	so.perf_map_dir = p->o.perf_map_dir;
	so.buildid_dir = p->o.buildid_dir;
	if (path && p->o.side_files)
		side_files(path, &so, vdso, sizeof(vdso), maps, sizeof(maps));
	so.kallsyms = p->o.kallsyms;
	if (!so.kallsyms && p->o.find_kallsyms)
		so.kallsyms = find_kallsyms(path, ks, sizeof(ks));
	so.build_ids = ds_reader_build_ids(p->rd, &so.nr_build_ids);
	so.force_symbols = p->o.force_symbols;
	so.full_names = p->o.full_names;
	so.warn = p->o.build_id_warn;
	so.warn_arg = p->o.build_id_warn_arg;
	err = ds_symbols_open(&p->sym, &so);
	if (err && so.kallsyms) {
		/* like perf: a kallsyms file given that cannot be read is an
		 * error; one found is a warning, and no kernel symbols */
		const char *why = err == -EINVAL ? "not a regular file" : strerror(-err);

		if (given) {
			set_err(p, "cannot read kallsyms %s: %s", so.kallsyms, why);
			return err;
		}
		warn(p, "cannot read kallsyms %s: %s", so.kallsyms, why);
		so.kallsyms = NULL;
		err = ds_symbols_open(&p->sym, &so);
	}
	if (err)
		set_err(p, "cannot set up symbolization: %s", strerror(-err));
	return err;
}

/* What the merge keeps after each record: the record parsed when it was
 * read (with the attrs known then; a pipe-mode stream may add attrs
 * later, and a record read before is parsed again then, as it always
 * was), so that it is not parsed a second time when it is released. */
struct parsed {
	struct ds_event ev;
	size_t nr_attrs;
};

/* The reader is open: say what is wrong with the input, set up the rest. */
static int opened(struct ds_pipeline *p, const char *path)
{
	struct ds_merge_opts mo = { .sz = sizeof(mo) };
	struct ds_stitch_opts so = { .sz = sizeof(so) };
	uint64_t cut = ds_reader_truncated(p->rd);
	int err;

	if (cut)
		warn(p, "%s is truncated: %" PRIu64 " byte%s of the data section missing; "
		     "read up to there", p->name, cut, ds_s(cut));
	if (ds_reader_unfinished(p->rd))
		warn(p, "%s: the recording was not finished (was the recorder killed?); "
		     "reading its records up to the end of the file", p->name);
	if (p->o.symbols) {
		err = open_symbols(p, path);
		if (err)
			return err;
	}
	mo.max_pending = p->o.merge_max_pending;
	so.max_pending_per_task = p->o.max_pending_per_task;
	so.cb = out_cb;
	so.cb_arg = p;
	err = ds_merge_new(&p->mg, &mo);
	if (!err)
		err = ds_merge_set_extra(p->mg, sizeof(struct parsed));
	if (!err)
		err = ds_stitch_new(&p->st, &so);
	if (err)
		set_err(p, "%s", strerror(-err));
	return err;
}

/* Open with fd (>= 0) or path; the reader owns fd. */
static int do_open(struct ds_pipeline *p, const char *path, int fd, const char *name)
{
	struct ds_reader_opts ro = { .sz = sizeof(ro) };
	char why[256] = "";
	int err;

	p->err[0] = 0;
	if (p->rd) {
		if (fd >= 0)
			close(fd);
		set_err(p, "%s: the pipeline already has an input", name);
		return -EBUSY;
	}
	free(p->name);
	p->name = strdup(name);
	if (!p->name) {
		if (fd >= 0)
			close(fd);
		set_err(p, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	ro.errbuf = why;
	ro.errbuf_len = sizeof(why);
	err = fd >= 0 ? ds_reader_open_fd(&p->rd, fd, name, &ro) : ds_reader_open(&p->rd, path, &ro);
	if (err) {
		p->rd = NULL;
		set_err(p, "%s", why[0] ? why : strerror(-err));
		return err;
	}
	return opened(p, path);
}

int ds_pipeline_open(struct ds_pipeline *p, const char *path)
{
	if (!path) {
		set_err(p, "no input path");
		return -EINVAL;
	}
	return do_open(p, path, -1, path);
}

int ds_pipeline_open_fd(struct ds_pipeline *p, int fd, const char *name)
{
	if (!name)
		name = "input";
	if (fd < 0) {
		set_err(p, "%s: %s", name, strerror(EBADF));
		return -EBADF;
	}
	return do_open(p, NULL, fd, name);
}

/* ptr, which pointed into a record at from, into its copy at to */
static const void *moved(const void *ptr, uintptr_t from, uintptr_t to)
{
	return ptr ? (const void *)(to + ((uintptr_t)ptr - from)) : NULL;
}

/* Stitch what the merge releases. */
static int drain(struct ds_pipeline *p)
{
	const struct perf_event_header *rec;
	struct ds_event ev = { .sz = sizeof(ev) };
	int err;

	while (ds_merge_pop(p->mg, &rec) > 0) {
		struct parsed *pp = ds_merge_extra(p->mg);
		struct ds_event *e = &ev;

		if (pp && pp->ev.hdr && pp->nr_attrs == ds_reader_nr_attrs(p->rd)) {
			/* in place: the merge frees it at the next pop */
			uintptr_t from = (uintptr_t)pp->ev.hdr, to = (uintptr_t)rec;

			e = &pp->ev;
			e->hdr = rec;
			e->chain = moved(e->chain, from, to);
			e->filename = moved(e->filename, from, to);
			e->comm = moved(e->comm, from, to);
			err = 0;
		} else {
			err = ds_reader_parse(p->rd, rec, &ev);
		}
		if (!err)
			err = ds_stitch_event(p->st, e);
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

int ds_pipeline_run(struct ds_pipeline *p)
{
	const struct perf_event_header *rec;
	struct parsed pp = { .ev = { .sz = sizeof(pp.ev) } };
	struct ds_event *ev = &pp.ev;
	int ret;

	p->err[0] = 0;
	if (!p->st) {
		set_err(p, "the pipeline has no input (ds_pipeline_open())");
		return -EINVAL;
	}
	if (p->ran) {
		set_err(p, "%s: already read", p->name);
		return -EINVAL;
	}
	p->ran = true;
	while ((ret = ds_reader_next(p->rd, &rec)) > 0) {
		if (rec->type == DS_RECORD_FINISHED_ROUND) {
			ds_merge_round(p->mg);
			ret = drain(p);
			if (ret)
				break;
			continue;
		}
		ret = ds_reader_parse(p->rd, rec, ev);
		if (ret) {
			set_err(p, "%s: malformed %s record (type %u, size %u) at data offset "
				"%" PRIu64 ": %s", p->name, ds_record_name(rec->type), rec->type,
				rec->size, ds_reader_offset(p->rd) - rec->size, parse_err(ret));
			return ret;
		}
		pp.nr_attrs = ds_reader_nr_attrs(p->rd);
		ret = ds_merge_push_extra(p->mg, rec, ev->time, (ev->have & DS_EV_CPU) ? ev->cpu : 0,
					  &pp);
		if (!ret)
			ret = drain(p);
		if (ret)
			break;
	}
	if (ret < 0 && p->cb_failed) {
		return ret;	/* the callback knows what went wrong */
	} else if (ret < 0) {
		if (ds_reader_error(p->rd)[0])
			set_err(p, "%s: %s", p->name, ds_reader_error(p->rd));
		else
			set_err(p, "%s: %s", p->name, strerror(-ret));
		return ret;
	}
	if (ds_reader_trailing(p->rd) && !ds_reader_truncated(p->rd))	/* said once */
		warn(p, "%s: the last record is cut off (%" PRIu64 " bytes at the end of the "
		     "%s), ignored", p->name, ds_reader_trailing(p->rd),
		     ds_reader_pipe_mode(p->rd) ? "stream" : "file");
	ds_merge_flush(p->mg);
	ret = drain(p);
	if (!ret)
		ret = ds_stitch_finish(p->st);
	if (ret && !p->cb_failed)
		set_err(p, "%s: processing failed: %s", p->name, strerror(-ret));
	return ret;
}
