// SPDX-License-Identifier: MIT
/* deferstack script: every sample with its stitch status and frames. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

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

/* One frame like perf script: address, symbol+offset, (object). */
static void print_frame(struct script *s, const struct ds_event *ev, uint64_t ip, bool kernel)
{
	struct ds_sym_info si;
	char buf[256];

	ds_symbols_lookup(s->p->sym, ev->pid, ip, kernel, &si, buf, sizeof(buf));
	printf("\t%16" PRIx64 " ", ip);
	if (si.sym)
		printf("%s+0x%" PRIx64, si.sym, si.sym_off);
	else if (si.dso && si.dso[0] == '[')
		printf("[unknown]");
	else
		printf("%s", si.dso ? "[unknown]" : si.name);
	printf(" (%s)\n", si.dso ? si.dso : "[unknown]");
}

static int script_cb(void *arg, const struct ds_stitch_out *o)
{
	struct script *s = arg;
	const struct ds_event *ev = o->ev;
	bool kernel = false, ctx = false;
	char nbuf[64];

	if (o->kind == DS_OUT_RECORD) {
		if (!s->all)
			return 0;
		printf("%-16s %6u/%-6u [%03u] %llu.%06llu: %s", pipeline_comm(s->p, ev), ev->pid,
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
	/* like perf script: comm pid/tid [cpu] time: period event: */
	printf("%-16s %6u/%-6u [%03u] %llu.%06llu: %10" PRIu64 " %s: ", pipeline_comm(s->p, ev),
	       ev->pid, ev->tid, ev->cpu, (unsigned long long)(ev->time / 1000000000),
	       (unsigned long long)(ev->time % 1000000000 / 1000),
	       (ev->have & DS_EV_PERIOD) ? ev->period : 1,
	       pipeline_event(s->p, ev->hdr, nbuf, sizeof(nbuf)));
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
		printf("no-callchain\n");
		print_frame(s, ev, ev->ip, (ev->misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
					   PERF_RECORD_MISC_KERNEL);
		printf("\n");
		return stdout_failed();
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
		print_frame(s, ev, ip, ctx ? kernel : ip >= 0xffff800000000000ULL);
	}
	printf("\n");
	return stdout_failed();
}

static void usage_script(FILE *f)
{
	fprintf(f,
		"usage: deferstack script [-i FILE|-] [-k KALLSYMS] [-a|--all] [--force-symbols]\n"
		"Print every sample like perf script: comm, pid/tid, [cpu], time, period,\n"
		"event, then the stitch status (stitched / kernel-only with the reason /\n"
		"complete) and the cookie, and the frames, leaf first: address,\n"
		"symbol+offset (or [unknown]) and (object).\n"
		"  -i FILE    input (default perf.data; -: standard input, pipe mode)\n"
		"  -k FILE    kallsyms (default FILE.kallsyms, then /proc/kallsyms)\n"
		"  -a, --all  also print non-sample records (deferred, mmap, comm, ...)\n"
		"  --force-symbols  symbolize objects whose build-id differs from the\n"
		"             recorded one (by default their frames are addresses)\n");
}

int cmd_script(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "kallsyms", required_argument, NULL, 'k' },
		{ "all", no_argument, NULL, 'a' },
		{ "force-symbols", no_argument, NULL, 'Y' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *in = "perf.data", *ks = NULL;
	char ksbuf[4096];
	struct pipeline p;
	struct script s = { &p, false };
	int c, err, sym = PL_SYMBOLS;

	while ((c = getopt_long(argc, argv, "i:k:ah", opts, NULL)) != -1) {
		switch (c) {
		case 'i': in = optarg; break;
		case 'k': ks = optarg; break;
		case 'a': s.all = true; break;
		case 'Y': sym |= PL_FORCE_SYMBOLS; break;
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
	err = pipeline_run(&p, in, ks, sym, script_cb, &s);
	if (!err)
		err = finish_stdout();
	if (!err)
		print_pipeline_summary(stderr, &p);
	pipeline_close(&p);
	return err ? 1 : 0;
}
