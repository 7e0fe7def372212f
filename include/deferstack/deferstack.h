/* SPDX-License-Identifier: MIT */
/*
 * libdeferstack: read perf records (mmap ring buffers, perf.data files),
 * merge per-CPU streams in time order, stitch deferred user callchains to
 * their samples, symbolize, aggregate, and write perf.data files.
 *
 * Conventions:
 *  - every function that can fail returns 0 (or a count) on success and a
 *    negative errno on failure (-EINVAL malformed input, -ENOMEM, -EIO ...);
 *  - there is no global state: all state lives in the context structs that
 *    the caller owns and passes explicitly; contexts are not thread-safe, but
 *    distinct contexts may be used from distinct threads;
 *  - records are plain perf ABI bytes (struct perf_event_header first) in
 *    host byte order, 8-byte aligned in memory.
 */
#ifndef DEFERSTACK_H
#define DEFERSTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "perf_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Parsed records                                                       */
/* ------------------------------------------------------------------ */

/* Which of the ds_event fields below were present in the record. */
enum {
	DS_EV_TID = 1u << 0,
	DS_EV_TIME = 1u << 1,
	DS_EV_ID = 1u << 2,
	DS_EV_CPU = 1u << 3,
	DS_EV_IP = 1u << 4,
	DS_EV_PERIOD = 1u << 5,
	DS_EV_CALLCHAIN = 1u << 6,
	DS_EV_STREAM_ID = 1u << 7,
};

/*
 * One parsed record.  Pointers point into the record bytes given to
 * ds_event_parse(); they are valid as long as those bytes are.
 */
struct ds_event {
	const struct perf_event_header *hdr;
	uint32_t type;
	uint16_t misc;
	uint16_t size;
	uint32_t have;		/* DS_EV_* */
	uint64_t sample_type;	/* the attr's sample_type used to parse */
	/* sample fields or sample_id (sample_id_all) of other records */
	uint32_t pid, tid;
	uint64_t time;
	uint64_t id, stream_id;
	uint32_t cpu;
	uint64_t ip;
	uint64_t period;
	/* PERF_RECORD_SAMPLE callchain (all contexts, raw) */
	uint64_t nr;
	const uint64_t *chain;
	size_t chain_off;	/* byte offset of the callchain nr field */
	/* PERF_RECORD_CALLCHAIN_DEFERRED: cookie, nr/chain above = user ips.
	 * For samples whose chain ends in USER_DEFERRED, cookie = that cookie
	 * and has_cookie is set. */
	uint64_t cookie;
	bool has_cookie;
	/* MMAP/MMAP2 */
	uint64_t start, len, pgoff;
	const char *filename;	/* NUL-terminated inside the record */
	/* COMM: comm; FORK/EXIT: pid/tid above, ppid/ptid here */
	const char *comm;
	uint32_t ppid, ptid;
	/* LOST: lost count; LOST_SAMPLES: lost count */
	uint64_t lost;
};

/* Bytes of the sample_id trailer for a given sample_type. */
size_t ds_sample_id_size(uint64_t sample_type);

/*
 * Parse one record of rec_len bytes (rec_len == hdr->size).  sample_type is
 * the attr's; sample_id_all says whether non-sample records carry a
 * sample_id trailer.  Unknown record types parse to their header only.
 * Returns 0 or -EINVAL when a length or count does not fit the record.
 * Unsupported sample_type bits before CALLCHAIN (READ) give -EOPNOTSUPP.
 */
int ds_event_parse(const void *rec, size_t rec_len, uint64_t sample_type,
		   bool sample_id_all, struct ds_event *ev);

/* Name of a record type ("SAMPLE", "CALLCHAIN_DEFERRED", ..., "UNKNOWN"). */
const char *ds_record_name(uint32_t type);

/*
 * Build a copy of sample ev with its callchain replaced by chain[nr] into
 * out (capacity out_cap bytes).  Returns the new record size or -ENOSPC /
 * -EINVAL (ev has no callchain, size over 65535).
 */
int ds_sample_set_callchain(const struct ds_event *ev, const uint64_t *chain,
			    uint64_t nr, void *out, size_t out_cap);

/* ------------------------------------------------------------------ */
/* mmap ring buffers                                                    */
/* ------------------------------------------------------------------ */

/*
 * Reader of one perf mmap ring buffer (struct perf_event_mmap_page followed
 * by a power-of-two data area).  Records wrapping around the end of the
 * data area are copied into an internal scratch buffer.
 */
