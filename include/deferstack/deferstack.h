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

/* What libdeferstack.so exports (built with -fvisibility=hidden; the
 * versioned list is lib/libdeferstack.map). */
#ifndef DS_API
#define DS_API __attribute__((visibility("default")))
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
	DS_EV_USER_IP = 1u << 8,
};

/*
 * Structs the caller allocates and the library fills or reads (ds_event,
 * ds_ring, ds_sym_info, ds_frames, ds_writer_info, ds_attr, ds_build_id,
 * ds_pipeline_summary, and the options structs) begin with sz, the caller's
 * sizeof(struct ...), which it sets
 * before the call.  A caller built against an older, smaller struct keeps
 * working: the library neither reads nor writes a field beyond its sz (it
 * reads such fields as 0); fields of a newer, larger struct that the
 * library does not know are zeroed when it fills the struct, and must be 0
 * when it reads one (else -E2BIG).  sz smaller than the first fields the
 * call needs: -EINVAL.  An array of them (ds_attr, ds_build_id) has every
 * element's sz the same, its stride (another: -EINVAL).  Structs the
 * library allocates and hands out (ds_stitch_out, ds_stitch_stats, the
 * reader's ds_attr and ds_build_id, the frames of ds_symbols_frame_info())
 * carry the library's sz: a field at or past it is not there.
 */

/*
 * One parsed record.  Pointers point into the record bytes given to
 * ds_event_parse(); they are valid as long as those bytes are.  Set sz
 * before parsing into it: struct ds_event ev = { .sz = sizeof(ev) };
 */
