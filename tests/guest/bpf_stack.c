// SPDX-License-Identifier: GPL-2.0
/*
 * BPF on a defer_callchain event: a BPF_PROG_TYPE_PERF_EVENT program calls
 * bpf_get_stackid() for the kernel and for the user stack of every sample of
 * a cpu-clock event with defer_callchain. The sample's callchain ends in
 * PERF_CONTEXT_USER_DEFERRED and a cookie, which are no kernel addresses: the
 * kernel stacks must hold kernel addresses only, and the user stacks (not in
 * the sample, so walked by the helper itself) must name the workload.
 *
 * The program is written as raw instructions and loaded with bpf(2), which
 * keeps the guest test static and free of a BPF toolchain.
 *
 *   bpf_stack
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "stitch_util.h"
#include "workload.h"

#define MAX_DEPTH 127

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

static int map_create(void)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_STACK_TRACE;
	a.key_size = 4;
	a.value_size = MAX_DEPTH * 8;
	a.max_entries = 4096;
	return (int)sys_bpf(BPF_MAP_CREATE, &a);
}

#define INSN(c, d, s, o, i) ((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), \
						.off = (o), .imm = (i) })

static int prog_load(int kmap, int umap)
{
	struct bpf_insn insns[] = {
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, 6, 1, 0, 0),		/* r6 = ctx */
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, 1, 6, 0, 0),		/* r1 = ctx */
		INSN(BPF_LD | BPF_DW | BPF_IMM, 2, BPF_PSEUDO_MAP_FD, 0, kmap),
		INSN(0, 0, 0, 0, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, 3, 0, 0, 0),		/* kernel stack */
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_stackid),
		INSN(BPF_ALU64 | BPF_MOV | BPF_X, 1, 6, 0, 0),
		INSN(BPF_LD | BPF_DW | BPF_IMM, 2, BPF_PSEUDO_MAP_FD, 0, umap),
		INSN(0, 0, 0, 0, 0),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, 3, 0, 0, BPF_F_USER_STACK),
		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_stackid),
		INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1),		/* keep the sample */
		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
	};
	static char log[65536];
	union bpf_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_PERF_EVENT;
	a.insns = (uint64_t)(uintptr_t)insns;
	a.insn_cnt = sizeof(insns) / sizeof(insns[0]);
	a.license = (uint64_t)(uintptr_t)"GPL";
	a.log_buf = (uint64_t)(uintptr_t)log;
	a.log_size = sizeof(log);
	a.log_level = 1;
	fd = (int)sys_bpf(BPF_PROG_LOAD, &a);
	if (fd < 0)
		printf("# BPF_PROG_LOAD: %s\n%s\n", strerror(errno), log);
	return fd;
}

struct stacks {
	long n, kernel_only, bad, named;
};

/* Walk every stack in @map; @user selects the check. */
static void read_stacks(int map, bool user, const struct ds_symtab *st, struct stacks *s)
{
	uint32_t key, next;
	uint64_t ips[MAX_DEPTH];
	union bpf_attr a;
	bool first = true;

	memset(s, 0, sizeof(*s));
	for (;;) {
		memset(&a, 0, sizeof(a));
		a.map_fd = (uint32_t)map;
		a.key = first ? 0 : (uint64_t)(uintptr_t)&key;
		a.next_key = (uint64_t)(uintptr_t)&next;
		if (sys_bpf(BPF_MAP_GET_NEXT_KEY, &a))
			break;
		first = false;
		key = next;
		memset(&a, 0, sizeof(a));
		a.map_fd = (uint32_t)map;
		a.key = (uint64_t)(uintptr_t)&key;
		a.value = (uint64_t)(uintptr_t)ips;
		if (sys_bpf(BPF_MAP_LOOKUP_ELEM, &a))
			continue;
		s->n++;
		if (!user) {
			bool ok = true;

			/* The chain's own PERF_CONTEXT_KERNEL mark is kept, as before. */
			for (int i = 0; i < MAX_DEPTH && ips[i]; i++)
				ok &= ds_is_kernel_ip(ips[i]) || ips[i] == PERF_CONTEXT_KERNEL;
			s->kernel_only += ok;
			if (!ok && s->bad++ < 2) {
				printf("# kernel stack:");
				for (int i = 0; i < MAX_DEPTH && ips[i]; i++)
					printf(" %#llx", (unsigned long long)ips[i]);
				printf("\n");
			}
		} else {
			int n = 0;

			while (n < MAX_DEPTH && ips[n])
				n++;
			s->named += ds_chain_has_sequence(st, ips, (uint64_t)n,
							  workload_read_chain) ||
				    ds_chain_has_sequence(st, ips, (uint64_t)n,
							  workload_spin_chain);
		}
	}
}

int main(void)
{
	struct ds_symtab *st = ds_symtab_load("/proc/self/exe");
	struct perf_event_attr attr;
	struct workload_stats ws;
	struct stacks ks, us;
	int kmap, umap, prog, fd, failed = 0;

	if (!st)
		return 1;
	kmap = map_create();
	umap = map_create();
	if (kmap < 0 || umap < 0) {
		printf("# BPF_MAP_CREATE: %s\n", strerror(errno));
		return 1;
	}
	prog = prog_load(kmap, umap);
	if (prog < 0)
		return 1;
	ds_attr_sampling(&attr, 250000);
	ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
	fd = ds_perf_open(&attr, 0, -1, -1, 0);
	if (fd < 0 || ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog)) {
		printf("# perf_event_open/SET_BPF: %s\n", strerror(fd < 0 ? -fd : errno));
		return 1;
	}
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	workload_run(1000, 1 << 20, "/dev/zero", &ws);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	read_stacks(kmap, false, st, &ks);
	read_stacks(umap, true, st, &us);
	printf("# kernel stacks: %ld, all kernel addresses: %ld; user stacks: %ld, naming the "
	       "workload: %ld\n", ks.n, ks.kernel_only, us.n, us.named);
	DS_CHECK(&failed, ks.n >= 1, "the program recorded kernel stacks (%ld)", ks.n);
	DS_CHECK(&failed, ks.kernel_only == ks.n,
		 "kernel stacks hold no marker or cookie (%ld of %ld clean)", ks.kernel_only, ks.n);
	DS_CHECK(&failed, us.named >= 1, "user stacks walked by the helper name the workload "
		 "(%ld of %ld)", us.named, us.n);
	close(fd);
	close(prog);
	ds_symtab_free(st);
	return failed ? 1 : 0;
}
