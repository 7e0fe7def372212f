// SPDX-License-Identifier: MIT
/*
 * Write small perf.data files for the CLI tests.
 *   mkdata OUT [MAPPED_FILE]  raw deferred stream: two tasks, two CPUs, a
 *       record before its sample, a lost record, an exit; with MAPPED_FILE,
 *       an MMAP2 record that maps alpha's user frames to it
 *   mkdata --multi OUT  two events as perf 6.x writes them (PERF_SAMPLE_ID,
 *       no IDENTIFIER): cpu-clock with 3 samples in KADDR(0x10) of period
 *       100 and one in KADDR(0x110) of period 700; page-faults with 2
 *       samples in KADDR(0x210) of period 1
 *   mkdata --deep OUT KALLSYMS N DEPTH  N samples of DEPTH kernel frames,
 *       each frame its own function of KALLSYMS (written too), each sample
 *       its own leaf: N distinct stacks of DEPTH distinct frames
 *   mkdata --names OUT PID VDSO_OFF  task PID ("jit") with anonymous memory
 *       at JIT_BASE (MMAP2 "//anon", pgoff its address, as the kernel
 *       gives) and a [vdso] at VDSO_BASE; one user sample: leaf at vDSO
 *       offset VDSO_OFF + 1, callers JIT_BASE + 0x10 and JIT_BASE + 0x150
 *   mkdata --vdso OUT  this process's vDSO image (ds_vdso_save())
 */
#include <stdio.h>
#include <string.h>

#include "streams.h"

/* perf 6.1's sample_type for -e a,b -g */
#define MULTI_ST (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
		  PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_ID | PERF_SAMPLE_PERIOD)

static void multi_sample(struct sbuf *s, uint64_t id, uint32_t tid, uint64_t time,
			 uint64_t kaddr, uint64_t period)
{
	size_t at = sb_begin(s, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL);

	sb_u64(s, kaddr);		/* ip */
	sb_u32x2(s, tid, tid);
	sb_u64(s, time);
	sb_u64(s, id);
	sb_u64(s, period);
	sb_u64(s, 2);
	sb_u64(s, PERF_CONTEXT_KERNEL);
	sb_u64(s, kaddr);
	sb_end(s, at);
}

static int write_multi(const char *path)
{
	struct sbuf s = { 0 };
	struct ds_writer *w;
	struct ds_attr a[2];
	uint64_t id0 = 11, id1 = 22;
	size_t at;
	int err;

	memset(a, 0, sizeof(a));
	for (int i = 0; i < 2; i++) {
		a[i].attr.size = sizeof(a[i].attr);
		a[i].sz = sizeof(a[i]);
		a[i].attr.type = PERF_TYPE_SOFTWARE;
		a[i].attr.sample_type = MULTI_ST;
		a[i].attr.sample_id_all = 1;
		a[i].attr.sample_period = 4000;
		a[i].attr.freq = 1;
	}
	a[0].attr.config = PERF_COUNT_SW_CPU_CLOCK;
	a[0].ids = &id0;
	a[0].nr_ids = 1;
	a[1].attr.config = PERF_COUNT_SW_PAGE_FAULTS;
	a[1].ids = &id1;
	a[1].nr_ids = 1;
	a[1].name = "page-faults:u";	/* a name with a modifier */
	/* COMM with a sample_id trailer: TID, TIME, ID */
	at = sb_begin(&s, PERF_RECORD_COMM, 0);
	sb_u32x2(&s, 7, 7);
	sb_put(&s, "multi\0\0\0\0\0\0\0\0\0\0\0", 16);
	sb_u32x2(&s, 7, 7);
	sb_u64(&s, 1);
	sb_u64(&s, id1);
	sb_end(&s, at);
	for (int i = 0; i < 3; i++)
		multi_sample(&s, id0, 7, 10 + (uint64_t)i, KADDR(0x10), 100);
	multi_sample(&s, id0, 7, 20, KADDR(0x110), 700);
	multi_sample(&s, id1, 7, 21, KADDR(0x210), 1);
	multi_sample(&s, id1, 7, 22, KADDR(0x210), 1);
	sb_round(&s);
	err = ds_writer_open(&w, path, a, 2, NULL);
	for (size_t off = 0; !err && off < s.len;) {
		struct perf_event_header h;

		memcpy(&h, s.b + off, sizeof(h));
		err = ds_writer_write(w, (const void *)(s.b + off));
		off += h.size;
	}
	if (!err)
		err = ds_writer_close(w, NULL);
	free(s.b);
	return err;
}