struct ds_event {
	size_t sz;		/* sizeof(struct ds_event) */
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
	/* the user ip from PERF_SAMPLE_REGS_USER (ds_event_parse_attr) */
	uint64_t user_ip;
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
DS_API size_t ds_sample_id_size(uint64_t sample_type);

/*
 * Parse one record of rec_len bytes (rec_len == hdr->size).  sample_type is
 * the attr's; sample_id_all says whether non-sample records carry a
 * sample_id trailer.  Unknown record types parse to their header only.
 * Returns 0 or -EINVAL when a length or count does not fit the record.
 * Unsupported sample_type bits before CALLCHAIN (READ) give -EOPNOTSUPP.
 */
DS_API int ds_event_parse(const void *rec, size_t rec_len, uint64_t sample_type,
		   bool sample_id_all, struct ds_event *ev);

/*
 * The same with the whole attr: also reads the fields after the callchain
 * that need more than sample_type (RAW, BRANCH_STACK, REGS_USER) to find
 * the user ip of PERF_SAMPLE_REGS_USER (user_ip, DS_EV_USER_IP).
 */
DS_API int ds_event_parse_attr(const void *rec, size_t rec_len,
			       const struct perf_event_attr *attr, bool sample_id_all,
			       struct ds_event *ev);

/* Name of a record type ("SAMPLE", "CALLCHAIN_DEFERRED", ..., "UNKNOWN"). */
DS_API const char *ds_record_name(uint32_t type);

/*
 * Build a copy of sample ev with its callchain replaced by chain[nr] into
 * out (capacity out_cap bytes).  Returns the new record size or -ENOSPC /
 * -EINVAL (ev has no callchain, size over 65535).
 */
DS_API int ds_sample_set_callchain(const struct ds_event *ev, const uint64_t *chain,
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
	size_t sz;		/* sizeof(struct ds_ring), set before ds_ring_init() */
	volatile struct perf_event_mmap_page *page;
	uint8_t *data;
	uint64_t data_size;
	uint64_t head;		/* snapshot taken by ds_ring_begin() */
	uint64_t tail;		/* our read position */
	uint8_t *scratch;	/* >= max record size (65535) */
};

/* base/len: the mmap()ed area (1 + 2^n pages); page_size: system page. */
DS_API int ds_ring_init(struct ds_ring *r, void *base, size_t len, size_t page_size);
DS_API void ds_ring_destroy(struct ds_ring *r);
/* Snapshot data_head; returns the number of unread bytes. */
DS_API uint64_t ds_ring_begin(struct ds_ring *r);
/*
 * Next record in [tail, head): *rec points into the buffer or the scratch
 * copy, valid until the next call.  Returns 1 (got one), 0 (no more) or
 * -EINVAL (size 0, smaller than a header, or larger than what is there).
 * On -EINVAL the reader skips to head so the kernel can go on writing.
 */
DS_API int ds_ring_next(struct ds_ring *r, const struct perf_event_header **rec);
/* Publish data_tail = tail (release) so the kernel may reuse the space. */
DS_API void ds_ring_end(struct ds_ring *r);

/* ------------------------------------------------------------------ */
/* perf.data files                                                      */
/* ------------------------------------------------------------------ */

/* One object's build-id, as perf's HEADER_BUILD_ID feature holds them
 * (perf's BUILD_ID_SIZE: longer ids are cut to 20 bytes, as perf does). */
#define DS_BUILD_ID_MAX 20
struct ds_build_id {
	size_t sz;		/* sizeof(struct ds_build_id): in an array, every
				 * element's, the array's stride */
	int32_t pid;		/* -1: the host (what perf writes) */
	bool kernel;		/* the kernel or a module (misc KERNEL), else user */
	uint8_t size;		/* bytes of id (20 for a GNU sha1 build-id) */
	uint8_t id[DS_BUILD_ID_MAX];
	char *path;		/* the object's path, "[kernel.kallsyms]" */
};

/* The NT_GNU_BUILD_ID of an ELF file (regular files only, never blocks),
 * of the running kernel (/sys/kernel/notes), or in a buffer of ELF notes
 * (align 4 or 8): the id's length (at most cap bytes copied), -ENOENT
 * without one, -ENOEXEC not ELF, or another -errno. */
DS_API int ds_build_id_of_file(const char *path, uint8_t *id, size_t cap);
DS_API int ds_build_id_of_kernel(uint8_t *id, size_t cap);
/* The calling process's vDSO (the [vdso] mapping: an ELF image), in place:
 * 0 or -errno (-ENOENT: none). */
DS_API int ds_vdso_image(const void **image, size_t *len);
/* Write it to path (for ds_symbols_opts.vdso): 0 or -errno (no file left). */
DS_API int ds_vdso_save(const char *path);
/* Copy /tmp/perf-PID.map into dir/perf-PID.map (dir created if missing;
 * for ds_symbols_opts.perf_map_dir): 0 or -errno (-ENOENT: no map; a
 * failed copy is removed). */
DS_API int ds_perf_map_save(const char *dir, uint32_t pid);
DS_API int ds_build_id_from_notes(const void *notes, size_t len, size_t align, uint8_t *id,
			   size_t cap);
/* Lower-case hex of id into out (len >= 2 n + 1); returns out. */
DS_API char *ds_build_id_hex(const uint8_t *id, size_t n, char *out, size_t len);

struct ds_attr {
	size_t sz;			/* sizeof(struct ds_attr): in an array, every
					 * element's, the array's stride */
	struct perf_event_attr attr;	/* padded/truncated to our size */
	uint64_t *ids;
	size_t nr_ids;
	char *name;			/* from HEADER_EVENT_DESC, may be NULL */
};

/*
 * Reader of a PERFILE2 stream (little-endian): file mode (seekable) or
 * pipe mode (perf record -o -: attrs, names and build-ids arrive as
 * records; from a file or a pipe).  Opaque.
 */
struct ds_reader;

struct ds_reader_opts {
	size_t sz;		/* sizeof(struct ds_reader_opts) */
	char *errbuf;		/* on failure: a one-line reason naming the input */
	size_t errbuf_len;
};

/* Open and validate header, attrs, ids, event names, build-ids.  path must
 * be a regular file (a FIFO, directory or device is refused, never
 * waited on).  -EINVAL/-EIO/-EOPNOTSUPP/... with the reason in errbuf. */
DS_API int ds_reader_open(struct ds_reader **out, const char *path,
			  const struct ds_reader_opts *opts);
/* The same over an fd that may also be a pipe or socket (pipe mode only
 * there: a file-mode stream needs seeking); the reader owns fd (closes
 * it), also on failure; name is for messages. */
DS_API int ds_reader_open_fd(struct ds_reader **out, int fd, const char *name,
		      const struct ds_reader_opts *opts);
DS_API void ds_reader_close(struct ds_reader *r);
/*
 * Next record of the data.  Returns 1 with *rec (valid until the next
 * call), 0 at the end of data, or a negative errno (truncated record,
 * size 0/too small, size past the data section; ds_reader_error() says
 * which).  Pipe-mode attr, name and build-id records are taken in, not
 * returned.  PERF_RECORD_COMPRESSED(2) records (perf record -z) are not
 * returned either: the records their zstd data holds are, in order (a
 * record cut between two of them joined).  In an unfinished file or a
 * pipe-mode stream a cut last record is the end of data (0,
 * ds_reader_trailing() bytes), not an error.
 */
DS_API int ds_reader_next(struct ds_reader *r, const struct perf_event_header **rec);
/* The reason of the last error. */
DS_API const char *ds_reader_error(const struct ds_reader *r);
/* Attrs known so far (pipe mode: grows while reading). */
DS_API size_t ds_reader_nr_attrs(const struct ds_reader *r);
DS_API const struct ds_attr *ds_reader_attr(const struct ds_reader *r, size_t i);
/* HEADER_TRACING_DATA as recorded (perf's tracing data: the tracepoint
 * formats, for a writer to carry on), NULL if none. */
DS_API const void *ds_reader_tracing_data(const struct ds_reader *r, size_t *len);
/* HEADER_BUILD_ID: the objects' build-ids recorded in the file. */
DS_API const struct ds_build_id *ds_reader_build_ids(const struct ds_reader *r, size_t *nr);
/* The header says data size 0 and has no features: the writer never
 * finished (e.g. the recorder was killed); the data runs to the end. */
DS_API bool ds_reader_unfinished(const struct ds_reader *r);
DS_API bool ds_reader_pipe_mode(const struct ds_reader *r);
/* Bytes of a cut last record that ended the data. */
DS_API uint64_t ds_reader_trailing(const struct ds_reader *r);
/* Bytes of the data section missing from a file cut short (its header says
 * more than the file holds), 0 if none: the records are read up to the cut
 * (a cut last record ends the data), the features after the data (build-ids,
 * event names) are gone. */
DS_API uint64_t ds_reader_truncated(const struct ds_reader *r);
/* Data offset of the next record. */
DS_API uint64_t ds_reader_offset(const struct ds_reader *r);
/* The attr a record belongs to (by id, else the first attr; NULL before
 * any attr). */
DS_API const struct ds_attr *ds_reader_attr_of(const struct ds_reader *r,
					const struct perf_event_header *rec);
/* Index of that attr (ds_reader_attr()). */
DS_API size_t ds_reader_attr_index(const struct ds_reader *r,
				   const struct perf_event_header *rec);
/* The event's name: HEADER_EVENT_DESC's, else perf's name of a generic
 * hardware/software event, else "typeT/configC" written into buf. */
DS_API const char *ds_attr_name(const struct ds_attr *a, char *buf, size_t len);
/* Parse a record with the right attr. */
DS_API int ds_reader_parse(const struct ds_reader *r, const struct perf_event_header *rec,
		    struct ds_event *ev);

/* Optional header features written by ds_writer. */
struct ds_writer_info {
	size_t sz;		/* sizeof(struct ds_writer_info) */
	const char *hostname, *osrelease, *version, *arch;
	uint32_t nr_cpus_avail, nr_cpus_online;
	int argc;
	char *const *argv;
	/* HEADER_BUILD_ID: perf's build_id records, one per object */
	const struct ds_build_id *build_ids;
	size_t nr_build_ids;
};

/* Writer of a PERFILE2 file readable by upstream perf (>= 3.x); features
 * HOSTNAME/OSRELEASE/VERSION/ARCH/NRCPUS/CMDLINE/EVENT_DESC, BUILD_ID and
 * TRACING_DATA.
 * Opaque. */
struct ds_writer;

struct ds_writer_opts {
	size_t sz;		/* sizeof(struct ds_writer_opts) */
	/* pipe mode (perf record -o -): a 16-byte header, attrs as
	 * HEADER_ATTR + EVENT_UPDATE(name) records, build-ids as
	 * HEADER_BUILD_ID records at the end, never a seek: for pipes */
	bool pipe;
	/* perf's tracing data (the tracepoint formats, read from tracefs by
	 * the caller; perf needs it to read tracepoint events): written as
	 * the HEADER_TRACING_DATA feature, in pipe mode as a
	 * HEADER_TRACING_DATA record after the attrs.  Copied.  NULL: none. */
	const void *tracing_data;
	size_t tracing_data_len;
};

/*
 * Create path and write a header that says "not finished" (data size 0, no
 * features) with the attrs and ids, flushed, so that the file is readable
 * even if ds_writer_close() never runs; every round is flushed too.
 * attrs[i].ids are the event ids (PERF_EVENT_IOC_ID), attrs[i].name the
 * event name.  Copies everything.  opts NULL: file mode.
 */
DS_API int ds_writer_open(struct ds_writer **out, const char *path,
			  const struct ds_attr *attrs, size_t nr_attrs,
			  const struct ds_writer_opts *opts);
/* The same on an open fd (O_WRONLY; seekable unless opts->pipe); the
 * writer owns fd from now on, also on failure. */
DS_API int ds_writer_open_fd(struct ds_writer **out, int fd, const struct ds_attr *attrs,
		      size_t nr_attrs, const struct ds_writer_opts *opts);
/* Append one record (rec->size bytes) to the data section. */
DS_API int ds_writer_write(struct ds_writer *w, const struct perf_event_header *rec);
/* Append a PERF_RECORD_FINISHED_ROUND. */
DS_API int ds_writer_round(struct ds_writer *w);
/*
 * More ids for attr @attr (events opened after ds_writer_open(): a CPU that
 * came online), file mode: ds_writer_close() writes the attr's whole list
 * after the features and points the attr at it. Until then a reader maps
 * records of the new ids to the first attr, as any unknown id.  0, or
 * -EINVAL (no such attr), -EOPNOTSUPP (pipe mode: the attrs went out
 * first), -E2BIG, -ENOMEM.  (DEFERSTACK_0.5)
 */
DS_API int ds_writer_add_ids(struct ds_writer *w, size_t attr, const uint64_t *ids, size_t n);
/*
 * After a failed write (ENOSPC, EDQUOT, EFBIG ...), file mode: cut the file
 * back to the data flushed by the last successful ds_writer_round() (or the
 * header of ds_writer_open()), forget the error and go on writing there.
 * *dropped (may be NULL): the bytes of records dropped.  0 or -errno
 * (-ESPIPE in pipe mode).
 */
DS_API int ds_writer_rewind(struct ds_writer *w, uint64_t *dropped);
/* Write features + final header (pipe mode: build-id records), close, free.
 * Returns the first error seen (info with a bad sz: -EINVAL or -E2BIG, the
 * file closed without its features); a file whose features could not be
 * written is left as at its last round (header "not finished", whole
 * records). */
DS_API int ds_writer_close(struct ds_writer *w, const struct ds_writer_info *info);

/* ------------------------------------------------------------------ */
/* Time-ordered merge of per-CPU streams                                */
/* ------------------------------------------------------------------ */

/*
 * k-way merge of per-CPU streams by (time, cpu, arrival): a record not
 * older than the tail of its CPU's queue is appended (O(1), the normal
 * case); one binary min-heap holds the head of every non-empty queue and
 * every record that went back in time within its buffer, so each pop is
 * O(log(CPUs + late records)) and inputs that keep going back in time,
 * with or without rounds, stay O(n log n).  Equal times come out by cpu,
 * then in arrival order.  The smallest record is released when its time
 * is at or below the watermark set by ds_merge_round() (perf's
 * FINISHED_ROUND rule: a round is written after every pass over all
 * buffers, so everything up to the largest time seen before the previous
 * round is final), when more than max_pending records are queued (bounded
 * memory for streams without rounds), or after ds_merge_flush().
 */
struct ds_merge;

struct ds_merge_opts {
	size_t sz;		/* sizeof(struct ds_merge_opts) */
	size_t max_pending;	/* records queued at most before the oldest is
				 * released anyway; 0 = default (1M) */
};

/* opts NULL = defaults; -E2BIG: opts with fields this library does not
 * know set. */
DS_API int ds_merge_new(struct ds_merge **out, const struct ds_merge_opts *opts);
DS_API void ds_merge_free(struct ds_merge *m);
/* Records released after a later one (input older than a round promised). */
DS_API uint64_t ds_merge_out_of_order(const struct ds_merge *m);
/* Records queued. */
DS_API size_t ds_merge_pending(const struct ds_merge *m);
/* The time the record of the last successful ds_merge_pop() was pushed
 * with (valid until the next pop). */
DS_API uint64_t ds_merge_pop_time(const struct ds_merge *m);
/* Queue a copy of rec (with its parsed time/cpu; no time -> 0, cpu -> 0). */
DS_API int ds_merge_push(struct ds_merge *m, const struct perf_event_header *rec,
		  uint64_t time, uint32_t cpu);
/* A FINISHED_ROUND: raise the watermark to the previous round's max time. */
DS_API void ds_merge_round(struct ds_merge *m);
/* End of input: release everything. */
DS_API void ds_merge_flush(struct ds_merge *m);
/* Next released record (valid until the next pop), 1 = got, 0 = none yet. */
DS_API int ds_merge_pop(struct ds_merge *m, const struct perf_event_header **rec);

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
	size_t sz;		/* the library's sizeof(struct ds_stitch_out) */
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
	size_t sz;		/* the library's sizeof(struct ds_stitch_stats) */
	uint64_t records, samples, deferred, stitched, record_first, complete, nochain;
	uint64_t kernel_only, unm_cookie, unm_exit, unm_end, unm_overflow;
	uint64_t lost_events, lost_samples, lost_records, unknown, pending_peak;
};

