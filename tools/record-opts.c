// SPDX-License-Identifier: MIT
/* deferstack record: its options (usage, parsing, the --switch-output
 * values in perf's syntax). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

/* NUMBER followed by one of units' letters (perf's case-sensitive tags),
 * scaled by mul[]: 0 and *out, or -EINVAL (no message). */
static int parse_tagged(const char *s, const char *units, const uint64_t *mul, uint64_t *out)
{
	const char *u;
	char *end;
	unsigned long long v;

	errno = 0;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	v = strtoull(s, &end, 10);
	if (errno || v == 0 || !*end || end[1] || !(u = strchr(units, *end)))
		return -EINVAL;
	if (v > UINT64_MAX / mul[u - units])
		return -EINVAL;
	*out = v * mul[u - units];
	return 0;
}

static const uint64_t size_mul[] = { 1, 1ULL << 10, 1ULL << 20, 1ULL << 30 };

int parse_size(const char *opt, const char *s, uint64_t *out)
{
	if (!parse_tagged(s, "BKMG", size_mul, out))
		return 0;
	die_msg("bad %s '%s' (a size: a number and B, K, M or G, e.g. 100M)", opt, s);
	return -EINVAL;
}

/* --switch-output[=ARG], perf's values: signal (also no value), a time
 * (s m h d) or a size (B K M G); m is minutes, M megabytes. */
static int parse_switch_output(struct ropts *o, const char *arg)
{
	static const uint64_t time_mul[] = { 1, 60, 3600, 86400 };
	uint64_t v;

	if (!arg || !strcmp(arg, "signal")) {
		o->switch_mode = SW_SIGNAL;
	} else if (!parse_tagged(arg, "smhd", time_mul, &v) && v <= 365 * 86400ULL) {
		o->switch_mode = SW_TIME;
		o->switch_secs = (double)v;
	} else if (!parse_tagged(arg, "BKMG", size_mul, &v)) {
		o->switch_mode = SW_SIZE;
		o->switch_bytes = v;
	} else {
		die_msg("bad --switch-output '%s' (signal, a time such as 10s, 5m, 1h, 1d, or "
			"a size such as 100M, 1G)", arg);
		return -EINVAL;
	}
	return 0;
}

/* What windows exclude and need. */
static int check_window_opts(const struct ropts *o)
{
	if ((o->keep || o->max_size || o->pprof_dir) && !o->switch_mode) {
		die_msg("record: --keep, --switch-max-files, --max-size and --pprof-dir need "
			"--switch-output");
		return -EINVAL;
	}
	if (o->switch_mode && !strcmp(o->out, "-")) {
		die_msg("record: --switch-output writes files: not with -o -");
		return -EINVAL;
	}
	if (o->switch_mode && o->stitched) {
		die_msg("record: --switch-output and --stitched exclude each other "
			"(convert each window instead)");
		return -EINVAL;
	}
	return 0;
}

void usage_record(FILE *f)
{
	fprintf(f,
		"usage: deferstack record [-o FILE] [-e EVENT[,EVENT...]]... [-F FREQ | -c N]\n"
		"                         [--mode defer|classic|auto] [--stitched] [-d SECS]\n"
		"                         [-m PAGES] [--switch-output[=TIME|SIZE] [--keep N]\n"
		"                         [--max-size SIZE] [--pprof-dir DIR]]\n"
		"                         [-a | -p PID | -- COMMAND ARGS...]\n"
		"Sample with callchains into a perf.data file.\n"
		"  -o FILE        output (default perf.data); kallsyms saved as FILE.kallsyms\n"
		"                 an existing FILE is kept as FILE.old (like perf); -o -:\n"
		"                 standard output in perf's pipe mode (| report -i -)\n"
		"  -e EVENT       perf's syntax, comma-separated or repeated: each is recorded\n"
		"                 software: cpu-clock (default: on-CPU time), task-clock,\n"
		"                 page-faults, minor-faults, major-faults, cpu-migrations,\n"
		"                 context-switches (off-CPU: where tasks block or are\n"
		"                 preempted; every switch unless -F or -c is given)\n"
		"                 hardware (where the PMU has them): cycles, instructions,\n"
		"                 cache-misses, branch-misses, ...\n"
		"                 tracepoints: SYS:NAME (every hit), e.g. sched:sched_switch\n"
		"                 modifiers: NAME:u user space only, NAME:k kernel only\n"
		"  -F FREQ        samples per second per CPU (default 999)\n"
		"  -c N           a sample every N events instead of -F\n"
		"  --mode MODE    defer: deferred user callchains, fail if unsupported;\n"
		"                 classic: user stacks copied at the sample;\n"
		"                 auto (default): defer if the kernel supports it, else classic\n"
		"  --stitched     write stitched classic samples (readable by perf 6.x)\n"
		"                 instead of the raw kernel records (perf 7.x stitches itself)\n"
		"  -a             all CPUs (one event per CPU, pid = -1)\n"
		"  -p PID         an existing process (all its threads, inherited)\n"
		"  -d SECS        stop after SECS seconds (default: command exit or Ctrl-C)\n"
		"  -m PAGES       ring buffer pages per CPU, power of two (default 128)\n"
		"  --switch-output[=signal|TIME|SIZE]\n"
		"                 windows: FILE.<timestamp> files (perf's names), each a whole\n"
		"                 recording; a new one every TIME (10s, 5m, 1h, 1d), every\n"
		"                 SIZE of records (100M, 1G; B K M G), or only on SIGUSR2\n"
		"                 (signal, the default); SIGHUP and SIGUSR2 always switch\n"
		"  --keep N       keep the newest N windows of FILE (alias --switch-max-files)\n"
		"  --max-size SIZE  keep the newest windows up to SIZE bytes in all\n"
		"  --pprof-dir DIR  also write each closed window as DIR/WINDOW.pb.gz, a\n"
		"                 gzipped pprof profile (Pyroscope, Parca, go tool pprof)\n"
		"A summary (samples, deferred records, stitched, unmatched, lost) is printed\n"
		"at the end. With a COMMAND, exits with its status (128+N for signal N;\n"
		"127/126 when it cannot be run).\n");
}

