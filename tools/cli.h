/* SPDX-License-Identifier: MIT */
/* deferstack CLI internals. */
#ifndef DEFERSTACK_CLI_H
#define DEFERSTACK_CLI_H

#include "deferstack/deferstack.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The CLI is built on the public headers only (include/deferstack/; the
 * Makefile compiles tools/ without -Ilib), as any user of libdeferstack.so
 * is; the state-free helpers it shares with the library come by path.
 */
#include "../lib/helpers.h"

#define PROG "deferstack"
/* the Makefile's VERSION (-DDS_VERSION) */
#ifndef DS_VERSION
#define DS_VERSION "unknown"
#endif

/* Write failures as errors, not deaths: ignore SIGXFSZ (and SIGPIPE when
 * pipe is set) so that write() fails with EFBIG (EPIPE) and the caller
 * removes its temp file, stops its command and says so.  The dispositions
 * found at start are kept for restore_write_signals(), which a child calls
 * before exec so the command runs with what deferstack was given. */
void ignore_write_signals(bool pipe);
void restore_write_signals(void);

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_script(int argc, char **argv);
int cmd_convert(int argc, char **argv);

/* tools/pipeline.c: the library's read pipeline (ds_pipeline) as the
 * commands run it ------------------------------------------------- */

/* Read IN ("-": standard input, pipe mode) through a new ds_pipeline with
 * o (its warnings and build-id warnings printed here, side files found
 * beside IN): *pp is set before any output reaches o->cb (the callback's
 * view of the reader and symbols) and is freed by the caller
 * (ds_pipeline_free(), also on failure).  0 or -errno, said unless the
 * callback stopped it. */
int pipeline_run(struct ds_pipeline **pp, const char *in, struct ds_pipeline_opts *o);
void print_summary(FILE *out, const struct ds_pipeline_summary *st);
/* The counts of a pipeline (zeros if it never ran or p is NULL). */
struct ds_pipeline_summary pipeline_stats(const struct ds_pipeline *p);
void print_pipeline_summary(FILE *out, const struct ds_pipeline *p);
/* The exit status of a read that succeeded (issue 23): 0 if IN was read
 * whole; 1 if it was incomplete (a data section cut short, a recording that
 * was not finished, a last record cut off: read as far as it goes, like
 * perf script, which exits non-zero on a cut file), said in one closing
 * line after the output and the summary. */
int input_status(const char *in, const struct ds_pipeline_summary *st);
/* The name of a record's event (ds_attr_name(), buf may be used), or
 * "unknown" before any attr. */
const char *pipeline_event(const struct ds_pipeline *p, const struct perf_event_header *rec,
			   char *buf, size_t len);

/* tools/report-opts.c ----------------------------------------------- */

/* the values of a --comm, --pid or --dso list */
#define MAX_FILTER 64
void usage_report(FILE *f);
/* the option of an output mode ('t', 'f', 's', 'P'): "text", ... */
const char *out_name(int mode);
/* Split a comma-separated option value in place into out[*n...] (at most
 * MAX_FILTER in all): 0, or -1 (said why). */
int split_list(char *s, const char *opt, const char **out, size_t *n);
/* --sort KEYS, -g MODE[,MIN], --pid PIDS: 0, or -1 (said why). */
int parse_sort(char *s, struct ds_text_opts *to);
int parse_graph(const char *s, struct ds_text_opts *to);
int parse_pids(char *s, uint32_t *pids, size_t *nr);

/* tools/report.c ---------------------------------------------------- */

/* IN's profile as report --pprof writes it (the first event with samples)
 * into OUT (a temp file renamed into place), with po's window time, labels
 * and comments: 0 or -errno (said). */
int report_pprof(const char *in, const char *out, const struct ds_pprof_opts *po);

/* tools/stitch-file.c ----------------------------------------------- */

/* Stitch IN into a classic-callchain perf.data OUT (convert, record
 * --stitched), stats in *st; "-": standard input / output, pipe mode. */
int convert_file(const char *in, const char *out, struct ds_pipeline_summary *st);

/* tools/util.c ------------------------------------------------------ */

/* print "deferstack: <msg>" on stderr */
void die_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* perf's rule: a non-empty regular OUT becomes OUT.old (its OUT.kallsyms
 * becomes OUT.old.kallsyms).  0 or -errno (with a message). */
int rotate_old(const char *out);
/* record's side data (tools/sidedata.c): FILE.vdso, FILE.perf-maps/.
 * side_note_mmap(): an MMAP/MMAP2 record written (0 or -ENOMEM);
 * side_save(sd, out): at the end, FILE.vdso and the perf maps of the
 * processes that mapped anonymous memory (notes for what cannot be saved;
 * 0); sd is emptied;
 * side_rotate(out, old): out's side data becomes old's (old NULL: removed),
 * for rotate_old() (0 or -errno, said). */
struct side_data {
	uint32_t *pids;		/* the processes that mapped anonymous memory */
	size_t n, cap;
};
int side_note_mmap(struct side_data *sd, const struct perf_event_header *h,
		   uint64_t sample_type);
int side_save(struct side_data *sd, const char *out);
int side_rotate(const char *out, const char *old);
/* 1 if path is "-" or an existing file that is not a regular file (a
 * device such as /dev/null, a FIFO): written as a stream, not read back,
 * no side files. */
int is_special(const char *path);
/* 1 if a and b exist and are the same file (st_dev, st_ino). */
int same_file(const char *a, const char *b);

/* An output written to a temp file in its directory, renamed into place by
 * outfile_commit(); devices, FIFOs and symlinks are written directly. */
struct outfile {
	const char *path;
	bool direct;
	char tmp[PATH_MAX];
};
/* fd to write (O_CLOEXEC) or -errno, with a message. */
int outfile_create(struct outfile *of, const char *path);
int outfile_commit(struct outfile *of);
void outfile_abort(struct outfile *of);

/* ds_stream_err(stdout), with "writing standard output: ..." */
int finish_stdout(void);

/* Strict option values (digits only, range-checked), message on error. */
int parse_ulong(const char *opt, const char *s, unsigned long min, unsigned long max,
		unsigned long *out);
int parse_seconds(const char *opt, const char *s, double max, double *out);

#endif
