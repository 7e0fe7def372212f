// SPDX-License-Identifier: MIT
/* deferstack report / script / convert, and the shared read pipeline. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	struct ds_event ev;
	int err;

	while (ds_merge_pop(&p->mg, &rec) > 0) {
		err = ds_reader_parse(&p->rd, rec, &ev);
		if (!err)
			err = ds_stitch_event(&p->st, &ev);
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

int pipeline_run(struct pipeline *p, const char *path, const char *kallsyms,
		 bool want_symbols, ds_stitch_cb cb, void *arg)
{
	const struct perf_event_header *rec;
	struct wrap w = { p, cb, arg };
	struct ds_event ev;
	int ret;

	memset(p, 0, sizeof(*p));
	ret = ds_reader_open(&p->rd, path);
	if (ret) {
		die_msg("%s", p->rd.err);
		return ret;
	}
	if (p->rd.unfinished)
		die_msg("warning: %s: the recording was not finished (was the recorder "
			"killed?); reading its records up to the end of the file", path);
	if (want_symbols) {
		ret = ds_symbols_new(&p->sym, kallsyms);
		if (ret && kallsyms) {
			die_msg("warning: cannot read kallsyms %s: %s", kallsyms,
				ret == -EINVAL ? "not a regular file" : strerror(-ret));
			ret = ds_symbols_new(&p->sym, NULL);
		}
		if (ret) {
			die_msg("cannot set up symbolization: %s", strerror(-ret));
			return ret;
		}
	}
	ds_merge_init(&p->mg, 0);
	ret = ds_stitch_init(&p->st, 0, wrap_cb, &w);
	if (ret)
		return ret;
	while ((ret = ds_reader_next(&p->rd, &rec)) > 0) {
		if (rec->type == DS_RECORD_FINISHED_ROUND) {
			ds_merge_round(&p->mg);
			ret = drain(p);
			if (ret)
				break;
			continue;
		}
		ret = ds_reader_parse(&p->rd, rec, &ev);
		if (ret) {
			die_msg("%s: malformed %s record (type %u, size %u) at data offset "
				"%" PRIu64 ": %s", path, ds_record_name(rec->type), rec->type,
				rec->size, p->rd.pos - rec->size, parse_err(ret));
			return ret;
		}
		ret = ds_merge_push(&p->mg, rec, ev.time, (ev.have & DS_EV_CPU) ? ev.cpu : 0);
		if (!ret)
			ret = drain(p);
		if (ret)
			break;
	}
	if (ret < 0 && p->cb_err) {
		return ret;	/* the callback said what went wrong */
	} else if (ret < 0) {
		if (p->rd.err[0])
			die_msg("%s: %s", path, p->rd.err);
		else
			die_msg("%s: %s", path, strerror(-ret));
		return ret;
	}
	if (p->rd.trailing)
		die_msg("warning: %s: the last record is cut off (%" PRIu64 " bytes at the "
			"end of the file), ignored", path, p->rd.trailing);
	ds_merge_flush(&p->mg);
	ret = drain(p);
	if (!ret)
		ret = ds_stitch_finish(&p->st);
	p->nr_out_of_order = p->mg.nr_out_of_order;
	if (ret && !p->cb_err)
		die_msg("%s: processing failed: %s", path, strerror(-ret));
	return ret;
}

void pipeline_close(struct pipeline *p)
{
	ds_stitch_destroy(&p->st);
	ds_merge_destroy(&p->mg);
	ds_reader_close(&p->rd);
	ds_symbols_free(p->sym);
	p->sym = NULL;
}

void print_summary(FILE *out, const struct ds_stitch_stats *st)
{
	fprintf(out,
		"summary: %" PRIu64 " samples, %" PRIu64 " deferred records, %" PRIu64
		" stitched (%" PRIu64 " record-first), %" PRIu64 " complete, %" PRIu64
		" unmatched/kernel-only (cookie-changed %" PRIu64 ", exit %" PRIu64
		", end %" PRIu64 ", overflow %" PRIu64 "), lost %" PRIu64 " events in %"
		PRIu64 " LOST records, %" PRIu64 " lost samples\n",
		st->samples, st->deferred, st->stitched, st->record_first, st->complete,
		st->kernel_only, st->unm_cookie, st->unm_exit, st->unm_end,
		st->unm_overflow, st->lost_events, st->lost_records, st->lost_samples);
}

