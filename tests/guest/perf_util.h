/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small helpers shared by the guest tests: perf_event_open, mapping a ring
 * buffer, symbol lookup of our own executable and TAP-ish checks. Ring
 * reading, record parsing and the 7.x ABI additions come from libdeferstack.
 */
#ifndef DS_PERF_UTIL_H
#define DS_PERF_UTIL_H

#include <deferstack/deferstack.h>
#include <deferstack/perf_abi.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* $DS_PERIOD_SCALE, the harness's slowdown of the debug kernel: 1 at least. */
long ds_period_scale(void);

/*
 * cpu-clock sampling attr: IP|TID|TIME|CPU|CALLCHAIN, sample_id_all, disabled.
 * The period is multiplied by ds_period_scale() (slow debug kernels).
 */
void ds_attr_sampling(struct perf_event_attr *attr, uint64_t period_ns);

struct ds_mmap;

/*
 * Tracepoint SYS:NAME sampled at every hit (period 1) with the test layout,
 * enabled. Returns 0, or -errno when the tracepoint does not exist (its id is
 * read from tracefs, which /init mounts at /sys/kernel/tracing).
 */
int ds_attr_tracepoint(struct perf_event_attr *attr, const char *sys, const char *name);

/* Child process helpers: fork a child that waits until ds_child_go(). */
struct ds_child {
	pid_t pid;
	int go_fd;		/* write end: one byte releases the child */
};

/*
 * Fork a child that execs @argv once ds_exec_go() is called, with its stdout
 * on @out_fd if >= 0 (so that events can be opened on it first, with
 * enable_on_exec). Returns the pid and *@go, or -1.
 */
pid_t ds_exec_paused(char *const argv[], int out_fd, int *go);
/* Let the child of ds_exec_paused() exec; closes @go. 0, or -1. */
int ds_exec_go(int go);

/* Fork; the child blocks, then runs @fn(@arg) and exits with its return value. */
int ds_child_start(struct ds_child *ch, int (*fn)(void *), void *arg);
void ds_child_go(struct ds_child *ch);
/*
 * Wait until the child blocks in its read() of the go pipe, 1 s at most.
 * Events opened on it before that may each see a switch or a system call
 * of its start that the events opened after them do not.
 */
void ds_child_wait_blocked(const struct ds_child *ch);
/* Wait for the child, draining @m (if not NULL) into @fn meanwhile. */
int ds_child_wait(struct ds_child *ch, struct ds_mmap *m,
		  void (*fn)(const struct ds_event *, void *), void *arg);

/* Milliseconds of CLOCK_MONOTONIC since @t0 (set with clock_gettime()). */
long ds_msec_since(const struct timespec *t0);

/*
 * Per-CPU side-band attr as perf 7.x opens it: a dummy software event with
 * mmap, comm, task and defer_output, the test layout, disabled.
 */
void ds_attr_sideband(struct perf_event_attr *attr);

/* Pin task @pid (0: the caller) to @cpu; a negative @cpu: any online CPU. */
void ds_pin(pid_t pid, int cpu);

int ds_perf_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd,
		 unsigned long flags);

/* A mapped perf ring buffer, read with libdeferstack's ds_ring. */
struct ds_mmap {
	void *base;
	size_t map_size;
	struct ds_ring ring;
};

int ds_mmap_open(struct ds_mmap *m, int fd, unsigned int data_pages);
void ds_mmap_close(struct ds_mmap *m);

/*
 * Parse every record in the buffer with the sampling layout of the tests
 * (IP|TID|TIME|CPU|CALLCHAIN, sample_id_all), call @fn on it, then consume
 * them. Returns the number of records or -errno.
 */
typedef void (*ds_event_fn)(const struct ds_event *ev, void *arg);
long ds_mmap_drain(struct ds_mmap *m, ds_event_fn fn, void *arg);

/* Function symbols of our own executable (static, non-PIE). */
struct ds_symtab;
struct ds_symtab *ds_symtab_load(const char *path);
const char *ds_symtab_lookup(const struct ds_symtab *st, uint64_t ip);
void ds_symtab_free(struct ds_symtab *st);

/*
 * Running on a mainline 7.x kernel (the reference)? Its delivery differs from
 * ours where DESIGN.md says so: side-band only, broadcast to every tool.
 */
bool ds_kernel_is_mainline(void);

/*
 * A system call made right here, not through libc's syscall(), whose leaf
 * frame has no frame pointer and would hide its caller from an FP walk.
 */
static inline __attribute__((always_inline)) long ds_syscall3(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
}

/* Write @value to @path (sysfs, debugfs): 0, or -1 with the reason printed. */
int ds_write_str(const char *path, const char *value);

/*
 * The kernel text from the lowest of the functions @names (@n of them, from
 * /proc/kallsyms) to the first text symbol after the highest: [*start, *end).
 * 0, or -1 when kallsyms or the functions are missing.
 */
int ds_kernel_text_range(const char *const *names, size_t n, unsigned long *start,
			 unsigned long *end);

#define DS_KSYM_LEN 160
/*
 * The kernel text symbol and offset of each of @ips (@n of them) into
 * @names (the address alone where kallsyms has none): for diagnostics, one
 * read of /proc/kallsyms for all of them.
 */
void ds_kernel_syms(const uint64_t *ips, size_t n, char (*names)[DS_KSYM_LEN]);

static inline bool ds_is_kernel_ip(uint64_t ip)
{
	return ip >= 0xffff800000000000ULL && ip < (uint64_t)-4096;
}

/*
 * Does @chain (innermost first, NULL-terminated names) appear in order, as
 * consecutive symbolized frames, among the user ips @ips[0..nr)?
 */
bool ds_chain_has_sequence(const struct ds_symtab *st, const uint64_t *ips,
			   uint64_t nr, const char *const *chain);

/* Checks: print "# ok/FAIL: ..." and count failures in *failed. */
#define DS_CHECK(failed, cond, ...)						\
	do {									\
		if (cond) {							\
			printf("#   ok: ");					\
		} else {							\
			printf("# FAIL: ");					\
			(*(failed))++;						\
		}								\
		printf(__VA_ARGS__);						\
		printf("\n");							\
	} while (0)

#endif
