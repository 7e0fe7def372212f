// SPDX-License-Identifier: MIT
/* Parsing of perf records according to the attr's sample_type. */
#include <errno.h>
#include <string.h>

#include "deferstack/deferstack.h"
#include "internal.h"

size_t ds_sample_id_size(uint64_t st)
{
	size_t n = 0;

	n += !!(st & PERF_SAMPLE_TID);
	n += !!(st & PERF_SAMPLE_TIME);
	n += !!(st & PERF_SAMPLE_ID);
	n += !!(st & PERF_SAMPLE_STREAM_ID);
	n += !!(st & PERF_SAMPLE_CPU);
	n += !!(st & PERF_SAMPLE_IDENTIFIER);
	return n * 8;
}

const char *ds_record_name(uint32_t type)
{
	switch (type) {
	case PERF_RECORD_MMAP: return "MMAP";
	case PERF_RECORD_LOST: return "LOST";
	case PERF_RECORD_COMM: return "COMM";
	case PERF_RECORD_EXIT: return "EXIT";
	case PERF_RECORD_THROTTLE: return "THROTTLE";
	case PERF_RECORD_UNTHROTTLE: return "UNTHROTTLE";
	case PERF_RECORD_FORK: return "FORK";
	case PERF_RECORD_READ: return "READ";
	case PERF_RECORD_SAMPLE: return "SAMPLE";
	case PERF_RECORD_MMAP2: return "MMAP2";
	case PERF_RECORD_LOST_SAMPLES: return "LOST_SAMPLES";
	case DS_RECORD_CALLCHAIN_DEFERRED: return "CALLCHAIN_DEFERRED";
	case DS_RECORD_FINISHED_ROUND: return "FINISHED_ROUND";
	default: return "UNKNOWN";
	}
}

/* Read the sample_id trailer ending at end. */
static void parse_sample_id(const uint8_t *end, uint64_t st, struct ds_event *ev)
{
	const uint8_t *p = end - ds_sample_id_size(st);

	if (st & PERF_SAMPLE_TID) {
		ev->pid = ds_rd32(p);
		ev->tid = ds_rd32(p + 4);
		ev->have |= DS_EV_TID;
		p += 8;
	}
	if (st & PERF_SAMPLE_TIME) {
		ev->time = ds_rd64(p);
		ev->have |= DS_EV_TIME;
		p += 8;
	}
	if (st & PERF_SAMPLE_ID) {
		ev->id = ds_rd64(p);
		ev->have |= DS_EV_ID;
		p += 8;
	}
	if (st & PERF_SAMPLE_STREAM_ID) {
		ev->stream_id = ds_rd64(p);
		ev->have |= DS_EV_STREAM_ID;
		p += 8;
	}
	if (st & PERF_SAMPLE_CPU) {
		ev->cpu = ds_rd32(p);
		ev->have |= DS_EV_CPU;
		p += 8;
	}
	if (st & PERF_SAMPLE_IDENTIFIER) {
		ev->id = ds_rd64(p);
		ev->have |= DS_EV_ID;
	}
}

/* Index of the instruction pointer in a PERF_SAMPLE_REGS_USER dump, by the
 * uapi's register numbering of the host's architecture; -1: unknown. */
static int user_ip_reg(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return 8;	/* PERF_REG_X86_IP */
#elif defined(__aarch64__)
	return 32;	/* PERF_REG_ARM64_PC */
#else
	return -1;
#endif
}

/* The fields after the callchain that carry the user registers: RAW,
 * BRANCH_STACK, REGS_USER.  Only the user ip is kept (the first user frame
 * of a sample whose callchain has no user part, e.g. perf's
 * --call-graph dwarf).  A field that does not fit is an error. */
