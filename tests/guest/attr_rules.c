// SPDX-License-Identifier: GPL-2.0
/*
 * Which attr combinations with defer_callchain / defer_output does the kernel
 * accept? Prints one "# attr:" line per case (compared between our kernel and
 * the 7.x reference by tests/host/differential.sh) and checks our rules.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "perf_util.h"

struct attr_case {
	const char *name;
	int callchain, defer_cc, defer_out, excl_user, sb, pid, expect;
};

static const struct attr_case cases[] = {
	{ "task sample defer_callchain",           1, 1, 0, 0, 0, 0, 0 },
	{ "task sample defer_callchain+output",    1, 1, 1, 0, 0, 0, 0 },
	{ "task sample defer_callchain no CALLCHAIN", 0, 1, 0, 0, 0, 0, 0 },
	{ "task sample defer_callchain excl_user", 1, 1, 0, 1, 0, 0, 0 },
	{ "task dummy defer_output side-band",     0, 0, 1, 0, 1, 0, 0 },
	{ "cpu sample defer_callchain",            1, 1, 0, 0, 0, -1, 0 },
	{ "cpu dummy defer_output side-band",      0, 0, 1, 0, 1, -1, 0 },
	{ "cpu dummy defer_output no side-band",   0, 0, 1, 0, 0, -1, 0 },
};

int main(void)
{
	int failed = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct attr_case *c = &cases[i];
		struct perf_event_attr attr;
		int fd;

		ds_attr_sampling(&attr, 1000000);
		if (!c->callchain)
			attr.sample_type &= ~PERF_SAMPLE_CALLCHAIN;
		if (c->sb) {
			attr.config = PERF_COUNT_SW_DUMMY;
			attr.mmap = attr.comm = attr.task = 1;
			attr.sample_period = 0;
		}
		attr.exclude_callchain_user = c->excl_user;
		if (c->defer_cc)
			ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
		if (c->defer_out)
			ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_OUTPUT, 1);
		fd = ds_perf_open(&attr, c->pid, c->pid < 0 ? 0 : -1, -1, 0);
		printf("# attr: %-42s -> %s\n", c->name, fd >= 0 ? "ok" : strerror(-fd));
		if (fd >= 0)
			close(fd);
		if ((fd >= 0 ? 0 : fd) != c->expect) {
			printf("# FAIL: expected %s\n", c->expect ? strerror(-c->expect) : "ok");
			failed++;
		}
	}
	/* An unknown flag bit above defer_output must still be rejected. */
	{
		struct perf_event_attr attr;
		int fd;

		ds_attr_sampling(&attr, 1000000);
		ds_attr_set_flag(&attr, 45, 1);
		fd = ds_perf_open(&attr, 0, -1, -1, 0);
		printf("# attr: %-42s -> %s\n", "reserved bit 45", fd >= 0 ? "ok" : strerror(-fd));
		DS_CHECK(&failed, fd == -EINVAL, "reserved flag bits are rejected");
		if (fd >= 0)
			close(fd);
	}
	return failed ? 1 : 0;
}
