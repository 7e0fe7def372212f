// SPDX-License-Identifier: MIT
/*
 * The mappings record --switch-output carries from window to window for
 * processes whose /proc/PID/maps it may not read (tools/record-maps.c), fed
 * as the rings give them: out of time order between CPUs.  The key (a pid)
 * stays while what it names changes: an exec, a pid used again by another
 * process, a mapping put over part of another.  Exits 0 when every check
 * holds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

static int failed;

#define EXPECT(c) do { if (!(c)) { fprintf(stderr, "mapcarry: %s:%d: %s\n", \
	__FILE__, __LINE__, #c); failed = 1; } } while (0)

/* the sample_id trailer of SAMPLE_TYPE */
struct sid {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu, res;
	uint64_t id;
};

static struct sid sid_of(uint32_t pid, uint64_t time)
{
	return (struct sid){ .pid = pid, .tid = pid, .time = time };
}

static void note(struct rec *r, void *rec, size_t size, uint16_t type, uint16_t misc)
{
	struct perf_event_header *h = rec;

	h->type = type;
	h->misc = misc;
	h->size = (uint16_t)size;
	EXPECT(maps_note(r, h) == 0);
}

static void mmap2(struct rec *r, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		  const char *path, uint64_t time)
{
	struct {
		struct perf_event_header h;
		uint32_t pid, tid;
		uint64_t start, len, pgoff;
		uint32_t maj, min;
		uint64_t ino, ino_gen;
		uint32_t prot, flags;
		char path[64];
		struct sid sid;
	} ev;

	memset(&ev, 0, sizeof(ev));
	ev.pid = ev.tid = pid;
	ev.start = start;
	ev.len = len;
	ev.pgoff = pgoff;
	snprintf(ev.path, sizeof(ev.path), "%s", path);
	ev.sid = sid_of(pid, time);
	note(r, &ev, sizeof(ev), PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);
}

static void exec_comm(struct rec *r, uint32_t pid, uint64_t time)
{
	struct {
		struct perf_event_header h;
		uint32_t pid, tid;
		char comm[16];
		struct sid sid;
	} ev;

	memset(&ev, 0, sizeof(ev));
	ev.pid = ev.tid = pid;
	strcpy(ev.comm, "prog");
	ev.sid = sid_of(pid, time);
	note(r, &ev, sizeof(ev), PERF_RECORD_COMM,
	     PERF_RECORD_MISC_USER | PERF_RECORD_MISC_COMM_EXEC);
}

static void task(struct rec *r, uint16_t type, uint32_t pid, uint32_t ppid, uint64_t time)
{
	struct {
		struct perf_event_header h;
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
		struct sid sid;
	} ev;

	memset(&ev, 0, sizeof(ev));
	ev.pid = ev.tid = pid;
	ev.ppid = ev.ptid = ppid;
	ev.time = time;
	ev.sid = sid_of(pid, time);
	note(r, &ev, sizeof(ev), type, PERF_RECORD_MISC_USER);
}

/* pid's mappings, as "path@start+len/pgoff ..." sorted by start */
static const char *maps(struct rec *r, uint32_t pid)
{
	static char out[1024];
	const struct pmap *v;
	size_t n, len = 0;
	uint64_t last = 0;

	v = maps_of(r, pid, &n);
	out[0] = 0;
	for (size_t k = 0; k < n; k++) {
		const struct pmap *best = NULL;

		for (size_t i = 0; i < n; i++)
			if ((k == 0 || v[i].start > last) && (!best || v[i].start < best->start))
				best = &v[i];
		last = best->start;
		len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%s@%#llx+%#llx/%#llx",
					k ? " " : "", best->path, (unsigned long long)best->start,
					(unsigned long long)best->len,
					(unsigned long long)best->pgoff);
	}
	return out;
}

#define EXPECT_MAPS(r, pid, want) do { const char *got_ = maps(r, pid); \
	if (strcmp(got_, want)) { fprintf(stderr, "mapcarry: %s:%d: pid %u: got \"%s\", want \"%s\"\n", \
		__FILE__, __LINE__, (unsigned)(pid), got_, want); failed = 1; } } while (0)