struct ds_stitcher;

struct ds_stitch_opts {
	size_t sz;		/* sizeof(struct ds_stitch_opts) */
	/* samples waiting for their record, per task, before the oldest is
	 * emitted kernel-only (DS_UNM_OVERFLOW); 0 = default (65536) */
	size_t max_pending_per_task;
	ds_stitch_cb cb;	/* every output; may be NULL */
	void *cb_arg;
};

/* opts NULL = defaults (no callback); -E2BIG as ds_merge_new(). */
DS_API int ds_stitch_new(struct ds_stitcher **out, const struct ds_stitch_opts *opts);
DS_API void ds_stitch_free(struct ds_stitcher *s);
DS_API const struct ds_stitch_stats *ds_stitch_get_stats(const struct ds_stitcher *s);
/* Feed one parsed record, in time order. */
DS_API int ds_stitch_event(struct ds_stitcher *s, const struct ds_event *ev);
/* End of data: emit all pending samples kernel-only. */
DS_API int ds_stitch_finish(struct ds_stitcher *s);
/* Tasks the stitcher keeps state for (exited ones are forgotten). */
DS_API size_t ds_stitch_nr_tasks(const struct ds_stitcher *s);

/* ------------------------------------------------------------------ */
/* Symbolization                                                        */
/* ------------------------------------------------------------------ */