const char *default_kallsyms(const char *data, char *buf, size_t len)
{
	snprintf(buf, len, "%s.kallsyms", data);
	if (access(buf, R_OK) == 0)
		return buf;
	if (access("/proc/kallsyms", R_OK) == 0)
		return "/proc/kallsyms";
	return NULL;
}

/* ------------------------------------------------------------- report */

struct report {
	struct pipeline *p;
	struct ds_fold *fold;
	struct ds_frames fr;
	char **names;
	size_t cap;
};

static const char *comm_of(struct pipeline *p, const struct ds_event *ev)
{
	const char *c = p->sym ? ds_symbols_comm(p->sym, ev->tid) : NULL;

	if (!c && p->sym)
		c = ds_symbols_comm(p->sym, ev->pid);
	return c ? c : "[unknown]";
}

static bool sample_is_kernel(const struct ds_event *ev)
{
	return (ev->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
}

static int report_cb(void *arg, const struct ds_stitch_out *o)
{
	struct report *r = arg;
	struct ds_frames view;
	int err;

	if (o->kind == DS_OUT_RECORD)
		return 0;
	if (o->kind == DS_OUT_NOCHAIN) {
		uint64_t chain[2] = { sample_is_kernel(o->ev) ? PERF_CONTEXT_KERNEL
							      : PERF_CONTEXT_USER, o->ev->ip };

		err = ds_symbolize_chain(r->p->sym, o->ev->pid, chain, 2, &r->fr);
	} else {
		err = ds_symbolize_chain(r->p->sym, o->ev->pid, o->chain, o->nr, &r->fr);
	}
	if (err)
		return err;
	view = r->fr;
	if (o->kind == DS_OUT_KERNEL_ONLY) {
		/* mark the missing user part at the root of the stack */
		err = ds_grow(&r->names, &r->cap, r->fr.nr + 1, sizeof(char *));
		if (err)
			return err;
		r->names[0] = "[user stack not stitched]";
		memcpy(r->names + 1, r->fr.names, r->fr.nr * sizeof(char *));
		view.names = r->names;
		view.nr = r->fr.nr + 1;
	}
	return ds_fold_add(r->fold, comm_of(r->p, o->ev), &view, 1);
}

/* The SVG goes to a temp file renamed into place on success. */
static int write_svg(const struct ds_fold *fold, const char *path, const char *title)
{
	struct outfile of;
	FILE *f;
	int fd, err;

	fd = outfile_create(&of, path);
	if (fd < 0)
		return fd;
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		die_msg("writing %s: %s", path, strerror(-err));
		outfile_abort(&of);
		return err;
	}
	err = ds_fold_write_svg(fold, f, title);
	errno = 0;
	if (fclose(f) != 0 && !err)
		err = errno ? -errno : -EIO;
	if (err) {
		die_msg("writing %s: %s", path, strerror(-err));
		outfile_abort(&of);
		return err;
	}
	return outfile_commit(&of);
}

static void usage_report(FILE *f)
{
	fprintf(f,
		"usage: deferstack report [-i FILE] [-k KALLSYMS] [--text | --folded | --svg OUT.svg]\n"
		"                         [--top N]\n"
		"Read a perf.data file (raw deferred or classic), merge per-CPU records in\n"
		"time order, stitch deferred user callchains and print:\n"
		"  --text        top functions (self/total) and top stacks (default)\n"
		"  --folded      folded stacks (FlameGraph / speedscope input)\n"
		"  --svg FILE    a self-contained SVG flame graph\n"
		"  -i FILE       input (default perf.data)\n"
		"  -k FILE       kallsyms for kernel symbols (default FILE.kallsyms, then\n"
		"                /proc/kallsyms)\n"
		"  --top N       rows per table in --text (default 20)\n"
		"Samples whose deferred record never came are shown under\n"
		"'[user stack not stitched]'. A summary goes to stderr.\n");
}

