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
	size_t nr_folds;
	bool *want;		/* per attr: selected by --event (all without it) */
	struct ds_frames fr;
	char **names;
	size_t cap;
};

static bool sample_is_kernel(const struct ds_event *ev)
{
	return (ev->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
}

static int report_cb(void *arg, const struct ds_stitch_out *o)
{
	struct report *r = arg;
	struct ds_frames view;
	size_t ai;
	int err;

	if (o->kind == DS_OUT_RECORD)
		return 0;
	ai = ds_reader_attr_index(&r->p->rd, o->ev->hdr);
	if (ai >= r->nr_folds || !r->want[ai])
		return 0;
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

/* Which attrs of in to show: -ENOENT (said so) if --event names none. */
static int select_events(struct report *r, const char *in, const char *event)
{
	struct ds_reader rd;
	char buf[64], list[512] = "";
	size_t hits = 0;
	int err = ds_reader_open(&rd, in);

	if (err) {
		die_msg("%s", rd.err);
		return err;
	}
	r->nr_folds = rd.nr_attrs;
	r->folds = calloc(rd.nr_attrs, sizeof(*r->folds));
	r->want = calloc(rd.nr_attrs, sizeof(*r->want));
	if (!r->folds || !r->want) {
		ds_reader_close(&rd);
		die_msg("%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	for (size_t i = 0; i < rd.nr_attrs; i++) {
		const char *name = ds_attr_name(&rd.attrs[i], buf, sizeof(buf));

		r->want[i] = !event || event_matches(name, event);
		hits += r->want[i];
		if (strlen(list) + strlen(name) + 3 < sizeof(list))
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 i ? ", " : "", name);
	}
	ds_reader_close(&rd);
	if (!hits) {
		die_msg("%s: no event '%s' in the recording (events: %s)", in, event, list);
		return -ENOENT;
	}
	return 0;
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
	return ds_attr_name(&r->p->rd.attrs[i], buf, len);
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
	err = select_events(&r, in, event);
	if (err)
		goto out_nopipe;
	err = pipeline_run(&p, in, ks, sym, report_cb, &r);
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
out_nopipe:
	ds_frames_free(&r.fr);
	free(r.names);
	for (size_t i = 0; i < r.nr_folds; i++)
		ds_fold_free(r.folds[i]);
	free(r.folds);
	free(r.want);
	ds_fold_free(empty);
	return err ? 1 : 0;
}