struct ds_symbols;

/* An object whose build-id on disk differs from the recorded one (or that
 * has none any more): path, recorded id, id on disk ("" if none), in hex.
 * Called once per object, when its first frame is resolved. */
typedef void (*ds_build_id_warn_fn)(void *arg, const char *path, const char *recorded,
				    const char *on_disk);

struct ds_symbols_opts {
	size_t sz;		/* sizeof(struct ds_symbols_opts) */
	const char *kallsyms;	/* kallsyms text, NULL: none */
	/* recorded build-ids (ds_reader's), copied: a user object whose file
	 * now has another build-id is not symbolized (its frames show as
	 * "[name+0xOFFSET]", the file offset) unless force_symbols */
	const struct ds_build_id *build_ids;
	size_t nr_build_ids;
	bool force_symbols;
	ds_build_id_warn_fn warn;
	void *warn_arg;
	/* the vDSO image to name [vdso] frames with (ds_vdso_save()'s file
	 * of the recording machine); NULL: /lib/modules/RELEASE/vdso/vdso64.so
	 * of the running kernel if it exists, else [vdso] stays one name */
	const char *vdso;
	/* where perf-PID.map files are (JIT code in anonymous mappings of
	 * process PID named by "START SIZE name" lines); NULL: /tmp */
	const char *perf_map_dir;
	/* perf's build-id cache, searched for an object whose file is gone or
	 * has another build-id than the recorded one (.build-id/XX/REST/elf,
	 * .build-id/XX/REST, .build-id/XX/REST.debug, PATH/BUILDID/elf, and the
	 * same with "debug"), and by libdwfl for debug files
	 * (.build-id/XX/REST.debug); NULL: $PERF_BUILDID_DIR, else
	 * $HOME/.debug, as perf; "": none */
	const char *buildid_dir;
	/* C++ functions: false (default) names them as perf does, without
	 * their parameter list and a template function's return type
	 * ("std::sort<It, Cmp>", "A::f"); true keeps __cxa_demangle's whole
	 * signature ("void std::sort<It, Cmp>(It, It, Cmp)", "A::f(int) const") */
	bool full_names;
};