static int parse_user_regs(const uint8_t *b, size_t len, size_t off, uint64_t st,
			   const struct perf_event_attr *a, struct ds_event *ev)
{
	uint64_t mask = a->sample_regs_user, abi, n;
	int ipr = user_ip_reg();

#define NEED(n) do { if (len - off < (size_t)(n)) return -EINVAL; } while (0)
	if (st & PERF_SAMPLE_RAW) {
		uint32_t sz;

		NEED(4);
		sz = ds_rd32(b + off);
		NEED((size_t)sz + 4);
		off += 4 + sz;
		off = (off + 7) & ~(size_t)7;
		if (off > len)
			return -EINVAL;
	}
	if (st & PERF_SAMPLE_BRANCH_STACK) {
		NEED(8);
		n = ds_rd64(b + off);
		off += 8;
		if (a->branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX) {
			NEED(8);
			off += 8;
		}
		if (n > (len - off) / 24)
			return -EINVAL;
		off += n * 24;
	}
	if (!(st & PERF_SAMPLE_REGS_USER))
		return 0;
	NEED(8);
	abi = ds_rd64(b + off);
	off += 8;
	if (abi == PERF_SAMPLE_REGS_ABI_NONE)
		return 0;	/* a kernel thread: no user registers */
	NEED(8 * (size_t)__builtin_popcountll(mask));
	if (ipr >= 0 && (mask & (1ULL << ipr))) {
		ev->user_ip = ds_rd64(b + off + 8 * (size_t)__builtin_popcountll(
						 mask & ((1ULL << ipr) - 1)));
		ev->have |= DS_EV_USER_IP;
	}
#undef NEED
	return 0;
}

static int parse_sample(const uint8_t *b, size_t len, uint64_t st,
			const struct perf_event_attr *attr, struct ds_event *ev)
{
	size_t off = sizeof(struct perf_event_header);

#define NEED(n) do { if (len - off < (size_t)(n)) return -EINVAL; } while (0)
	if (st & PERF_SAMPLE_IDENTIFIER) {
		NEED(8);
		ev->id = ds_rd64(b + off);
		ev->have |= DS_EV_ID;
		off += 8;
	}
	if (st & PERF_SAMPLE_IP) {
		NEED(8);
		ev->ip = ds_rd64(b + off);
		ev->have |= DS_EV_IP;
		off += 8;
	}
	if (st & PERF_SAMPLE_TID) {
		NEED(8);
		ev->pid = ds_rd32(b + off);
		ev->tid = ds_rd32(b + off + 4);
		ev->have |= DS_EV_TID;
		off += 8;
	}
	if (st & PERF_SAMPLE_TIME) {
		NEED(8);
		ev->time = ds_rd64(b + off);
		ev->have |= DS_EV_TIME;
		off += 8;
	}
	if (st & PERF_SAMPLE_ADDR) {
		NEED(8);
		off += 8;
	}
	if (st & PERF_SAMPLE_ID) {
		NEED(8);
		ev->id = ds_rd64(b + off);
		ev->have |= DS_EV_ID;
		off += 8;
	}
	if (st & PERF_SAMPLE_STREAM_ID) {
		NEED(8);
		ev->stream_id = ds_rd64(b + off);
		ev->have |= DS_EV_STREAM_ID;
		off += 8;
	}
	if (st & PERF_SAMPLE_CPU) {
		NEED(8);
		ev->cpu = ds_rd32(b + off);
		ev->have |= DS_EV_CPU;
		off += 8;
	}
	if (st & PERF_SAMPLE_PERIOD) {
		NEED(8);
		ev->period = ds_rd64(b + off);
		ev->have |= DS_EV_PERIOD;
		off += 8;
	}
	if (st & PERF_SAMPLE_READ)
		return (st & PERF_SAMPLE_CALLCHAIN) ? -EOPNOTSUPP : 0;
	if (st & PERF_SAMPLE_CALLCHAIN) {
		uint64_t nr;

		NEED(8);
		nr = ds_rd64(b + off);
		if (nr > (len - off - 8) / 8)
			return -EINVAL;
		ev->chain_off = off;
		ev->nr = nr;
		ev->chain = (const uint64_t *)(const void *)(b + off + 8);
		ev->have |= DS_EV_CALLCHAIN;
		/* A deferred marker must be the second-to-last entry. */
		if (nr >= 2 && ev->chain[nr - 2] == DS_CONTEXT_USER_DEFERRED) {
			ev->cookie = ev->chain[nr - 1];
			ev->has_cookie = true;
		}
		off += 8 + nr * 8;
	}
#undef NEED
	if (attr && (st & PERF_SAMPLE_REGS_USER))
		return parse_user_regs(b, len, off, st, attr, ev);
	return 0;
}

