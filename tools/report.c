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

struct report {
	struct pipeline *p;
	struct ds_fold *fold;
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
	return ds_fold_add(r->fold, pipeline_comm(r->p, o->ev), &view, 1);
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