/* Create with options (NULL: defaults).  -E2BIG: opts of a newer library
 * with fields this one does not know set. */
DS_API int ds_symbols_open(struct ds_symbols **out, const struct ds_symbols_opts *opts);
/* Create; kallsyms may be NULL (kernel frames stay addresses). */
DS_API int ds_symbols_new(struct ds_symbols **out, const char *kallsyms_path);
DS_API void ds_symbols_free(struct ds_symbols *s);
/* Track MMAP/MMAP2/COMM/FORK records (others are ignored). */
DS_API int ds_symbols_event(struct ds_symbols *s, const struct ds_event *ev);
/* Symbol name of a user ip of pid or a kernel ip (kernel = true), as
 * "func", "func" from kallsyms, "[dso+0xoff]", "[vdso]" or "[unknown]"
 * (ds_symbols_lookup()'s name).
 * Returned pointer valid until the next call with buf; uses buf[len]. */
DS_API const char *ds_symbols_resolve(struct ds_symbols *s, uint32_t pid, uint64_t ip,
			       bool kernel, char *buf, size_t len);
/* What the frames of a chain depend on besides its words: the generation
 * of pid's mappings (0: none seen; changes with every MMAP, exec and fork
 * record of pid), and of the kernel symbols (changes when kallsyms are
 * loaded again, and when the mapping generations wrap: a cache keyed by
 * generations is emptied when it changes).  The same words, pid and
 * generations resolve alike. */
DS_API uint32_t ds_symbols_user_gen(struct ds_symbols *s, uint32_t pid);
DS_API uint32_t ds_symbols_kernel_gen(const struct ds_symbols *s);
/* Start loading what resolving user address ip of pid will read first (a
 * cache miss when addresses are many): call it some work before. */
DS_API void ds_symbols_prefetch(const struct ds_symbols *s, uint32_t pid, uint64_t ip);
/* What an ip resolves to: a plain view filled by ds_symbols_lookup().
 * Pointers stay valid until ds_symbols_free() (name: until the next use of
 * the caller's buf when memory ran out). */
struct ds_sym_info {
	size_t sz;		/* sizeof(struct ds_sym_info), set before the lookup */
	const char *name;	/* to display: the symbol, "[dso+0xoff]" when the
				 * object has no symbol there (like perf) or is
				 * not symbolized (build-id mismatch), "[vdso]",
				 * "[kernel.kallsyms]" or "[unknown]" */
	const char *sym;	/* symbol (C++ demangled), NULL if none */
	uint64_t sym_off;	/* ip - symbol start */
	const char *dso;	/* mapped file's path, "[vdso]", "[kernel.kallsyms]";
				 * NULL when no mapping covers ip */
	const char *dso_short;	/* its base name */
	uint64_t dso_off;	/* user: file offset of ip (perf's map_ip);
				 * kernel: ip */
	uint64_t map_start, map_end, map_pgoff;	/* user mapping of ip */
	/* the object's build-id: the recorded one (ds_symbols_opts), else
	 * the file's, when read; at most DS_BUILD_ID_MAX bytes */
	const unsigned char *build_id;
	size_t build_id_len;
	bool kernel;
	bool mismatch;		/* the file's build-id is not the recorded one */
};

