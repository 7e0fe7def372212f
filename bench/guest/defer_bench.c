// SPDX-License-Identifier: GPL-2.0
/*
 * Deferred vs classic callchains, measured in one boot. Prints figures, never
 * fails on a number (exit status is non-zero only if it could not measure).
 *
 *  1. ring-buffer bytes per sample and user unwinds per sample, for long
 *     (16 MiB) and short (64 KiB) reads;
 *  2. the share of samples with a complete user stack when the stack pages
 *     are not resident: a deep recursion with 16 KiB frames pages its own
 *     stack out (MADV_PAGEOUT, zram swap) right before each long read();
 *  3. workload slowdown at a high sampling rate (50 us period): the same
 *     fixed amount of work unprofiled, classic and deferred.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../tests/guest/stitch_util.h"
#include "../../tests/guest/workload.h"

#define noinline __attribute__((noinline))

enum mode { NONE, CLASSIC, DEFERRED };
static const char *const mode_name[] = { "none", "classic", "deferred" };

struct run {
	struct ds_collect c;
	uint64_t bytes_samples, bytes_records;
};

static void count_bytes(const struct ds_event *ev, void *arg)
{
	struct run *r = arg;

	if (ev->type == PERF_RECORD_SAMPLE)
		r->bytes_samples += ev->size;
	else if (ev->type == DS_RECORD_CALLCHAIN_DEFERRED)
		r->bytes_records += ev->size;
	ds_collect_record(ev, &r->c);
}

static int open_mode(enum mode m, uint64_t period)
{
	struct perf_event_attr attr;

	ds_attr_sampling(&attr, period);
	if (m == DEFERRED) {
		ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
		/* Mainline delivers records only to defer_output events. */
		ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_OUTPUT, 1);
	}
	return ds_perf_open(&attr, 0, -1, -1, 0);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* --- 1. bytes and unwinds per sample ---------------------------------- */

static void bench_bytes(size_t read_size)
{
	for (enum mode m = CLASSIC; m <= DEFERRED; m++) {
		struct run r = { 0 };
		struct workload_stats ws;
		struct ds_mmap ring;
		long samples = 0, records = 0;
		int fd = open_mode(m, 250000);

		if (fd < 0 || ds_mmap_open(&ring, fd, 1024)) {
			printf("bench: cannot open %s event\n", mode_name[m]);
			return;
		}
		ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
		workload_run(1000, read_size, "/dev/zero", &ws);
		ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
		ds_mmap_drain(&ring, count_bytes, &r);
		for (long i = 0; i < r.c.n; i++) {
			samples += !r.c.recs[i].deferred;
			records += r.c.recs[i].deferred;
		}
		if (samples)
			printf("bench: reads=%-8zu mode=%-8s samples=%-6ld bytes/sample=%6.1f "
			       "user-unwinds/sample=%.3f\n", read_size, mode_name[m], samples,
			       (double)(r.bytes_samples + r.bytes_records) / samples,
			       m == CLASSIC ? 1.0 : (double)records / samples);
		ds_mmap_close(&ring);
		close(fd);
		ds_collect_free(&r.c);
	}
}

/* --- 2. non-resident stack pages -------------------------------------- */

#define FRAME_BYTES (16 << 10)
#define DEPTH 24

static char *zero_buf;
static int zero_fd;
static long paged_out_pages, paged_calls;

noinline void deep_read(void)
{
	char *sp = __builtin_frame_address(0);
	uintptr_t lo = ((uintptr_t)sp + 2 * 4096) & ~4095UL;

	size_t len = (size_t)DEPTH * FRAME_BYTES;
	unsigned char vec[DEPTH * FRAME_BYTES / 4096];

	/* Page out the stack above our own frame: all callers' frames. */
	int mret = madvise((void *)lo, len, MADV_PAGEOUT);

	if (!paged_calls && mret)
		perror("bench: madvise(MADV_PAGEOUT)");
	if (!mincore((void *)lo, len, vec)) {
		paged_calls++;
		for (size_t i = 0; i < sizeof(vec); i++)
			paged_out_pages += !(vec[i] & 1);
	}
	syscall(SYS_read, zero_fd, zero_buf, 16 << 20);
}

