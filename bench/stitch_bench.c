// SPDX-License-Identifier: MIT
/*
 * Stitch benchmark: generates a synthetic stream of deferred-callchain
 * records (samples + CALLCHAIN_DEFERRED, several tids and CPUs, per-CPU
 * buffers written in rounds like `deferstack record` does) on the fly and
 * pushes it through the time-ordered merge and the stitcher.
 * Prints records/s and peak RSS; never fails on a number.
 *   stitch_bench [-n RECORDS] [-t TIDS] [-c CPUS]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "deferstack/deferstack.h"

#define ST (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
	    PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN)
#define KDEPTH 12
#define UDEPTH 24
#define ROUND 8192

struct cpubuf {
	uint64_t *b;
	size_t len, cap;	/* in u64 */
};

struct task {
	uint32_t tid, cpu;
	uint64_t cookie;
	int left;		/* samples left in this kernel entry */
	bool record_early;
};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t *reserve(struct cpubuf *c, size_t n)
{
	if (c->len + n > c->cap) {
		c->cap = (c->len + n) * 2;
		c->b = realloc(c->b, c->cap * 8);
		if (!c->b)
			abort();
	}
	c->len += n;
	return c->b + c->len - n;
}

static void put_sample(struct cpubuf *c, struct task *t, uint64_t time)
{
	size_t n = 1 + 6 + 1 + (1 + KDEPTH + 2);
	uint64_t *p = reserve(c, n);
	struct perf_event_header h = { PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL,
				       (uint16_t)(n * 8) };

	memcpy(p, &h, 8);
	p[1] = 1;
	p[2] = 0xffffffff81000000ULL + (rnd() & 0xffff);
	p[3] = (uint64_t)t->tid << 32 | t->tid;
	p[4] = time;
	p[5] = t->cpu;
	p[6] = 1000000;
	p[7] = 1 + KDEPTH + 2;
	p[8] = PERF_CONTEXT_KERNEL;
	for (int i = 0; i < KDEPTH; i++)
		p[9 + i] = 0xffffffff81000000ULL + (uint64_t)i * 64;
	p[9 + KDEPTH] = DS_CONTEXT_USER_DEFERRED;
	p[10 + KDEPTH] = t->cookie;
}

static void put_deferred(struct cpubuf *c, struct task *t, uint64_t time)
{
	size_t n = 1 + 2 + UDEPTH + 4;
	uint64_t *p = reserve(c, n);
	struct perf_event_header h = { DS_RECORD_CALLCHAIN_DEFERRED, PERF_RECORD_MISC_USER,
				       (uint16_t)(n * 8) };

	memcpy(p, &h, 8);
	p[1] = t->cookie;
	p[2] = UDEPTH;
	for (int i = 0; i < UDEPTH; i++)
		p[3 + i] = 0x555555550000ULL + (uint64_t)i * 16;
	p[3 + UDEPTH] = (uint64_t)t->tid << 32 | t->tid;
	p[4 + UDEPTH] = time;
	p[5 + UDEPTH] = t->cpu;
	p[6 + UDEPTH] = 2;
}

struct sink {
	uint64_t outputs, chain_words;
};

