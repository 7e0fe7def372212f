// SPDX-License-Identifier: GPL-2.0
/*
 * Samples on a function's first instructions and on its "ret". Until "push
 * %rbp; mov %rsp,%rbp" has run, and again at the "ret", %rbp is the caller's
 * frame pointer and the return address is on the top of the stack: a plain
 * frame-pointer walk then skips the caller. A loop calls a small function from fe_caller(); user-mode
 * cpu-clock samples land on its first instruction often (QEMU's emulation
 * takes interrupts at the start of translated blocks, i.e. at call targets).
 * Every deferred sample on fe_leaf's "push %rbp" or "mov %rsp,%rbp" must get
 * a stack fe_leaf <- fe_caller <- fe_loop, and so must every other sample in
 * fe_leaf.
 *
 * The other forms of return: two leaves in assembly end in "repz ret" and in
 * "ret $8", each on a jump target so that samples land on it. A sample there
 * must get leaf <- fe_asm_caller <- fe_loop.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stitch_util.h"

#define noinline __attribute__((noinline))

static volatile unsigned long sink;

noinline void fe_leaf(unsigned long x)
{
	sink += x * 3;
}

noinline void fe_caller(unsigned long i)
{
	fe_leaf(i);
	__asm__ volatile("" ::: "memory");	/* no tail call */
}

/* Read by the assembly leaves (a static variable may be renamed). */
volatile unsigned long fe_sink;
/* Where each leaf's return instruction is. */
extern const unsigned long fe_repz_ret_at, fe_retimm_ret_at;
void fe_asm_caller(void);

__asm__(
"	.text\n"
"	.globl fe_repz_leaf\n"
"	.type fe_repz_leaf, @function\n"
"fe_repz_leaf:\n"
"	push %rbp\n"
"	mov %rsp, %rbp\n"
"	incq fe_sink(%rip)\n"
"	pop %rbp\n"
"	jmp .Lfe_repz_ret\n"
".Lfe_repz_ret:\n"
"	repz ret\n"
"	.size fe_repz_leaf, .-fe_repz_leaf\n"
"	.globl fe_retimm_leaf\n"
"	.type fe_retimm_leaf, @function\n"
"fe_retimm_leaf:\n"
"	push %rbp\n"
"	mov %rsp, %rbp\n"
"	incq fe_sink(%rip)\n"
"	pop %rbp\n"
"	jmp .Lfe_retimm_ret\n"
".Lfe_retimm_ret:\n"
"	ret $8\n"
"	.size fe_retimm_leaf, .-fe_retimm_leaf\n"
"	.globl fe_asm_caller\n"
"	.type fe_asm_caller, @function\n"
"fe_asm_caller:\n"
"	push %rbp\n"
"	mov %rsp, %rbp\n"
"	call fe_repz_leaf\n"
"	push $0\n"			/* the word "ret $8" pops */
"	call fe_retimm_leaf\n"
"	pop %rbp\n"
"	ret\n"
"	.size fe_asm_caller, .-fe_asm_caller\n"
"	.pushsection .data\n"
"	.balign 8\n"
"	.globl fe_repz_ret_at, fe_retimm_ret_at\n"
"fe_repz_ret_at:\n"
"	.quad .Lfe_repz_ret\n"
"fe_retimm_ret_at:\n"
"	.quad .Lfe_retimm_ret\n"
"	.popsection\n");

noinline void fe_loop(unsigned int msec)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long i = 0;; i++) {
		fe_caller(i);
		fe_asm_caller();
		if (!(i & 0xfff) && ds_msec_since(&t0) >= msec)
			break;
	}
}

