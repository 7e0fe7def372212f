// SPDX-License-Identifier: GPL-2.0
#include <stddef.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "stitch_util.h"
#include "workload.h"

void ds_collect_record(const struct ds_event *ev, void *arg)
{
	struct ds_collect *c = arg;
	struct ds_rec *r;

	c->seen++;
	if (ev->type == PERF_RECORD_LOST) {
		/* a zeroed collector has lost_at 0: the first LOST sets it */
		if (!c->lost)
			c->lost_at = c->n;
		c->last_lost_at = c->n;
		c->lost++;
		c->lost_events += ev->lost;
		return;
	}
	if (ev->type != PERF_RECORD_SAMPLE && ev->type != DS_RECORD_CALLCHAIN_DEFERRED) {
		c->other++;
		return;
	}
	if (ev->nr > DS_MAX_IPS || !(ev->have & DS_EV_TID) ||
	    (ev->type == PERF_RECORD_SAMPLE && !(ev->have & DS_EV_CALLCHAIN))) {
		c->bad++;
		return;
	}
	if (c->only_tid && ev->tid != c->only_tid)
		return;
	if (c->n == c->cap) {
		long cap = c->cap ? c->cap * 2 : 1024;
		struct ds_rec *nr = realloc(c->recs, cap * sizeof(*nr));

		if (!nr) {
			c->bad++;
			return;
		}
		c->recs = nr;
		c->cap = cap;
	}
	r = &c->recs[c->n++];
	memset(r, 0, sizeof(*r));
	r->deferred = ev->type == DS_RECORD_CALLCHAIN_DEFERRED;
	r->misc = ev->misc;
	r->size = ev->size;
	r->tid = ev->tid;
	r->cpu = ev->cpu;
	r->time = ev->time;
	r->ip = ev->ip;
	r->cookie = ev->has_cookie || r->deferred ? ev->cookie : 0;
	r->nr = ev->nr;
	memcpy(r->ips, ev->chain, ev->nr * sizeof(uint64_t));
	r->user_start = r->deferred ? 0 : -1;
	for (uint64_t i = 0; !r->deferred && i < ev->nr; i++) {
		if (ev->chain[i] == PERF_CONTEXT_USER) {
			r->user_start = (int)i + 1;
			break;
		}
	}
}

void ds_collect_free(struct ds_collect *c)
{
	free(c->recs);
	memset(c, 0, sizeof(*c));
}

const struct ds_rec *ds_find_record(const struct ds_collect *c, uint32_t tid,
					uint64_t cookie, long *count)
{
	const struct ds_rec *found = NULL;

	*count = 0;
	for (long i = 0; i < c->n; i++) {
		const struct ds_rec *r = &c->recs[i];

		if (r->deferred && r->tid == tid && r->cookie == cookie) {
			found = found ? found : r;
			(*count)++;
		}
	}
	return found;
}

static uint64_t last_cookie(const struct ds_collect *c, uint32_t tid)
{
	for (long i = c->n - 1; i >= 0; i--)
		if (!c->recs[i].deferred && c->recs[i].tid == tid && c->recs[i].cookie)
			return c->recs[i].cookie;
	return 0;
}

void ds_verify(const struct ds_collect *c, uint32_t tid, const struct ds_symtab *st,
	       struct ds_verdict *v)
{
	memset(v, 0, sizeof(*v));
	for (long i = 0; i < c->n; i++) {
		const struct ds_rec *r = &c->recs[i], *d;
		long count;

		if (tid && r->tid != tid)
			continue;
		if (r->deferred) {
			long marks = 0;

			v->records++;
			ds_find_record(c, r->tid, r->cookie, &count);
			if (count > 1)
				v->dup_records++;
			for (long j = 0; j < c->n; j++)
				marks += !c->recs[j].deferred && c->recs[j].tid == r->tid &&
					 c->recs[j].cookie == r->cookie;
			if (!marks)
				v->orphan_records++;
			continue;
		}
		v->samples++;
		if (r->nr >= 2 && r->ips[r->nr - 2] == DS_CONTEXT_USER_DEFERRED) {
			v->marker_samples++;
			if (!r->cookie)
				v->zero_cookies++;
			if (r->nr == 2)
				v->user_mode_samples++;
			else if (r->ips[0] == PERF_CONTEXT_KERNEL)
				v->kernel_chain_in_marker++;
			d = ds_find_record(c, r->tid, r->cookie, &count);
			if (!d) {
				/*
				 * The task's last kernel entry in the buffer is the
				 * one that disabled the event: mainline writes no
				 * record to a disabled event, and the data ends.
				 */
				if (r->cookie == last_cookie(c, r->tid))
					v->unmatched_at_end++;
				else
					v->unmatched++;
				continue;
			}
			v->matched++;
			v->read_stitched += ds_chain_has_sequence(st, d->ips, d->nr,
								  workload_read_chain);
			v->spin_stitched += ds_chain_has_sequence(st, d->ips, d->nr,
								  workload_spin_chain);
			/* One kernel entry, one cookie: no other cookie of this task between
			 * two samples with the same cookie. */
			for (long j = i + 1; j < c->n; j++) {
				const struct ds_rec *q = &c->recs[j];

				if (q->deferred || q->tid != r->tid || !q->cookie)
					continue;
				if (q->cookie == r->cookie)
					break;
				for (long k = j + 1; k < c->n; k++) {
					if (!c->recs[k].deferred && c->recs[k].tid == r->tid &&
					    c->recs[k].cookie == r->cookie) {
						v->interleaved++;
						break;
					}
				}
				break;
			}
		} else if (r->user_start >= 0) {
			v->classic_samples++;
		}
	}
	printf("# samples %ld: marker %ld (user-mode %ld, with kernel chain %ld), classic %ld\n",
	       v->samples, v->marker_samples, v->user_mode_samples,
	       v->kernel_chain_in_marker, v->classic_samples);
	printf("# deferred records %ld: matched samples %ld, unmatched %ld (+%ld in the last entry), "
	       "duplicate %ld, orphan %ld\n", v->records, v->matched, v->unmatched,
	       v->unmatched_at_end, v->dup_records, v->orphan_records);
	printf("# stitched read chain %ld, spin chain %ld; zero cookies %ld; interleaved %ld\n",
	       v->read_stitched, v->spin_stitched, v->zero_cookies, v->interleaved);
	if (v->records)
		printf("# dedup: %.2f samples per deferred record\n",
		       (double)v->marker_samples / v->records);
}

