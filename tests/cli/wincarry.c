// SPDX-License-Identifier: MIT
/*
 * record --switch-output in defer mode, without a kernel that defers (this
 * host): hand-made samples and deferred records through write_rec() and a
 * window switch done as window_close() does it (tools/record-windows.c).
 * A deferred record read after the switch goes to the window of its
 * sample (and to the new one too when a sample there shares its cookie);
 * a record read before its sample keeps no window open; so does one read
 * into the spool during a switch (switch_drain()) and written from it
 * (spool_replay()).  Writes DIR/A and
 * DIR/B for `deferstack script` to stitch; exits 0 when every count holds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

static int failed;

#define EXPECT(c) do { if (!(c)) { fprintf(stderr, "wincarry: %s:%d: %s\n", \
	__FILE__, __LINE__, #c); failed = 1; } } while (0)

static struct ds_writer *wopen(const char *dir, const char *name)
{
	static uint64_t id = 1;
	char path[4096];
	struct ds_attr a;
	struct ds_writer *w = NULL;

	memset(&a, 0, sizeof(a));
	a.attr.size = sizeof(a.attr);
	a.sz = sizeof(a);
	a.attr.sample_type = SAMPLE_TYPE;
	a.attr.sample_id_all = 1;
	a.ids = &id;
	a.nr_ids = 1;
	a.name = "cpu-clock";
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (ds_writer_open(&w, path, &a, 1, NULL)) {
		perror(path);
		exit(2);
	}
	return w;
}

/* a kernel sample of tid whose user stack comes with cookie */
static void sample(struct rec *r, uint32_t tid, uint64_t cookie, uint64_t time)
{
	uint64_t b[] = { 0, 1, 0xffffffff81000000ull, (uint64_t)tid << 32 | tid, time, 0, 1,
			 3, (uint64_t)PERF_CONTEXT_KERNEL, DS_CONTEXT_USER_DEFERRED, cookie };
	struct perf_event_header *h = (void *)b;

	h->type = PERF_RECORD_SAMPLE;
	h->misc = PERF_RECORD_MISC_KERNEL;
	h->size = sizeof(b);
	EXPECT(write_rec(r, h) == 0);
}

static void deferred(struct rec *r, uint32_t tid, uint64_t cookie, uint64_t time)
{
	uint64_t b[] = { 0, cookie, 1, 0x401000, (uint64_t)tid << 32 | tid, time, 0, 1 };
	struct perf_event_header *h = (void *)b;

	h->type = DS_RECORD_CALLCHAIN_DEFERRED;
	h->misc = PERF_RECORD_MISC_USER;
	h->size = sizeof(b);
	EXPECT(write_rec(r, h) == 0);
}

/* A record as switch_drain() leaves it in the spool, with a round. */
static void spool_deferred(struct rec *r, uint32_t tid, uint64_t cookie, uint64_t time)
{
	uint64_t b[] = { 0, cookie, 1, 0x401000, (uint64_t)tid << 32 | tid, time, 0, 1 };
	struct perf_event_header *h = (void *)b, round = { DS_RECORD_FINISHED_ROUND, 0, 8 };
	uint8_t *p = realloc(r->spool.buf, r->spool.len + sizeof(b) + sizeof(round));

	if (!p)
		exit(2);
	h->type = DS_RECORD_CALLCHAIN_DEFERRED;
	h->misc = PERF_RECORD_MISC_USER;
	h->size = sizeof(b);
	memcpy(p + r->spool.len, b, sizeof(b));
	memcpy(p + r->spool.len + sizeof(b), &round, sizeof(round));
	r->spool.buf = p;
	r->spool.len += sizeof(b) + sizeof(round);
	r->spool.cap = r->spool.len;
}

int main(int argc, char **argv)
{
	static struct rec r;
	uint64_t d;

	if (argc != 2) {
		fprintf(stderr, "usage: wincarry DIR\n");
		return 2;
	}
	r.o.switch_mode = SW_SIGNAL;
	r.defer = true;
	r.w = wopen(argv[1], "A");
	sample(&r, 1, 5, 100);		/* waits for its record */
	deferred(&r, 2, 7, 110);	/* read before its sample: */
	sample(&r, 2, 7, 105);		/* ... no wait */
	EXPECT(r.pend.used == 1);
	/* the switch: A stays open for tid 1's record */
	r.prev.w = r.w;
	r.prev.pend = r.pend;
	r.prev.until = 1e300;
	strcpy(r.prev.path, "A");
	r.prev.samples = r.nr_samples;
	memset(&r.pend, 0, sizeof(r.pend));
	tab_free(&r.done);
	memset(&r.done, 0, sizeof(r.done));
	r.w = wopen(argv[1], "B");
	d = r.nr_deferred;
	sample(&r, 1, 5, 200);		/* the same cookie in B */
	sample(&r, 3, 9, 210);
	deferred(&r, 3, 9, 220);	/* B's own */
	EXPECT(r.prev.deferred == 0 && r.nr_deferred == d + 1);
	/* read during the switch, written once B is open: to A and to B */
	spool_deferred(&r, 1, 5, 230);
	EXPECT(spool_replay(&r) == 0 && r.spool.len == 0 && !r.spooling);
	EXPECT(r.prev.deferred == 1 && r.nr_deferred == d + 3);
	EXPECT(r.prev.pend.used == 0 && r.pend.used == 0);
	/* nothing waits: A is closed at the next pass */
	EXPECT(window_tick(&r, 0) == 0 && r.prev.w == NULL);
	EXPECT(close_output(&r, 1, argc, argv) == 0);
	tab_free(&r.pend);
	tab_free(&r.done);
	tab_free(&r.kips);
	free(r.side.pids);
	return failed;
}
