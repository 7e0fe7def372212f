// SPDX-License-Identifier: MIT
/* deferstack report: its options (usage, --sort, -g, the lists of --comm,
 * --pid and --dso). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void usage_report(FILE *f)
{
	fprintf(f,
		"usage: deferstack report [-i FILE|-] [-k KALLSYMS]\n"
		"                         [--text | --folded | --svg OUT.svg | --pprof OUT.pb.gz]\n"
		"                         [--sort KEYS] [--children] [-g caller|callee|none[,MIN]]\n"
		"                         [--comm LIST] [--pid LIST] [--dso LIST] [--top N]\n"
		"                         [--event NAME] [--force-symbols] [--full-names]\n"
		"Read a perf.data file (raw deferred or classic), merge per-CPU records in\n"
		"time order, stitch deferred user callchains and print:\n"
		"  --text        perf-report-like table: Children (inclusive) and Self\n"
		"                overhead per row, one section per event (default)\n"
		"  --folded      folded stacks (FlameGraph / speedscope input)\n"
		"  --svg FILE    an interactive SVG flame graph (search, click to zoom)\n"
		"  --pprof FILE  gzipped pprof profile.proto (go tool pprof, Pyroscope,\n"
		"                Parca, Grafana); --svg -, --pprof -: standard output\n"
		"  -i FILE       input (default perf.data; -: standard input, pipe mode)\n"
		"  -k FILE       kallsyms for kernel symbols (default FILE.kallsyms, then\n"
		"                /proc/kallsyms)\n"
		"  -s, --sort KEYS  row keys for --text, comma-separated: comm, pid, dso, sym\n"
		"                (default comm,dso,sym); 'overhead' orders by self (the\n"
		"                default), 'children' by inclusive overhead\n"
		"  --children    order --text rows by inclusive overhead\n"
		"  -g, --call-graph caller|callee|none[,MIN]\n"
		"                call graph under each --text row: caller (from main down)\n"
		"                or callee (from the function up); branches under MIN %%\n"
		"                (default 0.5) hidden\n"
		"  --comm LIST, --pid LIST\n"
		"                only samples of these commands or pids (comma-separated)\n"
		"  --dso LIST    only samples whose own frame is in these objects (base\n"
		"                name or path; [kernel.kallsyms], [vdso])\n"
		"  --top N       rows per section in --text (default 20)\n"
		"  -e, --event NAME  only the samples of event NAME (e.g. cpu-clock);\n"
		"                --folded, --svg and --pprof show one event: without\n"
		"                --event, the first with samples\n"
		"  --force-symbols  symbolize objects whose build-id differs from the\n"
		"                recorded one (by default their frames are addresses)\n"
		"  --full-names  C++ functions with their parameters and return type\n"
		"                (by default without, as perf: std::sort<It, Cmp>)\n"
		"Every output is weighted by the samples' periods, like perf report.\n"
		"Samples whose deferred record never came are shown under\n"
		"'[user stack not stitched]'. A summary ends --text (else on stderr).\n");
}

const char *out_name(int mode)
{
	return mode == 'f' ? "folded" : mode == 's' ? "svg" : mode == 'P' ? "pprof" : "text";
}

/* Split a comma-separated option value in place. */
int split_list(char *s, const char *opt, const char **out, size_t *n)
{
	for (char *save = NULL, *t = strtok_r(s, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		if (*n == MAX_FILTER) {
			die_msg("report: %s: at most %d values", opt, MAX_FILTER);
			return -1;
		}
		out[(*n)++] = t;
	}
	if (!*n) {
		die_msg("report: %s needs a value", opt);
		return -1;
	}
	return 0;
}

int parse_sort(char *s, struct ds_text_opts *to)
{
	const char *keys[8];
	size_t n = 0;

	if (split_list(s, "--sort", keys, &n))
		return -1;
	for (size_t i = 0; i < n; i++) {
		const char *k = keys[i];
		enum ds_sort_key v;

		if (!strcmp(k, "overhead")) {
			to->by_children = false;
			continue;
		}
		if (!strcmp(k, "children")) {
			to->by_children = true;
			continue;
		}
		if (!strcmp(k, "comm"))
			v = DS_SORT_COMM;
		else if (!strcmp(k, "pid"))
			v = DS_SORT_PID;
		else if (!strcmp(k, "dso"))
			v = DS_SORT_DSO;
		else if (!strcmp(k, "sym") || !strcmp(k, "symbol"))
			v = DS_SORT_SYM;
		else {
			die_msg("report: bad --sort key '%s' (comm, pid, dso, sym, overhead, "
				"children)", k);
			return -1;
		}
		for (size_t j = 0; j < to->nr_keys; j++) {
			if (to->keys[j] == v) {
				die_msg("report: --sort key '%s' given twice", k);
				return -1;
			}
		}
		to->keys[to->nr_keys++] = v;
	}
	return 0;
}

int parse_graph(const char *s, struct ds_text_opts *to)
{
	const char *comma = strchr(s, ',');
	size_t l = comma ? (size_t)(comma - s) : strlen(s);

	if (l == 6 && !strncmp(s, "caller", 6))
		to->graph = DS_GRAPH_CALLER;
	else if (l == 6 && !strncmp(s, "callee", 6))
		to->graph = DS_GRAPH_CALLEE;
	else if (l == 4 && !strncmp(s, "none", 4))
		to->graph = DS_GRAPH_NONE;
	else {
		die_msg("report: bad -g '%s' (caller, callee or none, then ,MIN%%)", s);
		return -1;
	}
	if (comma) {
		char *end;

		errno = 0;
		to->graph_min = strtod(comma + 1, &end);
		if (errno || end == comma + 1 || *end || !(to->graph_min >= 0) ||
		    to->graph_min > 100) {
			die_msg("report: bad -g threshold '%s' (a percentage, 0 to 100)",
				comma + 1);
			return -1;
		}
	}
	return 0;
}

int parse_pids(char *s, uint32_t *pids, size_t *nr)
{
	const char *v[MAX_FILTER];
	size_t n = 0;

	if (split_list(s, "--pid", v, &n))
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned long pid;

		if (parse_ulong("--pid", v[i], 0, UINT32_MAX, &pid))
			return -1;
		pids[(*nr)++] = (uint32_t)pid;
	}
	return 0;
}
