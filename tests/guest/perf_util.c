// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "perf_util.h"

void ds_attr_set_flag(struct perf_event_attr *attr, int bit)
{
	/* The flags bitfield is the u64 right after read_format. */
	uint64_t *word = (uint64_t *)((char *)attr +
				      offsetof(struct perf_event_attr, read_format) + 8);

	*word |= 1ULL << bit;
}

void ds_attr_sampling(struct perf_event_attr *attr, uint64_t period_ns)
{
	const char *scale = getenv("DS_PERIOD_SCALE");

	if (scale && atoi(scale) > 1)
		period_ns *= (uint64_t)atoi(scale);
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

int ds_perf_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd,
		 unsigned long flags)
{
	long fd = syscall(SYS_perf_event_open, attr, pid, cpu, group_fd,
			  flags | PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : (int)fd;
}

int ds_ring_map(struct ds_ring *r, int fd, unsigned int data_pages)
{
	size_t page = sysconf(_SC_PAGESIZE);

	r->fd = fd;
	r->data_size = data_pages * page;
	r->map_size = r->data_size + page;
	r->base = mmap(NULL, r->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r->base == MAP_FAILED) {
		r->base = NULL;
		return -errno;
	}
	return 0;
}

void ds_ring_unmap(struct ds_ring *r)
{
	if (r->base)
		munmap(r->base, r->map_size);
	r->base = NULL;
}

long ds_ring_drain(struct ds_ring *r, ds_record_fn fn, void *arg)
{
	struct perf_event_mmap_page *pg = r->base;
	const unsigned char *data = (const unsigned char *)r->base +
				    (r->map_size - r->data_size);
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pg->data_tail;
	unsigned char *rec = NULL;
	size_t cap = 0;
	long n = 0;

	while (tail < head) {
		struct perf_event_header hdr;
		size_t off = tail % r->data_size, first;

		if (head - tail < sizeof(hdr))
			return -EPROTO;
		first = r->data_size - off;
		if (first >= sizeof(hdr)) {
			memcpy(&hdr, data + off, sizeof(hdr));
		} else {
			memcpy(&hdr, data + off, first);
			memcpy((char *)&hdr + first, data, sizeof(hdr) - first);
		}
		if (hdr.size < sizeof(hdr) || hdr.size > head - tail) {
			free(rec);
			return -EPROTO;
		}
		if (hdr.size > cap) {
			unsigned char *nrec = realloc(rec, hdr.size);

			if (!nrec) {
				free(rec);
				return -ENOMEM;
			}
			rec = nrec;
			cap = hdr.size;
		}
		if (first >= hdr.size) {
			memcpy(rec, data + off, hdr.size);
		} else {
			memcpy(rec, data + off, first);
			memcpy(rec + first, data, hdr.size - first);
		}
		fn((const struct perf_event_header *)rec, arg);
		tail += hdr.size;
		n++;
	}
	free(rec);
	__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
	return n;
}

int ds_parse_sample(const struct perf_event_header *hdr, struct ds_sample *s)
{
	const uint64_t *p = (const uint64_t *)(hdr + 1);
	const uint64_t *end = (const uint64_t *)((const char *)hdr + hdr->size);

	if (hdr->type != PERF_RECORD_SAMPLE || end - p < 5)
		return -EINVAL;
	s->ip = *p++;
	s->pid = (uint32_t)*p;
	s->tid = (uint32_t)(*p++ >> 32);
	s->time = *p++;
	s->cpu = (uint32_t)*p++;
	s->nr = *p++;
	if (s->nr > (uint64_t)(end - p))
		return -EINVAL;
	s->ips = p;
	return 0;
}

int ds_parse_deferred(const struct perf_event_header *hdr, struct ds_deferred *d)
{
	const uint64_t *p = (const uint64_t *)(hdr + 1);
	const uint64_t *end = (const uint64_t *)((const char *)hdr + hdr->size);

	if (hdr->type != DS_RECORD_CALLCHAIN_DEFERRED || end - p < 2)
		return -EINVAL;
	d->cookie = *p++;
	d->nr = *p++;
	if (d->nr > (uint64_t)(end - p) || end - p - d->nr < 3)
		return -EINVAL;
	d->ips = p;
	p += d->nr;
	d->pid = (uint32_t)*p;
	d->tid = (uint32_t)(*p++ >> 32);
	d->time = *p++;
	d->cpu = (uint32_t)*p++;
	return 0;
}

uint64_t ds_chain_cookie(const uint64_t *ips, uint64_t nr)
{
	if (nr >= 2 && ips[nr - 2] == DS_CONTEXT_USER_DEFERRED)
		return ips[nr - 1];
	return 0;
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
