/* SPDX-License-Identifier: MIT */
/*
 * perf ABI pieces that the host's <linux/perf_event.h> may lack.
 *
 * Deferred user callchains were added to mainline Linux in 7.x.  Older
 * uapi headers (Debian bookworm ships 6.1) have neither the record type
 * nor the attr bits, so they are defined here, guarded so that this header
 * also compiles against newer uapi headers that do define them.
 */
#ifndef DEFERSTACK_PERF_ABI_H
#define DEFERSTACK_PERF_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <linux/perf_event.h>

/* Record type of a deferred user callchain:
 * { header; u64 cookie; u64 nr; u64 ips[nr]; struct sample_id sample_id; }
 * header.misc = PERF_RECORD_MISC_USER, ips[] are user addresses only. */
#define DS_RECORD_CALLCHAIN_DEFERRED 22u

/* Callchain context marker: the next u64 is the cookie. */
#define DS_CONTEXT_USER_DEFERRED ((uint64_t)-640)

/* Some uapi headers name them; keep ours as the single source of truth. */
#ifndef PERF_CONTEXT_USER_DEFERRED
#define PERF_CONTEXT_USER_DEFERRED DS_CONTEXT_USER_DEFERRED
#endif

/* perf-tool-only record types (tools/lib/perf/include/perf/event.h). */
#define DS_RECORD_FINISHED_ROUND 68u
#define DS_RECORD_USER_TYPE_START 64u

/* Bit numbers inside the attr flags word (the u64 after read_format). */
#define DS_ATTR_BIT_DISABLED 0
#define DS_ATTR_BIT_INHERIT 1
#define DS_ATTR_BIT_DEFER_CALLCHAIN 38
#define DS_ATTR_BIT_DEFER_OUTPUT 39

/* Offset of the bitfield flags word inside struct perf_event_attr. */
#define DS_ATTR_FLAGS_OFFSET \
	(offsetof(struct perf_event_attr, read_format) + sizeof(uint64_t))

/* C11's _Static_assert, C++11's static_assert: the header is C and C++ */
#ifdef __cplusplus
#define DS_STATIC_ASSERT(e, msg) static_assert(e, msg)
#else
#define DS_STATIC_ASSERT(e, msg) _Static_assert(e, msg)
#endif

DS_STATIC_ASSERT(DS_ATTR_FLAGS_OFFSET == 40, "perf_event_attr flags word at 40");
DS_STATIC_ASSERT(offsetof(struct perf_event_attr, wakeup_events) == 48,
		 "flags word is one u64 followed by the wakeup union");

#ifdef __cplusplus
extern "C" {
#endif

/* Read/modify the attr flags word without relying on bitfield names that
 * older headers lack (memcpy: no aliasing or alignment assumptions). */
static inline uint64_t ds_attr_flags(const struct perf_event_attr *attr)
{
	uint64_t w;

	memcpy(&w, (const char *)attr + DS_ATTR_FLAGS_OFFSET, sizeof(w));
	return w;
}

static inline void ds_attr_set_flag(struct perf_event_attr *attr, unsigned int bit,
				    int on)
{
	uint64_t w = ds_attr_flags(attr);

	if (on)
		w |= (uint64_t)1 << bit;
	else
		w &= ~((uint64_t)1 << bit);
	memcpy((char *)attr + DS_ATTR_FLAGS_OFFSET, &w, sizeof(w));
}

static inline int ds_attr_test_flag(const struct perf_event_attr *attr, unsigned int bit)
{
	return (int)((ds_attr_flags(attr) >> bit) & 1);
}

#ifdef __cplusplus
}
#endif

#endif /* DEFERSTACK_PERF_ABI_H */
