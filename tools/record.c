// SPDX-License-Identifier: MIT
/* deferstack record: perf_event_open, mmap ring buffers, poll loop. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "hash.h"

enum { MODE_AUTO, MODE_DEFER, MODE_CLASSIC };

#define SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
		     PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | \
		     PERF_SAMPLE_CALLCHAIN)

/* What record samples: on-CPU time, or context switches (off-CPU). */
enum rec_event { EV_CPU_CLOCK, EV_CONTEXT_SWITCHES };

struct ropts {
	const char *out;
	enum rec_event event;
	unsigned long freq;
	unsigned long period;	/* -c: every Nth event; 0: -F frequency */
	int mode;
	bool all, stitched;
	bool user_only;		/* exclude_kernel: kernel sampling not allowed */
	pid_t pid;
	char **cmd;
	double duration;
	unsigned long pages;
};

struct cpu_buf {
	int cpu;
	int fd;			/* the mmapped sampling event */
	void *map;
	size_t map_len;
	struct ds_ring ring;
};

struct rec {
	struct ropts o;
	struct cpu_buf *bufs;
	size_t nr_bufs;
	int *fds;		/* every event fd */
	size_t nr_fds, cap_fds;
	uint64_t *ids[2];	/* [0] sampling, [1] tracking */
	size_t nr_ids[2], cap_ids[2];
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
	struct ds_htab objs;	/* paths of the mapped files (char *), by hash */
	struct ds_htab kips;	/* sampled kernel addresses (a set) */
};

/* the signal (SIGINT, SIGTERM, SIGHUP) that asked the recording to stop;
 * the handler only sets it, the loop in do_record() acts on it */
static volatile sig_atomic_t stop_req;

static void on_signal(int sig)
{
	stop_req = sig;
}

static int perf_open(struct perf_event_attr *a, pid_t pid, int cpu, int group)
{
	return (int)syscall(SYS_perf_event_open, a, pid, cpu, group, PERF_FLAG_FD_CLOEXEC);
}

static void make_attrs(struct perf_event_attr *s, struct perf_event_attr *t,
		       const struct ropts *o, bool defer, bool task, bool on_exec)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	s->type = PERF_TYPE_SOFTWARE;
	s->config = o->event == EV_CONTEXT_SWITCHES ? PERF_COUNT_SW_CONTEXT_SWITCHES
						     : PERF_COUNT_SW_CPU_CLOCK;
	if (o->period) {
		s->sample_period = o->period;
	} else {
		s->freq = 1;
		s->sample_freq = o->freq;
	}
	s->sample_type = SAMPLE_TYPE;
	s->sample_id_all = 1;
	s->disabled = 1;
	s->inherit = task;
	s->enable_on_exec = on_exec;
	s->watermark = 1;
	s->exclude_kernel = o->user_only;
	s->exclude_hv = o->user_only;
	s->wakeup_watermark = (uint32_t)(o->pages * (unsigned long)getpagesize() / 4);
	*t = *s;
	t->config = PERF_COUNT_SW_DUMMY;
	t->freq = 0;
	t->sample_period = 1;
	t->mmap = 1;
	t->mmap2 = 1;
	t->comm = 1;
	t->comm_exec = 1;
	t->task = 1;
	if (defer) {
		/* the way perf 7.x does it: markers on the sampling events,
		 * deferred records on the side-band (tracking) event */
		ds_attr_set_flag(s, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
		ds_attr_set_flag(t, DS_ATTR_BIT_DEFER_OUTPUT, 1);
	}
}

static long read_proc_long(const char *path, long def)
{
	FILE *f = fopen(path, "r");
	long v = def;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = def;
		fclose(f);
	}
	return v;
}

static void open_error(int err, const struct ropts *o, pid_t pid, int cpu)
{
	if (err == -EACCES || err == -EPERM) {
		die_msg("perf_event_open (pid %d, cpu %d): %s (perf_event_paranoid=%ld: run "
			"as root or lower it)", (int)pid, cpu, strerror(-err),
			read_proc_long("/proc/sys/kernel/perf_event_paranoid", -99));
	} else if (err == -ESRCH) {
		die_msg("perf_event_open: no such process %d", (int)pid);
	} else if (err == -EINVAL && o && !o->period &&
		   (long)o->freq > read_proc_long("/proc/sys/kernel/perf_event_max_sample_rate",
						   LONG_MAX)) {
		die_msg("perf_event_open: %s: -F %lu is above the kernel's limit "
			"(kernel.perf_event_max_sample_rate = %ld)", strerror(-err), o->freq,
			read_proc_long("/proc/sys/kernel/perf_event_max_sample_rate", 0));
	} else {
		die_msg("perf_event_open (pid %d, cpu %d): %s", (int)pid, cpu, strerror(-err));
	}
}

/* Open the user's two events (no defer bits) on this task: 0 or -errno. */
static int try_attrs(const struct ropts *o)
{
	struct perf_event_attr s, t;
	struct perf_event_attr *v[2] = { &s, &t };

	make_attrs(&s, &t, o, false, true, false);
	for (int i = 0; i < 2; i++) {
		int fd = perf_open(v[i], 0, -1, -1);

		if (fd < 0)
			return -errno;
		close(fd);
	}
	return 0;
}

/*
 * The user's own events, without defer bits, on this task: an error here
 * is about the user's options (-F ...), never about deferred callchains.
 * Not allowed to sample the kernel (perf_event_paranoid >= 2 for an
 * unprivileged user: EACCES/EPERM), but allowed with exclude_kernel: like
 * perf, record user space only, with a one-line note.
 */
