// SPDX-License-Identifier: MIT
/* deferstack record: the output file, and the rings drained into it
 * (each record counted and its side data noted on the way). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "record.h"

int open_output(struct rec *r, const char *path, bool task)
{
	size_t n = r->o.nr_ev + 1;
	struct ds_attr *attrs = calloc(n, sizeof(*attrs));
	char (*names)[160] = calloc(n, sizeof(*names));
	struct ds_writer_opts wo = { .sz = sizeof(wo) };
	char *tracing = NULL;
	int err;

	if (!attrs || !names) {
		free(attrs);
		free(names);
		die_msg("%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	/* the user's events in order, then the tracking event (perf's
	 * "dummy:u"), each with its ids and perf's name for it */
	for (size_t i = 0; i < n; i++) {
		const struct rec_event *ev = i < r->o.nr_ev ? &r->o.ev[i] : NULL;

		attrs[i].sz = sizeof(attrs[i]);
		make_attr(&attrs[i].attr, &r->o, ev, r->defer, task, r->o.cmd != NULL);
		attrs[i].ids = r->ids[i].v;
		attrs[i].nr_ids = r->ids[i].n;
		attrs[i].name = ev ? (char *)event_name(&r->o, ev, names[i], sizeof(names[i]))
				   : strcpy(names[i], "dummy:u");
	}
	err = tracing_data(&r->o, &tracing, &wo.tracing_data_len);
	if (err)
		goto out;
	wo.tracing_data = tracing;
	/* like perf: keep an existing recording (and its side file) as .old */
	r->path = path;
	if (!strcmp(path, "-")) {
		/* standard output: perf's pipe mode (record -o - | report -i -) */
		int fd = dup(1);

		r->path = "standard output";
		wo.pipe = true;
		err = fd < 0 ? -errno : ds_writer_open_fd(&r->w, fd, attrs, n, &wo);
	} else {
		/* windows have names of their own */
		err = r->o.switch_mode ? 0 : rotate_old(r->o.out);
		if (err)
			goto out;	/* rotate_old() said why */
		err = ds_writer_open(&r->w, path, attrs, n, &wo);
	}
	if (err && r->o.switch_mode && (err == -ENOSPC || err == -EDQUOT)) {
		/* a window whose header did not fit: none (window_full() says) */
		unlink(path);
	} else if (err) {
		die_msg("writing %s: %s", r->path, strerror(-err));
	}
out:
	free(attrs);
	free(names);
	free(tracing);
	return err;
}

int close_output(struct rec *r, int ncpu, int argc, char **argv)
{
	struct ds_writer_info info = { .sz = sizeof(info) };
	struct ds_build_id *bids = NULL;
	struct utsname un;
	int err;

	if (!r->w)
		return 0;	/* closed already (a pause on a full disk) */
	if (!uname(&un)) {
		info.hostname = un.nodename;
		info.osrelease = un.release;
		info.arch = un.machine;
	}
	info.version = PROG "-" DS_VERSION;
	info.nr_cpus_avail = (uint32_t)ncpu;
	info.nr_cpus_online = (uint32_t)ncpu;
	info.argc = argc;
	info.argv = argv;
	info.nr_build_ids = collect_build_ids(r, &bids);
	info.build_ids = bids;
	err = r->w ? ds_writer_close(r->w, &info) : 0;
	r->w = NULL;
	free(bids);
	return err;
}

/* Remember the first write error; say_werr() prints it, once the
 * recording knows what becomes of the command. */
int write_err(struct rec *r, int err)
{
	if (err && !r->werr)
		r->werr = err;
	return err;
}

/* The one line for a failed write: the output, the reason (the usual
 * causes named) and what happens to the recording and the command. */
void say_werr(struct rec *r, const char *then)
{
	const char *why = r->werr == -EFBIG ? " (file size limit, ulimit -f)" :
			  r->werr == -EPIPE ? " (the reader closed the pipe)" :
			  r->werr == -ENOSPC ? " (disk full)" : "";

	if (!r->werr || r->werr_said)
		return;
	r->werr_said = true;
	die_msg("writing %s: %s%s: recording stopped%s", r->path, strerror(-r->werr), why,
		then ? then : "");
}

int write_rec(struct rec *r, const struct perf_event_header *h)
{
	if (r->o.switch_mode && r->defer &&
	    (h->type == PERF_RECORD_SAMPLE || h->type == DS_RECORD_CALLCHAIN_DEFERRED)) {
		int ret = window_note(r, h);

		if (ret)
			return ret < 0 ? ret : 0;
	}
	switch (h->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		if (note_object(r, h) || side_note_mmap(&r->side, h, SAMPLE_TYPE) ||
		    maps_note(r, h))
			return -ENOMEM;
		break;
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (maps_note(r, h))
			return -ENOMEM;
		break;
	case PERF_RECORD_SAMPLE:
		r->nr_samples++;
		if (note_kernel_ips(r, h))
			return -ENOMEM;
		break;
	case DS_RECORD_CALLCHAIN_DEFERRED: r->nr_deferred++; break;
	case PERF_RECORD_LOST:
		if (h->size >= 24) {
			uint64_t lost;

			memcpy(&lost, (const uint8_t *)h + 16, 8);
			r->nr_lost += lost;
		}
		break;
	}
	r->nr_records++;
	r->bytes += h->size;
	return write_err(r, ds_writer_write(r->w, h));
}

