/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small helpers shared by the guest tests: perf_event_open with the deferred
 * callchain bits, ring-buffer reading, symbol lookup and TAP-ish checks.
 * The tests are static binaries built against bookworm's 6.1 UAPI headers,
 * so the 7.x ABI additions are spelled out here.
 */
#ifndef DS_PERF_UTIL_H
#define DS_PERF_UTIL_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define DS_RECORD_CALLCHAIN_DEFERRED	22
#define DS_CONTEXT_USER_DEFERRED	((uint64_t)-640)
#define DS_ATTR_BIT_DEFER_CALLCHAIN	38
#define DS_ATTR_BIT_DEFER_OUTPUT	39

/* Set one bit of the attr flags word (the bitfield that starts with .disabled). */
void ds_attr_set_flag(struct perf_event_attr *attr, int bit);

/*
 * cpu-clock sampling attr: IP|TID|TIME|CPU|CALLCHAIN, sample_id_all, disabled.
 * The period is multiplied by $DS_PERIOD_SCALE (slow debug kernels).
 */
void ds_attr_sampling(struct perf_event_attr *attr, uint64_t period_ns);

int ds_perf_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd,
		 unsigned long flags);

struct ds_ring {
	int fd;
	void *base;
	size_t data_size;
	size_t map_size;
};

int ds_ring_map(struct ds_ring *r, int fd, unsigned int data_pages);
void ds_ring_unmap(struct ds_ring *r);

/*
 * Call @fn on every record in the ring (copied out so it is contiguous), then
 * consume them. Returns the number of records or -errno.
 */
typedef void (*ds_record_fn)(const struct perf_event_header *hdr, void *arg);
long ds_ring_drain(struct ds_ring *r, ds_record_fn fn, void *arg);

/* Parsed view of a sample with sample_type IP|TID|TIME|CPU|CALLCHAIN. */
struct ds_sample {
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu;
	uint64_t nr;
	const uint64_t *ips;
};

int ds_parse_sample(const struct perf_event_header *hdr, struct ds_sample *s);

/* Parsed CALLCHAIN_DEFERRED record; sample_id as TID|TIME|CPU. */
struct ds_deferred {
	uint64_t cookie;
	uint64_t nr;
	const uint64_t *ips;
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu;
};

int ds_parse_deferred(const struct perf_event_header *hdr, struct ds_deferred *d);

/* The cookie of a chain that ends in USER_DEFERRED, cookie; 0 if it does not. */
uint64_t ds_chain_cookie(const uint64_t *ips, uint64_t nr);

/* Function symbols of our own executable (static, non-PIE). */
struct ds_symtab;
struct ds_symtab *ds_symtab_load(const char *path);
const char *ds_symtab_lookup(const struct ds_symtab *st, uint64_t ip);
void ds_symtab_free(struct ds_symtab *st);

/*
 * Running on a mainline 7.x kernel (the reference)? Its delivery differs from
 * ours where DESIGN.md says so: side-band only, broadcast to every tool.
 */
bool ds_kernel_is_mainline(void);

static inline bool ds_is_kernel_ip(uint64_t ip)
{
	return ip >= 0xffff800000000000ULL && ip < (uint64_t)-4096;
}

/*
 * Does @chain (innermost first, NULL-terminated names) appear in order, as
 * consecutive symbolized frames, among the user ips @ips[0..nr)?
 */
bool ds_chain_has_sequence(const struct ds_symtab *st, const uint64_t *ips,
			   uint64_t nr, const char *const *chain);

/* Checks: print "# ok/FAIL: ..." and count failures in *failed. */
#define DS_CHECK(failed, cond, ...)						\
	do {									\
		if (cond) {							\
			printf("#   ok: ");					\
		} else {							\
			printf("# FAIL: ");					\
			(*(failed))++;						\
		}								\
		printf(__VA_ARGS__);						\
		printf("\n");							\
	} while (0)

#endif