static int check_attrs(struct ropts *o)
{
	int err = try_attrs(o);

	if ((err == -EACCES || err == -EPERM) && !o->all) {
		o->user_only = true;
		if (!try_attrs(o)) {
			fprintf(stderr, PROG ": note: kernel.perf_event_paranoid=%ld does not let "
				"this user sample the kernel: recording user space only "
				"(exclude_kernel)\n",
				read_proc_long("/proc/sys/kernel/perf_event_paranoid", -99));
			return 0;
		}
		o->user_only = false;
	}
	if (err)
		open_error(err, o, 0, -1);
	return err;
}

/*
 * Does the kernel know defer_callchain?  A minimal sampling event is opened
 * without and with the bit: only an EINVAL/E2BIG caused by the bit itself
 * means "no".  1 supported, 0 not, <0 the minimal event failed (errno).
 */
static int probe_defer(bool user_only)
{
	struct perf_event_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.exclude_kernel = user_only;
	a.exclude_hv = user_only;
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_period = 1000000;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN;
	a.disabled = 1;
	fd = perf_open(&a, 0, -1, -1);
	if (fd < 0)
		return -errno;
	close(fd);
	ds_attr_set_flag(&a, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
	fd = perf_open(&a, 0, -1, -1);
	if (fd >= 0) {
		close(fd);
		return 1;
	}
	if (errno == EINVAL || errno == E2BIG)
		return 0;
	return -errno;
}

static int online_cpus(int **out)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	int *v = NULL, n = 0, cap = 0, a, b;
	char sep;

	if (f) {
		while (fscanf(f, "%d", &a) == 1) {
			b = a;
			if (fscanf(f, "%c", &sep) == 1 && sep == '-') {
				if (fscanf(f, "%d", &b) != 1)
					break;
				if (fscanf(f, "%c", &sep) != 1)
					sep = '\n';
			}
			for (int c = a; c <= b && c < 65536; c++) {
				if (n == cap) {
					int *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));

					if (!nv) {
						free(v);
						fclose(f);
						return -ENOMEM;
					}
					v = nv;
				}
				v[n++] = c;
			}
			if (sep != ',')
				break;
		}
		fclose(f);
	}
	if (!n) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);

		n = c > 0 ? (int)c : 1;
		v = calloc((size_t)n, sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (int i = 0; i < n; i++)
			v[i] = i;
	}
	*out = v;
	return n;
}

static int add_fd(struct rec *r, int fd, int which)
{
	uint64_t id = 0;

	if (ds_grow(&r->fds, &r->cap_fds, r->nr_fds + 1, sizeof(int)))
		return -ENOMEM;
	r->fds[r->nr_fds++] = fd;
	if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
		return -errno;
	if (ds_grow(&r->ids[which], &r->cap_ids[which], r->nr_ids[which] + 1, 8))
		return -ENOMEM;
	r->ids[which][r->nr_ids[which]++] = id;
	return 0;
}

/* Open sampling+tracking for (pid, cpu); the first pair of a CPU owns the
 * ring buffer, later ones are redirected into it. */
static int open_pair(struct rec *r, struct cpu_buf *b, pid_t pid, bool task, bool on_exec)
{
	struct perf_event_attr s, t;
	int fs, ft, err;

	make_attrs(&s, &t, &r->o, r->defer, task, on_exec);
	fs = perf_open(&s, pid, b->cpu, -1);
	if (fs < 0) {
		err = -errno;
		open_error(err, &r->o, pid, b->cpu);
		return err;
	}
	err = add_fd(r, fs, 0);
	if (err)
		return err;
	ft = perf_open(&t, pid, b->cpu, -1);
	if (ft < 0) {
		err = -errno;
		open_error(err, &r->o, pid, b->cpu);
		return err;
	}
	err = add_fd(r, ft, 1);
	if (err)
		return err;
	if (b->fd < 0) {
		size_t ps = (size_t)getpagesize();

		b->map_len = (r->o.pages + 1) * ps;
		b->map = mmap(NULL, b->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fs, 0);
		if (b->map == MAP_FAILED) {
			err = -errno;
			b->map = NULL;
			die_msg("mmap of the ring buffer (%zu KiB) failed: %s", b->map_len / 1024,
				strerror(-err));
			return err;
		}
		err = ds_ring_init(&b->ring, b->map, b->map_len, ps);
		if (err)
			return err;
		b->fd = fs;
	} else if (ioctl(fs, PERF_EVENT_IOC_SET_OUTPUT, b->fd) < 0) {
		err = -errno;
		die_msg("PERF_EVENT_IOC_SET_OUTPUT: %s", strerror(-err));
		return err;
	}
	if (ioctl(ft, PERF_EVENT_IOC_SET_OUTPUT, b->fd) < 0) {
		err = -errno;
		die_msg("PERF_EVENT_IOC_SET_OUTPUT: %s", strerror(-err));
		return err;
	}
	return 0;
}

/* Remember the first write error; say_werr() prints it, once the
 * recording knows what becomes of the command. */
static int write_err(struct rec *r, int err)
{
	if (err && !r->werr)
		r->werr = err;
	return err;
}

/* The one line for a failed write: the output, the reason (the usual
 * causes named) and what happens to the recording and the command. */
static void say_werr(struct rec *r, const char *then)
{
	const char *why = r->werr == -EFBIG ? " (file size limit, ulimit -f)" :
			  r->werr == -EPIPE ? " (the reader closed the pipe)" :
			  r->werr == -ENOSPC ? " (disk full)" : "";

	if (!r->werr || r->werr_said)
		return;
	r->werr_said = true;
	die_msg("writing %s: %s%s: recording stopped%s", r->path, strerror(-r->werr), why,
		then ? then : "");
}