struct ds_ring {
	volatile struct perf_event_mmap_page *page;
	uint8_t *data;
	uint64_t data_size;
	uint64_t head;		/* snapshot taken by ds_ring_begin() */
	uint64_t tail;		/* our read position */
	uint8_t *scratch;	/* >= max record size (65535) */
};

/* base/len: the mmap()ed area (1 + 2^n pages); page_size: system page. */
int ds_ring_init(struct ds_ring *r, void *base, size_t len, size_t page_size);
void ds_ring_destroy(struct ds_ring *r);
/* Snapshot data_head; returns the number of unread bytes. */
uint64_t ds_ring_begin(struct ds_ring *r);
/*
 * Next record in [tail, head): *rec points into the buffer or the scratch
 * copy, valid until the next call.  Returns 1 (got one), 0 (no more) or
 * -EINVAL (size 0, smaller than a header, or larger than what is there).
 * On -EINVAL the reader skips to head so the kernel can go on writing.
 */
int ds_ring_next(struct ds_ring *r, const struct perf_event_header **rec);
/* Publish data_tail = tail (release) so the kernel may reuse the space. */
void ds_ring_end(struct ds_ring *r);

/* ------------------------------------------------------------------ */
/* perf.data files                                                      */
/* ------------------------------------------------------------------ */

struct ds_attr {
	struct perf_event_attr attr;	/* padded/truncated to our size */
	uint64_t *ids;
	size_t nr_ids;
	char *name;			/* from HEADER_EVENT_DESC, may be NULL */
};

/* Reader of a PERFILE2 file (little-endian, file mode, not pipe mode). */
struct ds_reader {
	FILE *f;
	uint64_t file_size;
	uint64_t data_off, data_size, pos;
	struct ds_attr *attrs;
	size_t nr_attrs;
	bool sample_id_all;
	bool use_identifier;	/* look attrs up by PERF_SAMPLE_IDENTIFIER */
	/* id -> attr: open addressing, id_attr[i] = attr index + 1, 0 = free;
	 * the first attr that lists an id wins */
	uint64_t *id_keys;
	uint32_t *id_attr;
	size_t id_cap;
	uint64_t feat_bits[4];
	uint8_t *buf;		/* current record, 8-byte aligned */
	size_t buf_cap;
	/* The header says data size 0 and has no features: the writer never
	 * finished (e.g. the recorder was killed).  The data runs to the end of
	 * the file; a cut last record ends it, its bytes counted in trailing. */
	bool unfinished;
	uint64_t trailing;
	char err[160];		/* human-readable reason of the last error */
};

/* Open and validate header, attrs, ids, event names.  -EINVAL/-EIO/... */
int ds_reader_open(struct ds_reader *r, const char *path);
void ds_reader_close(struct ds_reader *r);
/*
 * Next record of the data section.  Returns 1 with *rec (valid until the
 * next call), 0 at the end of data, or a negative errno (truncated record,
 * size 0/too small, size past the data section).  In an unfinished file a
 * cut last record is the end of data (0, r->trailing set), not an error.
 */
int ds_reader_next(struct ds_reader *r, const struct perf_event_header **rec);
/* The attr a record belongs to (by IDENTIFIER, else the first attr). */
const struct ds_attr *ds_reader_attr_of(const struct ds_reader *r,
					const struct perf_event_header *rec);
/* Parse a record with the right attr. */
int ds_reader_parse(const struct ds_reader *r, const struct perf_event_header *rec,
		    struct ds_event *ev);

/* Optional header features written by ds_writer. */
struct ds_writer_info {
	const char *hostname, *osrelease, *version, *arch;
	uint32_t nr_cpus_avail, nr_cpus_online;
	int argc;
	char *const *argv;
};

/* Writer of a PERFILE2 file readable by upstream perf (>= 3.x). */
struct ds_writer {
	FILE *f;
	uint64_t data_off, data_size;
	struct ds_attr *attrs;
	size_t nr_attrs;
	int err;
};

/*
 * Create path and write a header that says "not finished" (data size 0, no
 * features) with the attrs and ids, flushed, so that the file is readable
 * even if ds_writer_close() never runs; every round is flushed too.
 * attrs[i].ids are the event ids (PERF_EVENT_IOC_ID), attrs[i].name the
 * event name.  Copies everything.
 */
int ds_writer_open(struct ds_writer *w, const char *path, const struct ds_attr *attrs,
		   size_t nr_attrs);
