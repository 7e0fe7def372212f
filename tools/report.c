// SPDX-License-Identifier: MIT
/* deferstack report: perf-report-like text, folded stacks, SVG flame graph,
 * pprof; one profile per event, weighted by period. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"


/* One profile per event (attr), like perf report's sections: a ds_profile
 * for --text and --pprof, a ds_fold for --folded and --svg. */
struct report {
	struct ds_pipeline *p;
	int mode;		/* 't' text, 'f' folded, 's' svg, 'P' pprof */
	struct ds_profile **profs;	/* per attr of the file, NULL until a sample */
	struct ds_fold **folds;		/* the same for --folded / --svg */
	size_t nr_ev;		/* attrs seen (a pipe-mode input adds them late) */
	signed char *want;	/* per attr: selected by --event; -1 not known yet */
	const char *event;	/* --event NAME or NULL */
	/* --comm, --pid, --dso: comma-separated lists */
	const char *comms[MAX_FILTER], *dsos[MAX_FILTER];
	uint32_t pids[MAX_FILTER];
	size_t nr_comms, nr_dsos, nr_pids;
};

static bool sample_is_kernel(const struct ds_event *ev)
{
	return (ev->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
}

/* The object of the sample's own (leaf) frame, for --dso. */
static bool dso_match(struct report *r, const struct ds_event *ev, const uint64_t *chain,
		      uint64_t nr)
{
	bool kernel = false, ctx = false;
	struct ds_sym_info si = { .sz = sizeof(si) };
	char buf[256];

	for (uint64_t i = 0; i < nr; i++) {
		uint64_t ip = chain[i];

		if (ip >= PERF_CONTEXT_MAX) {
			if (ip == DS_CONTEXT_USER_DEFERRED)
				i++;
			ctx = true;
			kernel = ip == PERF_CONTEXT_KERNEL;
			continue;
		}
		ds_symbols_lookup(ds_pipeline_symbols(r->p), ev->pid, ip, ctx ? kernel : ip >= 0xffff800000000000ULL,
				  &si, buf, sizeof(buf));
		for (size_t k = 0; si.dso && k < r->nr_dsos; k++) {
			const char *b = strrchr(si.dso, '/');

			if (!strcmp(si.dso, r->dsos[k]) || (b && !strcmp(b + 1, r->dsos[k])))
				return true;
		}
		return false;
	}
	return false;
}

static bool keep(struct report *r, const struct ds_event *ev, const uint64_t *chain,
		 uint64_t nr)
{
	bool ok = !r->nr_comms && !r->nr_pids;

	/* like perf: --comm and --pid each select; a sample passes either */
	for (size_t i = 0; i < r->nr_comms && !ok; i++)
		ok = !strcmp(ds_pipeline_comm(r->p, ev), r->comms[i]);
	for (size_t i = 0; i < r->nr_pids && !ok; i++)
		ok = ev->pid == r->pids[i];
	if (ok && r->nr_dsos)
		ok = dso_match(r, ev, chain, nr);
	return ok;
}

static int want_attr(struct report *r, size_t ai);
static size_t events_with_samples(const struct report *r, size_t *first);

static bool by_profile(const struct report *r)
{
	return r->mode == 't' || r->mode == 'P';
}

static uint64_t samples_of(const struct report *r, size_t i)
{
	if (by_profile(r))
		return r->profs[i] ? ds_profile_samples(r->profs[i]) : 0;
	return r->folds[i] ? ds_fold_samples(r->folds[i]) : 0;
}

static int report_cb(void *arg, const struct ds_stitch_out *o)
{
	struct report *r = arg;
	uint64_t nochain[2];
	const uint64_t *chain = o->chain;
	uint64_t nr = o->nr;
	bool have_period = o->ev->have & DS_EV_PERIOD;
	size_t ai;
	int err;

	if (o->kind == DS_OUT_RECORD)
		return 0;
	ai = ds_reader_attr_index(ds_pipeline_reader(r->p), o->ev->hdr);
	err = want_attr(r, ai);
	if (err <= 0)
		return err;
	if (o->kind == DS_OUT_NOCHAIN) {
		nochain[0] = sample_is_kernel(o->ev) ? PERF_CONTEXT_KERNEL : PERF_CONTEXT_USER;
		nochain[1] = o->ev->ip;
		chain = nochain;
		nr = 2;
	}
	if (!keep(r, o->ev, chain, nr))
		return 0;
	if (by_profile(r)) {
		char nbuf[64];
		const char *event = pipeline_event(r->p, o->ev->hdr, nbuf, sizeof(nbuf));

		/* weights are periods, as perf report's are; pprof: a cpu label */
		struct ds_profile_sample s = {
			.sz = sizeof(s), .comm = ds_pipeline_comm(r->p, o->ev), .pid = o->ev->pid,
			.cpu = r->mode == 'P' && (o->ev->have & DS_EV_CPU) ?
			       (int32_t)o->ev->cpu : -1,
			.event = event, .chain = chain, .nr = nr,
			.period = have_period ? o->ev->period : 0,
			.root_marker = o->kind == DS_OUT_KERNEL_ONLY ?
				       "[user stack not stitched]" : NULL,
		};

		if (!r->profs[ai] && ds_profile_new(&r->profs[ai]))
			return -ENOMEM;
		return ds_profile_add_sample(r->profs[ai], ds_pipeline_symbols(r->p), &s);
	}
	if (!r->folds[ai] && ds_fold_new(&r->folds[ai]))
		return -ENOMEM;
	/* weighted by period, as perf report is: samples of a frequency-driven
	 * event are not worth the same; the missing user part of a kernel-only
	 * sample is marked at the root of its stack */
	struct ds_fold_chain_opts fo = {
		.sz = sizeof(fo), .comm = ds_pipeline_comm(r->p, o->ev), .pid = o->ev->pid,
		.chain = chain, .nr = nr,
		.root = o->kind == DS_OUT_KERNEL_ONLY ? "[user stack not stitched]" : NULL,
		.samples = 1, .weight = have_period ? o->ev->period : 1,
	};

	return ds_fold_add_chain_opts(r->folds[ai], ds_pipeline_symbols(r->p), &fo);
}

/* title: the SVG's; po: the pprof's window (may be NULL) */
static int write_to(int mode, const struct ds_fold *fold, const struct ds_profile *prof,
		    FILE *f, const char *title, const struct ds_pprof_opts *po)
{
	return mode == 'P' ? ds_profile_write_pprof_opts(prof, f, po) :
			     ds_fold_write_svg(fold, f, title);
}

/* The SVG or pprof file goes to a temp file renamed into place on success;
 * "-" is standard output (a gzipped pprof is not written to a terminal). */
static int write_out(int mode, const struct ds_fold *fold, const struct ds_profile *prof,
		     const char *path, const char *title, const struct ds_pprof_opts *po)
{
	struct outfile of;
	FILE *f;
	int fd, err;

	if (!strcmp(path, "-")) {
		if (mode == 'P' && isatty(STDOUT_FILENO)) {
			die_msg("report: --pprof -: not writing a gzipped profile to a "
				"terminal (redirect standard output or give a file)");
			return -EINVAL;
		}
		err = write_to(mode, fold, prof, stdout, title, po);
		if (err) {
			if (err != -ENOMEM)
				die_msg("writing standard output: %s", strerror(-err));
			return err;
		}
		return finish_stdout();
	}
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
	err = write_to(mode, fold, prof, f, title, po);
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

static void report_free(struct report *r)
{
	for (size_t i = 0; i < r->nr_ev; i++) {
		ds_profile_free(r->profs[i]);
		ds_fold_free(r->folds[i]);
	}
	free(r->profs);
	free(r->folds);
	free(r->want);
}

int report_pprof(const char *in, const char *out, const struct ds_pprof_opts *po)
{
	struct ds_profile *empty = NULL;
	struct report r;
	struct ds_pipeline_opts o = {
		.sz = sizeof(o), .cb = report_cb, .cb_arg = &r,
		.symbols = true, .find_kallsyms = true,
	};
	size_t first = 0;
	int err;

	memset(&r, 0, sizeof(r));
	r.mode = 'P';
	err = pipeline_run(&r.p, in, &o);
	if (!err && !events_with_samples(&r, &first))
		err = ds_profile_new(&empty);
	if (!err)
		err = write_out('P', NULL, empty ? empty : r.profs[first], out, NULL, po);
	if (err == -ENOMEM)
		die_msg("%s: out of memory", out);
	ds_pipeline_free(r.p);
	report_free(&r);
	ds_profile_free(empty);
	return err;
}

/* NAME selects an event named NAME, or NAME with a modifier ("cpu-clock"
 * selects "cpu-clock:u", as perf's names carry them). */
static bool event_matches(const char *name, const char *want)
{
	size_t n = strlen(want);

	return !strcmp(name, want) || (!strncmp(name, want, n) && name[n] == ':');
}

/* Does --event select the file's attr ai?  1 yes, 0 no, -ENOMEM. */
static int want_attr(struct report *r, size_t ai)
{
	char buf[64];

	if (ai >= r->nr_ev) {
		size_t n = ai + 1, old = r->nr_ev;
		struct ds_profile **pv = realloc(r->profs, n * sizeof(*pv));
		struct ds_fold **fv;
		signed char *w;

		if (!pv)
			return -ENOMEM;
		r->profs = pv;
		fv = realloc(r->folds, n * sizeof(*fv));
		if (!fv)
			return -ENOMEM;
		r->folds = fv;
		w = realloc(r->want, n);
		if (!w)
			return -ENOMEM;
		r->want = w;
		for (size_t i = old; i < n; i++) {
			r->profs[i] = NULL;
			r->folds[i] = NULL;
			r->want[i] = -1;
		}
		r->nr_ev = n;
	}
	if (r->want[ai] < 0) {
		const struct ds_attr *a = ds_reader_attr(ds_pipeline_reader(r->p), ai);

		r->want[ai] = !r->event ||
			      (a && event_matches(ds_attr_name(a, buf, sizeof(buf)), r->event));
	}
	return r->want[ai];
}

/* --event NAME must name one of the file's events: -ENOENT (said so). */
static int check_event(const struct report *r, const char *in)
{
	const struct ds_reader *rd = ds_pipeline_reader(r->p);
	char buf[64], list[512] = "";

	if (!r->event)
		return 0;
	for (size_t i = 0; i < ds_reader_nr_attrs(rd); i++) {
		const char *name = ds_attr_name(ds_reader_attr(rd, i), buf, sizeof(buf));

		if (event_matches(name, r->event))
			return 0;
		if (strlen(list) + strlen(name) + 3 < sizeof(list))
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 i ? ", " : "", name);
	}
	die_msg("%s: no event '%s' in the recording (events: %s)", in, r->event, list);
	return -ENOENT;
}

/* The events that got samples, in the file's attr order. */
static size_t events_with_samples(const struct report *r, size_t *first)
{
	size_t n = 0;

	for (size_t i = r->nr_ev; i-- > 0;) {
		if (samples_of(r, i)) {
			*first = i;
			n++;
		}
	}
	return n;
}

static const char *event_name(const struct report *r, size_t i, char *buf, size_t len)
{
	return ds_attr_name(ds_reader_attr(ds_pipeline_reader(r->p), i), buf, len);
}

/* perf report's table, one section per event with samples (none: the
 * empty table) */
static int write_text(const struct report *r, const struct ds_text_opts *to)
{
	char buf[64];
	size_t first = 0, n = events_with_samples(r, &first);
	struct ds_profile *empty;
	int err = 0;

	if (!n) {
		err = ds_profile_new(&empty);
		if (!err)
			err = ds_profile_write_text(empty, stdout, to);
		ds_profile_free(empty);
		return err;
	}
	for (size_t i = first; i < r->nr_ev && !err; i++) {
		if (!samples_of(r, i))
			continue;
		printf("# ======== event '%s'\n", event_name(r, i, buf, sizeof(buf)));
		err = ds_profile_write_text(r->profs[i], stdout, to);
		if (!err)
			printf("\n");
	}
	return err;
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "kallsyms", required_argument, NULL, 'k' },
		{ "text", no_argument, NULL, 't' },
		{ "folded", no_argument, NULL, 'f' },
		{ "svg", required_argument, NULL, 'V' },
		{ "pprof", required_argument, NULL, 'P' },
		{ "top", required_argument, NULL, 'n' },
		{ "sort", required_argument, NULL, 's' },
		{ "children", no_argument, NULL, 'C' },
		{ "call-graph", required_argument, NULL, 'g' },
		{ "comm", required_argument, NULL, 'c' },
		{ "comms", required_argument, NULL, 'c' },
		{ "pid", required_argument, NULL, 'p' },
		{ "dso", required_argument, NULL, 'd' },
		{ "dsos", required_argument, NULL, 'd' },
		{ "event", required_argument, NULL, 'e' },
		{ "force-symbols", no_argument, NULL, 'Y' },
		{ "full-names", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *in = "perf.data", *ks = NULL, *outpath = NULL;
	char nbuf[64];
	int mode = 0, c, err, rc = 2;
	unsigned long top = 20;
	struct ds_text_opts to = { .sz = sizeof(to), .graph_min = 0.5 };
	bool text_opts = false;
	struct ds_fold *empty_fold = NULL;
	struct ds_profile *empty_prof = NULL;
	struct report r;
	struct ds_pipeline_opts po = {
		.sz = sizeof(po), .cb = report_cb, .cb_arg = &r,
		.symbols = true, .find_kallsyms = true,
	};
	size_t first = 0, nev;

	memset(&r, 0, sizeof(r));
	while ((c = getopt_long(argc, argv, "i:k:s:g:e:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i': in = optarg; break;
		case 'k': ks = optarg; break;
		case 'e': r.event = optarg; break;
		case 't': case 'f': case 'V': case 'P':
			/* one output: --text, --folded, --svg or --pprof */
			if (c == 'V')
				c = 's';
			if (mode && mode != c) {
				die_msg("report: --%s and --%s are mutually exclusive",
					out_name(mode), out_name(c));
				goto out;
			}
			mode = c;
			if (c == 's' || c == 'P')
				outpath = optarg;
			break;
		case 'n':
			if (parse_ulong("--top", optarg, 1, 1000000, &top))
				goto out;
			break;
		case 's':
			if (parse_sort(optarg, &to))
				goto out;
			text_opts = true;
			break;
		case 'C':
			to.by_children = true;
			text_opts = true;
			break;
		case 'g':
			if (parse_graph(optarg, &to))
				goto out;
			text_opts = true;
			break;
		case 'c':
			if (split_list(optarg, "--comm", r.comms, &r.nr_comms))
				goto out;
			break;
		case 'p':
			if (parse_pids(optarg, r.pids, &r.nr_pids))
				goto out;
			break;
		case 'd':
			if (split_list(optarg, "--dso", r.dsos, &r.nr_dsos))
				goto out;
			break;
		case 'Y': po.force_symbols = true; break;
		case 'N': po.full_names = true; break;
		case 'h': usage_report(stdout); return 0;
		default: usage_report(stderr); goto out;
		}
	}
	if (optind != argc) {
		usage_report(stderr);
		goto out;
	}
	if (!mode)
		mode = 't';
	if (text_opts && mode != 't') {
		die_msg("report: --sort, --children and -g are for --text, not --%s",
			out_name(mode));
		goto out;
	}
	rc = 1;
	to.top = top;
	/* NULL: FILE.kallsyms, else /proc/kallsyms (find_kallsyms) */
	po.kallsyms = ks;
	r.mode = mode;
	if (outpath && strcmp(outpath, "-") && same_file(in, outpath)) {
		die_msg("%s and %s are the same file: give another --%s", in, outpath,
			out_name(mode));
		goto out;
	}
	err = pipeline_run(&r.p, in, &po);
	if (!err)
		err = check_event(&r, in);
	if (err)
		goto done;
	/* folded stacks, flame graphs and pprof files are one profile: one
	 * event */
	nev = events_with_samples(&r, &first);
	if (mode != 't' && nev > 1)
		die_msg("note: %s has samples of %zu events; --%s shows '%s' (choose one "
			"with --event NAME)", in, nev, out_name(mode),
			event_name(&r, first, nbuf, sizeof(nbuf)));
	if (mode == 'P' && !nev)
		err = ds_profile_new(&empty_prof);
	else if ((mode == 'f' || mode == 's') && !nev)
		err = ds_fold_new(&empty_fold);
	if (err)
		goto done;
	switch (mode) {
	case 'f':
		err = ds_fold_write(nev ? r.folds[first] : empty_fold, stdout);
		if (!err)
			err = finish_stdout();
		else if (err != -ENOMEM)
			die_msg("writing standard output: %s", strerror(-err));
		break;
	case 's':
		err = write_out(mode, nev ? r.folds[first] : empty_fold, NULL, outpath, in, NULL);
		break;
	case 'P':
		err = write_out(mode, NULL, nev ? r.profs[first] : empty_prof, outpath, in, NULL);
		break;
	default:
		/* the summary ends the table (once: not on stderr too) */
		err = write_text(&r, &to);
		if (!err)
			print_pipeline_summary(stdout, r.p);
		if (!err)
			err = finish_stdout();
		else if (err != -ENOMEM)
			die_msg("writing standard output: %s", strerror(-err));
	}
	if (!err && mode != 't')
		print_pipeline_summary(stderr, r.p);
done:
	if (err == -ENOMEM)
		die_msg("report: out of memory");
	if (err) {
		rc = 1;
	} else {
		struct ds_pipeline_summary st = pipeline_stats(r.p);

		rc = input_status(in, &st);
	}
out:
	ds_pipeline_free(r.p);
	report_free(&r);
	ds_fold_free(empty_fold);
	ds_profile_free(empty_prof);
	return rc;
}