static int note_kernel_ips(struct rec *r, const struct perf_event_header *h);

static bool same_path(const void *val, const void *arg)
{
	return !strcmp(val, arg);
}

/* Remember the file of a user MMAP/MMAP2 record, for its build-id. */
static int note_object(struct rec *r, const struct perf_event_header *h)
{
	struct ds_event ev;
	uint64_t key;
	char *p;

	if ((h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL ||
	    ds_event_parse(h, h->size, SAMPLE_TYPE, true, &ev) || !ev.filename ||
	    ev.filename[0] != '/')
		return 0;	/* anonymous, [vdso], [heap], ... */
	key = ds_hash_str(ev.filename);
	if (ds_htab_get(&r->objs, key, same_path, ev.filename))
		return 0;
	p = strdup(ev.filename);
	if (!p || ds_htab_put(&r->objs, key, p)) {
		free(p);
		return -ENOMEM;
	}
	return 0;
}

/* The build-ids of the kernel and of every mapped ELF file that has one,
 * for HEADER_BUILD_ID (perf's layout: perf buildid-list -i reads them). */
static size_t collect_build_ids(struct rec *r, struct ds_build_id **out)
{
	struct ds_build_id *v = calloc(r->objs.used + 1, sizeof(*v));
	size_t n = 0;
	int len;

	*out = v;
	if (!v)
		return 0;
	len = ds_build_id_of_kernel(v[0].id, DS_BUILD_ID_MAX);
	if (len > 0) {
		v[0].pid = -1;
		v[0].kernel = true;
		v[0].size = (uint8_t)len;
		v[0].path = "[kernel.kallsyms]";
		n++;
	}
	for (size_t i = 0; i < r->objs.cap; i++) {
		char *path = r->objs.s[i].val;

		if (!path)
			continue;
		len = ds_build_id_of_file(path, v[n].id, DS_BUILD_ID_MAX);
		if (len <= 0)
			continue;	/* not ELF, no build-id, gone */
		v[n].pid = -1;
		v[n].size = (uint8_t)len;
		v[n].path = path;
		n++;
	}
	return n;
}

static int write_rec(struct rec *r, const struct perf_event_header *h)
{
	switch (h->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		if (note_object(r, h))
			return -ENOMEM;
		break;
	case PERF_RECORD_SAMPLE:
		r->nr_samples++;
		if (note_kernel_ips(r, h))
			return -ENOMEM;
		break;
	case DS_RECORD_CALLCHAIN_DEFERRED: r->nr_deferred++; break;
	case PERF_RECORD_LOST:
		if (h->size >= 24) {
			uint64_t lost;

			memcpy(&lost, (const uint8_t *)h + 16, 8);
			r->nr_lost += lost;
		}
		break;
	}
	r->nr_records++;
	r->bytes += h->size;
	return write_err(r, ds_writer_write(r->w, h));
}

/* Drain every ring once; a FINISHED_ROUND after a pass that read data. */
static int read_all(struct rec *r)
{
	uint64_t before = r->nr_records;
	int err = 0;

	for (size_t i = 0; i < r->nr_bufs; i++) {
		struct cpu_buf *b = &r->bufs[i];
		const struct perf_event_header *h;
		int ret;

		if (!b->map)
			continue;
		ds_ring_begin(&b->ring);
		while ((ret = ds_ring_next(&b->ring, &h)) > 0) {
			err = write_rec(r, h);
			if (err)
				break;
		}
		if (ret < 0)
			die_msg("warning: corrupt record in the cpu %d ring buffer, skipped",
				b->cpu);
		ds_ring_end(&b->ring);
		if (err)
			return err;
	}
	if (r->nr_records != before)
		err = write_err(r, ds_writer_round(r->w));
	return err;
}

/* sample_id trailer for SAMPLE_TYPE: tid, time, cpu, identifier */
struct sid {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu, res;
	uint64_t id;
};

static int synth_comm(struct rec *r, pid_t pid, pid_t tid, const char *comm)
{
	struct {
		struct perf_event_header h;
		uint32_t pid, tid;
		char comm[24];
		struct sid sid;
	} ev;

	memset(&ev, 0, sizeof(ev));
	ev.h.type = PERF_RECORD_COMM;
	ev.h.misc = PERF_RECORD_MISC_USER;
	ev.h.size = sizeof(ev);
	ev.pid = (uint32_t)pid;
	ev.tid = (uint32_t)tid;
	memcpy(ev.comm, comm, strnlen(comm, 15));
	ev.sid.pid = (uint32_t)pid;
	ev.sid.tid = (uint32_t)tid;
	ev.sid.id = r->nr_ids[1] ? r->ids[1][0] : 0;
	return write_rec(r, &ev.h);
}

static int synth_mmap(struct rec *r, pid_t pid, uint64_t start, uint64_t end,
		      uint64_t pgoff, const char *path, bool kernel)
{
	uint8_t buf[4096 + 128];
	struct perf_event_header h;
	size_t plen = strlen(path) + 1, off;
	struct sid sid;
	uint32_t u32;

	if (plen > 4096)
		return 0;
	memset(buf, 0, sizeof(buf));
	h.type = kernel ? PERF_RECORD_MMAP : PERF_RECORD_MMAP2;
	h.misc = kernel ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER;
	u32 = (uint32_t)pid;
	memcpy(buf + 8, &u32, 4);
	memcpy(buf + 12, &u32, 4);
	memcpy(buf + 16, &start, 8);
	end -= start;
	memcpy(buf + 24, &end, 8);
	memcpy(buf + 32, &pgoff, 8);
	off = 40;
	if (!kernel) {
		u32 = PROT_READ | PROT_EXEC;
		memcpy(buf + 64, &u32, 4);
		u32 = MAP_PRIVATE;
		memcpy(buf + 68, &u32, 4);
		off = 72;
	}
	memcpy(buf + off, path, plen);
	off = (off + plen + 7) & ~(size_t)7;
	memset(&sid, 0, sizeof(sid));
	sid.pid = sid.tid = (uint32_t)pid;
	sid.id = r->nr_ids[1] ? r->ids[1][0] : 0;
	memcpy(buf + off, &sid, sizeof(sid));
	off += sizeof(sid);
	h.size = (uint16_t)off;
	memcpy(buf, &h, sizeof(h));
	return write_rec(r, (const void *)buf);
}

/* COMM + executable file mappings of an existing process from /proc. */
static int synth_process(struct rec *r, pid_t pid)
{
	char path[64], line[4352], comm[64];
	DIR *d;
	FILE *f;
	struct dirent *de;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;	/* gone meanwhile */
	while ((de = readdir(d)) && !err) {
		pid_t tid = (pid_t)atoi(de->d_name);

		if (tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f)) {
			comm[strcspn(comm, "\n")] = 0;
			err = synth_comm(r, pid, tid, comm);
		}
		fclose(f);
	}
	closedir(d);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return err;
	while (!err && fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off;
		char perms[8], file[4096];

		file[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095[^\n]", &s, &e, perms, &off,
			   file) < 4)
			continue;
		if (perms[2] != 'x' || file[0] == 0)
			continue;
		err = synth_mmap(r, pid, s, e, off, file, false);
	}
	fclose(f);
	return err;
}

