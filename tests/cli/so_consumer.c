// SPDX-License-Identifier: MIT
/* A program built against the installed libdeferstack (pkg-config
 * deferstack) with its public API only: read FILE ("-": standard input),
 * merge, stitch, symbolize (libdwfl) into a profile written as pprof
 * (zlib), print the counts. */
#include <stdio.h>
#include <string.h>

#include <deferstack/deferstack.h>

struct prof {
	struct ds_symbols *sym;
	struct ds_profile *p;
};

static int on_out(void *arg, const struct ds_stitch_out *o)
{
	struct prof *pr = arg;

	if (o->kind == DS_OUT_RECORD)
		return ds_symbols_event(pr->sym, o->ev);
	if (!o->chain)
		return 0;
	struct ds_profile_sample ps = {
		.sz = sizeof(ps), .comm = ds_symbols_comm(pr->sym, o->ev->tid), .pid = o->ev->pid,
		.cpu = -1, .event = "cpu-clock", .chain = o->chain, .nr = o->nr,
		.period = o->ev->period,
	};

	return ds_profile_add_sample(pr->p, pr->sym, &ps);
}

/* Stitch what the merge releases, in time order. */
static int drain(const struct ds_reader *r, struct ds_merge *m, struct ds_stitcher *s)
{
	const struct perf_event_header *rec;
	struct ds_event ev = { .sz = sizeof(ev) };
	int err = 0;

	while (!err && ds_merge_pop(m, &rec) > 0) {
		err = ds_reader_parse(r, rec, &ev);
		if (!err)
			err = ds_stitch_event(s, &ev);
	}
	return err;
}

int main(int argc, char **argv)
{
	struct prof pr = { 0 };
	struct ds_stitch_opts so = { .sz = sizeof(so), .cb = on_out, .cb_arg = &pr };
	struct ds_reader_opts ro = { .sz = sizeof(ro) };
	const struct perf_event_header *rec;
	const struct ds_stitch_stats *st;
	struct ds_stitcher *s = NULL;
	struct ds_merge *m = NULL;
	struct ds_reader *r = NULL;
	struct ds_event ev = { .sz = sizeof(ev) };
	char why[256] = "";
	int err, ret = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: so_consumer FILE\n");
		return 2;
	}
	ro.errbuf = why;
	ro.errbuf_len = sizeof(why);
	err = strcmp(argv[1], "-") ? ds_reader_open(&r, argv[1], &ro)
				   : ds_reader_open_fd(&r, 0, "standard input", &ro);
	if (err) {
		fprintf(stderr, "so_consumer: %s\n", why);
		return 1;
	}
	err = ds_symbols_new(&pr.sym, NULL);
	if (!err)
		err = ds_profile_new(&pr.p);
	if (!err)
		err = ds_merge_new(&m, NULL);
	if (!err)
		err = ds_stitch_new(&s, &so);
	while (!err && (ret = ds_reader_next(r, &rec)) > 0) {
		if (rec->type == DS_RECORD_FINISHED_ROUND) {
			ds_merge_round(m);
		} else {
			err = ds_reader_parse(r, rec, &ev);
			if (!err)
				err = ds_merge_push(m, rec, ev.time, ev.cpu);
		}
		err = err ? err : drain(r, m, s);
	}
	if (!err && ret < 0)
		err = ret;
	ds_merge_flush(m);
	err = err ? err : drain(r, m, s);
	if (!err)
		err = ds_stitch_finish(s);
	if (!err) {
		FILE *nul = fopen("/dev/null", "w");

		err = nul ? ds_profile_write_pprof(pr.p, nul) : -1;
		if (nul)
			fclose(nul);
	}
	if (!err) {
		st = ds_stitch_get_stats(s);
		printf("samples=%llu stitched=%llu kernel_only=%llu profiled=%llu\n",
		       (unsigned long long)st->samples, (unsigned long long)st->stitched,
		       (unsigned long long)st->kernel_only,
		       (unsigned long long)ds_profile_samples(pr.p));
	} else {
		fprintf(stderr, "so_consumer: error %d\n", err);
	}
	ds_stitch_free(s);
	ds_merge_free(m);
	ds_reader_close(r);
	ds_profile_free(pr.p);
	ds_symbols_free(pr.sym);
	return err ? 1 : 0;
}