void ds_print_layout(const struct ds_collect *c)
{
	int seen_def = 0, seen_umode = 0, seen_kmode = 0;

	for (long i = 0; i < c->n; i++) {
		const struct ds_rec *r = &c->recs[i];

		if (r->deferred && !seen_def) {
			seen_def = 1;
			printf("# layout: deferred type=22 misc=0x%x size=%s first_ip=%s "
			       "sample_id=tid,time,cpu cookie=%s\n", r->misc,
			       r->size == 8 + 16 + 8 * r->nr + 24 ? "hdr+16+8*nr+id" : "other",
			       r->ips[0] == PERF_CONTEXT_USER ? "CONTEXT_USER" :
			       ds_is_kernel_ip(r->ips[0]) ? "kernel" : "user",
			       r->cookie ? "nonzero" : "zero");
		} else if (!r->deferred && r->cookie && r->nr == 2 && !seen_umode) {
			seen_umode = 1;
			printf("# layout: sample user-mode nr=2 ips=[USER_DEFERRED,cookie] misc=0x%x\n",
			       r->misc);
		} else if (!r->deferred && r->cookie && r->nr > 2 && !seen_kmode) {
			seen_kmode = 1;
			printf("# layout: sample kernel-mode ips=[%s,kernel...,USER_DEFERRED,cookie]"
			       " misc=0x%x\n",
			       r->ips[0] == PERF_CONTEXT_KERNEL ? "CONTEXT_KERNEL" : "other",
			       r->misc);
		}
	}
}

long ds_sample_own_workload(struct ds_collect *c, bool defer_output, unsigned int msec,
			    size_t read_bytes, struct workload_stats *ws)
{
	struct perf_event_attr attr;
	struct ds_mmap ring;
	long n;
	int fd;

	ds_attr_sampling(&attr, 250000);
	ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_CALLCHAIN, 1);
	ds_attr_set_flag(&attr, DS_ATTR_BIT_DEFER_OUTPUT, defer_output);
	fd = ds_perf_open(&attr, 0, -1, -1, 0);
	if (fd < 0) {
		printf("# perf_event_open(defer_callchain): %s\n", strerror(-fd));
		return fd;
	}
	n = ds_mmap_open(&ring, fd, 1024);
	if (n) {
		printf("# mmap: %s\n", strerror((int)-n));
		close(fd);
		return n;
	}
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	workload_run(msec, read_bytes, "/dev/zero", ws);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	n = ds_mmap_drain(&ring, ds_collect_record, c);
	ds_mmap_close(&ring);
	close(fd);
	return n;
}

void ds_unwind_stats_read(struct ds_unwind_stats *s)
{
	static const struct {
		const char *name;
		size_t off;
	} fields[] = {
#define FIELD(f) { #f, offsetof(struct ds_unwind_stats, f) }
		FIELD(walks), FIELD(frames_sframe), FIELD(frames_ehframe), FIELD(frames_fp),
		FIELD(frames_signal), FIELD(objects_sframe), FIELD(objects_ehframe),
		FIELD(objects_plain), FIELD(objects_untrusted), FIELD(ehframe_no_fde),
		FIELD(ehframe_fault), FIELD(ehframe_cfa_expr), FIELD(ehframe_cfa_reg),
		FIELD(ehframe_reg_rule), FIELD(ehframe_insn), FIELD(ehframe_format),
		FIELD(ehframe_cap), FIELD(task_states), FIELD(no_state),
#undef FIELD
	};
	FILE *f = fopen("/sys/kernel/debug/unwind_user/stats", "r");
	char key[64];
	long v;

	memset(s, 0, sizeof(*s));
	if (!f)
		return;
	while (fscanf(f, "%63s %ld", key, &v) == 2)
		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
			if (strcmp(key, fields[i].name))
				continue;
			*(long *)((char *)s + fields[i].off) = v;
			s->has_ehframe |= fields[i].off == offsetof(struct ds_unwind_stats,
								   frames_ehframe);
			s->has_task_states |= fields[i].off == offsetof(struct ds_unwind_stats,
								       task_states);
		}
	fclose(f);
}

