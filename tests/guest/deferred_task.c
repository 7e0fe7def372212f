// SPDX-License-Identifier: GPL-2.0
/*
 * Per-task deferred callchains: sample the example workload on this task with
 * defer_callchain (and defer_output, as perf 7.x does) and check the contract
 * the series promises: markers with non-zero cookies, exactly one deferred
 * record per cookie, stitched stacks with the workload's functions in order,
 * one cookie per kernel entry. Prints the dedup ratio and the record layout.
 *
 *   deferred_task [READ_BYTES [MSEC [defer_output:0|1]]]
 *
 * Without defer_output our kernel still delivers the record to the requesting
 * event (the seed's rule); mainline 7.x delivers side-band only, so on the
 * reference kernel that variant expects markers and no records.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stitch_util.h"
#include "workload.h"

int main(int argc, char **argv)
{
	size_t bytes = argc > 1 ? strtoul(argv[1], NULL, 0) : 16 << 20;
	unsigned int msec = argc > 2 ? (unsigned int)strtoul(argv[2], NULL, 0) : 1500;
	int defer_output = argc > 3 ? atoi(argv[3]) : 1;
	struct ds_symtab *st = ds_symtab_load("/proc/self/exe");
	struct ds_collect c = { 0 };
	struct workload_stats ws;
	struct ds_verdict v;
	int failed = 0;
	long n;

	if (!st)
		return 1;
	n = ds_sample_own_workload(&c, defer_output, msec, bytes, &ws);
	if (n < 0)
		return 1;
	printf("# %lu reads of %zu bytes, %lu spins; %ld records (%ld lost, %ld bad, %ld other)\n",
	       ws.reads, bytes, ws.spins, n, c.lost, c.bad, c.other);
	ds_verify(&c, (uint32_t)gettid(), st, &v);
	ds_print_layout(&c);

	DS_CHECK(&failed, c.bad == 0 && c.lost == 0, "no malformed or lost records");
	DS_CHECK(&failed, v.marker_samples >= 100, "at least 100 marker samples (%ld)",
		 v.marker_samples);
	DS_CHECK(&failed, v.classic_samples <= v.samples / 20,
		 "classic chains are rare (%ld of %ld)", v.classic_samples, v.samples);
	DS_CHECK(&failed, v.zero_cookies == 0, "no zero cookie");
	if (!defer_output && ds_kernel_is_mainline()) {
		DS_CHECK(&failed, v.records == 0,
			 "mainline: defer_callchain alone gets no records (%ld)", v.records);
	} else {
		DS_CHECK(&failed, v.unmatched == 0, "every marker has its record (%ld unmatched)",
			 v.unmatched);
		DS_CHECK(&failed, v.dup_records == 0, "exactly one record per cookie (%ld dup)",
			 v.dup_records);
		DS_CHECK(&failed, v.orphan_records == 0, "no record without a sample (%ld)",
			 v.orphan_records);
		DS_CHECK(&failed, v.read_stitched >= v.marker_samples / 10,
			 "stitched read chain in >= 10%% of samples (%ld)", v.read_stitched);
		/* Slow kernels (KASAN) spend most time in read(): ask for a few only. */
		DS_CHECK(&failed, ws.spins < 5 || v.spin_stitched >= 1,
			 "stitched spin chain in user-mode samples (%ld, %lu spin rounds)",
			 v.spin_stitched, ws.spins);
	}
	DS_CHECK(&failed, v.kernel_chain_in_marker > 0,
		 "kernel chains precede the marker (%ld)", v.kernel_chain_in_marker);
	DS_CHECK(&failed, v.interleaved == 0, "one cookie per kernel entry (%ld interleaved)",
		 v.interleaved);
	DS_CHECK(&failed, v.records <= (long)(ws.reads + ws.spins) * 4 + 64,
		 "records bounded by kernel entries (%ld)", v.records);
	ds_collect_free(&c);
	ds_symtab_free(st);
	return failed ? 1 : 0;
}
