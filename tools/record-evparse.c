// SPDX-License-Identifier: MIT
/*
 * deferstack record -e: perf's event syntax, for what record supports.
 * Generic software and hardware events by perf's names (and its aliases),
 * tracepoints as SYS:NAME (the id read from tracefs), the :u and :k
 * modifiers, several events comma-separated or in repeated -e options.
 * Whether the machine has them is the kernel's answer, at open time.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "record.h"

struct named_event {
	const char *name, *alias;	/* perf's name first */
	uint32_t type;
	uint64_t config;
	bool every;
};

static const struct named_event named[] = {
	{ "cpu-clock", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, false },
	{ "task-clock", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, false },
	{ "page-faults", "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, false },
	/* off-CPU: where tasks block or are preempted */
	{ "context-switches", "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, true },
	{ "cpu-migrations", "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS,
	  false },
	{ "minor-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, false },
	{ "major-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, false },
	{ "alignment-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS, false },
	{ "emulation-faults", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS, false },
	{ "cycles", "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, false },
	{ "instructions", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, false },
	{ "cache-references", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, false },
	{ "cache-misses", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, false },
	{ "branches", "branch-instructions", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_BRANCH_INSTRUCTIONS, false },
	{ "branch-misses", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, false },
	{ "bus-cycles", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES, false },
	{ "stalled-cycles-frontend", "idle-cycles-frontend", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, false },
	{ "stalled-cycles-backend", "idle-cycles-backend", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_STALLED_CYCLES_BACKEND, false },
	{ "ref-cycles", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, false },
};

/* where tracefs is mounted (perf looks in the same two places) */
static const char *const tracefs_dirs[] = {
	"/sys/kernel/tracing", "/sys/kernel/debug/tracing",
};

const char *tracefs_dir(void)
{
	char path[64];
	struct stat st;

	for (size_t i = 0; i < sizeof(tracefs_dirs) / sizeof(tracefs_dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/events", tracefs_dirs[i]);
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
			return tracefs_dirs[i];
	}
	return NULL;
}

static const struct named_event *find_named(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
		const struct named_event *e = &named[i];

		if ((strlen(e->name) == n && !strncmp(s, e->name, n)) ||
		    (e->alias && strlen(e->alias) == n && !strncmp(s, e->alias, n)))
			return e;
	}
	return NULL;
}

/* A tracefs directory name: no "/", no "." or "..", nothing odd. */
static bool tp_word(const char *s, size_t n)
{
	if (!n || n > 60 || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!(c == '_' || c == '-' || c == '.' || (c >= '0' && c <= '9') ||
		      (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
			return false;
	}
	return true;
}

/* SYS:NAME's id from tracefs: 0, or -1 with a message (spec: the event as
 * given). */
static int tracepoint_id(const char *spec, const char *sys, const char *name, uint64_t *id)
{
	char path[256];
	const char *dir;
	FILE *f;
	int ok;

	dir = tracefs_dir();
	if (!dir) {
		die_msg("unknown event '%s': tracefs is not mounted (no %s/events nor "
			"%s/events), so no tracepoint can be named", spec, tracefs_dirs[0],
			tracefs_dirs[1]);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/events/%s/%s/id", dir, sys, name);
	f = fopen(path, "r");
	if (!f && errno == ENOENT) {
		die_msg("unknown event '%s': no tracepoint %s:%s in %s/events", spec, sys, name,
			dir);
		return -1;
	}
	if (!f) {
		die_msg("event '%s': cannot read %s: %s", spec, path, strerror(errno));
		return -1;
	}
	ok = fscanf(f, "%" SCNu64, id) == 1;
	fclose(f);
	if (!ok) {
		die_msg("event '%s': %s holds no tracepoint id", spec, path);
		return -1;
	}
	return 0;
}

/* "u", "k", "uk", "ku": 0, or -1 with a message. */
static int parse_modifier(const char *spec, const char *m, struct rec_event *ev)
{
	bool u = false, k = false;

	for (const char *p = m; *p; p++) {
		if (*p == 'u' && !u) {
			u = true;
		} else if (*p == 'k' && !k) {
			k = true;
		} else {
			die_msg("event '%s': unknown modifier '%s' (u: user space only, "
				"k: kernel only)", spec, m);
			return -1;
		}
	}
	if (!u && !k) {
		die_msg("event '%s': empty modifier (u or k)", spec);
		return -1;
	}
	/* both: everything, as without a modifier */
	ev->excl_kernel = u && !k;
	ev->excl_user = k && !u;
	return 0;
}

/* One event: NAME[:MOD] or SYS:NAME[:MOD].  0, or -1 with a message. */
static int parse_one(const char *spec, struct rec_event *ev)
{
	const char *c1 = strchr(spec, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	const struct named_event *ne;
	size_t n1 = c1 ? (size_t)(c1 - spec) : strlen(spec);

	memset(ev, 0, sizeof(*ev));
	ne = find_named(spec, n1);
	if (ne) {
		ev->type = ne->type;
		ev->config = ne->config;
		ev->every = ne->every;
		snprintf(ev->name, sizeof(ev->name), "%s", ne->name);
		return c1 ? parse_modifier(spec, c1 + 1, ev) : 0;
	}
	if (c1) {
		/* a tracepoint: SYS:NAME, then maybe a modifier */
		size_t n2 = c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1);
		char sys[64], name[64];

		if (tp_word(spec, n1) && tp_word(c1 + 1, n2)) {
			snprintf(sys, sizeof(sys), "%.*s", (int)n1, spec);
			snprintf(name, sizeof(name), "%.*s", (int)n2, c1 + 1);
			if (tracepoint_id(spec, sys, name, &ev->config))
				return -1;
			ev->type = PERF_TYPE_TRACEPOINT;
			ev->every = true;	/* like perf: each hit */
			snprintf(ev->name, sizeof(ev->name), "%s:%s", sys, name);
			return c2 ? parse_modifier(spec, c2 + 1, ev) : 0;
		}
	}
	die_msg("unknown event '%s' (software: cpu-clock, task-clock, page-faults, "
		"context-switches, cpu-migrations, minor-faults, major-faults; hardware: "
		"cycles, instructions, cache-misses, branch-misses, ...; tracepoints: SYS:NAME; "
		"modifiers :u, :k)", spec);
	return -1;
}

int parse_events(struct ropts *o, const char *arg)
{
	char *copy = strdup(arg), *save = NULL;
	int err = 0;

	if (!copy) {
		die_msg("%s", strerror(ENOMEM));
		return -1;
	}
	if (!*arg || arg[strlen(arg) - 1] == ',' || arg[0] == ',' || strstr(arg, ",,")) {
		die_msg("bad -e '%s': an empty event", arg);
		free(copy);
		return -1;
	}
	for (char *tok = strtok_r(copy, ",", &save); tok && !err;
	     tok = strtok_r(NULL, ",", &save)) {
		struct rec_event *v = realloc(o->ev, (o->nr_ev + 1) * sizeof(*v));

		if (!v) {
			die_msg("%s", strerror(ENOMEM));
			err = -1;
			break;
		}
		o->ev = v;
		err = parse_one(tok, &o->ev[o->nr_ev]);
		if (!err)
			o->nr_ev++;
	}
	free(copy);
	return err;
}

const char *event_name(const struct ropts *o, const struct rec_event *ev, char *buf,
		       size_t len)
{
	bool u = (ev->excl_kernel || o->user_only) && !ev->excl_user;
	bool k = ev->excl_user && !ev->excl_kernel && !o->user_only;

	/* perf's names: ":u" for user space only, ":k" for the kernel only */
	snprintf(buf, len, "%s%s", ev->name, u ? ":u" : k ? ":k" : "");
	return buf;
}
