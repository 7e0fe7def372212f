/* SPDX-License-Identifier: MIT */
/*
 * deferstack record internals, shared by its files:
 *   record.c         the top-level flow, the command record runs
 *   record-opts.c    options (usage, parsing)
 *   record-windows.c --switch-output: windows, their names and retention
 *   record-pprof.c   --pprof-dir: a pprof profile of each closed window
 *   record-events.c  event attrs, the defer probe, opening events and rings
 *   record-drain.c   the output file: draining the rings into it
 *   record-synth.c   side data: existing processes, build-ids, kallsyms
 *   record-evparse.c the -e syntax: perf's event names, tracepoints
 *   record-tracing.c the tracepoints' formats, which perf needs
 */
#ifndef DEFERSTACK_RECORD_H
#define DEFERSTACK_RECORD_H

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

#include "cli.h"
#include "tab.h"

enum { MODE_AUTO, MODE_DEFER, MODE_CLASSIC };
/* --switch-output: none, on SIGUSR2/SIGHUP only, every TIME, every SIZE */
enum { SW_NONE, SW_SIGNAL, SW_TIME, SW_SIZE };

#define SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
		     PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | \
		     PERF_SAMPLE_CALLCHAIN)

/* One event of -e (perf's syntax, tools/record-evparse.c): what
 * perf_event_open gets for it and its name in the file. */
struct rec_event {
	uint32_t type;		/* PERF_TYPE_HARDWARE, _SOFTWARE, _TRACEPOINT */
	uint64_t config;	/* tracepoints: the id from tracefs */
	bool excl_user;		/* :k */
	bool excl_kernel;	/* :u */
	/* every occurrence unless -F or -c is given: tracepoints and
	 * context switches, where a frequency means nothing */
	bool every;
	char name[128];		/* without the modifier */
};

struct ropts {
	const char *out;
	struct rec_event *ev;	/* -e, in order (default cpu-clock) */
	size_t nr_ev;
	unsigned long freq;
	bool freq_set;		/* -F given */
	unsigned long period;	/* -c: every Nth event; 0: -F frequency */
	int mode;
	bool all, stitched;
	bool user_only;		/* exclude_kernel: kernel sampling not allowed */
	pid_t pid;
	char **cmd;
	double duration;
	unsigned long pages;
	int switch_mode;	/* SW_* */
	double switch_secs;	/* SW_TIME */
	uint64_t switch_bytes;	/* SW_SIZE */
	unsigned long keep;	/* --keep N: 0 all */
	uint64_t max_size;	/* --max-size: 0 no limit */
	const char *pprof_dir;	/* --pprof-dir: a profile per window there */
};

struct cpu_buf {
	int cpu;
	int fd;			/* the mmapped sampling event */
	void *map;
	size_t map_len;
	struct ds_ring ring;
	/* -a: the CPU is offline, its events closed; its events are
	 * r->fds[fd_first, fd_end) while it is online */
	bool offline;
	size_t fd_first, fd_end;
};

struct ksym_cache;