static int synth_all(struct rec *r)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int err = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) && !err) {
		pid_t pid = (pid_t)atoi(de->d_name);

		if (pid > 0)
			err = synth_process(r, pid);
	}
	closedir(d);
	return err;
}

/* _text from /proc/kallsyms (0 if unknown or hidden by kptr_restrict), for
 * the synthesized kernel MMAP record that perf needs. */
static uint64_t kallsyms_text(void)
{
	char line[512];
	uint64_t text = 0;
	FILE *in = fopen("/proc/kallsyms", "r");

	if (!in)
		return 0;
	while (fgets(line, sizeof(line), in)) {
		unsigned long long a;
		char t, name[256];

		if (sscanf(line, "%llx %c %255s", &a, &t, name) == 3 && !strcmp(name, "_text")) {
			text = a;
			break;
		}
	}
	fclose(in);
	return text;
}

/* Remember the kernel addresses of a sample (its kernel ip and the kernel
 * part of its callchain): the kernel symbols the report will need. */
static int note_kernel_ips(struct rec *r, const struct perf_event_header *h)
{
	static char present;
	struct ds_event ev;
	bool kernel = false;
	int err = 0;

	if (ds_event_parse(h, h->size, SAMPLE_TYPE, true, &ev))
		return 0;
	if ((ev.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL &&
	    !ds_htab_get(&r->kips, ev.ip, NULL, NULL))
		err = ds_htab_put(&r->kips, ev.ip, &present);
	for (uint64_t i = 0; i < ev.nr && !err; i++) {
		uint64_t ip = ev.chain[i];

		if (ip >= PERF_CONTEXT_MAX) {
			kernel = ip == PERF_CONTEXT_KERNEL;
			continue;
		}
		if (kernel && !ds_htab_get(&r->kips, ip, NULL, NULL))
			err = ds_htab_put(&r->kips, ip, &present);
	}
	return err;
}

struct ksym {
	uint64_t addr;
	size_t line;	/* index in the file */
	bool keep;
};

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

static int cmp_line(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->line < y->line ? -1 : x->line > y->line;
}

/*
 * FILE.kallsyms: only the kernel symbols that cover the sampled kernel
 * addresses (for each, every text symbol at the greatest start at or
 * below it, as the report looks them up) plus _text/_stext, in
 * /proc/kallsyms' order: a few KB instead of a 5 MB copy per recording.
 * Written at the end of the recording (when OUT is a regular file); a
 * recorder that is killed leaves none, and report falls back to
 * /proc/kallsyms.  0, or -errno of a failed write (reported).
 */
static int save_kallsyms(struct rec *r, const char *out)
{
	char path[4096], line[512];
	struct ksym *v = NULL;
	size_t n = 0, cap = 0, nl = 0;
	FILE *in, *o;
	bool nonzero = false;
	struct stat st;
	int err = 0;

	if (!strcmp(out, "-") || (stat(out, &st) == 0 && !S_ISREG(st.st_mode)))
		return 0;	/* no /dev/null.kallsyms, no -.kallsyms */
	if (snprintf(path, sizeof(path), "%s.kallsyms", out) >= (int)sizeof(path))
		return 0;
	in = fopen("/proc/kallsyms", "r");
	if (!in)
		return 0;
	/* pass 1: the text symbols (and _text, _stext), sorted by address */
	while (fgets(line, sizeof(line), in)) {
		unsigned long long a;
		char t, name[256];

		if (sscanf(line, "%llx %c %255s", &a, &t, name) != 3)
			goto next;
		nonzero |= a != 0;
		if (t == 't' || t == 'T' || t == 'w' || t == 'W' || !strcmp(name, "_text") ||
		    !strcmp(name, "_stext")) {
			if (ds_grow(&v, &cap, n + 1, sizeof(*v))) {
				err = -ENOMEM;
				break;
			}
			v[n].addr = a;
			v[n].line = nl;
			v[n].keep = !strcmp(name, "_text") || !strcmp(name, "_stext");
			n++;
		}
next:
		if (strchr(line, '\n'))
			nl++;
	}
	if (err || !nonzero) {
		fclose(in);
		free(v);
		if (err)
			die_msg("cannot save kernel symbols: %s", strerror(-err));
		else if (!r->o.user_only)	/* no kernel frames anyway */
			die_msg("note: /proc/kallsyms addresses are hidden (kptr_restrict); "
				"kernel frames will not be symbolized");
		return err;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_ksym);
	/* every sampled kernel address keeps the symbols at its start */
	for (size_t i = 0; i < r->kips.cap; i++) {
		uint64_t ip = r->kips.s[i].key;
		size_t lo = 0, hi = n;

		if (!r->kips.s[i].val)
			continue;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (v[mid].addr <= ip)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t k = lo; k-- > 0 && v[k].addr == v[lo - 1].addr;)
			v[k].keep = true;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_line);
	/* pass 2: copy the kept lines */
	o = fopen(path, "w");
	if (!o) {
		err = -errno;
		fclose(in);
		free(v);
		die_msg("cannot create %s: %s", path, strerror(-err));
		return err;
	}
	rewind(in);
	nl = 0;
	for (size_t k = 0; fgets(line, sizeof(line), in);) {
		while (k < n && v[k].line < nl)
			k++;
		if (k < n && v[k].line == nl && v[k].keep) {
			errno = 0;
			if (fputs(line, o) == EOF) {
				err = errno ? -errno : -EIO;
				break;
			}
		}
		if (strchr(line, '\n'))
			nl++;
	}
	fclose(in);
	free(v);
	if (!err)
		err = ds_stream_err(o);
	errno = 0;
	if (fclose(o) != 0 && !err)
		err = errno ? -errno : -EIO;
	if (err) {
		die_msg("writing %s: %s", path, strerror(-err));
		unlink(path);
	}
	return err;
}

