// SPDX-License-Identifier: GPL-2.0
/*
 * Compiled against a kernel's UAPI <linux/perf_event.h> (ours, or Debian sid's
 * 7.x linux-libc-dev): the deferred-callchain ABI must be the one the library
 * and tools assume (include/deferstack/perf_abi.h). Prints what it checked.
 */
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>

#include <deferstack/perf_abi.h>

_Static_assert(PERF_RECORD_CALLCHAIN_DEFERRED == DS_RECORD_CALLCHAIN_DEFERRED,
	       "PERF_RECORD_CALLCHAIN_DEFERRED");
_Static_assert(PERF_CONTEXT_USER_DEFERRED == DS_CONTEXT_USER_DEFERRED,
	       "PERF_CONTEXT_USER_DEFERRED");

static int bit_of(void (*set)(struct perf_event_attr *))
{
	struct perf_event_attr a;
	uint64_t w;

	memset(&a, 0, sizeof(a));
	set(&a);
	w = ds_attr_flags(&a);
	return w && !(w & (w - 1)) ? __builtin_ctzll(w) : -1;
}

static void set_cc(struct perf_event_attr *a) { a->defer_callchain = 1; }
static void set_out(struct perf_event_attr *a) { a->defer_output = 1; }
static void set_sigtrap(struct perf_event_attr *a) { a->sigtrap = 1; }

int main(void)
{
	int cc = bit_of(set_cc), out = bit_of(set_out), st = bit_of(set_sigtrap);
	int ok = cc == DS_ATTR_BIT_DEFER_CALLCHAIN && out == DS_ATTR_BIT_DEFER_OUTPUT &&
		 st == 37 && sizeof(struct perf_event_attr) >= PERF_ATTR_SIZE_VER8;

	printf("uapi: PERF_RECORD_CALLCHAIN_DEFERRED=%d PERF_CONTEXT_USER_DEFERRED=%lld "
	       "defer_callchain=bit %d defer_output=bit %d sigtrap=bit %d -> %s\n",
	       PERF_RECORD_CALLCHAIN_DEFERRED, (long long)PERF_CONTEXT_USER_DEFERRED,
	       cc, out, st, ok ? "ok" : "MISMATCH");
	return ok ? 0 : 1;
}