int parse_record_opts(int argc, char **argv, struct ropts *o)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "event", required_argument, NULL, 'e' },
		{ "freq", required_argument, NULL, 'F' },
		{ "count", required_argument, NULL, 'c' },
		{ "mode", required_argument, NULL, 'M' },
		{ "stitched", no_argument, NULL, 'S' },
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "mmap-pages", required_argument, NULL, 'm' },
		{ "switch-output", optional_argument, NULL, 'W' },
		{ "keep", required_argument, NULL, 'K' },
		{ "switch-max-files", required_argument, NULL, 'K' },
		{ "max-size", required_argument, NULL, 'X' },
		{ "pprof-dir", required_argument, NULL, 'Q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c, n = 0;
	unsigned long v;

	o->out = "perf.data";
	o->freq = 999;
	o->pages = 128;
	while ((c = getopt_long(argc, argv, "+o:e:F:c:ap:d:m:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': o->out = optarg; break;
		case 'e':
			/* repeated -e: each event is recorded */
			if (parse_events(o, optarg))
				return -1;
			break;
		case 'F':
			/* the kernel's limit (perf_event_max_sample_rate) is
			 * checked by the kernel, and said so */
			if (parse_ulong("-F", optarg, 1, 10000000, &o->freq))
				return -1;
			o->freq_set = true;
			break;
		case 'c':
			if (parse_ulong("-c", optarg, 1, 1000000000UL, &o->period))
				return -1;
			break;
		case 'M':
			if (!strcmp(optarg, "auto"))
				o->mode = MODE_AUTO;
			else if (!strcmp(optarg, "defer"))
				o->mode = MODE_DEFER;
			else if (!strcmp(optarg, "classic"))
				o->mode = MODE_CLASSIC;
			else {
				die_msg("bad --mode '%s' (defer, classic or auto)", optarg);
				return -1;
			}
			break;
		case 'S': o->stitched = true; break;
		case 'a': o->all = true; break;
		case 'p':
			if (parse_ulong("-p", optarg, 1, INT_MAX, &v))
				return -1;
			o->pid = (pid_t)v;
			break;
		case 'd':
			/* nan, inf, negative, absurd: no */
			if (parse_seconds("-d", optarg, 365 * 86400.0, &o->duration))
				return -1;
			break;
		case 'm':
			if (parse_ulong("-m", optarg, 1, 65536, &o->pages))
				return -1;
			if (o->pages & (o->pages - 1)) {
				die_msg("bad -m '%s' (a power of two)", optarg);
				return -1;
			}
			break;
		case 'W':
			if (parse_switch_output(o, optarg))
				return -1;
			break;
		case 'K':
			if (parse_ulong("--keep", optarg, 1, 1000000, &o->keep))
				return -1;
			break;
		case 'X':
			if (parse_size("--max-size", optarg, &o->max_size))
				return -1;
			break;
		case 'Q':
			if (!*optarg) {
				die_msg("record: --pprof-dir needs a directory");
				return -1;
			}
			o->pprof_dir = optarg;
			break;
		case 'h': usage_record(stdout); return 1;
		default: usage_record(stderr); return -1;
		}
	}
	if (o->freq_set && o->period) {
		die_msg("record: -F and -c exclude each other");
		return -1;
	}
	if (check_window_opts(o))
		return -1;
	if (!o->nr_ev && parse_events(o, "cpu-clock"))
		return -1;
	if (optind < argc)
		o->cmd = argv + optind;
	n = o->all + (o->pid > 0) + (o->cmd != NULL);
	if (n != 1) {
		die_msg("record: give exactly one of -a, -p PID or -- COMMAND (try --help)");
		return -1;
	}
	return 0;
}