/*
 * Resolve ip of pid (kernel: through kallsyms) into out (out->sz set).  User ips are resolved
 * through the file the MMAP record mapped there and its debug file, found
 * by libdwfl: /usr/lib/debug/.build-id/xx/yyyy.debug (dbg/dbgsym
 * packages), .gnu_debuglink (next to the file, .debug/, /usr/lib/debug),
 * MiniDebugInfo (.gnu_debugdata).  An object whose build-id differs from
 * the recorded one is not symbolized (unless force_symbols).  0 (no
 * mapping: "[unknown]"), or -EINVAL when out->sz does not hold name.
 */
DS_API int ds_symbols_lookup(struct ds_symbols *s, uint32_t pid, uint64_t ip, bool kernel,
			     struct ds_sym_info *out, char *buf, size_t len);
/*
 * Frames: every address is resolved once.  What it resolves to is interned
 * as a frame with a dense id (0, 1, ...): user addresses per object and
 * file offset (two processes mapping one library share its frames), kernel
 * addresses per address, and one frame for "no mapping".  A user address
 * goes through its process's visible mappings (rebuilt after an MMAP, exec
 * or fork record) to the object's file offset -> frame table; an object's
 * symbols are read once.  ds_symbols_lookup() goes the same way.
 * ds_symbols_frame(): the frame of ip (0 or -ENOMEM);
 * ds_symbols_frame_get(): what frame id resolves to, into out (out->sz
 * set; its map fields are 0; strings valid until ds_symbols_free()): 0,
 * -ENOENT for an unknown id, -EINVAL when out->sz does not hold name;
 * ds_symbols_frame_info(): the same in a struct the library keeps (made at
 * the first call for id: not to be called from several threads at once),
 * or NULL for an unknown id or without memory.
 */
DS_API int ds_symbols_frame(struct ds_symbols *s, uint32_t pid, uint64_t ip, bool kernel,
			    uint32_t *id);
DS_API int ds_symbols_frame_get(const struct ds_symbols *s, uint32_t id,
				struct ds_sym_info *out);
DS_API const struct ds_sym_info *ds_symbols_frame_info(const struct ds_symbols *s,
							uint32_t id);
/* Last COMM seen for tid (or pid), "swapper" for tid 0, or NULL. */
DS_API const char *ds_symbols_comm(struct ds_symbols *s, uint32_t tid);
/* Parse a kallsyms-format text (exposed for tests): 0 or -errno.  Only a
 * regular file is read (-EISDIR, -EINVAL for a FIFO or socket); a
 * character device such as /dev/null means no kernel symbols (0).  Files
 * named by MMAP records are likewise opened without blocking and read only
 * when regular. */
DS_API int ds_symbols_load_kallsyms(struct ds_symbols *s, const char *path);
/* Kernel text start ("_text") from the loaded kallsyms, 0 if unknown. */
DS_API uint64_t ds_symbols_kernel_start(const struct ds_symbols *s);

/* Iterate a callchain in root->leaf order as symbol names (for callers
 * that build stacks): frames[] receives at most max names copied into
 * storage; returns the number of frames.  The caller zeroes it and sets sz
 * (struct ds_frames fr = { .sz = sizeof(fr) }); -EINVAL from
 * ds_symbolize_chain() and the ds_fold_add*() calls when sz is too small
 * (ds_frames_reset() and ds_frames_free() then do nothing). */
struct ds_frames {
	size_t sz;		/* sizeof(struct ds_frames) */
	char **names;
	size_t nr, cap;
	char *store;
	size_t store_len, store_cap;
};
DS_API void ds_frames_reset(struct ds_frames *f);
DS_API void ds_frames_free(struct ds_frames *f);
DS_API int ds_symbolize_chain(struct ds_symbols *s, uint32_t pid, const uint64_t *chain,
		       uint64_t nr, struct ds_frames *out);

/* ------------------------------------------------------------------ */
/* The read pipeline: reader -> time merge -> stitcher (-> symbols)     */
/* ------------------------------------------------------------------ */

/*
 * A recording read the way deferstack's own commands read it, in one
 * object: records from a perf.data file or stream (ds_reader), merged in
 * time order by rounds (ds_merge), deferred callchains stitched to their
 * samples (ds_stitcher), and with symbols the processes' mappings and
 * names tracked (ds_symbols) before each output reaches the callback.
 * Messages (an error's reason, warnings) name the input.  Opaque.
 */
struct ds_pipeline;

/* Something wrong with the input that does not stop reading it (a file cut
 * short or never finished, a cut last record, a kallsyms found but not
 * readable): one line, without a "warning: " prefix. */
typedef void (*ds_pipeline_warn_fn)(void *arg, const char *msg);