static int write_deep(const char *path, const char *ks, unsigned n, unsigned depth)
{
	struct sbuf s = { 0 };
	uint64_t *chain = calloc(depth + 1, 8);
	FILE *f = fopen(ks, "w");
	int err;

	if (!chain || !f || depth < 2 || depth > 8100)
		return -1;
	fprintf(f, "%016llx T _text\n", (unsigned long long)KADDR(0));
	for (unsigned i = 0; i < depth + n; i++)
		fprintf(f, "%016llx T deep_fn_%u\n", (unsigned long long)KADDR(16 * i), i);
	if (fclose(f))
		return -1;
	sb_comm(&s, 5, "deep", 1);
	chain[0] = PERF_CONTEXT_KERNEL;
	for (unsigned k = 0; k < n; k++) {
		chain[1] = KADDR(16 * (depth + k));	/* the leaf: one per sample */
		for (unsigned i = 1; i < depth; i++)
			chain[i + 1] = KADDR(16 * i + 4);
		sb_sample(&s, 5, 10 + k, 0, chain, depth + 1);
	}
	sb_round(&s);
	err = sb_write_file(&s, path);
	free(s.b);
	free(chain);
	return err;
}

#define JIT_BASE 0x7f0000000000ULL
#define VDSO_BASE 0x7ffff7fc1000ULL

static int write_names(const char *path, uint32_t pid, uint64_t vdso_off)
{
	struct sbuf s = { 0 };
	uint64_t chain[] = { PERF_CONTEXT_USER, VDSO_BASE + vdso_off + 1, JIT_BASE + 0x10,
			     JIT_BASE + 0x150 };
	int err;

	sb_comm(&s, pid, "jit", 1);
	sb_mmap2_at(&s, pid, JIT_BASE, 0x10000, JIT_BASE, "//anon", 2);
	sb_mmap2(&s, pid, VDSO_BASE, 0x2000, "[vdso]", 3);
	sb_sample(&s, pid, 10, 0, chain, 4);
	sb_round(&s);
	err = sb_write_file(&s, path);
	free(s.b);
	return err;
}

int main(int argc, char **argv)
{
	struct sbuf s = { 0 };
	int err;

	if (argc == 3 && !strcmp(argv[1], "--multi")) {
		err = write_multi(argv[2]);
		goto out;
	}
	if (argc == 5 && !strcmp(argv[1], "--names")) {
		err = write_names(argv[2], (uint32_t)strtoul(argv[3], NULL, 0),
				  strtoull(argv[4], NULL, 16));
		goto out;
	}
	if (argc == 3 && !strcmp(argv[1], "--vdso")) {
		err = ds_vdso_save(argv[2]);
		goto out;
	}
	if (argc == 6 && !strcmp(argv[1], "--deep")) {
		err = write_deep(argv[2], argv[3], (unsigned)atoi(argv[4]),
				 (unsigned)atoi(argv[5]));
		goto out;
	}
	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: mkdata OUT [MAPPED_FILE] | --multi OUT | --deep OUT KS N DEPTH | "
			"--names OUT PID VDSO_OFF | --vdso OUT\n");
		return 2;
	}
	sb_comm(&s, 100, "alpha", 1);
	if (argc == 3)	/* alpha's user frames are in this file */
		sb_mmap2(&s, 100, UADDR(0), 0x10000, argv[2], 1);
	sb_comm(&s, 200, "beta", 2);
	sb_dsample(&s, 100, 1000, 0, 0, 0x100000001ULL);
	sb_dsample(&s, 100, 1100, 0, 2, 0x100000001ULL);
	sb_dsample(&s, 200, 1150, 0, 4, 0x100000001ULL);	/* same value, other task */
	sb_round(&s);
	sb_deferred(&s, 100, 1200, 1, 0x100000001ULL, 0, 3);
	sb_deferred(&s, 200, 1250, 1, 0x100000001ULL, 16, 2);
	sb_dsample(&s, 200, 1260, 1, 6, 0x100000001ULL);	/* record first */
	sb_round(&s);
	sb_dsample(&s, 100, 1300, 0, 8, 0x200000001ULL);
	sb_lost(&s, 3, 1310, 0);
	sb_dsample(&s, 100, 1400, 0, 10, 0x300000001ULL);
	sb_exit(&s, 200, 1450, 1);
	sb_round(&s);
	err = sb_write_file(&s, argv[1]);
	free(s.b);
out:
	if (err) {
		fprintf(stderr, "mkdata: %d\n", err);
		return 1;
	}
	return 0;
}
