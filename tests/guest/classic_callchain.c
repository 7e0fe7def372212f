// SPDX-License-Identifier: GPL-2.0
/*
 * Classic callchains (no defer bits): sample the example workload on this
 * task and check that samples carry kernel frames and user frames, and that
 * the user frames are the workload's real functions in call order.
 * This is the behaviour the deferred series must leave unchanged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "perf_util.h"
#include "workload.h"

struct counts {
	const struct ds_symtab *st;
	long samples, with_kernel, with_user, read_chain, spin_chain, deferred, bad;
};

static void on_record(const struct ds_event *ev, void *arg)
{
	struct counts *c = arg;
	uint64_t i, user = 0;
	bool kernel = false;

	if (ev->type == DS_RECORD_CALLCHAIN_DEFERRED)
		c->deferred++;
	if (ev->type != PERF_RECORD_SAMPLE)
		return;
	if (!(ev->have & DS_EV_CALLCHAIN)) {
		c->bad++;
		return;
	}
	c->samples++;
	for (i = 0; i < ev->nr; i++) {
		if (ev->chain[i] == PERF_CONTEXT_KERNEL && i + 1 < ev->nr &&
		    ds_is_kernel_ip(ev->chain[i + 1]))
			kernel = true;
		if (ev->chain[i] == DS_CONTEXT_USER_DEFERRED)
			c->bad++;
		if (ev->chain[i] == PERF_CONTEXT_USER) {
			user = i + 1;
			break;
		}
	}
	c->with_kernel += kernel;
	if (!user || user >= ev->nr)
		return;
	c->with_user++;
	c->read_chain += ds_chain_has_sequence(c->st, ev->chain + user, ev->nr - user,
					       workload_read_chain);
	c->spin_chain += ds_chain_has_sequence(c->st, ev->chain + user, ev->nr - user,
					       workload_spin_chain);
}

int main(void)
{
	struct perf_event_attr attr;
	struct workload_stats ws;
	struct counts c = { 0 };
	struct ds_mmap ring;
	int fd, failed = 0;
	long n;

	c.st = ds_symtab_load("/proc/self/exe");
	if (!c.st) {
		printf("# cannot read own symbols\n");
		return 1;
	}
	ds_attr_sampling(&attr, 250000);
	fd = ds_perf_open(&attr, 0, -1, -1, 0);
	if (fd < 0) {
		printf("# perf_event_open: %s\n", strerror(-fd));
		return 1;
	}
	if (ds_mmap_open(&ring, fd, 512)) {
		printf("# mmap failed\n");
		return 1;
	}
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	/*
	 * On the debug kernel (KASAN: clearing the read buffer is slow) 4 MiB
	 * reads left the spin 1 sample of 322: read less there, so that both
	 * chains are sampled.
	 */
	workload_run(1500, ds_period_scale() > 1 ? 64 << 10 : 4 << 20, "/dev/zero", &ws);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	n = ds_mmap_drain(&ring, on_record, &c);

	printf("# workload: %lu reads, %lu spins; %ld records, %ld samples\n",
	       ws.reads, ws.spins, n, c.samples);
	printf("# kernel frames %ld, user frames %ld, read chain %ld, spin chain %ld\n",
	       c.with_kernel, c.with_user, c.read_chain, c.spin_chain);
	DS_CHECK(&failed, n > 0, "ring buffer drained (%ld records)", n);
	DS_CHECK(&failed, c.samples >= 100, "at least 100 samples (%ld)", c.samples);
	DS_CHECK(&failed, c.bad == 0, "no malformed samples or deferred markers (%ld)", c.bad);
	DS_CHECK(&failed, c.deferred == 0, "no deferred records (%ld)", c.deferred);
	DS_CHECK(&failed, c.with_kernel >= c.samples / 10,
		 "kernel frames in >= 10%% of samples (%ld)", c.with_kernel);
	DS_CHECK(&failed, c.with_user >= c.samples * 9 / 10,
		 "user frames in >= 90%% of samples (%ld)", c.with_user);
	DS_CHECK(&failed, c.read_chain >= c.samples / 10,
		 "wl_syscall3<-wl_read_leaf<-wl_read_mid<-wl_read_top<-workload_run in >= 10%% (%ld)",
		 c.read_chain);
	/* Slow kernels (KASAN) spend most time in read(): ask for a few only. */
	DS_CHECK(&failed, c.spin_chain >= 20,
		 "wl_spin_leaf<-wl_spin_mid<-wl_spin_top<-workload_run in >= 20 samples (%ld)",
		 c.spin_chain);
	ds_mmap_close(&ring);
	close(fd);
	ds_symtab_free((struct ds_symtab *)c.st);
	return failed ? 1 : 0;
}