static int run(void *arg)
{
	fe_loop(*(unsigned int *)arg);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int msec = argc > 1 ? (unsigned int)atoi(argv[1]) : 3000;
	struct ds_symtab *st = ds_symtab_load("/proc/self/exe");
	static const char *const chain[] = { "fe_leaf", "fe_caller", "fe_loop", NULL };
	struct ds_collect c = { 0 };
	struct perf_event_attr attr;
	struct ds_child ch;
	struct ds_mmap ring;
	uint64_t leaf = (uint64_t)(uintptr_t)fe_leaf;
	long at_entry[3] = { 0 }, entry_ok[3] = { 0 }, in_leaf = 0, leaf_ok = 0;
	/* On "repz ret", on "ret $8": samples, and those that name the caller. */
	const uint64_t ret_at[2] = { fe_repz_ret_at, fe_retimm_ret_at };
	static const char *const ret_leaf[2] = { "fe_repz_leaf", "fe_retimm_leaf" };
	long at_ret[2] = { 0 }, ret_ok[2] = { 0 };
	int fd, failed = 0, status;

	if (!st)
		return 1;
	/*
	 * Samples as many as on the fast kernel: the debug kernel samples
	 * ds_period_scale() times less often (4 on fe_leaf's prologue in 3 s
	 * once, against 171 to 529 on fast).
	 */
	if (argc <= 1)
		msec *= (unsigned int)ds_period_scale();
	if (ds_child_start(&ch, run, &msec))
		return 1;
	ds_attr_sampling(&attr, 37000);
	attr.exclude_kernel = 1;
	ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
	fd = ds_perf_open(&attr, ch.pid, -1, -1, 0);
	if (fd < 0 || ds_mmap_open(&ring, fd, 1024)) {
		printf("# open: %s\n", strerror(-fd));
		return 1;
	}
	c.only_tid = (uint32_t)ch.pid;
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	ds_child_go(&ch);
	status = ds_child_wait(&ch, &ring, ds_collect_record, &c);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	ds_mmap_drain(&ring, ds_collect_record, &c);

	for (long i = 0; i < c.n; i++) {
		const struct ds_rec *r = &c.recs[i], *d;
		const char *s = ds_symtab_lookup(st, r->ip);
		bool ok;
		long n;

		if (r->deferred || !r->cookie || !s)
			continue;
		for (int k = 0; k < 2; k++) {
			const char *want[] = { ret_leaf[k], "fe_asm_caller", "fe_loop", NULL };

			if (r->ip != ret_at[k])
				continue;
			d = ds_find_record(&c, r->tid, r->cookie, &n);
			ok = d && d->nr >= 3 && d->ips[0] == r->ip &&
			     ds_chain_has_sequence(st, d->ips, d->nr, want);
			at_ret[k]++;
			ret_ok[k] += ok;
			if (!ok && at_ret[k] - ret_ok[k] <= 3)
				printf("# on %s's return: %s\n", ret_leaf[k],
				       d ? "record without its caller" : "no record");
		}
		if (strcmp(s, "fe_leaf"))
			continue;
		d = ds_find_record(&c, r->tid, r->cookie, &n);
		ok = d && d->nr >= 3 && d->ips[0] == r->ip &&
		     ds_chain_has_sequence(st, d->ips, d->nr, chain);
		in_leaf++;
		leaf_ok += ok;
		/* fe_leaf's prologue: [endbr64;] push %rbp; mov %rsp,%rbp */
		for (int k = 0; k < 3; k++) {
			const unsigned char *p = (const unsigned char *)(uintptr_t)leaf;
			uint64_t push = leaf + (p[0] == 0xf3 ? 4 : 0);
			uint64_t want[3] = { push, push + 1, 0 };

			if (k < 2 && r->ip == want[k]) {
				at_entry[k]++;
				entry_ok[k] += ok;
			}
		}
		if (!ok && in_leaf - leaf_ok <= 5)
			printf("# fe_leaf+%#llx: %s\n", (unsigned long long)(r->ip - leaf),
			       d ? "record without fe_leaf <- fe_caller <- fe_loop" : "no record");
	}
	printf("# %ld samples in fe_leaf (%ld on push %%rbp, %ld on mov %%rsp,%%rbp)\n", in_leaf,
	       at_entry[0], at_entry[1]);
	DS_CHECK(&failed, status == 0, "workload ran");
	DS_CHECK(&failed, at_entry[0] + at_entry[1] >= 5,
		 "samples on fe_leaf's first instructions (%ld)", at_entry[0] + at_entry[1]);
	DS_CHECK(&failed, entry_ok[0] == at_entry[0] && entry_ok[1] == at_entry[1],
		 "each names its caller: fe_leaf <- fe_caller <- fe_loop (%ld of %ld, %ld of %ld)",
		 entry_ok[0], at_entry[0], entry_ok[1], at_entry[1]);
	DS_CHECK(&failed, leaf_ok == in_leaf, "every sample in fe_leaf does (%ld of %ld)", leaf_ok,
		 in_leaf);
	printf("# %ld samples on \"repz ret\", %ld on \"ret $8\"\n", at_ret[0], at_ret[1]);
	DS_CHECK(&failed, at_ret[0] >= 3 && at_ret[1] >= 3,
		 "samples on the leaves' return instructions (%ld, %ld)", at_ret[0], at_ret[1]);
	DS_CHECK(&failed, ret_ok[0] == at_ret[0] && ret_ok[1] == at_ret[1],
		 "each names its caller: leaf <- fe_asm_caller <- fe_loop (%ld of %ld, %ld of %ld)",
		 ret_ok[0], at_ret[0], ret_ok[1], at_ret[1]);
	ds_mmap_close(&ring);
	close(fd);
	ds_collect_free(&c);
	ds_symtab_free(st);
	return failed ? 1 : 0;
}