struct rec {
	struct ropts o;
	struct side_data side;	/* FILE.vdso and FILE.perf-maps/, saved at the end */
	struct cpu_buf *bufs;
	size_t nr_bufs;
	int *fds;		/* every event fd */
	size_t nr_fds, cap_fds;
	/* the kernel's ids of each attr's fds: [0, nr_ev) the sampling
	 * events, [nr_ev] the tracking event */
	struct rec_ids {
		uint64_t *v;
		size_t n, cap;
	} *ids;
	struct ds_writer *w;
	const char *path;	/* what w writes */
	int werr;		/* first write error */
	bool werr_said;		/* ... and its one line printed */
	uint64_t nr_samples, nr_deferred, nr_lost, nr_records, bytes;
	bool defer;
	pid_t child;
	int go_pipe[2];		/* parent -> child: go and exec */
	int exec_pipe[2];	/* child -> parent: errno of a failed exec */
	int exec_errno;		/* the command could not be run */
	bool reaped;		/* status below is the command's */
	int status;
	struct tab objs;	/* paths of the mapped files (char *), by hash */
	/* --switch-output: each process's executable mappings as recorded
	 * (pid -> struct pmaps, tools/record-maps.c), their paths interned;
	 * processes whose maps neither /proc nor these gave, and whether
	 * that was said */
	struct tab maps, maps_paths;
	/* --switch-output: the kernel's own text symbols of the last read of
	 * /proc/kallsyms (tools/record-synth.c) */
	struct ksym_cache *kc;
	unsigned long kallsyms_reads;	/* of /proc/kallsyms, whole */
	unsigned long maps_unread;
	bool maps_said;
	struct tab kips;	/* sampled kernel addresses (a set) */
	/* --switch-output (tools/record-windows.c): the current window,
	 * objs, kips and side hold its own objects and addresses */
	int ncpu, argc;		/* for the header of each window */
	char **argv;
	char win_path[PATH_MAX];
	char win_ts[32];	/* its timestamp: the next one must be later */
	double win_t0;		/* when it started (CLOCK_MONOTONIC) */
	int64_t win_real0;	/* ... in ns of CLOCK_REALTIME (its pprof's time) */
	pid_t pprof_pid;	/* the process writing the last window's pprof */
	char pprof_out[PATH_MAX];	/* ... into this file */
	uint64_t win_bytes0, win_samples0, win_deferred0, win_lost0;
	unsigned long nr_windows;
	/* defer mode: the tasks whose last sample of the window waits for
	 * its deferred record (tid -> cookie); the previous window stays
	 * open for the records of its waiting samples for a while */
	struct tab pend;
	struct tab done;	/* tid -> cookie of its last record */
	/* a window switch: between its slow steps (build-ids, kallsyms,
	 * side files, the next window's maps) the rings are read into this
	 * spool (switch_drain()), written to the next window once it is
	 * open (spool_replay()): no ring waits for the switch */
	struct rec_spool {
		uint8_t *buf;
		size_t len, cap;
	} spool;
	bool spooling;
	/* test hooks (tests/cli/check-winrobust.sh): DEFERSTACK_TEST_SWITCH_DELAY
	 * seconds of extra work in each switch, DEFERSTACK_TEST_SWITCH_NODRAIN
	 * no spool (the rings wait, as before); DEFERSTACK_TEST_KALLSYMS_READS
	 * (tests/guest/windows_defer.sh): the whole reads of /proc/kallsyms
	 * said with the summary */
	double test_delay;
	bool test_nodrain;
	/* a full disk (ENOSPC, EDQUOT): the counters at the last round
	 * written (what ds_writer_rewind() goes back to), records dropped
	 * that way, and a pause (no window open) until space is free */
	struct rec_count {
		uint64_t samples, deferred, lost, records, bytes;
	} at_round;
	uint64_t nr_dropped;
	bool paused;
	double pause_check;	/* when free space is looked at next */
	double pause_wait;	/* ... seconds after the last look */
	double resumed_at;	/* the last resume */
	bool resuming;
	uint64_t paused_samples;	/* read and not written while paused */
	unsigned long nr_pauses;
	struct rec_prev {
		struct ds_writer *w;	/* NULL: none open */
		char path[PATH_MAX];
		struct tab objs, pend;
		double until;		/* closed then at the latest */
		int64_t real0, real1;	/* its start and end (CLOCK_REALTIME ns) */
		uint64_t samples, deferred, lost, bytes;
	} prev;
};

/* tools/record-opts.c ----------------------------------------------- */

void usage_record(FILE *f);
/* 0, 1 for --help (printed), -1 (said why) */
int parse_record_opts(int argc, char **argv, struct ropts *o);
/* SIZE: a number and B, K, M or G (perf's units): 0 or -EINVAL (said). */
int parse_size(const char *opt, const char *s, uint64_t *out);

/* tools/record-windows.c -------------------------------------------- */

