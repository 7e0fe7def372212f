// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin that counts the guest instructions executed at each
 * translation block's start address, between two marks the guest sets.
 *
 *   qemu-system-x86_64 ... -plugin PATH/insn_profile.so[,mark=ADDR],out=PREFIX
 *
 * ADDR (hex) is a guest address the workload makes the kernel execute at
 * the start and the end of what is measured (e.g. ksys_sync: the guest
 * runs "sync"). At each execution of ADDR after the first, PREFIX.N gets
 * one line per block start executed since the previous mark:
 * "ADDR INSTRUCTIONS EXECUTIONS"; bench/qemu-plugin/profile.sh adds the
 * lines up per kernel function (System.map). At exit, PREFIX.end gets the
 * same since the last mark (since boot without one): which blocks a guest
 * test ran, for a path it should reach.
 *
 * A block is counted by an inline add at its start: it may leave early (an
 * exception, an interrupt), so a figure is an upper bound by a few
 * instructions per such exit. With -icount, guest time is these counts.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

struct block {
	uint64_t pc;
	uint64_t execs;		/* updated inline by the vCPUs */
	uint64_t at_mark;	/* execs at the previous mark */
	uint32_t insns;
};

#define CHUNK 65536

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct block **chunks;
static size_t nchunks, nblocks;
static uint64_t mark_pc;
static const char *prefix = "insn-profile";
static unsigned int marks;

static struct block *new_block(void)
{
	if (nblocks == nchunks * CHUNK) {
		struct block **c = realloc(chunks, (nchunks + 1) * sizeof(*c));

		if (!c)
			return NULL;
		chunks = c;
		chunks[nchunks] = calloc(CHUNK, sizeof(struct block));
		if (!chunks[nchunks])
			return NULL;
		nchunks++;
	}
	nblocks++;
	return &chunks[(nblocks - 1) / CHUNK][(nblocks - 1) % CHUNK];
}

static void dump(const char *suffix)
{
	char path[4096];
	FILE *f;

	if (suffix)
		snprintf(path, sizeof(path), "%s.%s", prefix, suffix);
	else
		snprintf(path, sizeof(path), "%s.%u", prefix, marks - 1);
	f = fopen(path, "w");
	for (size_t i = 0; i < nblocks; i++) {
		struct block *b = &chunks[i / CHUNK][i % CHUNK];
		uint64_t n = __atomic_load_n(&b->execs, __ATOMIC_RELAXED);

		if (f && n != b->at_mark)
			fprintf(f, "%" PRIx64 " %" PRIu64 " %" PRIu64 "\n", b->pc,
				(n - b->at_mark) * b->insns, n - b->at_mark);
		b->at_mark = n;
	}
	if (f)
		fclose(f);
}

static void on_mark(unsigned int vcpu, void *udata)
{
	(void)vcpu;
	(void)udata;
	pthread_mutex_lock(&lock);
	if (marks++) {
		dump(NULL);
	} else {
		for (size_t i = 0; i < nblocks; i++) {
			struct block *b = &chunks[i / CHUNK][i % CHUNK];

			b->at_mark = __atomic_load_n(&b->execs, __ATOMIC_RELAXED);
		}
	}
	pthread_mutex_unlock(&lock);
}

static void on_qemu_exit(qemu_plugin_id_t id, void *udata)
{
	(void)id;
	(void)udata;
	pthread_mutex_lock(&lock);
	dump("end");
	pthread_mutex_unlock(&lock);
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	struct block *b;

	(void)id;
	pthread_mutex_lock(&lock);
	b = new_block();
	if (b) {
		b->pc = qemu_plugin_tb_vaddr(tb);
		b->insns = qemu_plugin_tb_n_insns(tb);
		qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
							 &b->execs, 1);
	}
	pthread_mutex_unlock(&lock);
	if (mark_pc && qemu_plugin_tb_vaddr(tb) == mark_pc)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, on_mark, QEMU_PLUGIN_CB_NO_REGS, NULL);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	(void)info;
	for (int i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "mark=", 5))
			mark_pc = strtoull(argv[i] + 5, NULL, 16);
		else if (!strncmp(argv[i], "out=", 4))
			prefix = strdup(argv[i] + 4);
		else
			return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, on_qemu_exit, NULL);
	return 0;
}
