// SPDX-License-Identifier: MIT
/* deferstack: dispatch to record / report / script / convert. */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: deferstack <command> [options]\n"
		"Sampling profiler with deferred user callchains (perf_event_open).\n\n"
		"commands:\n"
		"  record   sample a command, a pid or all CPUs into a perf.data file\n"
		"  report   top functions / folded stacks / SVG flame graph\n"
		"  script   print every sample with its stitch status and frames\n"
		"  convert  stitch a raw deferred perf.data into a classic one (perf 6.x)\n\n"
		"'deferstack <command> --help' describes each command, 'deferstack --version'\n"
		"prints the version; see deferstack(1).\n");
}

int main(int argc, char **argv)
{
	/* A fixed mmap threshold: glibc's moves up to the size of the last
	 * large block freed (a hash table that grew), after which the big
	 * arrays that grow by doubling are copied around the heap and leave
	 * holes (report --folded's peak memory was 54 MB instead of 44). */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	/* Keep 16 MiB at the top of the heap when memory is freed: without it
	 * glibc gives the pages back and the next growth faults them in again
	 * (half of a real -a recording's page faults, 8-11 % of the CPU time
	 * of report --folded and script). */
	mallopt(M_TOP_PAD, 16 << 20);
	/* over a file size limit, write() fails with EFBIG and the command
	 * reports it (and removes its temp file) instead of dying silently */
	ignore_write_signals(false);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf(PROG " %s\n", DS_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(argv[1], "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(argv[1], "script"))
		return cmd_script(argc - 1, argv + 1);
	if (!strcmp(argv[1], "convert"))
		return cmd_convert(argc - 1, argv + 1);
	die_msg("unknown command '%s' (try --help)", argv[1]);
	return 2;
}