/* NUL-terminated string at b[off..end). */
static const char *cstr(const uint8_t *b, size_t off, size_t end)
{
	if (off >= end || !memchr(b + off, 0, end - off))
		return NULL;
	return (const char *)(b + off);
}

static int parse(const void *rec, size_t rec_len, uint64_t st,
		 const struct perf_event_attr *attr, bool sample_id_all, struct ds_event *ev);

/* Into a caller's ev of another size than ours: through a whole one,
 * only the fields within its sz written.  Out of the hot path. */
static __attribute__((noinline)) int parse_other_sz(const void *rec, size_t rec_len,
						      uint64_t st,
						      const struct perf_event_attr *attr,
						      bool sample_id_all, struct ds_event *ev)
{
	struct ds_event full;
	int err;

	if (ev->sz < DS_SZ_MIN(struct ds_event, hdr))
		return -EINVAL;
	err = parse(rec, rec_len, st, attr, sample_id_all, &full);
	ds_sz_out(ev, &full, sizeof(full));
	return err;
}

static inline int parse_sz(const void *rec, size_t rec_len, uint64_t st,
			   const struct perf_event_attr *attr, bool sample_id_all,
			   struct ds_event *ev)
{
	if (__builtin_expect(ev->sz == sizeof(*ev), 1))
		return parse(rec, rec_len, st, attr, sample_id_all, ev);
	return parse_other_sz(rec, rec_len, st, attr, sample_id_all, ev);
}

int ds_event_parse(const void *rec, size_t rec_len, uint64_t st, bool sample_id_all,
		   struct ds_event *ev)
{
	return parse_sz(rec, rec_len, st, NULL, sample_id_all, ev);
}

int ds_event_parse_attr(const void *rec, size_t rec_len, const struct perf_event_attr *attr,
			bool sample_id_all, struct ds_event *ev)
{
	return parse_sz(rec, rec_len, attr->sample_type, attr, sample_id_all, ev);
}