noinline void deep(int depth)
{
	char frame[FRAME_BYTES];

	/* Let the whole frame escape, or the compiler shrinks it. */
	frame[0] = (char)depth;
	frame[FRAME_BYTES - 1] = 0;
	asm volatile("" : : "r"(frame) : "memory");
	if (depth)
		deep(depth - 1);
	else
		deep_read();
	asm volatile("" : : "r"(frame) : "memory");
}

noinline void deep_root(void)
{
	deep(DEPTH);
	asm volatile("" ::: "memory");
}

static void bench_paged_out(void)
{
	struct ds_symtab *st = ds_symtab_load("/proc/self/exe");
	static const char *const root[] = { "deep", "deep_root", NULL };

	zero_buf = malloc(16 << 20);
	zero_fd = open("/dev/zero", O_RDONLY);
	for (enum mode m = CLASSIC; m <= DEFERRED; m++) {
		struct run r = { 0 };
		struct ds_mmap ring;
		long samples = 0, complete = 0;
		int fd = open_mode(m, 250000);

		if (!st || fd < 0 || ds_mmap_open(&ring, fd, 1024))
			return;
		ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
		for (int i = 0; i < 20; i++)
			deep_root();
		ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
		ds_mmap_drain(&ring, count_bytes, &r);
		for (long i = 0; i < r.c.n; i++) {
			const struct ds_rec *s = &r.c.recs[i], *d = s;
			int kernel = s->nr && s->ips[0] == PERF_CONTEXT_KERNEL;

			if (s->deferred || !kernel)
				continue;
			samples++;
			if (s->cookie) {
				d = NULL;
				for (long j = 0; j < r.c.n; j++)
					if (r.c.recs[j].deferred && r.c.recs[j].cookie == s->cookie)
						d = &r.c.recs[j];
				if (!d)
					continue;
				complete += ds_chain_has_sequence(st, d->ips, d->nr, root);
			} else if (s->user_start >= 0) {
				complete += ds_chain_has_sequence(st, s->ips + s->user_start,
								  s->nr - s->user_start, root);
			}
		}
		printf("bench: stack paged out: %.1f of %d pages above the read() frame not resident (mean of %ld calls)\n",
		       paged_calls ? (double)paged_out_pages / paged_calls : 0.0,
		       DEPTH * FRAME_BYTES / 4096, paged_calls);
		paged_out_pages = paged_calls = 0;
		if (samples)
			printf("bench: stack paged out: mode=%-8s samples=%-5ld complete user stack=%5.1f%%\n",
			       mode_name[m], samples, 100.0 * complete / samples);
		ds_mmap_close(&ring);
		close(fd);
		ds_collect_free(&r.c);
	}
	ds_symtab_free(st);
}

/* --- 3. slowdown ------------------------------------------------------- */

static void bench_slowdown(void)
{
	double base = 0;

	for (enum mode m = NONE; m <= DEFERRED; m++) {
		struct run r = { 0 };
		struct ds_mmap ring = { 0 };
		int fd = -1;
		double t0, t;
		char *buf = malloc(1 << 20);
		int zfd = open("/dev/zero", O_RDONLY);
		unsigned long seed = 1;

		if (m != NONE) {
			fd = open_mode(m, 50000);
			if (fd < 0 || ds_mmap_open(&ring, fd, 2048))
				return;
			ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
		}
		t0 = now();
		for (int i = 0; i < 400; i++) {
			wl_read_top(zfd, buf, 1 << 20);
			seed = wl_spin_top(seed);
			if (fd >= 0 && i % 50 == 0)
				ds_mmap_drain(&ring, count_bytes, &r);
		}
		t = now() - t0;
		if (m == NONE)
			base = t;
		printf("bench: 50us sampling: mode=%-8s %.3fs (x%.3f of unprofiled)\n",
		       mode_name[m], t, t / base);
		if (fd >= 0) {
			ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
			ds_mmap_close(&ring);
			close(fd);
		}
		ds_collect_free(&r.c);
		close(zfd);
		free(buf);
	}
}

int main(void)
{
	char rel[128] = "";
	FILE *f = fopen("/proc/sys/kernel/osrelease", "r");

	if (f) {
		if (!fgets(rel, sizeof(rel), f))
			rel[0] = 0;
		rel[strcspn(rel, "\n")] = 0;
		fclose(f);
	}
	printf("bench: kernel %s\n", rel);
	bench_bytes(16 << 20);
	bench_bytes(64 << 10);
	bench_paged_out();
	bench_slowdown();
	return 0;
}
