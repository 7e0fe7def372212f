// SPDX-License-Identifier: GPL-2.0
/*
 * Cost of the kernel's user-stack walk per frame: SFrame tables against
 * frame pointers. Figures only: the exit status is non-zero only when it
 * could not measure.
 *
 *   sframe_bench BINARY DEPTH MODE REPS CALLS
 *
 * BINARY is a build of tests/guest/sframe/sf_depth.c (/opt/sframe/sf_depth:
 * no frame pointers, SFrame tables; /opt/sframe/sf_depth_fp: frame
 * pointers, no tables), which makes CALLS getppid() at the bottom of a
 * stack DEPTH + 2 frames deep and prints "ns=T calls=N", T being
 * CLOCK_MONOTONIC around those calls alone. Each repetition forks and execs
 * it with, per MODE:
 *   none      no event;
 *   classic   raw_syscalls:sys_enter sampled at every hit (period 1) with
 *             a callchain walked in the system call (frame pointers);
 *   deferred  the same with defer_callchain + defer_output: one deferred
 *             walk (SFrame where the object has a table, else frame
 *             pointers) per system call, on the way back to user space.
 * The event is on the child alone from its exec on (enable_on_exec); its
 * ring is drained (a counting pass, nothing kept) while it runs when the
 * ring is half full, after it has exited otherwise. The
 * workload is pinned to CPU 1 and this program to CPU 0.
 *
 * Each repetition prints one line:
 *   sfcost: bin=NAME depth=D mode=M rep=I ns=T calls=N samples=S records=R
 *           frames=F frames_mode=FM sframe_frames=X fp_frames=Y eh_frames=Z
 *           lost=L
 * samples: the child's PERF_RECORD_SAMPLEs; records: its
 * CALLCHAIN_DEFERRED records; frames: mean user frames per deferred record
 * (classic: per sample's user chain), frames_mode: the most common
 * number (the stacks of the workload's loop, not of the C library's start
 * code before it); sframe_frames, fp_frames, eh_frames (.eh_frame): what
 * <debugfs>/unwind_user/stats counted meanwhile (0 where it does not exist,
 * as on mainline); lost: samples the kernel reported lost. Under QEMU
 * -icount (shift 0) ns counts guest instructions, both vCPUs': this
 * program's too, which is why it drains the ring while the workload runs
 * only when it has to (8 MiB: ~8000 records of 100-frame stacks).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../tests/guest/perf_util.h"
#include "../../tests/guest/stitch_util.h"

#define RING_PAGES	2048
#define MAX_FRAMES	1024

enum mode { NONE, CLASSIC, DEFERRED };
static const char *const mode_name[] = { "none", "classic", "deferred" };


struct tally {
	uint32_t tid;
	long samples, records, chains, bad;
	uint64_t frames, lost;
	long hist[MAX_FRAMES + 1];	/* walks by user frames (the last: more) */
};

static void walked(struct tally *t, uint64_t frames)
{
	t->frames += frames;
	t->hist[frames < MAX_FRAMES ? frames : MAX_FRAMES]++;
}

/* The most common number of user frames of a walk (the workload's loop). */
static int frames_mode(const struct tally *t)
{
	int best = 0;

	for (int i = 1; i <= MAX_FRAMES; i++)
		if (t->hist[i] > t->hist[best])
			best = i;
	return best;
}

/* User frames of @chain: entries that are no PERF_CONTEXT_* marker. */
static uint64_t user_frames(const uint64_t *chain, uint64_t nr)
{
	uint64_t n = 0;

	for (uint64_t i = 0; i < nr; i++)
		n += chain[i] < PERF_CONTEXT_MAX;
	return n;
}

static void count(const struct ds_event *ev, void *arg)
{
	struct tally *t = arg;

	if (ev->type == PERF_RECORD_LOST) {
		t->lost += ev->lost;
		return;
	}
	if (ev->type != PERF_RECORD_SAMPLE && ev->type != DS_RECORD_CALLCHAIN_DEFERRED)
		return;
	if (!(ev->have & DS_EV_TID) || !(ev->have & DS_EV_CALLCHAIN)) {
		t->bad++;
		return;
	}
	if (ev->tid != t->tid)
		return;
	if (ev->type == DS_RECORD_CALLCHAIN_DEFERRED) {
		t->records++;
		walked(t, user_frames(ev->chain, ev->nr));
		return;
	}
	t->samples++;
	if (ev->has_cookie)
		return;
	/* A classic sample: its user chain follows PERF_CONTEXT_USER. */
	for (uint64_t i = 0; i < ev->nr; i++) {
		if (ev->chain[i] == PERF_CONTEXT_USER) {
			t->chains++;
			walked(t, user_frames(ev->chain + i + 1, ev->nr - i - 1));
			break;
		}
	}
}

/*
 * Is the ring at least half full? Draining costs this program instructions
 * per record, which under -icount are time on the workload's clock too: a
 * run's records fit in the ring, so it is drained while the workload runs
 * only when it must be, and after the workload's exit otherwise.
 */