static void usage_record(FILE *f)
{
	fprintf(f,
		"usage: deferstack record [-o FILE] [-e EVENT] [-F FREQ | -c N]\n"
		"                         [--mode defer|classic|auto] [--stitched] [-d SECS]\n"
		"                         [-m PAGES] [-a | -p PID | -- COMMAND ARGS...]\n"
		"Sample with callchains into a perf.data file.\n"
		"  -o FILE        output (default perf.data); kallsyms saved as FILE.kallsyms\n"
		"                 an existing FILE is kept as FILE.old (like perf); -o -:\n"
		"                 standard output in perf's pipe mode (| report -i -)\n"
		"  -e EVENT       cpu-clock (default: on-CPU time) or context-switches\n"
		"                 (off-CPU: where tasks block or are preempted; every switch\n"
		"                 unless -c is given)\n"
		"  -F FREQ        samples per second per CPU (default 999; cpu-clock)\n"
		"  -c N           a sample every N events instead of -F\n"
		"  --mode MODE    defer: deferred user callchains, fail if unsupported;\n"
		"                 classic: user stacks copied at the sample;\n"
		"                 auto (default): defer if the kernel supports it, else classic\n"
		"  --stitched     write stitched classic samples (readable by perf 6.x)\n"
		"                 instead of the raw kernel records (perf 7.x stitches itself)\n"
		"  -a             all CPUs (one event per CPU, pid = -1)\n"
		"  -p PID         an existing process (all its threads, inherited)\n"
		"  -d SECS        stop after SECS seconds (default: command exit or Ctrl-C)\n"
		"  -m PAGES       ring buffer pages per CPU, power of two (default 128)\n"
		"A summary (samples, deferred records, stitched, unmatched, lost) is printed\n"
		"at the end. With a COMMAND, exits with its status (128+N for signal N;\n"
		"127/126 when it cannot be run).\n");
}

