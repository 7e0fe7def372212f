/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Collects samples and deferred records of one buffer and checks them against
 * the deferred-callchain contract: every marker's cookie is non-zero and
 * matched by exactly one deferred record of the same task, the stitched user
 * chain holds the workload's functions, samples of one kernel entry share a
 * cookie and different entries never do.
 */
#ifndef DS_STITCH_UTIL_H
#define DS_STITCH_UTIL_H

#include "perf_util.h"
#include "workload.h"

#define DS_MAX_IPS 640

struct ds_rec {
	int deferred;			/* 1: CALLCHAIN_DEFERRED, 0: sample */
	uint16_t misc;
	uint16_t size;
	uint32_t tid;
	uint32_t cpu;
	uint64_t time;
	uint64_t ip;			/* the sample's ip (PERF_SAMPLE_IP) */
	uint64_t cookie;		/* 0: classic sample */
	uint64_t nr;
	uint64_t ips[DS_MAX_IPS];
	int user_start;			/* index of the first user ip, -1: none */
};

struct ds_collect {
	struct ds_rec *recs;
	long n, cap;
	long other, lost, bad;
	uint64_t lost_events;		/* the sum of the LOST records' counts */
	long lost_at;			/* n when the first LOST came (if lost) */
	long last_lost_at;		/* n when the last LOST came (if lost) */
	long seen;			/* records read, every task's */
	int ring_id;			/* which buffer records came from (per-CPU tests) */
	uint32_t only_tid;		/* keep only this task's records (0: all) */
};

void ds_collect_record(const struct ds_event *ev, void *arg);

/*
 * The first deferred record of task @tid with @cookie in @c, or NULL;
 * *@count receives how many there are.
 */
const struct ds_rec *ds_find_record(const struct ds_collect *c, uint32_t tid,
				    uint64_t cookie, long *count);
void ds_collect_free(struct ds_collect *c);

struct ds_verdict {
	long samples, marker_samples, classic_samples, user_mode_samples;
	long records, matched, unmatched, unmatched_at_end, dup_records, orphan_records;
	long zero_cookies, interleaved, read_stitched, spin_stitched;
	long kernel_chain_in_marker;
};

/*
 * Check the collected records of task @tid (0: all tasks). Prints diagnostics
 * and returns the verdict; @st symbolizes the workload.
 */
void ds_verify(const struct ds_collect *c, uint32_t tid, const struct ds_symtab *st,
	       struct ds_verdict *v);

/*
 * Sample the example workload running on this task with a cpu-clock event
 * that has defer_callchain (and defer_output if asked) and collect its
 * records into @c. Returns the number of records, or -errno (printed).
 */
long ds_sample_own_workload(struct ds_collect *c, bool defer_output, unsigned int msec,
			    size_t read_bytes, struct workload_stats *ws);

/*
 * Hits sampled twice, by an event with defer_callchain (into @d) and by one
 * with a classic callchain (into @c), both firing at every hit in order: the
 * i-th samples of the two are one hit. For each, the deferred record's stack
 * must be the classic chain's user part, as ds_pair_hits() checks.
 */
struct ds_pairs {
	long nd, nc, pairs;		/* samples of each event, hits paired */
	long equal, differ, missing;	/* stitched = classic, not, no record */
	long bare;			/* equal, the ip alone in both */
	long caller_added;		/* equal but for the caller 0009 names */
	long no_user;			/* equal: no cookie, no user chain in either */
	long inline_user;		/* equal: no cookie, the sample's own user chain */
	long named;			/* classic chain holds @chain */
};

/*
 * Pair the hits of @d and @c, count into @p; print the first @show hits that
 * differ, prefixed with @what. @chain (NULL-terminated, may be NULL): names
 * of a call path to count in the classic chains.
 */
void ds_pair_hits(const struct ds_collect *d, const struct ds_collect *c,
		  const struct ds_symtab *st, const char *const *chain, const char *what,
		  int show, struct ds_pairs *p);

/* Totals of <debugfs>/unwind_user/stats: our kernel's user stack walker. */
struct ds_unwind_stats {
	long walks, frames_sframe, frames_ehframe, frames_fp, frames_signal;
	long objects_sframe, objects_ehframe, objects_plain, objects_untrusted;
	/* Frames of mappings with .eh_frame left to frame pointers, by why */
	long ehframe_no_fde, ehframe_fault, ehframe_cfa_expr, ehframe_cfa_reg;
	long ehframe_reg_rule, ehframe_insn, ehframe_format, ehframe_cap;
	/* Task states set up at first requests, requests refused for want of one */
	long task_states, no_state;
	bool has_ehframe;	/* the kernel walks with .eh_frame */
	bool has_task_states;	/* ... and sets task states up at first use */
};

/* Read them; all 0 where the file is absent (mainline, no debugfs). */
void ds_unwind_stats_read(struct ds_unwind_stats *s);

/* Print one "# layout:" line per record kind, for the differential test. */
void ds_print_layout(const struct ds_collect *c);

#endif