/* Seconds of CLOCK_MONOTONIC. */
double now_s(void);
/* Open the first window (FILE.<timestamp>) with its side records. */
int window_open(struct rec *r);
/* Is a new window due (time, size, or asked for by a signal)? */
bool window_due(const struct rec *r, double now, bool asked);
/* Close the current window (readable, side files, retention), open the
 * next one: 0 or -errno (said). */
int window_switch(struct rec *r);
/* Defer mode: a sample or deferred record about to be written: 1 it
 * went to the previous window (its sample's), 0 write it, or -errno. */
int window_note(struct rec *r, const struct perf_event_header *h);
/* Close the previous window once its samples have their records or its
 * time is up: 0 or -errno. */
int window_tick(struct rec *r, double now);
/* A full disk (err ENOSPC or EDQUOT while windows are written): the
 * windows open go back to their last round; the oldest window is removed
 * to make room (--keep, --max-size), else recording pauses (one message)
 * until space is free.  0 (recording goes on), or err. */
int window_full(struct rec *r, int err);
/* Paused: open a new window once space is free again: 0 or -errno. */
int window_resume(struct rec *r, double now);
/* Close the last window (err: the recording failed: no side files). */
int window_finish(struct rec *r, int err);
/* The closing lines: windows written, samples in all. */
void window_summary(const struct rec *r);

/* tools/record-pprof.c ---------------------------------------------- */

/* --pprof-dir: create DIR if missing: 0 or -errno (said). */
int pprof_dir_check(const char *dir);
/* Write DIR/<window>.pb.gz of the closed window path (t0, t1: its start
 * and end, ns since the epoch) in a child process, after the previous
 * one is done; a failure is said once (by the child) and recording goes
 * on. */
void pprof_window(struct rec *r, const char *path, int64_t t0, int64_t t1);
/* Wait for the last window's pprof. */
void pprof_wait(struct rec *r);
/* DIR/<name>.pb.gz of a window name: 0, or -ENAMETOOLONG. */
int pprof_path(const struct rec *r, const char *name, char *buf, size_t len);
/* ns of CLOCK_REALTIME */
int64_t real_ns(void);

/* tools/record-evparse.c -------------------------------------------- */

/* Add the events of one -e ARG (comma-separated): 0, or -1 with a
 * message naming the event that is refused. */
int parse_events(struct ropts *o, const char *arg);
/* The event's name in the file: NAME, NAME:u or NAME:k. */
const char *event_name(const struct ropts *o, const struct rec_event *ev, char *buf,
		       size_t len);

/* Where tracefs is mounted (its events/ directory exists), or NULL. */
const char *tracefs_dir(void);

/* tools/record-tracing.c -------------------------------------------- */

/* perf's tracing data for the tracepoint events of o (*out malloc'ed;
 * NULL without any): 0 or -errno (said so). */
int tracing_data(const struct ropts *o, char **out, size_t *len);

/* tools/record-events.c --------------------------------------------- */

/* The sampling attr of ev (s), or with ev NULL the side-band tracking
 * attr. */
void make_attr(struct perf_event_attr *a, const struct ropts *o, const struct rec_event *ev,
	       bool defer, bool task, bool on_exec);
/* The tracking event's first id (the id of synthesized records). */
uint64_t tracking_id(const struct rec *r);
/* The one line for a failed perf_event_open (o and ev may be NULL); an
 * event the machine does not have (ENOENT, EOPNOTSUPP) is said so by name:
 * "cycles: no hardware PMU on this machine". */
void open_error(int err, const struct ropts *o, const struct rec_event *ev, pid_t pid,
		int cpu);
/* The user's events, without defer bits, on this task; falls back to user
 * space only when the kernel is not allowed.  0 or -errno (said so). */
