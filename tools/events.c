// SPDX-License-Identifier: MIT
/* Event names for report and script: HEADER_EVENT_DESC's name, else the
 * perf name of the attr's type and config. */
#include <stdio.h>

#include "cli.h"

static const char *const sw_names[] = {
	"cpu-clock", "task-clock", "page-faults", "context-switches", "cpu-migrations",
	"minor-faults", "major-faults", "alignment-faults", "emulation-faults", "dummy",
	"bpf-output", "cgroup-switches",
};

static const char *const hw_names[] = {
	"cycles", "instructions", "cache-references", "cache-misses", "branches",
	"branch-misses", "bus-cycles", "stalled-cycles-frontend", "stalled-cycles-backend",
	"ref-cycles",
};

const char *event_name(const struct pipeline *p, const struct ds_event *ev)
{
	const struct ds_attr *a = ds_reader_attr_of(&p->rd, ev->hdr);

	if (!a)
		return "unknown";
	if (a->name && *a->name)
		return a->name;
	if (a->attr.type == PERF_TYPE_SOFTWARE &&
	    a->attr.config < sizeof(sw_names) / sizeof(sw_names[0]))
		return sw_names[a->attr.config];
	if (a->attr.type == PERF_TYPE_HARDWARE &&
	    a->attr.config < sizeof(hw_names) / sizeof(hw_names[0]))
		return hw_names[a->attr.config];
	if (a->attr.type == PERF_TYPE_TRACEPOINT)
		return "tracepoint";
	return "unknown";
}