/* The same on an open, seekable fd (O_WRONLY); the writer owns fd from
 * now on, also on failure (ds_writer_close() closes it). */
int ds_writer_open_fd(struct ds_writer *w, int fd, const struct ds_attr *attrs,
		      size_t nr_attrs);
/* Append one record (rec->size bytes) to the data section. */
int ds_writer_write(struct ds_writer *w, const struct perf_event_header *rec);
/* Append a PERF_RECORD_FINISHED_ROUND. */
int ds_writer_round(struct ds_writer *w);
/* Write features + final header, close.  Returns the first error seen. */
int ds_writer_close(struct ds_writer *w, const struct ds_writer_info *info);

/* ------------------------------------------------------------------ */
/* Time-ordered merge of per-CPU streams                                */
/* ------------------------------------------------------------------ */

/*
 * k-way merge of per-CPU streams by (time, cpu, arrival): a record not
 * older than the tail of its CPU's queue is appended (O(1), the normal
 * case); one that goes back in time goes into a min-heap of late records
 * (O(log n)), so inputs that keep going back in time, with or without
 * rounds, stay O(n log n) instead of quadratic.  Equal times come out by
 * cpu, then in arrival order.  The smallest record is released when its
 * time is at or below the watermark set by ds_merge_round() (perf's
 * FINISHED_ROUND rule: a round is written after every pass over all
 * buffers, so everything up to the largest time seen before the previous
 * round is final), when more than max_pending records are queued (bounded
 * memory for streams without rounds), or after ds_merge_flush().
 */
struct ds_merge_node;
struct ds_merge_q;
struct ds_merge_late;
struct ds_merge {
	struct ds_merge_q *q;		/* per CPU, in time order */
	size_t nr_q;
	struct ds_merge_late *late;	/* min-heap of records that went back */
	size_t nr_late, cap_late;
	uint64_t seq;		/* arrival counter (stable order) */
	size_t pending, max_pending;
	uint64_t max_time_cur, max_time_prev, watermark;
	bool flushing;
	struct ds_merge_node *out;	/* last released node, freed on next pop */
	uint64_t nr_out_of_order;	/* records older than an already released one */
	uint64_t last_released;
};

/* max_pending 0 = default (1M records). */
int ds_merge_init(struct ds_merge *m, size_t max_pending);
void ds_merge_destroy(struct ds_merge *m);
/* Queue a copy of rec (with its parsed time/cpu; no time -> 0, cpu -> 0). */
int ds_merge_push(struct ds_merge *m, const struct perf_event_header *rec,
		  uint64_t time, uint32_t cpu);
/* A FINISHED_ROUND: raise the watermark to the previous round's max time. */
void ds_merge_round(struct ds_merge *m);
/* End of input: release everything. */
void ds_merge_flush(struct ds_merge *m);
/* Next released record (valid until the next pop), 1 = got, 0 = none yet. */
int ds_merge_pop(struct ds_merge *m, const struct perf_event_header **rec);

/* ------------------------------------------------------------------ */
/* Stitching deferred callchains                                        */
/* ------------------------------------------------------------------ */

enum ds_stitch_kind {
	DS_OUT_RECORD = 0,	/* a non-sample record, passed through */
	DS_OUT_NOCHAIN,		/* sample without callchain */
	DS_OUT_COMPLETE,	/* sample already complete (classic / kernel) */
	DS_OUT_STITCHED,	/* USER_DEFERRED joined with its record */
	DS_OUT_KERNEL_ONLY,	/* USER_DEFERRED whose record never came */
};

enum ds_unmatched_reason {
	DS_UNM_NONE = 0,
	DS_UNM_COOKIE_CHANGED,	/* task moved on to another kernel entry */
	DS_UNM_EXIT,		/* PERF_RECORD_EXIT of the task */
	DS_UNM_END,		/* end of data */
	DS_UNM_OVERFLOW,	/* pending queue of the task was full */
};

struct ds_stitch_out {
	enum ds_stitch_kind kind;
	enum ds_unmatched_reason reason;	/* for KERNEL_ONLY */
	bool record_first;	/* STITCHED: the record came before the sample */
	const struct ds_event *ev;	/* the record / original sample */
	uint64_t cookie;
	/* Output callchain: kernel part, then PERF_CONTEXT_USER + user ips
	 * (STITCHED), kernel part only (KERNEL_ONLY, marker + cookie dropped),
	 * or the original chain (COMPLETE). */
	const uint64_t *chain;
	uint64_t nr;
};