static int parse(const void *rec, size_t rec_len, uint64_t st,
		 const struct perf_event_attr *attr, bool sample_id_all, struct ds_event *ev)
{
	const uint8_t *b = rec;
	const struct perf_event_header *h = rec;
	size_t end;

	memset(ev, 0, sizeof(*ev));
	ev->sz = sizeof(*ev);
	if (rec_len < sizeof(*h) || h->size < sizeof(*h) || h->size > rec_len)
		return -EINVAL;
	ev->hdr = h;
	ev->type = h->type;
	ev->misc = h->misc;
	ev->size = h->size;
	ev->sample_type = st;
	rec_len = h->size;

	if (h->type == PERF_RECORD_SAMPLE)
		return parse_sample(b, rec_len, st, attr, ev);
	if (h->type >= DS_RECORD_USER_TYPE_START)
		return 0;	/* tool-synthesized: no sample_id */

	end = rec_len;
	if (sample_id_all) {
		switch (h->type) {
		case PERF_RECORD_MMAP: case PERF_RECORD_LOST: case PERF_RECORD_COMM:
		case PERF_RECORD_EXIT: case PERF_RECORD_FORK: case PERF_RECORD_MMAP2:
		case PERF_RECORD_LOST_SAMPLES: case DS_RECORD_CALLCHAIN_DEFERRED:
		case PERF_RECORD_THROTTLE: case PERF_RECORD_UNTHROTTLE: {
			size_t sid = ds_sample_id_size(st);

			if (rec_len - sizeof(*h) < sid)
				return -EINVAL;
			end = rec_len - sid;
			parse_sample_id(b + rec_len, st, ev);
			break;
		}
		default:
			return 0;	/* unknown layout: header only */
		}
	}

	switch (h->type) {
	case PERF_RECORD_MMAP:
		if (end < 40)
			return -EINVAL;
		ev->pid = ds_rd32(b + 8);
		ev->tid = ds_rd32(b + 12);
		ev->start = ds_rd64(b + 16);
		ev->len = ds_rd64(b + 24);
		ev->pgoff = ds_rd64(b + 32);
		ev->filename = cstr(b, 40, end);
		return ev->filename ? 0 : -EINVAL;
	case PERF_RECORD_MMAP2:
		if (end < 72)
			return -EINVAL;
		ev->pid = ds_rd32(b + 8);
		ev->tid = ds_rd32(b + 12);
		ev->start = ds_rd64(b + 16);
		ev->len = ds_rd64(b + 24);
		ev->pgoff = ds_rd64(b + 32);
		ev->filename = cstr(b, 72, end);
		return ev->filename ? 0 : -EINVAL;
	case PERF_RECORD_COMM:
		if (end < 16)
			return -EINVAL;
		ev->pid = ds_rd32(b + 8);
		ev->tid = ds_rd32(b + 12);
		ev->comm = cstr(b, 16, end);
		return ev->comm ? 0 : -EINVAL;
	case PERF_RECORD_EXIT:
	case PERF_RECORD_FORK:
		if (end < 32)
			return -EINVAL;
		ev->pid = ds_rd32(b + 8);
		ev->ppid = ds_rd32(b + 12);
		ev->tid = ds_rd32(b + 16);
		ev->ptid = ds_rd32(b + 20);
		if (!(ev->have & DS_EV_TIME))
			ev->time = ds_rd64(b + 24);
		ev->have |= DS_EV_TID | DS_EV_TIME;
		return 0;
	case PERF_RECORD_LOST:
		if (end < 24)
			return -EINVAL;
		ev->id = ds_rd64(b + 8);
		ev->lost = ds_rd64(b + 16);
		return 0;
	case PERF_RECORD_LOST_SAMPLES:
		if (end < 16)
			return -EINVAL;
		ev->lost = ds_rd64(b + 8);
		return 0;
	case DS_RECORD_CALLCHAIN_DEFERRED: {
		uint64_t nr;

		if (end < 24)
			return -EINVAL;
		ev->cookie = ds_rd64(b + 8);
		ev->has_cookie = true;
		nr = ds_rd64(b + 16);
		if (nr > (end - 24) / 8)
			return -EINVAL;
		ev->nr = nr;
		ev->chain = (const uint64_t *)(const void *)(b + 24);
		ev->chain_off = 16;
		ev->have |= DS_EV_CALLCHAIN;
		return 0;
	}
	default:
		return 0;
	}
}

int ds_sample_set_callchain(const struct ds_event *ev, const uint64_t *chain, uint64_t nr,
			    void *out, size_t out_cap)
{
	struct ds_event tmp;
	const uint8_t *b;
	size_t before, after_off, tail, size;
	struct perf_event_header h;
	uint8_t *o = out;

	if (!(ev = ds_sz_in(ev, &tmp, sizeof(tmp), DS_SZ_MIN(struct ds_event, hdr))))
		return -EINVAL;
	b = (const uint8_t *)ev->hdr;
	if (ev->type != PERF_RECORD_SAMPLE || !(ev->have & DS_EV_CALLCHAIN))
		return -EINVAL;
	before = ev->chain_off;
	after_off = ev->chain_off + 8 + ev->nr * 8;
	tail = ev->size - after_off;
	if (nr > 65535 / 8)
		return -EINVAL;
	size = before + 8 + nr * 8 + tail;
	if (size > 65535)
		return -EINVAL;
	if (size > out_cap)
		return -ENOSPC;
	memmove(o, b, before);
	memcpy(&h, o, sizeof(h));
	h.size = (uint16_t)size;
	memcpy(o, &h, sizeof(h));
	memcpy(o + before, &nr, 8);
	memcpy(o + before + 8, chain, nr * 8);
	memcpy(o + before + 8 + nr * 8, b + after_off, tail);
	return (int)size;
}