int check_attrs(struct ropts *o);
/* 1 the kernel knows defer_callchain, 0 not, <0 -errno of the probe. */
int probe_defer(bool user_only);
/* The online CPUs into *out (malloc'ed): their number or -ENOMEM. */
int online_cpus(int **out);
/* The same for the present CPUs (online or not: -a follows hotplug). */
int present_cpus(int **out);
/* -a: mark the buffers of the CPUs that are offline now: 0 or -errno. */
int mark_offline(struct rec *r);
/* -a: close the events of the CPUs that went offline (their rings read
 * first by the caller), open those of the CPUs that came online and add
 * their ids to the recording. 0 or -errno (a write error). */
int follow_cpus(struct rec *r);
/* Open the events of the target (the command, each thread of -p PID, or
 * all) on each CPU of r->bufs, with the CPU's ring buffer: 0 or -errno. */
int open_events(struct rec *r);
/* Unmap the rings, close the events, free their ids. */
void close_events(struct rec *r);

/* tools/record-drain.c ---------------------------------------------- */

/* Open r->w on path ("-": standard output, pipe mode) with the attrs of
 * the opened events: 0 or -errno (said so). */
int open_output(struct rec *r, const char *path, bool task);
/* Write the header features and close r->w: 0 or -errno (remembered for
 * say_werr()). */
int close_output(struct rec *r, int ncpu, int argc, char **argv);
/* Remember the first write error and return err. */
int write_err(struct rec *r, int err);
/* Print the first write error once; then: what becomes of the command. */
void say_werr(struct rec *r, const char *then);
/* Write one record (counted, its objects and kernel addresses noted). */
int write_rec(struct rec *r, const struct perf_event_header *h);
/* Drain every ring once (paused: read and counted, not written). */
int read_all(struct rec *r);
/* A FINISHED_ROUND (flushed); the counters remembered for a rewind. */
int write_round(struct rec *r);
/* The counters now (at the start of a window: its rewind point). */
void note_round(struct rec *r);
/* During a window switch (r->spooling): read every ring into r->spool
 * (up to SPOOL_MAX bytes; beyond, the records wait in the rings). */
void switch_drain(struct rec *r);
/* Write the spooled records to the (new) current window, empty it. */
int spool_replay(struct rec *r);

/* tools/record-synth.c ---------------------------------------------- */

/* The side records of a new file: the kernel's MMAP, the target's
 * processes (every process with -a or all). */
int synth_start(struct rec *r, bool all);
/* One MMAP (kernel) or MMAP2 record of [start, end) at pgoff of path. */
int synth_mmap(struct rec *r, pid_t pid, uint64_t start, uint64_t end, uint64_t pgoff,
	       const char *path, bool kernel);
/* tools/record-maps.c: note what a record written says of a process's
 * mappings (MMAP, COMM exec, FORK, EXIT; windows only); synthesize the
 * mappings noted for pid (*found: there were some); free them all. */
int maps_note(struct rec *r, const struct perf_event_header *h);
int maps_synth(struct rec *r, pid_t pid, bool *found);
/* One mapping noted, with the time of its record (0: from /proc). */
struct pmap {
	uint64_t start, len, pgoff, time;
	const char *path;	/* interned in r->maps_paths */
};
/* The mappings noted for pid now (*n of them, in no order). */
const struct pmap *maps_of(const struct rec *r, uint32_t pid, size_t *n);
void maps_free(struct rec *r);
void kallsyms_cache_free(struct rec *r);
/* The kernel MMAP record perf needs (nothing if _text is hidden). */
int synth_kernel(struct rec *r);
/* COMM and executable mappings of an existing process / of all. */
int synth_process(struct rec *r, pid_t pid);
int synth_all(struct rec *r);
/* Remember a user MMAP's file / a sample's kernel addresses. */
int note_object(struct rec *r, const struct perf_event_header *h);
int note_kernel_ips(struct rec *r, const struct perf_event_header *h);
/* The build-ids of the kernel and of the noted files (*out malloc'ed). */
size_t collect_build_ids(struct rec *r, struct ds_build_id **out);
/* OUT.kallsyms: the kernel symbols of the sampled addresses. */
int save_kallsyms(struct rec *r, const char *out);

#endif
