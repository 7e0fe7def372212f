/* SPDX-License-Identifier: MIT */
/* deferstack CLI internals. */
#ifndef DEFERSTACK_CLI_H
#define DEFERSTACK_CLI_H

#include "deferstack/deferstack.h"
#include "internal.h"

#define PROG "deferstack"

/* print "deferstack: <msg>" on stderr */
void die_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_script(int argc, char **argv);
int cmd_convert(int argc, char **argv);

/* Read path, merge in time order, stitch; cb gets every output. */
struct pipeline {
	struct ds_reader rd;
	struct ds_merge mg;
	struct ds_stitcher st;
	struct ds_symbols *sym;	/* may be NULL */
	uint64_t nr_out_of_order;
};

int pipeline_run(struct pipeline *p, const char *path, const char *kallsyms,
		 bool want_symbols, ds_stitch_cb cb, void *arg);
void pipeline_close(struct pipeline *p);
void print_summary(FILE *out, const struct ds_stitch_stats *st);
/* stitch IN into a classic-callchain perf.data OUT, stats in *st */
int convert_file(const char *in, const char *out, struct ds_stitch_stats *st);
/* default kallsyms path for a data file: "<file>.kallsyms" if present */
const char *default_kallsyms(const char *data, char *buf, size_t len);

#endif
