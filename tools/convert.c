// SPDX-License-Identifier: MIT
/* deferstack convert: stitch a raw deferred perf.data into a classic one. */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"

static void usage_convert(FILE *f)
{
	fprintf(f,
		"usage: deferstack convert [-i IN] -o OUT\n"
		"Stitch a raw (deferred) perf.data into a classic-callchain perf.data that\n"
		"any perf (e.g. 6.1) reads: samples get 'kernel ips, PERF_CONTEXT_USER, user\n"
		"ips'; samples whose record never came keep the kernel part only;\n"
		"CALLCHAIN_DEFERRED records are dropped; attr defer bits are cleared.\n"
		"OUT must not be IN; it is replaced only when the conversion succeeds. An\n"
		"incomplete IN (cut short, not finished) is converted up to its cut, with\n"
		"exit status 1.\n"
		"IN or OUT '-': standard input / output in perf's pipe mode.\n");
}

int cmd_convert(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *in = "perf.data", *out = NULL;
	struct ds_pipeline_summary st;
	int c, err;

	while ((c = getopt_long(argc, argv, "i:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i': in = optarg; break;
		case 'o': out = optarg; break;
		case 'h': usage_convert(stdout); return 0;
		default: usage_convert(stderr); return 2;
		}
	}
	if (!out || optind != argc) {
		usage_convert(stderr);
		return 2;
	}
	err = convert_file(in, out, &st);
	if (err)
		return 1;
	print_summary(stderr, &st);
	/* OUT holds what IN had up to its cut: a salvage (perf 6.1 reads it,
	 * it does not read a cut file), but the status says IN was cut */
	return input_status(in, &st);
}
