// SPDX-License-Identifier: MIT
/* deferstack record: the events' attrs, what the kernel allows (the
 * user's options, the defer bit), and opening them with their rings. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "record.h"

static int perf_open(struct perf_event_attr *a, pid_t pid, int cpu, int group)
{
	return (int)syscall(SYS_perf_event_open, a, pid, cpu, group, PERF_FLAG_FD_CLOEXEC);
}

void make_attr(struct perf_event_attr *a, const struct ropts *o, const struct rec_event *ev,
	       bool defer, bool task, bool on_exec)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->sample_type = SAMPLE_TYPE;
	a->sample_id_all = 1;
	a->disabled = 1;
	a->inherit = task;
	a->enable_on_exec = on_exec;
	a->watermark = 1;
	a->exclude_kernel = o->user_only;
	a->exclude_hv = o->user_only;
	a->wakeup_watermark = (uint32_t)(o->pages * (unsigned long)getpagesize() / 4);
	if (!ev) {
		/* side band: mappings, comms, tasks (and the deferred
		 * records, the way perf 7.x does it) */
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_DUMMY;
		a->sample_period = 1;
		a->mmap = 1;
		a->mmap2 = 1;
		a->comm = 1;
		a->comm_exec = 1;
		a->task = 1;
		if (defer)
			ds_attr_set_flag(a, DS_ATTR_BIT_DEFER_OUTPUT, 1);
		return;
	}
	a->type = ev->type;
	a->config = ev->config;
	a->exclude_kernel |= ev->excl_kernel;
	a->exclude_hv |= ev->excl_kernel;
	a->exclude_user = ev->excl_user;
	if (o->period) {
		a->sample_period = o->period;
	} else if (ev->every && !o->freq_set) {
		a->sample_period = 1;
	} else {
		a->freq = 1;
		a->sample_freq = o->freq;
	}
	/* markers on the sampling events, the user stack in a deferred
	 * record of the tracking event */
	if (defer)
		ds_attr_set_flag(a, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
}