static int on_out(void *arg, const struct ds_stitch_out *o)
{
	struct sink *s = arg;

	s->outputs++;
	s->chain_words += o->nr;
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void drain(struct ds_merge *m, struct ds_stitcher *s)
{
	const struct perf_event_header *rec;
	struct ds_event ev = { .sz = sizeof(ev) };

	while (ds_merge_pop(m, &rec) > 0) {
		if (ds_event_parse(rec, rec->size, ST, true, &ev) == 0)
			ds_stitch_event(s, &ev);
	}
}

int main(int argc, char **argv)
{
	uint64_t nrec = 10000000, gen = 0, time = 1, cookie_seq = 1, bytes = 0;
	unsigned ntid = 64, ncpu = 8;
	struct task *tasks;
	struct cpubuf *bufs;
	struct ds_merge *m;
	struct ds_stitcher *s;
	struct ds_stitch_opts sopts = { .sz = sizeof(sopts), .cb = on_out };
	const struct ds_stitch_stats *st;
	struct sink sink = { 0 };
	struct rusage ru;
	double t0, t1, gen_time = 0;
	int opt;

	while ((opt = getopt(argc, argv, "n:t:c:")) != -1) {
		switch (opt) {
		case 'n': nrec = strtoull(optarg, NULL, 0); break;
		case 't': ntid = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'c': ncpu = (unsigned)strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: stitch_bench [-n RECORDS] [-t TIDS] [-c CPUS]\n");
			return 2;
		}
	}
	if (!ntid || !ncpu)
		return 2;
	tasks = calloc(ntid, sizeof(*tasks));
	bufs = calloc(ncpu, sizeof(*bufs));
	if (!tasks || !bufs)
		return 1;
	for (unsigned i = 0; i < ntid; i++) {
		tasks[i].tid = 1000 + i;
		tasks[i].cpu = i % ncpu;
	}
	sopts.cb_arg = &sink;
	if (ds_merge_new(&m, NULL) || ds_stitch_new(&s, &sopts)) {
		fprintf(stderr, "stitch_bench: out of memory\n");
		return 1;
	}
	t0 = now();
	while (gen < nrec) {
		double g0 = now();

		/* one pass: ROUND records spread over the per-CPU buffers */
		for (int k = 0; k < ROUND && gen < nrec; k++) {
			struct task *t = &tasks[rnd() % ntid];

			time += 1 + (rnd() & 7);
			if (!t->left) {	/* new kernel entry */
				t->cookie = ((uint64_t)t->cpu << 32) | cookie_seq++;
				t->left = 1 + (int)(rnd() % 4);
				t->record_early = (rnd() % 50) == 0;
			}
			put_sample(&bufs[t->cpu], t, time);
			gen++;
			if (--t->left == 1 && t->record_early) {
				put_deferred(&bufs[t->cpu], t, ++time);
				gen++;
				t->record_early = false;
				t->left = -1;	/* its last sample comes after the record */
			} else if (t->left == -2) {
				t->left = 0;	/* entry ended, its record came first */
			} else if (t->left == 0) {
				if ((rnd() % 1000) != 0) {	/* 0.1% lost records */
					if ((rnd() % 16) == 0)	/* migrate before return */
						t->cpu = (uint32_t)(rnd() % ncpu);
					put_deferred(&bufs[t->cpu], t, ++time);
					gen++;
				}
				t->left = 0;
			}
		}
		gen_time += now() - g0;
		/* reader side: each CPU buffer in turn, then a round */
		for (unsigned c = 0; c < ncpu; c++) {
			for (size_t off = 0; off < bufs[c].len;) {
				const struct perf_event_header *h = (const void *)(bufs[c].b + off);
				uint64_t tm = h->type == PERF_RECORD_SAMPLE ? bufs[c].b[off + 4]
					    : bufs[c].b[off + h->size / 8 - 3];

				ds_merge_push(m, h, tm, c);
				bytes += h->size;
				off += h->size / 8;
			}
			bufs[c].len = 0;
		}
		ds_merge_round(m);
		drain(m, s);
	}
	ds_merge_flush(m);
	drain(m, s);
	ds_stitch_finish(s);
	st = ds_stitch_get_stats(s);
	t1 = now();
	getrusage(RUSAGE_SELF, &ru);
	printf("stitch bench: %" PRIu64 " records (%" PRIu64 " samples, %" PRIu64
	       " deferred), %u tids, %u cpus\n", gen, st->samples, st->deferred, ntid, ncpu);
	printf("  stitched %" PRIu64 " (%" PRIu64 " record-first), kernel-only %" PRIu64
	       ", pending peak %" PRIu64 ", merge out-of-order %" PRIu64 "\n", st->stitched,
	       st->record_first, st->kernel_only, st->pending_peak, ds_merge_out_of_order(m));
	printf("  total %.2f s (generation %.2f s): merge+stitch %.2f M records/s\n",
	       t1 - t0, gen_time, gen / (t1 - t0 - gen_time) / 1e6);
	printf("  peak RSS %.1f MiB (input %.0f MiB streamed, never held)\n",
	       ru.ru_maxrss / 1024.0, bytes / 1048576.0);
	ds_stitch_free(s);
	ds_merge_free(m);
	for (unsigned c = 0; c < ncpu; c++)
		free(bufs[c].b);
	free(bufs);
	free(tasks);
	return 0;
}
