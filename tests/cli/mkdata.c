// SPDX-License-Identifier: MIT
/* Write a small raw deferred-callchain perf.data for the CLI tests:
 * two tasks, two CPUs, a record before its sample, a lost record, an exit;
 * with MAPPED_FILE, an MMAP2 record that maps alpha's user frames to it. */
#include <stdio.h>

#include "streams.h"

int main(int argc, char **argv)
{
	struct sbuf s = { 0 };
	int err;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: mkdata OUT [MAPPED_FILE]\n");
		return 2;
	}
	sb_comm(&s, 100, "alpha", 1);
	if (argc == 3)	/* alpha's user frames are in this file */
		sb_mmap2(&s, 100, UADDR(0), 0x10000, argv[2], 1);
	sb_comm(&s, 200, "beta", 2);
	sb_dsample(&s, 100, 1000, 0, 0, 0x100000001ULL);
	sb_dsample(&s, 100, 1100, 0, 2, 0x100000001ULL);
	sb_dsample(&s, 200, 1150, 0, 4, 0x100000001ULL);	/* same value, other task */
	sb_round(&s);
	sb_deferred(&s, 100, 1200, 1, 0x100000001ULL, 0, 3);
	sb_deferred(&s, 200, 1250, 1, 0x100000001ULL, 16, 2);
	sb_dsample(&s, 200, 1260, 1, 6, 0x100000001ULL);	/* record first */
	sb_round(&s);
	sb_dsample(&s, 100, 1300, 0, 8, 0x200000001ULL);
	sb_lost(&s, 3, 1310, 0);
	sb_dsample(&s, 100, 1400, 0, 10, 0x300000001ULL);
	sb_exit(&s, 200, 1450, 1);
	sb_round(&s);
	err = sb_write_file(&s, argv[1]);
	free(s.b);
	if (err) {
		fprintf(stderr, "mkdata: %d\n", err);
		return 1;
	}
	return 0;
}
