// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "perf_util.h"

long ds_period_scale(void)
{
	const char *scale = getenv("DS_PERIOD_SCALE");

	return scale && atol(scale) > 1 ? atol(scale) : 1;
}

void ds_attr_sampling(struct perf_event_attr *attr, uint64_t period_ns)
{
	period_ns *= (uint64_t)ds_period_scale();
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_CPU_CLOCK;
	attr->sample_period = period_ns;
	attr->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			    PERF_SAMPLE_CPU | PERF_SAMPLE_CALLCHAIN;
	attr->sample_id_all = 1;
	attr->disabled = 1;
	attr->exclude_hv = 1;
}

void ds_attr_sideband(struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_DUMMY;
	attr->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			    PERF_SAMPLE_CPU | PERF_SAMPLE_CALLCHAIN;
	attr->sample_id_all = 1;
	attr->mmap = attr->comm = attr->task = 1;
	attr->disabled = 1;
	ds_attr_set_flag(attr, DS_ATTR_BIT_DEFER_OUTPUT, 1);
}

void ds_pin(pid_t pid, int cpu)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	CPU_ZERO(&set);
	if (cpu >= 0)
		CPU_SET(cpu, &set);
	else
		for (long i = 0; i < n && i < CPU_SETSIZE; i++)
			CPU_SET(i, &set);
	sched_setaffinity(pid, sizeof(set), &set);
}

int ds_perf_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd,
		 unsigned long flags)
{
	long fd = syscall(SYS_perf_event_open, attr, pid, cpu, group_fd,
			  flags | PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : (int)fd;
}

#define DS_TEST_SAMPLE_TYPE (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
			     PERF_SAMPLE_CPU | PERF_SAMPLE_CALLCHAIN)

int ds_mmap_open(struct ds_mmap *m, int fd, unsigned int data_pages)
{
	size_t page = sysconf(_SC_PAGESIZE);
	int ret;

	m->map_size = (data_pages + 1) * page;
	m->base = mmap(NULL, m->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m->base == MAP_FAILED) {
		m->base = NULL;
		return -errno;
	}
	m->ring.sz = sizeof(m->ring);
	ret = ds_ring_init(&m->ring, m->base, m->map_size, page);
	if (ret) {
		munmap(m->base, m->map_size);
		m->base = NULL;
	}
	return ret;
}

void ds_mmap_close(struct ds_mmap *m)
{
	if (!m->base)
		return;
	ds_ring_destroy(&m->ring);
	munmap(m->base, m->map_size);
	m->base = NULL;
}

long ds_mmap_drain(struct ds_mmap *m, ds_event_fn fn, void *arg)
{
	const struct perf_event_header *rec;
	struct ds_event ev = { .sz = sizeof(ev) };
	long n = 0;
	int ret;

	ds_ring_begin(&m->ring);
	while ((ret = ds_ring_next(&m->ring, &rec)) > 0) {
		/* A record that does not parse reaches @fn with nothing in have. */
		if (ds_event_parse(rec, rec->size, DS_TEST_SAMPLE_TYPE, true, &ev)) {
			memset(&ev, 0, sizeof(ev));
			ev.hdr = rec;
			ev.type = rec->type;
		}
		fn(&ev, arg);
		n++;
	}
	ds_ring_end(&m->ring);
	return ret < 0 ? ret : n;
}

struct ds_sym {
	uint64_t start, end;
	char *name;
};

struct ds_symtab {
	struct ds_sym *syms;
	size_t n;
};

static int sym_cmp(const void *a, const void *b)
{
	const struct ds_sym *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

struct ds_symtab *ds_symtab_load(const char *path)
{
	struct ds_symtab *st = calloc(1, sizeof(*st));
	Elf_Scn *scn = NULL;
	Elf *elf = NULL;
	int fd = -1;

	if (!st || elf_version(EV_CURRENT) == EV_NONE)
		goto fail;
	fd = open(path, O_RDONLY);
	if (fd < 0)
		goto fail;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		goto fail;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !sh.sh_entsize)
			continue;
		size_t cnt = sh.sh_size / sh.sh_entsize;

		st->syms = calloc(cnt, sizeof(*st->syms));
		if (!st->syms)
			goto fail;
		for (size_t i = 0; i < cnt; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_value)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name)
				continue;
			st->syms[st->n].start = sym.st_value;
			st->syms[st->n].end = sym.st_value + (sym.st_size ? sym.st_size : 1);
			st->syms[st->n].name = strdup(name);
			if (!st->syms[st->n].name)
				goto fail;
			st->n++;
		}
		break;
	}
	qsort(st->syms, st->n, sizeof(*st->syms), sym_cmp);
	elf_end(elf);
	close(fd);
	return st;
fail:
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	ds_symtab_free(st);
	return NULL;
}

const char *ds_symtab_lookup(const struct ds_symtab *st, uint64_t ip)
{
	size_t lo = 0, hi = st->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (st->syms[mid].start <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && ip < st->syms[lo - 1].end)
		return st->syms[lo - 1].name;
	return NULL;
}

void ds_symtab_free(struct ds_symtab *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->n; i++)
		free(st->syms[i].name);
	free(st->syms);
	free(st);
}

bool ds_chain_has_sequence(const struct ds_symtab *st, const uint64_t *ips,
			   uint64_t nr, const char *const *chain)
{
	for (uint64_t i = 0; i < nr; i++) {
		uint64_t j = i;
		size_t k = 0;

		while (chain[k] && j < nr) {
			/* Return addresses point after the call: look up ip - 1 beyond frame 0. */
			const char *s = ds_symtab_lookup(st, j == 0 ? ips[j] : ips[j] - 1);

			if (!s || strcmp(s, chain[k]))
				break;
			j++;
			k++;
		}
		if (!chain[k])
			return true;
	}
	return false;
}

