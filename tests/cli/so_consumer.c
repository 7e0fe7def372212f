// SPDX-License-Identifier: MIT
/* A program built against the installed libdeferstack (pkg-config
 * deferstack) with its public API only: read FILE ("-": standard input)
 * through the library's pipeline (read, merge, stitch, symbols: libdwfl)
 * into a profile written as pprof (zlib), print the counts. */
#include <stdio.h>
#include <string.h>

#include <deferstack/deferstack.h>

struct prof {
	struct ds_pipeline *pl;
	struct ds_profile *p;
};

static int on_out(void *arg, const struct ds_stitch_out *o)
{
	struct prof *pr = arg;

	if (o->kind == DS_OUT_RECORD || !o->chain)
		return 0;	/* the pipeline's symbols have taken the record in */
	struct ds_profile_sample ps = {
		.sz = sizeof(ps), .comm = ds_pipeline_comm(pr->pl, o->ev), .pid = o->ev->pid,
		.cpu = -1, .event = "cpu-clock", .chain = o->chain, .nr = o->nr,
		.period = o->ev->period,
	};

	return ds_profile_add_sample(pr->p, ds_pipeline_symbols(pr->pl), &ps);
}

int main(int argc, char **argv)
{
	struct prof pr = { 0 };
	struct ds_pipeline_opts po = { .sz = sizeof(po), .cb = on_out, .cb_arg = &pr,
				       .symbols = true };
	struct ds_pipeline_summary st = { .sz = sizeof(st) };
	int err;

	if (argc != 2) {
		fprintf(stderr, "usage: so_consumer FILE\n");
		return 2;
	}
	err = ds_profile_new(&pr.p);
	if (!err)
		err = ds_pipeline_new(&pr.pl, &po);
	if (err) {
		fprintf(stderr, "so_consumer: error %d\n", err);
		ds_profile_free(pr.p);
		return 1;
	}
	err = strcmp(argv[1], "-") ? ds_pipeline_open(pr.pl, argv[1])
				   : ds_pipeline_open_fd(pr.pl, 0, "standard input");
	if (!err)
		err = ds_pipeline_run(pr.pl);
	if (!err) {
		FILE *nul = fopen("/dev/null", "w");

		err = nul ? ds_profile_write_pprof(pr.p, nul) : -1;
		if (nul)
			fclose(nul);
	}
	if (!err)
		err = ds_pipeline_get_summary(pr.pl, &st);
	if (!err)
		printf("samples=%llu stitched=%llu kernel_only=%llu profiled=%llu\n",
		       (unsigned long long)st.samples, (unsigned long long)st.stitched,
		       (unsigned long long)st.kernel_only,
		       (unsigned long long)ds_profile_samples(pr.p));
	else
		fprintf(stderr, "so_consumer: %s (error %d)\n", ds_pipeline_error(pr.pl), err);
	ds_pipeline_free(pr.pl);
	ds_profile_free(pr.p);
	return err ? 1 : 0;
}