/* Open a on this task and close it again: 0 or -errno. */
static int try_open(struct perf_event_attr *a)
{
	int fd = perf_open(a, 0, -1, -1);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

uint64_t tracking_id(const struct rec *r)
{
	const struct rec_ids *t = &r->ids[r->o.nr_ev];

	return t->n ? t->v[0] : 0;
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

/* Can this task count (not sample) hardware event config?  0 or -errno. */
static int try_counting(uint64_t config)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_HARDWARE;
	a.config = config;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.disabled = 1;
	return try_open(&a);
}

/* An event the kernel or the machine does not have: true if said so. */
static bool event_unsupported(int err, const struct ropts *o, const struct rec_event *ev)
{
	char nb[160];
	const char *name = event_name(o, ev, nb, sizeof(nb));

	if (err != -ENOENT && err != -EOPNOTSUPP && err != -ENODEV)
		return false;
	if (ev->type == PERF_TYPE_HARDWARE) {
		/* no PMU at all (a VM without one): not even cycles counts */
		if (try_counting(PERF_COUNT_HW_CPU_CYCLES))
			die_msg("%s: no hardware PMU on this machine (perf_event_open: %s); "
				"software events such as cpu-clock work", name, strerror(-err));
		else if (try_counting(ev->config))
			die_msg("%s: not supported by this machine's PMU (perf_event_open: %s)",
				name, strerror(-err));
		else
			die_msg("%s: this machine's PMU counts it but cannot sample it "
				"(perf_event_open: %s)", name, strerror(-err));
	} else if (ev->type == PERF_TYPE_TRACEPOINT) {
		die_msg("%s: the kernel has no tracepoint with id %" PRIu64 " (perf_event_open: %s)",
			name, ev->config, strerror(-err));
	} else {
		die_msg("%s: not supported by this kernel (perf_event_open: %s)", name,
			strerror(-err));
	}
	return true;
}

void open_error(int err, const struct ropts *o, const struct rec_event *ev, pid_t pid,
		int cpu)
{
	char nb[160], what[200] = "";

	if (ev && event_unsupported(err, o, ev))
		return;
	/* with an event: "NAME: perf_event_open ..." */
	if (ev)
		snprintf(what, sizeof(what), "%s: ", event_name(o, ev, nb, sizeof(nb)));
	if (err == -EACCES || err == -EPERM) {
		die_msg("%sperf_event_open (pid %d, cpu %d): %s (perf_event_paranoid=%ld: run "
			"as root or lower it)", what, (int)pid, cpu, strerror(-err),
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
		die_msg("%sperf_event_open (pid %d, cpu %d): %s", what, (int)pid, cpu,
			strerror(-err));
	}
}

/* Open each of the user's events and the tracking event (no defer bits)
 * on this task: 0, or -errno with *bad the failed one (NULL: tracking). */
static int try_attrs(const struct ropts *o, const struct rec_event **bad)
{
	struct perf_event_attr a;

	for (size_t i = 0; i <= o->nr_ev; i++) {
		const struct rec_event *ev = i < o->nr_ev ? &o->ev[i] : NULL;
		int err;

		make_attr(&a, o, ev, false, true, false);
		err = try_open(&a);
		if (err) {
			*bad = ev;
			return err;
		}
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
int check_attrs(struct ropts *o)
{
	const struct rec_event *bad = NULL, *bad2;
	int err = try_attrs(o, &bad);

	if ((err == -EACCES || err == -EPERM) && !o->all) {
		o->user_only = true;
		if (!try_attrs(o, &bad2)) {
			fprintf(stderr, PROG ": note: kernel.perf_event_paranoid=%ld does not let "
				"this user sample the kernel: recording user space only "
				"(exclude_kernel)\n",
				read_proc_long("/proc/sys/kernel/perf_event_paranoid", -99));
			return 0;
		}
		o->user_only = false;
	}
	if (err)
		open_error(err, o, bad, 0, -1);
	return err;
}

/*
 * Does the kernel know defer_callchain?  A minimal sampling event is opened
 * without and with the bit: only an EINVAL/E2BIG caused by the bit itself
 * means "no".  1 supported, 0 not, <0 the minimal event failed (errno).
 */
int probe_defer(bool user_only)
{
	struct perf_event_attr a;
	int err;

	memset(&a, 0, sizeof(a));
	a.exclude_kernel = user_only;
	a.exclude_hv = user_only;
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_period = 1000000;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN;
	a.disabled = 1;
	err = try_open(&a);
	if (err)
		return err;
	ds_attr_set_flag(&a, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
	err = try_open(&a);
	if (!err)
		return 1;
	return err == -EINVAL || err == -E2BIG ? 0 : err;
}

static int cpu_list(const char *path, int **out)
{
	FILE *f = fopen(path, "r");
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

int online_cpus(int **out)
{
	return cpu_list("/sys/devices/system/cpu/online", out);
}

int present_cpus(int **out)
{
	return cpu_list("/sys/devices/system/cpu/present", out);
}

static int add_fd(struct rec *r, int fd, size_t which)
{
	struct rec_ids *ids = &r->ids[which];
	uint64_t id = 0;

	if (ds_grow(&r->fds, &r->cap_fds, r->nr_fds + 1, sizeof(int)))
		return -ENOMEM;
	r->fds[r->nr_fds++] = fd;
	if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
		return -errno;
	if (ds_grow(&ids->v, &ids->cap, ids->n + 1, sizeof(*ids->v)))
		return -ENOMEM;
	ids->v[ids->n++] = id;
	return 0;
}

/* Into b's ring: the first event of a CPU owns (mmaps) it, later ones are
 * redirected into it. */
static int attach_ring(struct rec *r, struct cpu_buf *b, int fd)
{
	int err;

	if (b->fd < 0) {
		size_t ps = (size_t)getpagesize();

		b->map_len = (r->o.pages + 1) * ps;
		b->map = mmap(NULL, b->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (b->map == MAP_FAILED) {
			err = -errno;
			b->map = NULL;
			die_msg("mmap of the ring buffer (%zu KiB) failed: %s", b->map_len / 1024,
				strerror(-err));
			return err;
		}
		b->ring.sz = sizeof(b->ring);
		err = ds_ring_init(&b->ring, b->map, b->map_len, ps);
		if (err)
			return err;
		b->fd = fd;
	} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, b->fd) < 0) {
		err = -errno;
		die_msg("PERF_EVENT_IOC_SET_OUTPUT: %s", strerror(-err));
		return err;
	}
	return 0;
}

/* Open the user's events and the tracking event for (pid, b->cpu); quiet:
 * no message when one fails. */
static int open_set(struct rec *r, struct cpu_buf *b, pid_t pid, bool task, bool on_exec,
		    bool quiet)
{
	struct perf_event_attr a;

	for (size_t i = 0; i <= r->o.nr_ev; i++) {
		const struct rec_event *ev = i < r->o.nr_ev ? &r->o.ev[i] : NULL;
		int fd, err;

		make_attr(&a, &r->o, ev, r->defer, task, on_exec);
		fd = perf_open(&a, pid, b->cpu, -1);
		if (fd < 0) {
			err = -errno;
			if (!quiet)
				open_error(err, &r->o, ev, pid, b->cpu);
			return err;
		}
		err = add_fd(r, fd, i);
		if (!err)
			err = attach_ring(r, b, fd);
		if (err)
			return err;
	}
	return 0;
}


/* The threads of -p PID, now (*out malloc'ed): their number or -errno. */
static int list_threads(pid_t pid, pid_t **out)
{
	char dpath[64];
	pid_t *tids = NULL;
	size_t nr = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	snprintf(dpath, sizeof(dpath), "/proc/%d/task", (int)pid);
	d = opendir(dpath);
	if (!d) {
		die_msg("no such process %d", (int)pid);
		return -ESRCH;
	}
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);

		if (tid <= 0)
			continue;
		if (ds_grow(&tids, &cap, nr + 1, sizeof(*tids))) {
			closedir(d);
			free(tids);
			return -ENOMEM;
		}
		tids[nr++] = tid;
	}
	closedir(d);
	*out = tids;
	return (int)nr;
}

int open_events(struct rec *r)
{
	pid_t *tids = NULL;
	size_t nr_tids = 0;
	bool task = !r->o.all;
	int err = 0;

	if (r->o.cmd) {
		tids = &r->child;
		nr_tids = 1;
	} else if (r->o.pid > 0) {
		int n = list_threads(r->o.pid, &tids);

		if (n < 0)
			return n;
		nr_tids = (size_t)n;
	}
	for (size_t i = 0; i < r->nr_bufs && !err; i++) {
		if (r->o.all) {
			struct cpu_buf *b = &r->bufs[i];

			if (b->offline)
				continue;
			b->fd_first = r->nr_fds;
			err = open_set(r, b, -1, false, false, false);
			b->fd_end = r->nr_fds;
			continue;
		}
		for (size_t k = 0; k < nr_tids && !err; k++)
			err = open_set(r, &r->bufs[i], tids[k], task, r->o.cmd != NULL, false);
		if (err == -ESRCH && r->o.pid > 0)
			err = 0;	/* a thread exited meanwhile */
	}
	if (tids != &r->child)
		free(tids);
	return err;
}

static void unmap_ring(struct cpu_buf *b)
{
	if (b->map) {
		ds_ring_destroy(&b->ring);
		munmap(b->map, b->map_len);
	}
	b->map = NULL;
}

static void close_cpu(struct rec *r, struct cpu_buf *b)
{
	for (size_t k = b->fd_first; k < b->fd_end && k < r->nr_fds; k++) {
		if (r->fds[k] >= 0)
			close(r->fds[k]);
		r->fds[k] = -1;
	}
	unmap_ring(b);
	b->fd = -1;
	b->fd_first = b->fd_end = 0;
}

/* Open CPU b's events again (it came online); their ids into the
 * recording. Quiet: a CPU that is not ready yet is tried again later. */
static int reopen_cpu(struct rec *r, struct cpu_buf *b)
{
	size_t n = r->o.nr_ev + 1, *before = calloc(n, sizeof(*before));
	int err;

	if (!before)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		before[i] = r->ids[i].n;
	b->fd_first = r->nr_fds;
	err = open_set(r, b, -1, false, false, true);
	b->fd_end = r->nr_fds;
	/* a paused window (a full disk) has no writer: the next one lists them */
	for (size_t i = 0; i < n && r->w && !err; i++) {
		err = ds_writer_add_ids(r->w, i, r->ids[i].v + before[i], r->ids[i].n - before[i]);
		if (err)
			die_msg("cpu %d came online: adding its events to the recording: %s",
				b->cpu, strerror(-err));
	}
	if (err) {
		size_t first = b->fd_first;

		close_cpu(r, b);
		r->nr_fds = first;	/* the slots of this attempt */
		for (size_t i = 0; i < n; i++)
			r->ids[i].n = before[i];
		free(before);
		return err;
	}
	free(before);
	for (size_t k = b->fd_first; k < b->fd_end; k++)
		ioctl(r->fds[k], PERF_EVENT_IOC_ENABLE, 0);
	return 0;
}

static bool in_list(const int *v, int n, int cpu)
{
	for (int k = 0; k < n; k++)
		if (v[k] == cpu)
			return true;
	return false;
}

int mark_offline(struct rec *r)
{
	int *on = NULL, n = online_cpus(&on);

	if (n < 0)
		return n;
	for (size_t i = 0; i < r->nr_bufs; i++)
		r->bufs[i].offline = !in_list(on, n, r->bufs[i].cpu);
	free(on);
	return 0;
}

int follow_cpus(struct rec *r)
{
	int *on = NULL, n = online_cpus(&on);

	if (n < 0)
		return n;
	for (size_t i = 0; i < r->nr_bufs; i++) {
		struct cpu_buf *b = &r->bufs[i];
		bool online = in_list(on, n, b->cpu);

		if (!online && !b->offline) {
			/* detached by the kernel, never scheduled again */
			close_cpu(r, b);
			b->offline = true;
			die_msg("cpu %d went offline: its events closed", b->cpu);
		} else if (online && b->offline && !reopen_cpu(r, b)) {
			b->offline = false;
			die_msg("cpu %d came online: its events opened", b->cpu);
		}
	}
	free(on);
	return 0;
}

void close_events(struct rec *r)
{
	for (size_t i = 0; i < r->nr_bufs; i++)
		unmap_ring(&r->bufs[i]);
	for (size_t i = 0; i < r->nr_fds; i++)
		if (r->fds[i] >= 0)
			close(r->fds[i]);
	free(r->bufs);
	free(r->fds);
	for (size_t i = 0; r->ids && i <= r->o.nr_ev; i++)
		free(r->ids[i].v);
	free(r->ids);
	r->bufs = NULL;
	r->fds = NULL;
	r->ids = NULL;
	r->nr_bufs = r->nr_fds = 0;
}