static const char *out_name(int mode)
{
	return mode == 'f' ? "folded" : mode == 's' ? "svg" : "text";
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "kallsyms", required_argument, NULL, 'k' },
		{ "text", no_argument, NULL, 't' },
		{ "folded", no_argument, NULL, 'f' },
		{ "svg", required_argument, NULL, 's' },
		{ "top", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *in = "perf.data", *ks = NULL, *svg = NULL;
	char ksbuf[4096];
	int mode = 0, c, err;
	unsigned long top = 20;
	struct pipeline p;
	struct report r;

	while ((c = getopt_long(argc, argv, "i:k:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i': in = optarg; break;
		case 'k': ks = optarg; break;
		case 't': case 'f': case 's':
			/* one output: --text, --folded or --svg */
			if (mode && mode != c) {
				die_msg("report: --%s and --%s are mutually exclusive",
					out_name(mode), out_name(c));
				return 2;
			}
			mode = c;
			if (c == 's')
				svg = optarg;
			break;
		case 'n':
			if (parse_ulong("--top", optarg, 1, 1000000, &top))
				return 2;
			break;
		case 'h': usage_report(stdout); return 0;
		default: usage_report(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage_report(stderr);
		return 2;
	}
	if (!mode)
		mode = 't';
	if (!ks)
		ks = default_kallsyms(in, ksbuf, sizeof(ksbuf));
	memset(&r, 0, sizeof(r));
	r.p = &p;
	if (ds_fold_new(&r.fold))
		return 1;
	if (svg && same_file(in, svg)) {
		die_msg("%s and %s are the same file: give another --svg", in, svg);
		ds_fold_free(r.fold);
		return 1;
	}
	err = pipeline_run(&p, in, ks, true, report_cb, &r);
	if (!err) {
		switch (mode) {
		case 'f':
			err = ds_fold_write(r.fold, stdout);
			if (!err)
				err = finish_stdout();
			else if (err != -ENOMEM)
				die_msg("writing standard output: %s", strerror(-err));
			break;
		case 's':
			err = write_svg(r.fold, svg, in);
			break;
		default:
			err = ds_fold_write_text(r.fold, stdout, (size_t)top);
			if (!err)
				print_summary(stdout, &p.st.st);
			if (!err)
				err = finish_stdout();
			else if (err != -ENOMEM)
				die_msg("writing standard output: %s", strerror(-err));
		}
		if (!err)
			print_summary(stderr, &p.st.st);
	}
	ds_frames_free(&r.fr);
	free(r.names);
	ds_fold_free(r.fold);
	pipeline_close(&p);
	return err ? 1 : 0;
}

/* ------------------------------------------------------------- script */

struct script {
	struct pipeline *p;
	bool all;
};

static const char *unm_name(enum ds_unmatched_reason r)
{
	switch (r) {
	case DS_UNM_COOKIE_CHANGED: return "cookie-changed";
	case DS_UNM_EXIT: return "exit";
	case DS_UNM_END: return "end-of-data";
	case DS_UNM_OVERFLOW: return "pending-overflow";
	default: return "none";
	}
}

/* Stop at the first failed write to stdout (a full disk, a closed pipe),
 * with the errno of that write. */
static int stdout_failed(void)
{
	int saved = errno, err;

	if (!ferror(stdout))
		return 0;
	/* the failed write's errno, if the flush cannot tell it again */
	err = ds_stream_err(stdout);
	if ((!err || err == -EIO) && saved)
		err = -saved;
	if (!err)
		err = -EIO;
	die_msg("writing standard output: %s", strerror(-err));
	return err;
}

static int script_cb(void *arg, const struct ds_stitch_out *o)
{
	struct script *s = arg;
	const struct ds_event *ev = o->ev;
	char buf[128];
	bool kernel = false, ctx = false;

	if (o->kind == DS_OUT_RECORD) {
		if (!s->all)
			return 0;
		printf("%-16s %6u/%-6u [%03u] %llu.%06llu: %s", comm_of(s->p, ev), ev->pid,
		       ev->tid, ev->cpu, (unsigned long long)(ev->time / 1000000000),
		       (unsigned long long)(ev->time % 1000000000 / 1000),
		       ds_record_name(ev->type));
		if (ev->type == DS_RECORD_CALLCHAIN_DEFERRED)
			printf(" cookie=%#" PRIx64 " nr=%" PRIu64, ev->cookie, ev->nr);
		else if (ev->type == PERF_RECORD_MMAP || ev->type == PERF_RECORD_MMAP2)
			printf(" %#" PRIx64 "-%#" PRIx64 " %s", ev->start, ev->start + ev->len,
			       ev->filename);
		else if (ev->type == PERF_RECORD_COMM)
			printf(" %s", ev->comm);
		else if (ev->type == PERF_RECORD_LOST || ev->type == PERF_RECORD_LOST_SAMPLES)
			printf(" lost=%" PRIu64, ev->lost);
		printf("\n");
		return stdout_failed();
	}
	printf("%-16s %6u/%-6u [%03u] %llu.%06llu: ", comm_of(s->p, ev), ev->pid, ev->tid,
	       ev->cpu, (unsigned long long)(ev->time / 1000000000),
	       (unsigned long long)(ev->time % 1000000000 / 1000));
	switch (o->kind) {
	case DS_OUT_STITCHED:
		printf("stitched cookie=%#" PRIx64 "%s\n", o->cookie,
		       o->record_first ? " (record before sample)" : "");
		break;
	case DS_OUT_KERNEL_ONLY:
		printf("kernel-only cookie=%#" PRIx64 " (user stack not stitched: %s)\n",
		       o->cookie, unm_name(o->reason));
		break;
	case DS_OUT_COMPLETE:
		printf("complete\n");
		break;
	default:
		printf("no-callchain ip=%#" PRIx64 "\n", ev->ip);
		return 0;
	}
	for (uint64_t i = 0; i < o->nr; i++) {
		uint64_t ip = o->chain[i];

		if (ip >= PERF_CONTEXT_MAX) {
			ctx = true;
			kernel = ip == PERF_CONTEXT_KERNEL;
			if (ip == DS_CONTEXT_USER_DEFERRED && i + 1 < o->nr)
				i++;
			continue;
		}
		printf("\t%16" PRIx64 " %s\n", ip,
		       ds_symbols_resolve(s->p->sym, ev->pid, ip,
					  ctx ? kernel : ip >= 0xffff800000000000ULL, buf,
					  sizeof(buf)));
	}
	printf("\n");
	return stdout_failed();
}

static void usage_script(FILE *f)
{
	fprintf(f,
		"usage: deferstack script [-i FILE] [-k KALLSYMS] [-a|--all]\n"
		"Print every sample (perf-script-like): comm, pid/tid, [cpu], time, the\n"
		"stitch status (stitched / kernel-only with the reason / complete), the\n"
		"cookie, and the symbolized frames, leaf first.\n"
		"  -i FILE    input (default perf.data)\n"
		"  -k FILE    kallsyms (default FILE.kallsyms, then /proc/kallsyms)\n"
		"  -a, --all  also print non-sample records (deferred, mmap, comm, ...)\n");
}

int cmd_script(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "kallsyms", required_argument, NULL, 'k' },
		{ "all", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *in = "perf.data", *ks = NULL;
	char ksbuf[4096];
	struct pipeline p;
	struct script s = { &p, false };
	int c, err;

	while ((c = getopt_long(argc, argv, "i:k:ah", opts, NULL)) != -1) {
		switch (c) {
		case 'i': in = optarg; break;
		case 'k': ks = optarg; break;
		case 'a': s.all = true; break;
		case 'h': usage_script(stdout); return 0;
		default: usage_script(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage_script(stderr);
		return 2;
	}
	if (!ks)
		ks = default_kallsyms(in, ksbuf, sizeof(ksbuf));
	err = pipeline_run(&p, in, ks, true, script_cb, &s);
	if (!err)
		err = finish_stdout();
	if (!err)
		print_summary(stderr, &p.st.st);
	pipeline_close(&p);
	return err ? 1 : 0;
}

/* ------------------------------------------------------------ convert */

struct conv {
	struct ds_writer w;
	uint8_t *buf;
	const char *in, *out;
};

static int conv_write(struct conv *c, const struct perf_event_header *h)
{
	int err = ds_writer_write(&c->w, h);

	if (err)
		die_msg("writing %s: %s", c->out, strerror(-err));
	return err;
}

static int conv_cb(void *arg, const struct ds_stitch_out *o)
{
	struct conv *c = arg;
	int n;

	switch (o->kind) {
	case DS_OUT_RECORD:
		if (o->ev->type == DS_RECORD_CALLCHAIN_DEFERRED)
			return 0;	/* consumed by stitching */
		return conv_write(c, o->ev->hdr);
	case DS_OUT_STITCHED:
	case DS_OUT_KERNEL_ONLY:
		n = ds_sample_set_callchain(o->ev, o->chain, o->nr, c->buf, 65536);
		if (n < 0) {
			die_msg("%s: a stitched sample (tid %u, %" PRIu64 " frames) does not "
				"fit a perf record: %s", c->in, o->ev->tid, o->nr,
				strerror(-n));
			return n;
		}
		return conv_write(c, (const void *)c->buf);
	default:
		return conv_write(c, o->ev->hdr);
	}
}

int convert_file(const char *in, const char *out, struct ds_stitch_stats *st)
{
	struct ds_reader rd;
	struct ds_attr *attrs;
	struct conv c;
	struct pipeline p;
	struct ds_writer_info info = { 0 };
	struct outfile of;
	int err, fd;

	/* attrs from the input, as classic events */
	err = ds_reader_open(&rd, in);
	if (err) {
		die_msg("%s", rd.err);
		return err;
	}
	if (same_file(in, out)) {
		die_msg("%s and %s are the same file: convert writes a new file, give "
			"another -o", in, out);
		ds_reader_close(&rd);
		return -EINVAL;
	}
	attrs = calloc(rd.nr_attrs, sizeof(*attrs));
	if (!attrs) {
		ds_reader_close(&rd);
		return -ENOMEM;
	}
	for (size_t i = 0; i < rd.nr_attrs; i++) {
		attrs[i] = rd.attrs[i];
		ds_attr_set_flag(&attrs[i].attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 0);
		ds_attr_set_flag(&attrs[i].attr, DS_ATTR_BIT_DEFER_OUTPUT, 0);
	}
	memset(&c, 0, sizeof(c));
	c.in = in;
	c.out = out;
	c.buf = malloc(65536);
	/* a temp file next to OUT, renamed into place on success only */
	fd = c.buf ? outfile_create(&of, out) : -ENOMEM;
	if (fd >= 0) {
		err = ds_writer_open_fd(&c.w, fd, attrs, rd.nr_attrs);
		if (err) {
			die_msg("writing %s: %s", out, strerror(-err));
			outfile_abort(&of);
		}
	} else {
		err = fd;
	}
	free(attrs);
	ds_reader_close(&rd);
	if (err) {
		free(c.buf);
		return err;
	}
	err = pipeline_run(&p, in, NULL, false, conv_cb, &c);
	if (st)
		*st = p.st.st;
	pipeline_close(&p);
	{
		int e2 = ds_writer_close(&c.w, &info);

		if (!err && e2) {
			die_msg("writing %s: %s", out, strerror(-e2));
			err = e2;
		}
	}
	free(c.buf);
	if (err)
		outfile_abort(&of);
	else
		err = outfile_commit(&of);
	return err;
}

static void usage_convert(FILE *f)
{
	fprintf(f,
		"usage: deferstack convert [-i IN] -o OUT\n"
		"Stitch a raw (deferred) perf.data into a classic-callchain perf.data that\n"
		"any perf (e.g. 6.1) reads: samples get 'kernel ips, PERF_CONTEXT_USER, user\n"
		"ips'; samples whose record never came keep the kernel part only;\n"
		"CALLCHAIN_DEFERRED records are dropped; attr defer bits are cleared.\n"
		"OUT must not be IN; it is replaced only when the conversion succeeds.\n");
}

int cmd_convert(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *in = "perf.data", *out = NULL;
	struct ds_stitch_stats st;
	int c, err;

	while ((c = getopt_long(argc, argv, "i:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i': in = optarg; break;
		case 'o': out = optarg; break;
		case 'h': usage_convert(stdout); return 0;
		default: usage_convert(stderr); return 2;
		}
	}
	if (!out || optind != argc) {
		usage_convert(stderr);
		return 2;
	}
	err = convert_file(in, out, &st);
	if (!err)
		print_summary(stderr, &st);
	return err ? 1 : 0;
}