/* Called for every output; a negative return stops the stitcher. */
typedef int (*ds_stitch_cb)(void *arg, const struct ds_stitch_out *out);

struct ds_stitch_stats {
	uint64_t records, samples, deferred, stitched, record_first, complete, nochain;
	uint64_t kernel_only, unm_cookie, unm_exit, unm_end, unm_overflow;
	uint64_t lost_events, lost_samples, lost_records, unknown, pending_peak;
};

struct ds_task;
struct ds_stitcher {
	struct ds_task **tab;	/* open-addressing tid -> task */
	size_t tab_cap, tab_used;
	size_t max_pending_per_task;
	size_t pending_total;
	ds_stitch_cb cb;
	void *cb_arg;
	uint64_t *chain_buf;
	size_t chain_cap;
	struct ds_stitch_stats st;
};

/* max_pending_per_task 0 = default (65536). */
int ds_stitch_init(struct ds_stitcher *s, size_t max_pending_per_task, ds_stitch_cb cb,
		   void *cb_arg);
void ds_stitch_destroy(struct ds_stitcher *s);
/* Feed one parsed record, in time order. */
int ds_stitch_event(struct ds_stitcher *s, const struct ds_event *ev);
/* End of data: emit all pending samples kernel-only. */
int ds_stitch_finish(struct ds_stitcher *s);

/* ------------------------------------------------------------------ */
/* Symbolization                                                        */
/* ------------------------------------------------------------------ */

struct ds_symbols;

/* Create; kallsyms may be NULL (kernel frames stay addresses). */
int ds_symbols_new(struct ds_symbols **out, const char *kallsyms_path);
void ds_symbols_free(struct ds_symbols *s);
/* Track MMAP/MMAP2/COMM/FORK records (others are ignored). */
int ds_symbols_event(struct ds_symbols *s, const struct ds_event *ev);
/* Symbol name of a user ip of pid or a kernel ip (kernel = true), as
 * "func", "func" from kallsyms, "[dso+0xoff]", "[vdso]" or "[unknown]"
 * (ds_symbols_lookup()'s name).
 * Returned pointer valid until the next call with buf; uses buf[len]. */
const char *ds_symbols_resolve(struct ds_symbols *s, uint32_t pid, uint64_t ip,
			       bool kernel, char *buf, size_t len);
/* Longest build-id kept (SHA-1 ones are 20 bytes). */
#define DS_BUILD_ID_MAX 32

/* What an ip resolves to.  Pointers stay valid until ds_symbols_free(),
 * name until the next use of the caller's buf. */
struct ds_sym_info {
	const char *name;	/* to display: the symbol, "[dso+0xoff]" when the
				 * object has no symbol there (like perf),
				 * "[vdso]", "[kernel.kallsyms]" or "[unknown]" */
	const char *sym;	/* symbol (C++ demangled), NULL if none */
	uint64_t sym_off;	/* ip - symbol start */
	const char *dso;	/* mapped file's path, "[vdso]", "[kernel.kallsyms]";
				 * NULL when no mapping covers ip */
	const char *dso_short;	/* its base name */
	uint64_t dso_off;	/* user: file offset of ip (perf's map_ip);
				 * kernel: ip */
	uint64_t map_start, map_end, map_pgoff;	/* user mapping of ip */
	const unsigned char *build_id;	/* of the mapped file, when read */
	size_t build_id_len;
	bool kernel;
};

/*
 * Resolve ip of pid (kernel: through kallsyms).  User ips are resolved
 * through the file the MMAP record mapped there and its debug file, found
 * by libdwfl: /usr/lib/debug/.build-id/xx/yyyy.debug (dbg/dbgsym
 * packages), .gnu_debuglink (next to the file, .debug/, /usr/lib/debug),
 * MiniDebugInfo (.gnu_debugdata).  Always 0 (no mapping: "[unknown]").
 */
int ds_symbols_lookup(struct ds_symbols *s, uint32_t pid, uint64_t ip, bool kernel,
		      struct ds_sym_info *out, char *buf, size_t len);
/* Last COMM seen for tid (or pid), "swapper" for tid 0, or NULL. */
const char *ds_symbols_comm(struct ds_symbols *s, uint32_t tid);
/* Parse a kallsyms-format text (exposed for tests): 0 or -errno.  Only a
 * regular file is read (-EISDIR, -EINVAL for a FIFO or socket); a
 * character device such as /dev/null means no kernel symbols (0).  Files
 * named by MMAP records are likewise opened without blocking and read only
 * when regular. */