void ds_pair_hits(const struct ds_collect *cd, const struct ds_collect *cc,
		  const struct ds_symtab *st, const char *const *chain, const char *what,
		  int show, struct ds_pairs *p)
{
	long count;

	memset(p, 0, sizeof(*p));
	for (long i = 0, j = 0; i < cd->n || j < cc->n;) {
		const struct ds_rec *d, *c, *r;
		uint64_t cu;

		while (i < cd->n && cd->recs[i].deferred)
			i++;
		while (j < cc->n && cc->recs[j].deferred)
			j++;
		if (i >= cd->n || j >= cc->n) {
			p->nd += i < cd->n;
			p->nc += j < cc->n;
			i += i < cd->n;
			j += j < cc->n;
			continue;
		}
		d = &cd->recs[i++];
		c = &cc->recs[j++];
		p->nd++;
		p->nc++;
		p->pairs++;
		if (!d->cookie) {
			/*
			 * Not deferred: the task had no user stack to defer
			 * (its mm already gone on the way out of do_exit()),
			 * or it was exiting and the sample holds its own
			 * user chain. Either way the same as the classic one.
			 */
			if (d->user_start < 0 && c->user_start < 0) {
				p->equal++;
				p->no_user++;
			} else if (d->user_start >= 0 && c->user_start >= 0 &&
				   d->nr - d->user_start == c->nr - c->user_start &&
				   !memcmp(&d->ips[d->user_start], &c->ips[c->user_start],
					   (c->nr - c->user_start) * sizeof(uint64_t))) {
				p->equal++;
				p->inline_user++;
			} else {
				p->differ++;
				if (show-- > 0)
					printf("# %s %ld: not deferred, user chain of %lld ips, classic %lld\n",
					       what, p->pairs,
					       d->user_start < 0 ? -1LL : (long long)(d->nr - d->user_start),
					       c->user_start < 0 ? -1LL : (long long)(c->nr - c->user_start));
			}
			continue;
		}
		if (c->user_start < 0) {
			/* A deferred stack where the classic walk found none. */
			p->differ++;
			if (show-- > 0)
				printf("# %s %ld: cookie %#llx, but no user chain in the classic sample\n",
				       what, p->pairs, (unsigned long long)d->cookie);
			continue;
		}
		r = ds_find_record(cd, d->tid, d->cookie, &count);
		if (!r) {
			p->missing++;
			continue;
		}
		cu = c->nr - c->user_start;
		if (chain && ds_chain_has_sequence(st, &c->ips[c->user_start], cu, chain))
			p->named++;
		/*
		 * The classic walk may run on past the outermost frame into
		 * stack garbage where ours stops: the deferred stack must be a
		 * prefix of it, and more than the bare ip, unless the classic
		 * walk also stopped there (a hit in libc's frameless code has
		 * no frame to follow).
		 */
		if (r->nr >= 1 && r->nr <= cu && (r->nr >= 2 || cu == 1) &&
		    !memcmp(r->ips, &c->ips[c->user_start], r->nr * sizeof(uint64_t))) {
			p->equal++;
			p->bare += r->nr == 1;
		} else if (r->nr >= 3 && r->nr - 1 <= cu && r->ips[0] == c->ips[c->user_start] &&
			   !memcmp(&r->ips[2], &c->ips[c->user_start + 1],
				   (r->nr - 2) * sizeof(uint64_t))) {
			/*
			 * Stopped where the function has no frame yet (e.g. on
			 * its first instruction): the deferred walk names the
			 * caller from the top of the stack (0009), the classic
			 * one skips it. One frame more, the rest equal.
			 */
			p->equal++;
			p->caller_added++;
		} else {
			p->differ++;
			if (show-- > 0) {
				printf("# %s %ld: classic user ip %#llx (%s), deferred %#llx (%s)\n",
				       what, p->pairs, (unsigned long long)c->ips[c->user_start],
				       ds_symtab_lookup(st, c->ips[c->user_start]) ?: "?",
				       (unsigned long long)(r->nr ? r->ips[0] : 0),
				       r->nr ? ds_symtab_lookup(st, r->ips[0]) ?: "?" : "-");
				printf("#   classic:");
				for (uint64_t k = c->user_start; k < c->nr; k++)
					printf(" %#llx", (unsigned long long)c->ips[k]);
				printf("\n#   deferred:");
				for (uint64_t k = 0; k < r->nr; k++)
					printf(" %#llx", (unsigned long long)r->ips[k]);
				printf("\n");
			}
		}
	}
}