struct ds_pipeline_opts {
	size_t sz;		/* sizeof(struct ds_pipeline_opts) */
	/* every output in time order (DS_OUT_RECORD too); a negative return
	 * stops ds_pipeline_run(), which returns it (no message then: the
	 * callback knows why).  NULL: only the counts. */
	ds_stitch_cb cb;
	void *cb_arg;
	ds_pipeline_warn_fn warn;	/* NULL: warnings dropped */
	void *warn_arg;
	/* ds_stitch_opts.max_pending_per_task, ds_merge_opts.max_pending
	 * (0: their defaults) */
	size_t max_pending_per_task;
	size_t merge_max_pending;
	/* symbolize: ds_pipeline_symbols() for the callback's lookups (the
	 * fields below are ds_symbols_opts') */
	bool symbols;
	/* a kallsyms file that must be read (else ds_pipeline_open() fails);
	 * NULL: none, unless find_kallsyms: PATH.kallsyms beside the input
	 * (what deferstack record saves), else /proc/kallsyms, when readable
	 * (one found that cannot be read: a warning, no kernel symbols) */
	const char *kallsyms;
	bool find_kallsyms;
	/* vdso, perf_map_dir left NULL: PATH.vdso and PATH.perf-maps/ beside
	 * an input opened by path when they exist (deferstack record's) */
	bool side_files;
	const char *vdso;
	const char *perf_map_dir;
	const char *buildid_dir;
	bool force_symbols;
	bool full_names;
	ds_build_id_warn_fn build_id_warn;
	void *build_id_warn_arg;
};

/* The counts of a run (ds_pipeline_get_summary()): the stitcher's (as struct
 * ds_stitch_stats), the merge's and the input's. */
struct ds_pipeline_summary {
	size_t sz;		/* sizeof(struct ds_pipeline_summary), set by the caller */
	uint64_t records, samples, deferred, stitched, record_first, complete, nochain;
	uint64_t kernel_only, unm_cookie, unm_exit, unm_end, unm_overflow;
	uint64_t lost_events, lost_samples, lost_records, unknown, pending_peak;
	uint64_t out_of_order;	/* records later than a round promised */
	uint64_t truncated;	/* ds_reader_truncated(): data bytes missing */
	uint64_t trailing;	/* ds_reader_trailing(): a cut last record */
	bool unfinished;	/* ds_reader_unfinished() */
	bool pipe_mode;
};

/* Create with options (NULL: no callback, no symbols): 0, -ENOMEM, -E2BIG
 * (opts of a newer library with fields this one does not know set). */
DS_API int ds_pipeline_new(struct ds_pipeline **out, const struct ds_pipeline_opts *opts);
/* Open the input (a regular file; ds_pipeline_open_fd(): also a pipe, the
 * fd owned by the pipeline from now on, name for messages), warn about it,
 * set up symbols, merge and stitcher: 0 or -errno, ds_pipeline_error()
 * saying why.  One input per pipeline (another: -EBUSY). */
DS_API int ds_pipeline_open(struct ds_pipeline *p, const char *path);
DS_API int ds_pipeline_open_fd(struct ds_pipeline *p, int fd, const char *name);
/* Read the input to its end, every output to the callback, pending
 * samples emitted at the end: 0 or -errno (once per pipeline). */
DS_API int ds_pipeline_run(struct ds_pipeline *p);
/* The reason of the last failure, one line naming the input; "" when none
 * or when the callback's return stopped the run. */
DS_API const char *ds_pipeline_error(const struct ds_pipeline *p);
/* Counts so far (zeros before ds_pipeline_open()) into out (out->sz set):
 * 0, or -EINVAL for an sz too small. */
DS_API int ds_pipeline_get_summary(const struct ds_pipeline *p,
				   struct ds_pipeline_summary *out);
/* The pieces, for the callback: the input's reader (attrs, event names,
 * build-ids; NULL before an open succeeded) and the symbols (NULL without
 * opts.symbols). */
DS_API const struct ds_reader *ds_pipeline_reader(const struct ds_pipeline *p);
DS_API struct ds_symbols *ds_pipeline_symbols(const struct ds_pipeline *p);
/* The command name of a record's task (its tid's, else its pid's COMM),
 * "[unknown]" if none seen or without symbols. */
DS_API const char *ds_pipeline_comm(const struct ds_pipeline *p, const struct ds_event *ev);
DS_API void ds_pipeline_free(struct ds_pipeline *p);

/* ------------------------------------------------------------------ */
/* Aggregation: folded stacks, text report, SVG flame graph             */
/* ------------------------------------------------------------------ */

struct ds_fold;
DS_API int ds_fold_new(struct ds_fold **out);
DS_API void ds_fold_free(struct ds_fold *f);
/* Add count samples of weight count to the stack "comm;root;...;leaf"
 * (frames root->leaf). */
DS_API int ds_fold_add(struct ds_fold *f, const char *comm, const struct ds_frames *frames,
		uint64_t count);
/* The same with a weight other than the number of samples (their periods:
 * a profile weighted like perf report's). */
DS_API int ds_fold_add_weighted(struct ds_fold *f, const char *comm,
				const struct ds_frames *frames, uint64_t samples,
				uint64_t weight);
/* The same from a callchain as recorded (leaf first, context markers),
 * symbolized through s like ds_symbolize_chain(), faster: each frame's name
 * is looked at once (ds_symbols_frame()), stacks are kept as arrays of
 * name ids.  One fold takes frames of one ds_symbols only (another:
 * -EINVAL).  0, -ENOMEM, -EINVAL/-E2BIG (a bad sz). */
