// SPDX-License-Identifier: MIT
/* deferstack record: the events' attrs, what the kernel allows (the
 * user's options, the defer bit), and opening them with their rings. */
#include <dirent.h>
#include <errno.h>
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

void make_attrs(struct perf_event_attr *s, struct perf_event_attr *t,
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

void open_error(int err, const struct ropts *o, pid_t pid, int cpu)
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
int check_attrs(struct ropts *o)
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
int probe_defer(bool user_only)
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

int online_cpus(int **out)
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
			err = open_pair(r, &r->bufs[i], -1, false, false);
			continue;
		}
		for (size_t k = 0; k < nr_tids && !err; k++)
			err = open_pair(r, &r->bufs[i], tids[k], task, r->o.cmd != NULL);
		if (err == -ESRCH && r->o.pid > 0)
			err = 0;	/* a thread exited meanwhile */
	}
	if (tids != &r->child)
		free(tids);
	return err;
}