/* Drain every ring once; a FINISHED_ROUND after a pass that read data. */
int read_all(struct rec *r)
{
	uint64_t before = r->nr_records;
	int err = 0;

	for (size_t i = 0; i < r->nr_bufs; i++) {
		struct cpu_buf *b = &r->bufs[i];
		const struct perf_event_header *h;
		int ret;

		if (!b->map)
			continue;
		ds_ring_begin(&b->ring);
		while ((ret = ds_ring_next(&b->ring, &h)) > 0) {
			if (!r->w) {
				/* paused (a full disk): read, not written */
				r->paused_samples += h->type == PERF_RECORD_SAMPLE;
				continue;
			}
			err = write_rec(r, h);
			if (err)
				break;
		}
		if (ret < 0)
			die_msg("warning: corrupt record in the cpu %d ring buffer, skipped",
				b->cpu);
		ds_ring_end(&b->ring);
		if (err)
			return err;
	}
	if (r->nr_records != before && r->w)
		err = write_round(r);
	return err;
}

void note_round(struct rec *r)
{
	r->at_round = (struct rec_count){ r->nr_samples, r->nr_deferred, r->nr_lost,
					  r->nr_records, r->bytes };
}

int write_round(struct rec *r)
{
	int err = write_err(r, ds_writer_round(r->w));

	if (!err)
		note_round(r);
	return err;
}

/*
 * A window switch closes one window (build-ids of every mapped file,
 * kallsyms, side files, the pprof writer of the last one) and opens the
 * next (the maps of every process with -a): slow on a big machine or a
 * debug kernel, while the events go on.  Between those steps the rings
 * are read into memory and written to the new window once it is open, in
 * the order read (rounds kept): they hold what happened after the
 * boundary, which is the new window's.  The spool is bounded; past
 * SPOOL_MAX the records wait in the rings (and the kernel counts what
 * does not fit there as LOST, in the new window).
 */
#define SPOOL_MAX (32u << 20)

void switch_drain(struct rec *r)
{
	struct rec_spool *s = &r->spool;
	size_t before = s->len;

	if (!r->spooling || r->test_nodrain)
		return;
	for (size_t i = 0; i < r->nr_bufs && s->len < SPOOL_MAX; i++) {
		struct cpu_buf *b = &r->bufs[i];
		const struct perf_event_header *h;
		int ret = 0;

		if (!b->map)
			continue;
		ds_ring_begin(&b->ring);
		while (s->len < SPOOL_MAX && (ret = ds_ring_next(&b->ring, &h)) > 0) {
			if (ds_grow(&s->buf, &s->cap, s->len + h->size + 8, 1)) {
				/* no memory: this record is lost, the rest waits */
				r->nr_lost++;
				break;
			}
			memcpy(s->buf + s->len, h, h->size);
			s->len += h->size;
		}
		if (ret < 0)
			die_msg("warning: corrupt record in the cpu %d ring buffer, skipped",
				b->cpu);
		ds_ring_end(&b->ring);
	}
	if (s->len != before) {
		/* a round, as read_all() writes after a pass */
		struct perf_event_header h = { DS_RECORD_FINISHED_ROUND, 0, sizeof(h) };

		memcpy(s->buf + s->len, &h, sizeof(h));
		s->len += sizeof(h);
	}
}

int spool_replay(struct rec *r)
{
	struct rec_spool *s = &r->spool;
	size_t off = 0;
	int err = 0;

	/* the rings go on into the spool's end while it is written (a
	 * switch's worth of records takes a while to write) */
	r->spooling = true;
	for (size_t k = 0; off < s->len && !err; k++) {
		struct perf_event_header h;

		if (k % 512 == 511)
			switch_drain(r);
		memcpy(&h, s->buf + off, sizeof(h));
		if (h.type == DS_RECORD_FINISHED_ROUND)
			err = write_round(r);
		else
			err = write_rec(r, (const void *)(s->buf + off));
		off += h.size;
	}
	r->spooling = false;
	/* a failed write (a full disk): the rest is dropped, and counted */
	for (struct perf_event_header h; off < s->len; off += h.size) {
		memcpy(&h, s->buf + off, sizeof(h));
		r->nr_dropped += h.type != DS_RECORD_FINISHED_ROUND;
	}
	/* freed: a switch's burst does not stay in the recorder's RSS */
	free(s->buf);
	memset(s, 0, sizeof(*s));
	return err;
}