int main(void)
{
	static struct rec r;

	r.o.switch_mode = SW_SIGNAL;

	/* exec read in order: the old image's mappings go */
	mmap2(&r, 10, 0x1000, 0x1000, 0, "/old", 100);
	exec_comm(&r, 10, 200);
	mmap2(&r, 10, 0x1000, 0x2000, 0, "/new", 210);
	EXPECT_MAPS(&r, 10, "/new@0x1000+0x2000/0");

	/* exec read after the new image's MMAP (another CPU's ring first) */
	mmap2(&r, 11, 0x1000, 0x1000, 0, "/old", 100);
	mmap2(&r, 11, 0x5000, 0x1000, 0, "/new", 210);
	exec_comm(&r, 11, 200);
	EXPECT_MAPS(&r, 11, "/new@0x5000+0x1000/0");
	/* ... and the old image's last MMAP read after both: not kept */
	mmap2(&r, 11, 0x9000, 0x1000, 0, "/old-lib", 150);
	EXPECT_MAPS(&r, 11, "/new@0x5000+0x1000/0");

	/* a mapping over part of another: cut out of it, split in two */
	mmap2(&r, 12, 0x10000, 0x4000, 0, "/lib", 100);
	mmap2(&r, 12, 0x11000, 0x1000, 0x7000, "/jit", 110);
	EXPECT_MAPS(&r, 12, "/lib@0x10000+0x1000/0 /jit@0x11000+0x1000/0x7000 /lib@0x12000+0x2000/0x2000");
	/* over the head and the tail of two, and all of one */
	mmap2(&r, 12, 0xf000, 0x2000, 0, "/a", 120);
	mmap2(&r, 12, 0x13000, 0x2000, 0, "/b", 130);
	EXPECT_MAPS(&r, 12, "/a@0xf000+0x2000/0 /jit@0x11000+0x1000/0x7000 /lib@0x12000+0x1000/0x2000 /b@0x13000+0x2000/0");
	/* an older mapping read after a newer one over it: the newer stays */
	mmap2(&r, 12, 0x11000, 0x1000, 0, "/stale", 105);
	EXPECT_MAPS(&r, 12, "/a@0xf000+0x2000/0 /jit@0x11000+0x1000/0x7000 /lib@0x12000+0x1000/0x2000 /b@0x13000+0x2000/0");
	/* the same range mapped again, later */
	mmap2(&r, 12, 0x11000, 0x1000, 0, "/jit2", 140);
	EXPECT_MAPS(&r, 12, "/a@0xf000+0x2000/0 /jit2@0x11000+0x1000/0 /lib@0x12000+0x1000/0x2000 /b@0x13000+0x2000/0");

	/* fork: the child has the parent's mappings of then, not later ones */
	mmap2(&r, 20, 0x1000, 0x1000, 0, "/parent", 100);
	task(&r, PERF_RECORD_FORK, 21, 20, 200);
	mmap2(&r, 20, 0x8000, 0x1000, 0, "/parent-later", 300);
	task(&r, PERF_RECORD_FORK, 22, 20, 250);	/* read after a later MMAP */
	EXPECT_MAPS(&r, 21, "/parent@0x1000+0x1000/0");
	EXPECT_MAPS(&r, 22, "/parent@0x1000+0x1000/0");
	/* the child's own mapping read before its FORK: kept, and wins */
	mmap2(&r, 23, 0x1000, 0x1000, 0, "/child", 260);
	task(&r, PERF_RECORD_FORK, 23, 20, 240);
	EXPECT_MAPS(&r, 23, "/child@0x1000+0x1000/0");
	/* the child's exec read before its FORK: the fork copies nothing */
	mmap2(&r, 24, 0x4000, 0x1000, 0, "/exec'd", 270);
	exec_comm(&r, 24, 265);
	task(&r, PERF_RECORD_FORK, 24, 20, 240);
	EXPECT_MAPS(&r, 24, "/exec'd@0x4000+0x1000/0");

	/* a pid used again: the dead process's mappings are not the new one's */
	mmap2(&r, 30, 0x1000, 0x1000, 0, "/first", 100);
	task(&r, PERF_RECORD_EXIT, 30, 1, 200);
	EXPECT_MAPS(&r, 30, "");
	task(&r, PERF_RECORD_FORK, 30, 20, 300);
	EXPECT_MAPS(&r, 30, "/parent@0x1000+0x1000/0");
	/* ... the same, with the new process's FORK read before the old EXIT */
	mmap2(&r, 31, 0x1000, 0x1000, 0, "/first", 100);
	task(&r, PERF_RECORD_FORK, 31, 20, 300);
	mmap2(&r, 31, 0x6000, 0x1000, 0, "/second", 310);
	task(&r, PERF_RECORD_EXIT, 31, 1, 200);
	EXPECT_MAPS(&r, 31, "/parent@0x1000+0x1000/0 /second@0x6000+0x1000/0");
	/* ... and with no FORK seen (the new process forked before the
	 * recorder's events opened): the old one's EXIT leaves the new MMAP */
	mmap2(&r, 32, 0x1000, 0x1000, 0, "/first", 100);
	mmap2(&r, 32, 0x2000, 0x1000, 0, "/second", 400);
	task(&r, PERF_RECORD_EXIT, 32, 1, 200);
	EXPECT_MAPS(&r, 32, "/second@0x2000+0x1000/0");

	/* from /proc (time 0) at a window's start: the kernel's records win,
	 * and what they did not say is filled in, after an exec too */
	mmap2(&r, 40, 0x1000, 0x3000, 0, "/proc-seen", 0);
	mmap2(&r, 40, 0x2000, 0x1000, 0, "/mapped", 50);
	mmap2(&r, 40, 0x2000, 0x1000, 0, "/proc-seen-again", 0);
	EXPECT_MAPS(&r, 40, "/proc-seen@0x1000+0x1000/0 /mapped@0x2000+0x1000/0 /proc-seen@0x3000+0x1000/0x2000");
	exec_comm(&r, 40, 60);
	mmap2(&r, 40, 0x7000, 0x1000, 0, "/from-proc", 0);
	EXPECT_MAPS(&r, 40, "/from-proc@0x7000+0x1000/0");

	maps_free(&r);
	if (!failed)
		printf("mapcarry: every check held\n");
	return failed;
}