int ds_symbols_load_kallsyms(struct ds_symbols *s, const char *path);
/* Kernel text start ("_text") from the loaded kallsyms, 0 if unknown. */
uint64_t ds_symbols_kernel_start(const struct ds_symbols *s);

/* Iterate a callchain in root->leaf order as symbol names (for callers
 * that build stacks): frames[] receives at most max names copied into
 * storage; returns the number of frames. */
struct ds_frames {
	char **names;
	size_t nr, cap;
	char *store;
	size_t store_len, store_cap;
};
void ds_frames_reset(struct ds_frames *f);
void ds_frames_free(struct ds_frames *f);
int ds_symbolize_chain(struct ds_symbols *s, uint32_t pid, const uint64_t *chain,
		       uint64_t nr, struct ds_frames *out);

/* ------------------------------------------------------------------ */
/* Aggregation: folded stacks, text report, SVG flame graph             */
/* ------------------------------------------------------------------ */

struct ds_fold;
int ds_fold_new(struct ds_fold **out);
void ds_fold_free(struct ds_fold *f);
/* Add count to the stack "comm;root;...;leaf" (frames root->leaf). */
int ds_fold_add(struct ds_fold *f, const char *comm, const struct ds_frames *frames,
		uint64_t count);
uint64_t ds_fold_total(const struct ds_fold *f);
/* Folded output, one "a;b;c count" per line, sorted by stack. */
int ds_fold_write(const struct ds_fold *f, FILE *out);
/* Top functions (self and total) and top stacks. */
int ds_fold_write_text(const struct ds_fold *f, FILE *out, size_t top);
/* Self-contained SVG flame graph. */
int ds_fold_write_svg(const struct ds_fold *f, FILE *out, const char *title);

/* ------------------------------------------------------------------ */
/* Profile: perf-report-like text, pprof                                */
/* ------------------------------------------------------------------ */

/*
 * Samples aggregated by (comm, pid, event, stack of locations); a location
 * is an ip with its function (name, object) and mapping, as
 * ds_symbols_lookup() resolves it.  Weights are periods (perf's overhead)
 * when the samples have them, else sample counts.
 */
struct ds_profile;
int ds_profile_new(struct ds_profile **out);
void ds_profile_free(struct ds_profile *p);
/* Add one sample: chain as the stitcher gives it (leaf first, context
 * markers); root_marker, when not NULL, is added as the outermost frame
 * (e.g. "[user stack not stitched]"). */
int ds_profile_add(struct ds_profile *p, struct ds_symbols *sym, const char *comm,
		   uint32_t pid, const char *event, const uint64_t *chain, uint64_t nr,
		   uint64_t period, const char *root_marker);
uint64_t ds_profile_samples(const struct ds_profile *p);

enum ds_sort_key {
	DS_SORT_COMM = 1,
	DS_SORT_PID,
	DS_SORT_DSO,
	DS_SORT_SYM,
};

enum ds_graph {
	DS_GRAPH_NONE = 0,
	DS_GRAPH_CALLER,	/* from the root (main) down to the function */
	DS_GRAPH_CALLEE,	/* from the function up to its callers */
};

struct ds_text_opts {
	size_t sz;			/* sizeof(struct ds_text_opts) */
	enum ds_sort_key keys[4];	/* row key; nr_keys 0: comm, dso, sym */
	size_t nr_keys;
	bool by_children;	/* order rows by inclusive, not self overhead */
	enum ds_graph graph;
	double graph_min;	/* hide call-graph branches below this % */
	size_t top;		/* rows, 0 = all */
};

/*
 * perf-report-like table: Children (inclusive) and Self overhead per row,
 * rows keyed by the sort keys; with a graph, each row with self overhead is
 * followed by its call graph (percentages of the total).
 */
int ds_profile_write_text(const struct ds_profile *p, FILE *out,
			  const struct ds_text_opts *opts);
/*
 * pprof's profile.proto, gzipped (what `go tool pprof`, Pyroscope, Parca and
 * Grafana read): sample types samples/count and the period (cpu/nanoseconds
 * for cpu-clock, the default), samples with comm and pid labels, a location
 * per ip with its function (name, object) and mapping (object, build-id).
 */
int ds_profile_write_pprof(const struct ds_profile *p, FILE *out);

#ifdef __cplusplus
}
#endif
#endif /* DEFERSTACK_H */
