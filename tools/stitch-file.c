// SPDX-License-Identifier: MIT
/* A raw deferred perf.data stitched into a classic-callchain one: what
 * convert does, and record --stitched after recording (so it lives here,
 * not in either command's file). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

struct conv {
	struct ds_writer *w;	/* opened at the first record: a pipe-mode
				 * input has its attrs by then */
	struct ds_pipeline *p;
	uint8_t *buf;
	const char *in, *out;
	struct outfile of;
};

/* The output, with the input's attrs as classic events: OUT through a
 * temp file renamed into place, or "-": standard output in pipe mode. */
static int conv_open(struct conv *c)
{
	const struct ds_reader *rd = ds_pipeline_reader(c->p);
	size_t n = ds_reader_nr_attrs(rd);
	struct ds_writer_opts wo = { .sz = sizeof(wo) };
	struct ds_attr *attrs;
	int err, fd;

	if (!n) {
		die_msg("%s: no events (attrs) in the input", c->in);
		return -EINVAL;
	}
	attrs = calloc(n, sizeof(*attrs));
	if (!attrs)
		return -ENOMEM;
	/* tracepoint formats go along: perf needs them */
	wo.tracing_data = ds_reader_tracing_data(rd, &wo.tracing_data_len);
	for (size_t i = 0; i < n; i++) {
		attrs[i] = *ds_reader_attr(rd, i);
		ds_attr_set_flag(&attrs[i].attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 0);
		ds_attr_set_flag(&attrs[i].attr, DS_ATTR_BIT_DEFER_OUTPUT, 0);
	}
	if (!strcmp(c->out, "-")) {
		wo.pipe = true;
		fd = dup(1);
		if (fd < 0)
			fd = -errno;
	} else {
		fd = outfile_create(&c->of, c->out);
	}
	err = fd < 0 ? fd : ds_writer_open_fd(&c->w, fd, attrs, n, &wo);
	free(attrs);
	if (err && fd >= 0) {
		die_msg("writing %s: %s", c->out, strerror(-err));
		outfile_abort(&c->of);
	} else if (err && !strcmp(c->out, "-")) {
		die_msg("writing standard output: %s", strerror(-err));
	}
	return err;
}

static int conv_write(struct conv *c, const struct perf_event_header *h)
{
	int err = c->w ? 0 : conv_open(c);

	if (!err) {
		err = ds_writer_write(c->w, h);
		if (err)
			die_msg("writing %s: %s", c->out, strerror(-err));
	}
	return err;
}

static int conv_cb(void *arg, const struct ds_stitch_out *o)
{
	struct conv *c = arg;
	int n;

	switch (o->kind) {
	case DS_OUT_RECORD:
		if (o->ev->type == DS_RECORD_CALLCHAIN_DEFERRED)
			return 0;	/* consumed by stitching */
		return conv_write(c, o->ev->hdr);
	case DS_OUT_STITCHED:
	case DS_OUT_KERNEL_ONLY:
		n = ds_sample_set_callchain(o->ev, o->chain, o->nr, c->buf, 65536);
		if (n < 0) {
			die_msg("%s: a stitched sample (tid %u, %" PRIu64 " frames) does not "
				"fit a perf record: %s", c->in, o->ev->tid, o->nr,
				strerror(-n));
			return n;
		}
		return conv_write(c, (const void *)c->buf);
	default:
		return conv_write(c, o->ev->hdr);
	}
}

int convert_file(const char *in, const char *out, struct ds_pipeline_summary *st)
{
	struct ds_writer_info info = { .sz = sizeof(info) };
	struct ds_pipeline_opts po = { .sz = sizeof(po), .cb = conv_cb };
	struct conv c;
	int err;

	if (strcmp(in, "-") && strcmp(out, "-") && same_file(in, out)) {
		die_msg("%s and %s are the same file: convert writes a new file, give "
			"another -o", in, out);
		return -EINVAL;
	}
	memset(&c, 0, sizeof(c));
	c.in = in;
	c.out = out;
	c.buf = malloc(65536);
	if (!c.buf)
		return -ENOMEM;
	po.cb_arg = &c;
	err = pipeline_run(&c.p, in, &po);
	if (!err && !c.w && c.p && ds_pipeline_reader(c.p))
		err = conv_open(&c);	/* no records: the attrs alone */
	if (st)
		*st = pipeline_stats(c.p);
	if (c.w) {
		int e2;

		/* the objects' build-ids go along */
		if (ds_pipeline_reader(c.p))
			info.build_ids = ds_reader_build_ids(ds_pipeline_reader(c.p),
							     &info.nr_build_ids);
		e2 = ds_writer_close(c.w, &info);
		if (!err && e2) {
			die_msg("writing %s: %s", out, strerror(-e2));
			err = e2;
		}
	}
	ds_pipeline_free(c.p);
	free(c.buf);
	if (err)
		outfile_abort(&c.of);
	else
		err = outfile_commit(&c.of);
	return err;
}
