// SPDX-License-Identifier: GPL-2.0
/*
 * A uretprobe replaces its function's return address on the user stack with
 * the uprobe trampoline. A child calls ur_outer -> ur_probed -> ur_leaf and
 * makes system calls there, sampled with syscalls:sys_enter_getppid and
 * defer_callchain, while a uretprobe (perf's uprobe PMU) sits on ur_probed.
 * Each record must show ur_leaf, ur_probed, ur_outer in a row: the real
 * return address, not the trampoline, as a classic callchain shows it.
 *
 *   uretprobe
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stitch_util.h"

__attribute__((noinline)) static void ur_leaf(void)
{
	for (int i = 0; i < 10; i++)
		ds_syscall3(SYS_getppid, 0, 0, 0);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void ur_probed(void)
{
	ur_leaf();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void ur_outer(void)
{
	ur_probed();
	__asm__ volatile("" ::: "memory");
}

static int child(void *arg)
{
	(void)arg;
	ur_outer();
	return 0;
}

/* File offset of @sym in the executable @path (for the uprobe PMU). */
static long file_offset(const char *path, const char *sym)
{
	long off = -1;
	uint64_t addr = 0;
	Elf_Scn *scn = NULL;
	size_t nph;
	Elf *e;
	int fd;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;

			if (gelf_getsym(d, (int)i, &s) &&
			    !strcmp(elf_strptr(e, sh.sh_link, s.st_name), sym))
				addr = s.st_value;
		}
	}
	if (e && addr && !elf_getphdrnum(e, &nph)) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    addr >= ph.p_vaddr && addr < ph.p_vaddr + ph.p_filesz)
				off = (long)(addr - ph.p_vaddr + ph.p_offset);
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return off;
}

static int pmu_type(const char *pmu)
{
	char path[128];
	FILE *f;
	int type = -1;

	snprintf(path, sizeof(path), "/sys/bus/event_source/devices/%s/type", pmu);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &type) != 1)
		type = -1;
	fclose(f);
	return type;
}

int main(void)
{
	static const char *const chain[] = { "ur_leaf", "ur_probed", "ur_outer", "child", NULL };
	char exe[256];
	struct ds_symtab *st;
	struct ds_collect c = { 0 };
	struct perf_event_attr attr, up;
	struct ds_mmap m;
	struct ds_child ch;
	long off, records = 0, named = 0;
	int fd, upfd, type, status, failed = 0;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return 1;
	exe[n] = 0;
	st = ds_symtab_load(exe);
	off = file_offset(exe, "ur_probed");
	type = pmu_type("uprobe");
	if (!st || off < 0 || type < 0 ||
	    ds_attr_tracepoint(&attr, "syscalls", "sys_enter_getppid")) {
		printf("# setup: symbols %p, offset %ld, uprobe PMU %d\n", (void *)st, off, type);
		return 1;
	}
	ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
	ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_OUTPUT, 1);
	if (ds_child_start(&ch, child, NULL))
		return 1;
	/* The uretprobe: config bit 0 is "retprobe" in the uprobe PMU's format. */
	memset(&up, 0, sizeof(up));
	up.size = sizeof(up);
	up.type = (uint32_t)type;
	up.config = 1;
	up.uprobe_path = (uint64_t)(uintptr_t)exe;
	up.probe_offset = (uint64_t)off;
	upfd = ds_perf_open(&up, ch.pid, -1, -1, 0);
	fd = ds_perf_open(&attr, ch.pid, -1, -1, 0);
	if (upfd < 0 || fd < 0 || ds_mmap_open(&m, fd, 64)) {
		printf("# perf_event_open uretprobe %d, tracepoint %d\n", upfd, fd);
		return 1;
	}
	ds_child_go(&ch);
	status = ds_child_wait(&ch, &m, ds_collect_record, &c);
	DS_CHECK(&failed, WIFEXITED(status) && WEXITSTATUS(status) == 0, "child exited 0");
	for (long i = 0; i < c.n; i++) {
		const struct ds_rec *r = &c.recs[i];

		if (!r->deferred)
			continue;
		records++;
		if (ds_chain_has_sequence(st, r->ips, r->nr, chain)) {
			named++;
		} else if (records - named <= 2) {
			printf("# record:");
			for (uint64_t k = 0; k < r->nr; k++)
				printf(" %#llx(%s)", (unsigned long long)r->ips[k],
				       ds_symtab_lookup(st, k ? r->ips[k] - 1 : r->ips[k]) ?: "?");
			printf("\n");
		}
	}
	printf("# %ld records, %ld with ur_leaf <- ur_probed <- ur_outer <- child\n", records,
	       named);
	DS_CHECK(&failed, records >= 1 && c.lost == 0, "records, none lost (%ld)", records);
	DS_CHECK(&failed, named == records,
		 "every record has the real caller, not the trampoline (%ld of %ld)", named, records);
	ds_mmap_close(&m);
	close(fd);
	close(upfd);
	ds_collect_free(&c);
	ds_symtab_free(st);
	return failed ? 1 : 0;
}