struct ds_fold_chain_opts {
	size_t sz;		/* sizeof(struct ds_fold_chain_opts) */
	const char *comm;	/* the stack's first frame */
	uint32_t pid;
	const uint64_t *chain;	/* as recorded or stitched, nr words */
	uint64_t nr;
	const char *root;	/* a frame put under the chain (e.g. "[user stack
				 * not stitched]"), or NULL */
	uint64_t samples;	/* samples added */
	uint64_t weight;	/* their weight (periods), or samples */
};
DS_API int ds_fold_add_chain_opts(struct ds_fold *f, struct ds_symbols *s,
				  const struct ds_fold_chain_opts *o);
/* Deprecated (kept as a thin wrapper until 1.0): ds_fold_add_chain_opts()
 * with its fields as 9 positional arguments. */
DS_API int ds_fold_add_chain(struct ds_fold *f, struct ds_symbols *s, const char *comm,
			     uint32_t pid, const uint64_t *chain, uint64_t nr,
			     const char *root, uint64_t samples, uint64_t weight);
/* Total weight, and number of samples, added. */
DS_API uint64_t ds_fold_total(const struct ds_fold *f);
DS_API uint64_t ds_fold_samples(const struct ds_fold *f);
/* Folded output, one "a;b;c count" per line, sorted by stack. */
DS_API int ds_fold_write(const struct ds_fold *f, FILE *out);
/* Self-contained interactive SVG flame graph (search, click-to-zoom): box
 * widths by weight, titles with sample counts and shares. */
DS_API int ds_fold_write_svg(const struct ds_fold *f, FILE *out, const char *title);

/* ------------------------------------------------------------------ */
/* Profile: perf-report-like text, pprof                                */
/* ------------------------------------------------------------------ */

/*
 * Samples aggregated by (comm, pid, event, stack of locations); a location
 * is an ip with its function (name, object) and mapping, as
 * ds_symbols_lookup() resolves it.  Weights are periods (perf's overhead)
 * when the samples have them, else sample counts.  Opaque.
 */
struct ds_profile;
DS_API int ds_profile_new(struct ds_profile **out);
DS_API void ds_profile_free(struct ds_profile *p);
/* Deprecated (kept as a thin wrapper until 1.0): ds_profile_add_sample()
 * with its fields as 9 positional arguments.  Add one sample: chain as the
 * stitcher gives it (leaf first, context markers); root_marker, when not
 * NULL, is added as the outermost frame (e.g. "[user stack not stitched]"). */
DS_API int ds_profile_add(struct ds_profile *p, struct ds_symbols *sym, const char *comm,
			  uint32_t pid, const char *event, const uint64_t *chain, uint64_t nr,
			  uint64_t period, const char *root_marker);
/* One sample for ds_profile_add_sample() (ds_profile_add()'s options
 * struct): its arguments and the CPU it ran on (a pprof label). */
struct ds_profile_sample {
	size_t sz;		/* sizeof(struct ds_profile_sample) */
	const char *comm;
	uint32_t pid;
	int32_t cpu;		/* -1: not known (no cpu label) */
	const char *event;
	const uint64_t *chain;
	uint64_t nr;
	uint64_t period;
	const char *root_marker;
};
DS_API int ds_profile_add_sample(struct ds_profile *p, struct ds_symbols *sym,
				 const struct ds_profile_sample *s);
DS_API uint64_t ds_profile_samples(const struct ds_profile *p);

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
 * followed by its call graph (percentages of the total).  opts NULL: the
 * defaults (comm,dso,sym, by self, no graph, all rows); -E2BIG as
 * ds_merge_new().
 */
DS_API int ds_profile_write_text(const struct ds_profile *p, FILE *out,
				 const struct ds_text_opts *opts);
/*
 * pprof's profile.proto, gzipped (what `go tool pprof`, Pyroscope, Parca and
 * Grafana read): sample types samples/count and the period (cpu/nanoseconds
 * for cpu-clock, the default), samples with comm and pid labels (and cpu
 * when added with one), a location
 * per ip with its function (name, object) and mapping (object, build-id).
 */
DS_API int ds_profile_write_pprof(const struct ds_profile *p, FILE *out);

/* What a profile of a window carries besides its samples, for servers that
 * merge the profiles of many machines and times. */
struct ds_pprof_opts {
	size_t sz;			/* sizeof(struct ds_pprof_opts) */
	int64_t time_nanos;		/* start, ns since the epoch (0: none) */
	int64_t duration_nanos;
	const char *const *labels;	/* nr_labels (key, value) pairs: string */
	size_t nr_labels;		/* labels of every sample */
	const char *const *comments;	/* the profile's comments */
	size_t nr_comments;
};
/* ds_profile_write_pprof() with o's time, labels and comments (o NULL:
 * none).  -EINVAL: a bad sz. */
DS_API int ds_profile_write_pprof_opts(const struct ds_profile *p, FILE *out,
				       const struct ds_pprof_opts *o);

#ifdef __cplusplus
}
#endif
#endif /* DEFERSTACK_H */