static bool ring_half_full(const struct ds_mmap *m)
{
	const volatile struct perf_event_mmap_page *pg = m->base;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);

	return head - pg->data_tail >= pg->data_size / 2;
}

/*
 * One repetition: run @argv under @m, its "ns=T calls=N" in @ns, @calls.
 * Returns 0, or -1 when nothing could be measured (said on stderr).
 */
static int run_once(char *const argv[], enum mode m, struct tally *t, long *ns, long *calls,
		    struct ds_unwind_stats *s0, struct ds_unwind_stats *s1)
{
	struct perf_event_attr attr;
	struct ds_mmap ring = { 0 };
	int go, out[2], fd = -1, status = 0;
	char buf[256];
	ssize_t len, got = 0;
	pid_t pid;

	if (pipe(out)) {
		perror("sframe_bench: pipe");
		return -1;
	}
	pid = ds_exec_paused(argv, out[1], &go);
	close(out[1]);
	if (pid < 0) {
		perror("sframe_bench: fork");
		return -1;
	}
	ds_pin(pid, 1);
	if (m != NONE) {
		int err = ds_attr_tracepoint(&attr, "raw_syscalls", "sys_enter");

		if (!err) {
			attr.disabled = 1;
			attr.enable_on_exec = 1;
			if (m == DEFERRED) {
				ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
				/* Mainline delivers records only to defer_output events. */
				ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_OUTPUT, 1);
			}
			fd = ds_perf_open(&attr, pid, -1, -1, 0);
			err = fd < 0 ? fd : ds_mmap_open(&ring, fd, RING_PAGES) ? -ENOMEM : 0;
		}
		if (err) {
			fprintf(stderr, "sframe_bench: cannot open the %s event: %s\n",
				mode_name[m], strerror(-err));
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			return -1;
		}
	}
	memset(t, 0, sizeof(*t));
	t->tid = (uint32_t)pid;
	ds_unwind_stats_read(s0);
	if (ds_exec_go(go)) {
		perror("sframe_bench: starting the workload");
		return -1;
	}
	while (waitpid(pid, &status, WNOHANG) == 0) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };

		if (fd >= 0 && ring_half_full(&ring))
			ds_mmap_drain(&ring, count, t);
		nanosleep(&ts, NULL);
	}
	ds_unwind_stats_read(s1);
	if (fd >= 0) {
		ds_mmap_drain(&ring, count, t);
		ds_mmap_close(&ring);
		close(fd);
	}
	while (got < (ssize_t)sizeof(buf) - 1 &&
	       (len = read(out[0], buf + got, sizeof(buf) - 1 - got)) > 0)
		got += len;
	close(out[0]);
	buf[got] = 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) ||
	    sscanf(buf, "ns=%ld calls=%ld", ns, calls) != 2) {
		fprintf(stderr, "sframe_bench: %s: status 0x%x, output \"%s\"\n", argv[0],
			status, buf);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *bin = argc > 1 ? argv[1] : "";
	const char *depth = argc > 2 ? argv[2] : "";
	const char *mode_arg = argc > 3 ? argv[3] : "";
	int reps = argc > 4 ? atoi(argv[4]) : 0;
	const char *calls_arg = argc > 5 ? argv[5] : "";
	const char *name = strrchr(bin, '/') ? strrchr(bin, '/') + 1 : bin;
	char *child_argv[] = { (char *)bin, (char *)depth, (char *)calls_arg, NULL };
	enum mode m = NONE;

	while (m <= DEFERRED && strcmp(mode_arg, mode_name[m]))
		m++;
	if (argc != 6 || m > DEFERRED || reps < 1 || atol(depth) < 1 || atol(calls_arg) < 1) {
		fprintf(stderr, "usage: sframe_bench BINARY DEPTH none|classic|deferred REPS CALLS\n");
		return 2;
	}
	if (access(bin, X_OK)) {
		fprintf(stderr, "sframe_bench: %s: %s\n", bin, strerror(errno));
		return 1;
	}
	ds_pin(0, 0);
	for (int rep = 1; rep <= reps; rep++) {
		struct ds_unwind_stats s0, s1;
		struct tally t;
		long ns, calls, walks;

		if (run_once(child_argv, m, &t, &ns, &calls, &s0, &s1))
			return 1;
		walks = m == DEFERRED ? t.records : t.chains;
		printf("sfcost: bin=%s depth=%s mode=%s rep=%d ns=%ld calls=%ld samples=%ld "
		       "records=%ld frames=%.2f frames_mode=%d sframe_frames=%ld fp_frames=%ld "
		       "eh_frames=%ld lost=%llu\n", name, depth, mode_name[m], rep, ns, calls,
		       t.samples, t.records, walks ? (double)t.frames / (double)walks : 0.0,
		       frames_mode(&t), s1.frames_sframe - s0.frames_sframe,
		       s1.frames_fp - s0.frames_fp, s1.frames_ehframe - s0.frames_ehframe,
		       (unsigned long long)t.lost);
		if (t.bad)
			printf("# sframe_bench: %ld records without tid or callchain\n", t.bad);
		fflush(stdout);
	}
	return 0;
}