static int parse_record_opts(int argc, char **argv, struct ropts *o)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "event", required_argument, NULL, 'e' },
		{ "freq", required_argument, NULL, 'F' },
		{ "count", required_argument, NULL, 'c' },
		{ "mode", required_argument, NULL, 'M' },
		{ "stitched", no_argument, NULL, 'S' },
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "mmap-pages", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c, n = 0;
	unsigned long v;
	bool freq_set = false;

	memset(o, 0, sizeof(*o));
	o->out = "perf.data";
	o->freq = 999;
	o->pages = 128;
	while ((c = getopt_long(argc, argv, "+o:e:F:c:ap:d:m:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': o->out = optarg; break;
		case 'e':
			if (!strcmp(optarg, "cpu-clock")) {
				o->event = EV_CPU_CLOCK;
			} else if (!strcmp(optarg, "context-switches") || !strcmp(optarg, "cs")) {
				o->event = EV_CONTEXT_SWITCHES;
			} else {
				die_msg("bad -e '%s' (cpu-clock or context-switches)", optarg);
				return -1;
			}
			break;
		case 'F':
			/* the kernel's limit (perf_event_max_sample_rate) is
			 * checked by the kernel, and said so */
			if (parse_ulong("-F", optarg, 1, 10000000, &o->freq))
				return -1;
			freq_set = true;
			break;
		case 'c':
			if (parse_ulong("-c", optarg, 1, 1000000000UL, &o->period))
				return -1;
			break;
		case 'M':
			if (!strcmp(optarg, "auto"))
				o->mode = MODE_AUTO;
			else if (!strcmp(optarg, "defer"))
				o->mode = MODE_DEFER;
			else if (!strcmp(optarg, "classic"))
				o->mode = MODE_CLASSIC;
			else {
				die_msg("bad --mode '%s' (defer, classic or auto)", optarg);
				return -1;
			}
			break;
		case 'S': o->stitched = true; break;
		case 'a': o->all = true; break;
		case 'p':
			if (parse_ulong("-p", optarg, 1, INT_MAX, &v))
				return -1;
			o->pid = (pid_t)v;
			break;
		case 'd':
			/* nan, inf, negative, absurd: no */
			if (parse_seconds("-d", optarg, 365 * 86400.0, &o->duration))
				return -1;
			break;
		case 'm':
			if (parse_ulong("-m", optarg, 1, 65536, &o->pages))
				return -1;
			if (o->pages & (o->pages - 1)) {
				die_msg("bad -m '%s' (a power of two)", optarg);
				return -1;
			}
			break;
		case 'h': usage_record(stdout); return 1;
		default: usage_record(stderr); return -1;
		}
	}
	if (freq_set && o->period) {
		die_msg("record: -F and -c exclude each other");
		return -1;
	}
	/* A frequency means nothing for context switches: take every one. */
	if (o->event == EV_CONTEXT_SWITCHES && !o->period && !freq_set)
		o->period = 1;
	if (optind < argc)
		o->cmd = argv + optind;
	n = o->all + (o->pid > 0) + (o->cmd != NULL);
	if (n != 1) {
		die_msg("record: give exactly one of -a, -p PID or -- COMMAND (try --help)");
		return -1;
	}
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int start_child(struct rec *r)
{
	/* both CLOEXEC: the command inherits neither; a successful exec
	 * closes exec_pipe, a failed one writes its errno there */
	if (pipe2(r->go_pipe, O_CLOEXEC))
		return -errno;
	if (pipe2(r->exec_pipe, O_CLOEXEC)) {
		int err = -errno;

		close(r->go_pipe[0]);
		close(r->go_pipe[1]);
		return err;
	}
	r->child = fork();
	if (r->child < 0)
		return -errno;
	if (r->child == 0) {
		char c;
		int e;

		close(r->go_pipe[1]);
		close(r->exec_pipe[0]);
		/* -o -: the recording owns standard output; the command's
		 * output goes to standard error (as perf does) */
		if (!strcmp(r->o.out, "-") && dup2(2, 1) < 0)
			_exit(126);
		if (read(r->go_pipe[0], &c, 1) != 1)
			_exit(126);	/* the recorder gave up */
		/* SIGPIPE and SIGXFSZ as deferstack found them, not ignored */
		restore_write_signals();
		execvp(r->o.cmd[0], r->o.cmd);
		e = errno;
		/* the parent reads it; if that fails, it sees exit 127 */
		if (write(r->exec_pipe[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(r->go_pipe[0]);
	close(r->exec_pipe[1]);
	return 0;
}

/* Let the command exec; 0 once it runs, else its exec errno in exec_errno. */
static int release_child(struct rec *r)
{
	ssize_t n;
	int e = 0;

	if (write(r->go_pipe[1], "x", 1) != 1)
		return -errno;
	close(r->go_pipe[1]);
	do
		n = read(r->exec_pipe[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(r->exec_pipe[0]);
	if (n == sizeof(e)) {
		r->exec_errno = e ? e : ENOEXEC;
		waitpid(r->child, &r->status, 0);
		r->reaped = true;
	}
	return 0;
}

/* Stop the command record started: SIGTERM (as perf does), then SIGKILL
 * if it is still there after 2 s; reaped either way, no orphan. */
static void stop_child(struct rec *r)
{
	for (int i = 0; i < 200; i++) {
		pid_t p;

		if (i == 0)
			kill(r->child, SIGTERM);
		p = waitpid(r->child, &r->status, WNOHANG);
		if (p == r->child || (p < 0 && errno != EINTR)) {
			r->reaped = p == r->child;
			return;
		}
		usleep(10000);
	}
	kill(r->child, SIGKILL);
	while (waitpid(r->child, &r->status, 0) < 0 && errno == EINTR)
		;
	r->reaped = true;
}

static void cleanup(struct rec *r)
{
	for (size_t i = 0; i < r->nr_bufs; i++) {
		if (r->bufs[i].map) {
			ds_ring_destroy(&r->bufs[i].ring);
			munmap(r->bufs[i].map, r->bufs[i].map_len);
		}
	}
	for (size_t i = 0; i < r->nr_fds; i++)
		close(r->fds[i]);
	free(r->bufs);
	free(r->fds);
	free(r->ids[0]);
	free(r->ids[1]);
	for (size_t i = 0; i < r->objs.cap; i++)
		free(r->objs.s[i].val);
	ds_htab_free(&r->objs);
	ds_htab_free(&r->kips);
}

static int do_record(struct rec *r, const char *path, int argc, char **argv)
{
	struct ds_attr attrs[2];
	struct perf_event_attr s, t;
	struct ds_writer_info info = { 0 };
	struct utsname un;
	pid_t *tids = NULL;
	size_t nr_tids = 0, cap_tids = 0;
	int *cpus = NULL, ncpu, err = 0;
	double t0, last_progress;
	bool task = !r->o.all, child_done = false;
	uint64_t ktext;
	struct pollfd *pfd = NULL;
	struct ds_build_id *bids = NULL;

	ncpu = online_cpus(&cpus);
	if (ncpu < 0)
		return ncpu;
	r->bufs = calloc((size_t)ncpu, sizeof(*r->bufs));
	pfd = calloc((size_t)ncpu, sizeof(*pfd));
	if (!r->bufs || !pfd) {
		err = -ENOMEM;
		goto out;
	}
	r->nr_bufs = (size_t)ncpu;
	for (int i = 0; i < ncpu; i++) {
		r->bufs[i].cpu = cpus[i];
		r->bufs[i].fd = -1;
	}
	if (r->o.cmd) {
		err = start_child(r);
		if (err) {
			die_msg("cannot start '%s': %s", r->o.cmd[0], strerror(-err));
			goto out;
		}
		tids = &r->child;
		nr_tids = 1;
	} else if (r->o.pid > 0) {
		char dpath[64];
		DIR *d;
		struct dirent *de;

		snprintf(dpath, sizeof(dpath), "/proc/%d/task", (int)r->o.pid);
		d = opendir(dpath);
		if (!d) {
			die_msg("no such process %d", (int)r->o.pid);
			err = -ESRCH;
			goto out;
		}
		while ((de = readdir(d))) {
			pid_t tid = (pid_t)atoi(de->d_name);

			if (tid <= 0)
				continue;
			if (ds_grow(&tids, &cap_tids, nr_tids + 1, sizeof(*tids))) {
				closedir(d);
				err = -ENOMEM;
				goto out;
			}
			tids[nr_tids++] = tid;
		}
		closedir(d);
	}
	for (int i = 0; i < ncpu && !err; i++) {
		if (r->o.all) {
			err = open_pair(r, &r->bufs[i], -1, false, false);
			continue;
		}
		for (size_t k = 0; k < nr_tids && !err; k++)
			err = open_pair(r, &r->bufs[i], tids[k], task, r->o.cmd != NULL);
		if (err == -ESRCH && r->o.pid > 0)
			err = 0;	/* a thread exited meanwhile */
	}
	if (err)
		goto out;
	make_attrs(&s, &t, &r->o, r->defer, task, r->o.cmd != NULL);
	memset(attrs, 0, sizeof(attrs));
	attrs[0].attr = s;
	attrs[0].ids = r->ids[0];
	attrs[0].nr_ids = r->nr_ids[0];
	/* perf's names: ":u" for user space only */
	attrs[0].name = r->o.event == EV_CONTEXT_SWITCHES ?
			(r->o.user_only ? "context-switches:u" : "context-switches") :
			(r->o.user_only ? "cpu-clock:u" : "cpu-clock");
	attrs[1].attr = t;
	attrs[1].ids = r->ids[1];
	attrs[1].nr_ids = r->nr_ids[1];
	attrs[1].name = "dummy:u";
	/* like perf: keep an existing recording (and its side file) as .old */
	r->path = path;
	if (!strcmp(path, "-")) {
		/* standard output: perf's pipe mode (record -o - | report -i -) */
		struct ds_writer_opts wo = { .sz = sizeof(wo), .pipe = true };
		int fd = dup(1);

		r->path = "standard output";
		err = fd < 0 ? -errno : ds_writer_open_fd(&r->w, fd, attrs, 2, &wo);
	} else {
		err = rotate_old(r->o.out);
		if (err)
			goto out;
		err = ds_writer_open(&r->w, path, attrs, 2, NULL);
	}
	if (err) {
		die_msg("writing %s: %s", r->path, strerror(-err));
		goto out;
	}
	ktext = kallsyms_text();
	if (ktext)
		err = synth_mmap(r, -1, ktext, UINT64_MAX, ktext, "[kernel.kallsyms]_text", true);
	if (!err && r->o.all)
		err = synth_all(r);
	else if (!err && r->o.pid > 0)
		err = synth_process(r, r->o.pid);
	if (err)
		goto out_w;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	if (r->o.cmd) {
		/* events enable themselves at exec (enable_on_exec) */
		err = release_child(r);
		if (err) {
			die_msg("cannot start '%s': %s", r->o.cmd[0], strerror(-err));
			goto out_w;
		}
		child_done = r->reaped;
	} else {
		for (size_t i = 0; i < r->nr_fds; i++)
			ioctl(r->fds[i], PERF_EVENT_IOC_ENABLE, 0);
	}
	t0 = last_progress = now_s();
	for (int i = 0; i < ncpu; i++) {
		pfd[i].fd = r->bufs[i].fd;
		pfd[i].events = POLLIN;
	}
	while (!r->exec_errno) {
		double tn;

		poll(pfd, (nfds_t)ncpu, 100);
		err = read_all(r);
		if (err)
			break;
		if (r->o.cmd && waitpid(r->child, &r->status, WNOHANG) == r->child) {
			child_done = r->reaped = true;
			break;
		}
		if (r->o.pid > 0 && kill(r->o.pid, 0) < 0 && errno == ESRCH)
			break;
		tn = now_s();
		if (stop_req || (r->o.duration > 0 && tn - t0 >= r->o.duration))
			break;
		if (tn - last_progress >= (isatty(2) ? 2.0 : 10.0)) {
			fprintf(stderr, PROG ": recording %.0f s: %" PRIu64 " samples, %" PRIu64
				" deferred records, %.1f MB\n", tn - t0, r->nr_samples,
				r->nr_deferred, r->bytes / 1048576.0);
			last_progress = tn;
		}
	}
	for (size_t i = 0; i < r->nr_fds; i++)
		ioctl(r->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	if (!err)
		err = read_all(r);
	if (stop_req == SIGHUP && !err)
		die_msg("hangup (SIGHUP): recording stopped%s",
			r->o.cmd && !child_done ? ", stopping the command" : "");
	if (r->o.cmd && !child_done) {
		char then[300];

		snprintf(then, sizeof(then), ", stopping '%s' (pid %d)", r->o.cmd[0],
			 (int)r->child);
		say_werr(r, then);
		stop_child(r);
		child_done = true;
	}
	if (!err)
		err = save_kallsyms(r, r->o.out);
out_w:
	if (!uname(&un)) {
		info.hostname = un.nodename;
		info.osrelease = un.release;
		info.arch = un.machine;
	}
	info.version = PROG "-" DS_VERSION;
	info.nr_cpus_avail = (uint32_t)ncpu;
	info.nr_cpus_online = (uint32_t)ncpu;
	info.argc = argc;
	info.argv = argv;
	info.nr_build_ids = collect_build_ids(r, &bids);
	info.build_ids = bids;
	{
		int e2 = r->w ? ds_writer_close(r->w, &info) : 0;

		r->w = NULL;
		if (!err && e2)
			err = write_err(r, e2);
	}
	free(bids);
	if (r->o.pid > 0)
		say_werr(r, ", the attached process left running");
	else
		say_werr(r, NULL);
out:
	if (r->o.cmd && r->child > 0 && err && !child_done) {
		kill(r->child, SIGKILL);
		waitpid(r->child, NULL, 0);
	}
	if (tids != &r->child)
		free(tids);
	free(cpus);
	free(pfd);
	return err;
}

int cmd_record(int argc, char **argv)
{
	struct rec r;
	struct ds_stitch_stats st;
	char tmp[4096];
	const char *path;
	int ret;

	memset(&r, 0, sizeof(r));
	/* a closed -o - pipe (or a file size limit) is a write error: the
	 * recording stops, the command is stopped and the reason printed */
	ignore_write_signals(true);
	ret = parse_record_opts(argc, argv, &r.o);
	if (ret)
		return ret > 0 ? 0 : 2;
	/* the user's options first (user space only if the kernel is not
	 * allowed), then the defer bit on its own */
	if (check_attrs(&r.o))
		return 1;
	if (r.o.mode != MODE_CLASSIC) {
		ret = probe_defer(r.o.user_only);
		if (ret < 0) {
			open_error(ret, NULL, 0, -1);
			return 1;
		}
		if (ret == 0 && r.o.mode == MODE_DEFER) {
			die_msg("--mode defer: this kernel does not support deferred user "
				"callchains (perf_event_open with defer_callchain: EINVAL); use "
				"--mode auto or --mode classic");
			return 1;
		}
		if (ret == 0)
			fprintf(stderr, PROG ": kernel lacks deferred user callchains; falling "
				"back to classic callchains\n");
		r.defer = ret == 1;
	}
	if (!strcmp(r.o.out, "-") && isatty(1)) {
		die_msg("record -o -: standard output is a terminal; pipe it to a reader "
			"(| deferstack report -i -) or redirect it to a file");
		return 1;
	}
	path = r.o.out;
	if (r.o.stitched && !strcmp(r.o.out, "-")) {
		/* the raw records go to a temp file, converted to stdout */
		const char *td = getenv("TMPDIR");
		int fd;

		snprintf(tmp, sizeof(tmp), "%s/deferstack-raw-XXXXXX", td && *td ? td : "/tmp");
		fd = mkostemp(tmp, O_CLOEXEC);
		if (fd < 0) {
			die_msg("cannot create a temporary file %s: %s", tmp, strerror(errno));
			return 1;
		}
		close(fd);
		path = tmp;
	} else if (r.o.stitched) {
		snprintf(tmp, sizeof(tmp), "%s.raw.tmp", r.o.out);
		path = tmp;
	}
	ret = do_record(&r, path, argc, argv);
	cleanup(&r);
	if (ret) {
		if (r.o.stitched)
			unlink(path);
		return 1;
	}
	if (r.exec_errno) {
		/* like env(1): 127 not found, 126 found but not runnable */
		die_msg("cannot run '%s': %s", r.o.cmd[0], strerror(r.exec_errno));
		if (r.o.stitched)
			unlink(path);
		return r.exec_errno == ENOENT ? 127 : 126;
	}
	if (r.o.stitched) {
		ret = convert_file(path, r.o.out, &st);
		unlink(path);
	} else if (strcmp(path, "-")) {
		struct pipeline p;

		ret = pipeline_run(&p, path, NULL, false, NULL, NULL);
		st = pipeline_stats(&p);
		pipeline_close(&p);
	}
	if (ret)
		return 1;
	fprintf(stderr, PROG ": wrote %s (%s mode%s, %" PRIu64 " records, %.1f KiB)\n",
		strcmp(r.o.out, "-") ? r.o.out : "standard output (pipe mode)",
		r.defer ? "defer" : "classic", r.o.stitched ? ", stitched" : "",
		r.nr_records, r.bytes / 1024.0);
	/* a stream cannot be read back: its reader prints the summary */
	if (strcmp(path, "-")) {
		fprintf(stderr, PROG ": ");
		print_summary(stderr, &st);
	}
	/* the command's status, as perf and shells pass it on */
	if (r.o.cmd && r.reaped && WIFEXITED(r.status))
		return WEXITSTATUS(r.status);
	if (r.o.cmd && r.reaped && WIFSIGNALED(r.status))
		return 128 + WTERMSIG(r.status);
	return 0;
}
