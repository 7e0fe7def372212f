// SPDX-License-Identifier: MIT
/* deferstack report: top functions, folded stacks, SVG flame graph. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* One profile per event (attr), like perf report's sections. */
struct report {
	struct pipeline *p;
	struct ds_fold **folds;	/* per attr of the file, NULL until a sample */
	size_t nr_folds;	/* attrs seen (a pipe-mode input adds them late) */
	signed char *want;	/* per attr: selected by --event; -1 not known yet */
	const char *event;	/* --event NAME or NULL */
	struct ds_frames fr;
	char **names;
	size_t cap;
};

static bool sample_is_kernel(const struct ds_event *ev)
{
	return (ev->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
}

static int want_attr(struct report *r, size_t ai);

static int report_cb(void *arg, const struct ds_stitch_out *o)
{
	struct report *r = arg;
	struct ds_frames view;
	size_t ai;
	int err;

	if (o->kind == DS_OUT_RECORD)
		return 0;
	ai = ds_reader_attr_index(r->p->rd, o->ev->hdr);
	err = want_attr(r, ai);
	if (err <= 0)
		return err;
	if (!r->folds[ai] && ds_fold_new(&r->folds[ai]))
		return -ENOMEM;
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
	/* weighted by period, as perf report is: samples of a frequency-driven
	 * event are not worth the same */
	return ds_fold_add_weighted(r->folds[ai], pipeline_comm(r->p, o->ev), &view, 1,
				    (o->ev->have & DS_EV_PERIOD) ? o->ev->period : 1);
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
		"                         [--top N] [--event NAME] [--force-symbols]\n"
		"Read a perf.data file (raw deferred or classic), merge per-CPU records in\n"
		"time order, stitch deferred user callchains and print:\n"
		"  --text        top functions (self/total) and top stacks (default), one\n"
		"                section per event\n"
		"  --folded      folded stacks (FlameGraph / speedscope input)\n"
		"  --svg FILE    a self-contained SVG flame graph\n"
		"  -i FILE       input (default perf.data)\n"
		"  -k FILE       kallsyms for kernel symbols (default FILE.kallsyms, then\n"
		"                /proc/kallsyms)\n"
		"  --top N       rows per table in --text (default 20)\n"
		"  --event NAME  only the samples of event NAME (e.g. cpu-clock); --folded\n"
		"                and --svg show the first event with samples without it\n"
		"  --force-symbols  symbolize objects whose build-id differs from the\n"
		"                recorded one (by default their frames are addresses)\n"
		"Profiles are weighted by the samples' periods, like perf report.\n"
		"Samples whose deferred record never came are shown under\n"
		"'[user stack not stitched]'. A summary goes to stderr.\n");
}

static const char *out_name(int mode)
{
	return mode == 'f' ? "folded" : mode == 's' ? "svg" : "text";
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

	if (ai >= r->nr_folds) {
		size_t n = ai + 1, old = r->nr_folds;
		struct ds_fold **f = realloc(r->folds, n * sizeof(*f));
		signed char *w;

		if (!f)
			return -ENOMEM;
		r->folds = f;
		w = realloc(r->want, n);
		if (!w)
			return -ENOMEM;
		r->want = w;
		for (size_t i = old; i < n; i++) {
			r->folds[i] = NULL;
			r->want[i] = -1;
		}
		r->nr_folds = n;
	}
	if (r->want[ai] < 0) {
		const struct ds_attr *a = ds_reader_attr(r->p->rd, ai);

		r->want[ai] = !r->event ||
			      (a && event_matches(ds_attr_name(a, buf, sizeof(buf)), r->event));
	}
	return r->want[ai];
}

/* --event NAME must name one of the file's events: -ENOENT (said so). */
static int check_event(const struct report *r, const char *in)
{
	const struct ds_reader *rd = r->p->rd;
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

	for (size_t i = r->nr_folds; i-- > 0;) {
		if (r->folds[i] && ds_fold_samples(r->folds[i])) {
			*first = i;
			n++;
		}
	}
	return n;
}

static const char *event_name(const struct report *r, size_t i, char *buf, size_t len)
{
	return ds_attr_name(ds_reader_attr(r->p->rd, i), buf, len);
}

static int write_text(const struct report *r, size_t top)
{
	char buf[64];
	size_t first = 0, n = events_with_samples(r, &first);
	int err = 0;

	if (!n)
		printf("# no samples\n\n");
	for (size_t i = first; i < r->nr_folds && !err; i++) {
		const struct ds_fold *f = r->folds[i];

		if (!f || !ds_fold_samples(f))
			continue;
		printf("# ======== event '%s': %" PRIu64 " samples, period %" PRIu64 "\n",
		       event_name(r, i, buf, sizeof(buf)), ds_fold_samples(f),
		       ds_fold_total(f));
		err = ds_fold_write_text(f, stdout, top);
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
		{ "svg", required_argument, NULL, 's' },
		{ "top", required_argument, NULL, 'n' },
		{ "event", required_argument, NULL, 'e' },
		{ "force-symbols", no_argument, NULL, 'Y' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *in = "perf.data", *ks = NULL, *svg = NULL, *event = NULL;
	char ksbuf[4096], nbuf[64];
	int mode = 0, c, err, sym = PL_SYMBOLS;
	unsigned long top = 20;
	struct ds_fold *empty = NULL;
	const struct ds_fold *fold;
	struct pipeline p;
	struct report r;
	size_t first = 0, nev;

	while ((c = getopt_long(argc, argv, "i:k:e:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i': in = optarg; break;
		case 'k': ks = optarg; break;
		case 'e': event = optarg; break;
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
		case 'Y': sym |= PL_FORCE_SYMBOLS; break;
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
	if (svg && same_file(in, svg)) {
		die_msg("%s and %s are the same file: give another --svg", in, svg);
		return 1;
	}
	r.event = event;
	err = pipeline_run(&p, in, ks, sym, report_cb, &r);
	if (!err)
		err = check_event(&r, in);
	if (err)
		goto out;
	/* folded stacks and flame graphs are one profile: one event */
	nev = events_with_samples(&r, &first);
	if (mode != 't' && nev > 1)
		die_msg("note: %s has samples of %zu events; --%s shows '%s' (choose one "
			"with --event NAME)", in, nev, out_name(mode),
			event_name(&r, first, nbuf, sizeof(nbuf)));
	fold = nev ? r.folds[first] : NULL;
	if (!fold && mode != 't') {
		err = ds_fold_new(&empty);
		fold = empty;
	}
	if (err)
		goto out;
	switch (mode) {
	case 'f':
		err = ds_fold_write(fold, stdout);
		if (!err)
			err = finish_stdout();
		else if (err != -ENOMEM)
			die_msg("writing standard output: %s", strerror(-err));
		break;
	case 's':
		err = write_svg(fold, svg, in);
		break;
	default:
		err = write_text(&r, (size_t)top);
		if (!err)
			print_pipeline_summary(stdout, &p);
		if (!err)
			err = finish_stdout();
		else if (err != -ENOMEM)
			die_msg("writing standard output: %s", strerror(-err));
	}
	if (!err)
		print_pipeline_summary(stderr, &p);
out:
	pipeline_close(&p);
	ds_frames_free(&r.fr);
	free(r.names);
	for (size_t i = 0; i < r.nr_folds; i++)
		ds_fold_free(r.folds[i]);
	free(r.folds);
	free(r.want);
	ds_fold_free(empty);
	return err ? 1 : 0;
}