bool ds_kernel_is_mainline(void)
{
	struct utsname u;

	return !uname(&u) && u.release[0] >= '7' && u.release[1] == '.';
}

int ds_attr_tracepoint(struct perf_event_attr *attr, const char *sys, const char *name)
{
	char path[256];
	FILE *f;
	int id = -1;

	snprintf(path, sizeof(path), "/sys/kernel/tracing/events/%s/%s/id", sys, name);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (fscanf(f, "%d", &id) != 1)
		id = -1;
	fclose(f);
	if (id < 0)
		return -EINVAL;
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = PERF_TYPE_TRACEPOINT;
	attr->config = (uint64_t)id;
	attr->sample_period = 1;
	attr->sample_type = DS_TEST_SAMPLE_TYPE;
	attr->sample_id_all = 1;
	attr->exclude_hv = 1;
	return 0;
}

int ds_child_start(struct ds_child *ch, int (*fn)(void *), void *arg)
{
	int p[2];
	char c;

	if (pipe(p))
		return -errno;
	ch->pid = fork();
	if (ch->pid < 0)
		return -errno;
	if (ch->pid == 0) {
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(125);
		close(p[0]);
		_exit(fn(arg));
	}
	close(p[0]);
	ch->go_fd = p[1];
	return 0;
}

void ds_child_wait_blocked(const struct ds_child *ch)
{
	char path[64], buf[64];

	/* /proc/PID/syscall names the system call only while it blocks in it. */
	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)ch->pid);
	for (int t = 0; t < 1000; t++) {
		FILE *f = fopen(path, "r");
		bool in_read = f && fgets(buf, sizeof(buf), f) && !strncmp(buf, "0 ", 2);

		if (f)
			fclose(f);
		if (in_read)
			return;
		usleep(1000);
	}
}

void ds_child_go(struct ds_child *ch)
{
	if (write(ch->go_fd, "g", 1) != 1)
		perror("ds_child_go");
	close(ch->go_fd);
	ch->go_fd = -1;
}

int ds_child_wait(struct ds_child *ch, struct ds_mmap *m,
		  void (*fn)(const struct ds_event *, void *), void *arg)
{
	int status = 0;

	for (;;) {
		pid_t r = waitpid(ch->pid, &status, WNOHANG);

		if (m)
			ds_mmap_drain(m, fn, arg);
		if (r == ch->pid)
			break;
		if (r < 0)
			return -errno;
		poll(NULL, 0, 5);
	}
	if (m)
		ds_mmap_drain(m, fn, arg);
	return status;
}

long ds_msec_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

pid_t ds_exec_paused(char *const argv[], int out_fd, int *go)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(126);
		if (out_fd >= 0)
			dup2(out_fd, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[0]);
	if (pid < 0) {
		close(p[1]);
		return -1;
	}
	*go = p[1];
	return pid;
}

int ds_exec_go(int go)
{
	int ok = write(go, "g", 1) == 1;

	close(go);
	return ok ? 0 : -1;
}

int ds_write_str(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY);
	int ok = fd >= 0 && write(fd, value, strlen(value)) == (ssize_t)strlen(value);

	if (fd >= 0)
		close(fd);
	if (!ok)
		printf("# %s: %s\n", path, strerror(errno));
	return ok ? 0 : -1;
}

int ds_kernel_text_range(const char *const *names, size_t n, unsigned long *start,
			 unsigned long *end)
{
	unsigned long a, hi = 0;
	char type, name[128];
	FILE *f = fopen("/proc/kallsyms", "r");

	if (!f)
		return -1;
	*start = *end = ~0UL;
	while (fscanf(f, "%lx %c %127s%*[^\n]", &a, &type, name) == 3)
		for (size_t i = 0; i < n; i++)
			if (!strcmp(name, names[i])) {
				*start = a < *start ? a : *start;
				hi = a > hi ? a : hi;
			}
	rewind(f);
	/* The end: the first symbol after the last of them. */
	while (fscanf(f, "%lx %c %127s%*[^\n]", &a, &type, name) == 3)
		if (a > hi && a < *end && (type == 't' || type == 'T'))
			*end = a;
	fclose(f);
	return *start && hi && *end != ~0UL ? 0 : -1;
}

void ds_kernel_syms(const uint64_t *ips, size_t n, char (*names)[DS_KSYM_LEN])
{
	unsigned long a, *best;
	char type, name[128];
	FILE *f;

	for (size_t i = 0; i < n; i++)
		snprintf(names[i], DS_KSYM_LEN, "%#llx", (unsigned long long)ips[i]);
	if (!n)
		return;
	best = calloc(n, sizeof(*best));
	f = best ? fopen("/proc/kallsyms", "r") : NULL;
	while (f && fscanf(f, "%lx %c %127s%*[^\n]", &a, &type, name) == 3) {
		if (type != 't' && type != 'T')
			continue;
		for (size_t i = 0; i < n; i++)
			if (a <= ips[i] && a >= best[i] && a) {
				best[i] = a;
				snprintf(names[i], DS_KSYM_LEN, "%s+%#lx", name,
					 (unsigned long)(ips[i] - a));
			}
	}
	if (f)
		fclose(f);
	free(best);
}
