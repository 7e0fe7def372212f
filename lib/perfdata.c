// SPDX-License-Identifier: MIT
/* perf.data (PERFILE2) reader and writer. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "deferstack/deferstack.h"
#include "hash.h"
#include "internal.h"

#define PERF_MAGIC2 0x32454c4946524550ULL	/* "PERFILE2" little-endian */
#define PERF_MAGIC2_SWAPPED 0x50455246494c4532ULL
#define PERF_MAGIC1 0x454c494646524550ULL	/* "PERFFILE" */

/* tools/perf/util/header.h feature numbers */
enum {
	FEAT_TRACING_DATA = 1,
	FEAT_BUILD_ID = 2,
	FEAT_HOSTNAME = 3,
	FEAT_OSRELEASE = 4,
	FEAT_VERSION = 5,
	FEAT_ARCH = 6,
	FEAT_NRCPUS = 7,
	FEAT_CMDLINE = 11,
	FEAT_EVENT_DESC = 12,
	FEAT_BITS = 256,
};

struct file_section {
	uint64_t offset, size;
};

struct file_header {
	uint64_t magic, size, attr_size;
	struct file_section attrs, data, event_types;
	uint64_t features[FEAT_BITS / 64];
};

_Static_assert(sizeof(struct file_header) == 104, "perf_file_header is 104 bytes");

/* Reader of a PERFILE2 stream: file mode (header, attr and feature
 * sections; seekable) or pipe mode (a 16-byte header, then attrs, names
 * and build-ids as records among the data; a file or a pipe). */
struct ds_reader {
	FILE *f;
	char name[256];		/* the input, for messages */
	bool pipe;		/* pipe-mode format */
	bool stream;		/* not seekable: no size known */
	uint64_t file_size;
	uint64_t data_off, data_size, pos;
	struct ds_attr *attrs;
	size_t nr_attrs, cap_attrs;
	bool sample_id_all;
	bool use_identifier;	/* look attrs up by id (IDENTIFIER, else ID) */
	size_t id_sample_off;	/* byte offset of the id in a sample */
	size_t id_other_back;	/* ... in other records, from their end */
	struct ds_htab ids;	/* id -> attr index + 1 (the first attr wins) */
	/* the last id looked up and its attr index + 1 (records come in runs
	 * of one event): a cache, so written by the const lookups too */
	struct { uint64_t id; uintptr_t ai; } *last_id;
	uint8_t *buf;		/* a record copied to be 8-byte aligned */
	size_t buf_cap;
	/* the data read ahead: rb[rpos, rend) (big reads, records used in
	 * place; a stream is read as it comes) */
	uint8_t *rb;
	size_t rpos, rend, rcap;
	bool rerror;		/* a read failed */
	bool unfinished;
	uint64_t trailing;
	uint64_t missing;	/* bytes of the data section past the end of file */
	struct ds_build_id *build_ids;
	size_t nr_build_ids, cap_build_ids;
	uint8_t *tracing;	/* HEADER_TRACING_DATA as recorded, or NULL */
	size_t tracing_len;
	/* perf record -z: PERF_RECORD_COMPRESSED records hold zstd frames of
	 * ordinary records, decompressed into zb[zpos, zend) and returned from
	 * there; a record may go on in the next compressed one */
	ZSTD_DStream *zd;
	uint8_t *zb;
	size_t zpos, zend, zcap;
	char err[200];
};

/* pipe-mode records (tools/perf/util/event.h numbering) */
enum {
	REC_HEADER_ATTR = 64,
	REC_HEADER_TRACING_DATA = 66,
	REC_HEADER_BUILD_ID = 67,
	REC_AUXTRACE = 71,
	REC_EVENT_UPDATE = 78,
	REC_COMPRESSED = 81,	/* header, then zstd data */
	REC_COMPRESSED2 = 83,	/* header, u64 data size, data, padding (perf 6.15) */
	EVENT_UPDATE_NAME = 2,
};

#define MAX_ATTRS 4096
#define MAX_IDS (1u << 20)
#define MAX_ATTR_SIZE 4096
#define MAX_TRACING (1u << 28)
#define RB_SIZE (256u << 10)	/* read-ahead: bigger than any record (64 KiB); 1 MiB
				 * read no faster, and was 0.75 MB more RSS */
#define ZB_MAX (64u << 20)	/* records decompressed from one compressed record */

static int rerr(struct ds_reader *r, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	return err;
}

static int read_at(struct ds_reader *r, uint64_t off, void *buf, size_t len)
{
	if (off > r->file_size || len > r->file_size - off)
		return -EINVAL;
	if (fseeko(r->f, (off_t)off, SEEK_SET) != 0)
		return -errno;
	if (fread(buf, 1, len, r->f) != len)
		return ferror(r->f) ? -EIO : -EINVAL;
	return 0;
}

static bool in_file(const struct ds_reader *r, const struct file_section *s)
{
	return s->offset <= r->file_size && s->size <= r->file_size - s->offset;
}

/* Event names from HEADER_EVENT_DESC; failures only lose the names. */
static void read_event_desc(struct ds_reader *r, const struct file_section *sec)
{
	uint8_t *b, *p, *end;
	uint32_t nr, sz;

	if (!in_file(r, sec) || sec->size < 8 || sec->size > (1u << 24))
		return;
	b = malloc(sec->size);
	if (!b)
		return;
	if (read_at(r, sec->offset, b, sec->size))
		goto out;
	end = b + sec->size;
	nr = ds_rd32(b);
	sz = ds_rd32(b + 4);
	p = b + 8;
	for (uint32_t i = 0; i < nr; i++) {
		struct perf_event_attr a;
		uint32_t nids, slen;
		uint64_t id0 = 0;

		if (sz < PERF_ATTR_SIZE_VER0 || (size_t)(end - p) < (size_t)sz + 8)
			break;
		memset(&a, 0, sizeof(a));
		memcpy(&a, p, sz < sizeof(a) ? sz : sizeof(a));
		p += sz;
		nids = ds_rd32(p);
		slen = ds_rd32(p + 4);
		p += 8;
		if ((size_t)(end - p) < slen || !slen || !memchr(p, 0, slen))
			break;
		{
			const char *name = (const char *)p;
			uint8_t *ids = p + slen;

			if ((size_t)(end - ids) / 8 < nids)
				break;
			if (nids)
				id0 = ds_rd64(ids);
			for (size_t k = 0; k < r->nr_attrs; k++) {
				struct ds_attr *da = &r->attrs[k];
				bool match = nids && da->nr_ids ? da->ids[0] == id0 : k == i;

				if (match && !da->name)
					da->name = strdup(name);
			}
			p = ids + (size_t)nids * 8;
		}
	}
out:
	free(b);
}

/* The section of feature bit: its table entry follows the data section,
 * one per feature set below it.  0, or -ENOENT. */
static int feature_section(struct ds_reader *r, const struct file_header *fh, int bit,
			   struct file_section *sec)
{
	uint64_t off = fh->data.offset + fh->data.size;
	int idx = 0;

	if (!(fh->features[bit / 64] & (1ULL << (bit % 64))))
		return -ENOENT;
	for (int b = 1; b < bit; b++)
		idx += !!(fh->features[b / 64] & (1ULL << (b % 64)));
	if (read_at(r, off + (uint64_t)idx * sizeof(*sec), sec, sizeof(*sec)))
		return -ENOENT;
	return 0;
}

/* perf's struct build_id_event: header, pid, 24 bytes of id (20 + size
 * byte + padding when misc has BUILD_ID_SIZE), NUL-padded filename */
#define BID_HDR 36
#define MISC_BUILD_ID_SIZE (1u << 15)
#define MAX_BUILD_IDS 100000

/* One build_id_event (len bytes at p, its header's size checked): 1 taken,
 * 0 malformed (ignored), -ENOMEM. */
static int add_build_id(struct ds_reader *r, const uint8_t *p, size_t len)
{
	struct perf_event_header h;
	struct ds_build_id *bi;
	const char *name;

	memcpy(&h, p, sizeof(h));
	if (len <= BID_HDR || h.size != len || r->nr_build_ids >= MAX_BUILD_IDS)
		return 0;
	name = (const char *)p + BID_HDR;
	if (!memchr(name, 0, len - BID_HDR))
		return 0;
	if (ds_grow(&r->build_ids, &r->cap_build_ids, r->nr_build_ids + 1,
		    sizeof(*r->build_ids)))
		return -ENOMEM;
	bi = &r->build_ids[r->nr_build_ids];
	memset(bi, 0, sizeof(*bi));
	bi->sz = sizeof(*bi);
	bi->pid = (int32_t)ds_rd32(p + 8);
	bi->kernel = (h.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL ||
		     (h.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_GUEST_KERNEL;
	bi->size = DS_BUILD_ID_MAX;
	if ((h.misc & MISC_BUILD_ID_SIZE) && p[12 + 20] && p[12 + 20] <= DS_BUILD_ID_MAX)
		bi->size = p[12 + 20];
	memcpy(bi->id, p + 12, bi->size);
	bi->path = strdup(name);
	if (!bi->path)
		return -ENOMEM;
	r->nr_build_ids++;
	return 1;
}

/* HEADER_BUILD_ID section; a malformed entry ends the list (perf stops
 * there too), only -ENOMEM is an error. */
/* The file's HEADER_TRACING_DATA, kept whole for a writer (convert);
 * an unreadable one is dropped: only perf needs it. */
static int read_tracing(struct ds_reader *r, const struct file_section *sec)
{
	if (!in_file(r, sec) || !sec->size || sec->size > MAX_TRACING)
		return 0;
	r->tracing = malloc(sec->size);
	if (!r->tracing)
		return -ENOMEM;
	if (read_at(r, sec->offset, r->tracing, sec->size)) {
		free(r->tracing);
		r->tracing = NULL;
		return 0;
	}
	r->tracing_len = sec->size;
	return 0;
}

static int read_build_ids(struct ds_reader *r, const struct file_section *sec)
{
	uint8_t *b, *p, *end;
	int err = 0;

	if (!in_file(r, sec) || sec->size < BID_HDR || sec->size > (1u << 28))
		return 0;
	b = malloc(sec->size);
	if (!b)
		return -ENOMEM;
	if (read_at(r, sec->offset, b, sec->size))
		goto out;
	end = b + sec->size;
	for (p = b; (size_t)(end - p) >= BID_HDR;) {
		struct perf_event_header h;

		memcpy(&h, p, sizeof(h));
		if (h.size > (size_t)(end - p))
			break;
		err = add_build_id(r, p, h.size);
		if (err <= 0)
			break;
		p += h.size;
	}
out:
	free(b);
	return err < 0 ? err : 0;
}

/* Index the ids of attr i (id -> i + 1; the first attr that lists an id
 * wins), so that a record's attr is found in O(1). */
static int index_ids(struct ds_reader *r, size_t i)
{
	r->last_id->ai = 0;	/* ids change: forget */
	for (size_t k = 0; k < r->attrs[i].nr_ids; k++) {
		uint64_t id = r->attrs[i].ids[k];
		int err;

		if (ds_htab_get(&r->ids, id, NULL, NULL))
			continue;
		err = ds_htab_put(&r->ids, id, (void *)(uintptr_t)(i + 1));
		if (err)
			return err;
	}
	return 0;
}

/* How a record names its attr when there are several: PERF_SAMPLE_IDENTIFIER
 * (first u64 of a sample, last u64 of other records) when every attr has
 * it, else PERF_SAMPLE_ID at its fixed position when every attr has the
 * same sample_type with ID (what perf 6.x writes for -e a,b). */
static int pick_id_mode(struct ds_reader *r)
{
	uint64_t st = r->attrs[0].attr.sample_type;
	bool all_ident = true, same = true;

	r->use_identifier = false;
	r->id_sample_off = 0;
	r->id_other_back = 0;
	if (r->nr_attrs < 2)
		return 0;
	for (size_t i = 0; i < r->nr_attrs; i++) {
		all_ident &= !!(r->attrs[i].attr.sample_type & PERF_SAMPLE_IDENTIFIER);
		same &= r->attrs[i].attr.sample_type == st;
	}
	if (all_ident) {
		r->use_identifier = true;
		r->id_sample_off = 8;
		r->id_other_back = 8;
		return 0;
	}
	if (same && (st & PERF_SAMPLE_ID)) {
		r->use_identifier = true;
		/* sample: header, IP, TID, TIME, ADDR, then ID */
		r->id_sample_off = 8 + 8 * (!!(st & PERF_SAMPLE_IP) + !!(st & PERF_SAMPLE_TID) +
					    !!(st & PERF_SAMPLE_TIME) + !!(st & PERF_SAMPLE_ADDR));
		/* sample_id trailer: TID, TIME, ID, STREAM_ID, CPU */
		r->id_other_back = 8 * (1 + !!(st & PERF_SAMPLE_STREAM_ID) +
					!!(st & PERF_SAMPLE_CPU));
		return 0;
	}
	if (same)
		return 0;	/* one layout: every record parses the same way */
	return rerr(r, -EOPNOTSUPP,
		    "attrs with different sample_type and no PERF_SAMPLE_IDENTIFIER");
}

/* File mode: header, attrs and ids, feature sections, then seek to data. */
static int open_file_mode(struct ds_reader *r, struct file_header *fh)
{
	const char *path = r->name;
	int err;

	if (r->file_size < sizeof(*fh) || read_at(r, 0, fh, sizeof(*fh)))
		return rerr(r, -EINVAL, "%s: truncated header", path);
	if (fh->size != sizeof(*fh))
		return rerr(r, -EINVAL, "%s: bad header size %llu", path,
			    (unsigned long long)fh->size);
	if (fh->attr_size < PERF_ATTR_SIZE_VER0 + sizeof(struct file_section) ||
	    fh->attr_size > MAX_ATTR_SIZE || fh->attrs.size % fh->attr_size ||
	    fh->attrs.size / fh->attr_size == 0 || fh->attrs.size / fh->attr_size > MAX_ATTRS ||
	    !in_file(r, &fh->attrs))
		return rerr(r, -EINVAL, "%s: bad attr section (attr_size %llu, size %llu)",
			    path, (unsigned long long)fh->attr_size,
			    (unsigned long long)fh->attrs.size);
	if (fh->data.size == 0 && !fh->features[0] && !fh->features[1] && !fh->features[2] &&
	    !fh->features[3] && fh->data.offset >= sizeof(*fh) &&
	    fh->data.offset < r->file_size) {
		/* never finished (the recorder was killed): the records run to
		 * the end of the file, the last one may be cut */
		r->unfinished = true;
		fh->data.size = r->file_size - fh->data.offset;
	}
	if (!in_file(r, &fh->data) && fh->data.offset >= sizeof(*fh) &&
	    fh->data.offset <= r->file_size) {
		/* cut short (a partial copy, a full disk): like perf, the records
		 * up to the cut, the last one may be cut; the features that
		 * follow the data are gone */
		r->missing = fh->data.size - (r->file_size - fh->data.offset);
		fh->data.size = r->file_size - fh->data.offset;
		memset(fh->features, 0, sizeof(fh->features));
	}
	if (!in_file(r, &fh->data))
		return rerr(r, -EINVAL,
			    "%s: data section (offset %llu size %llu) past end of file "
			    "(%llu bytes): truncated file?", path,
			    (unsigned long long)fh->data.offset,
			    (unsigned long long)fh->data.size, (unsigned long long)r->file_size);
	r->nr_attrs = fh->attrs.size / fh->attr_size;
	r->cap_attrs = r->nr_attrs;
	r->attrs = calloc(r->nr_attrs, sizeof(*r->attrs));
	if (!r->attrs)
		return -ENOMEM;
	for (size_t i = 0; i < r->nr_attrs; i++) {
		uint8_t raw[MAX_ATTR_SIZE];
		size_t asz = fh->attr_size - sizeof(struct file_section);
		struct file_section ids;
		struct ds_attr *da = &r->attrs[i];

		if (read_at(r, fh->attrs.offset + i * fh->attr_size, raw, fh->attr_size))
			return rerr(r, -EINVAL, "%s: truncated attr %zu", path, i);
		da->sz = sizeof(*da);
		memcpy(&da->attr, raw, asz < sizeof(da->attr) ? asz : sizeof(da->attr));
		memcpy(&ids, raw + asz, sizeof(ids));
		if (ids.size % 8 || ids.size / 8 > MAX_IDS || !in_file(r, &ids))
			return rerr(r, -EINVAL, "%s: bad id section of attr %zu", path, i);
		da->nr_ids = ids.size / 8;
		if (da->nr_ids) {
			da->ids = calloc(da->nr_ids, 8);
			if (!da->ids)
				return -ENOMEM;
			if (read_at(r, ids.offset, da->ids, ids.size))
				return rerr(r, -EINVAL, "%s: truncated ids of attr %zu", path, i);
		}
		err = index_ids(r, i);
		if (err)
			return err;
	}
	r->sample_id_all = r->attrs[0].attr.sample_id_all;
	err = pick_id_mode(r);
	if (err) {
		char why[sizeof(r->err)];

		memcpy(why, r->err, sizeof(why));
		return rerr(r, err, "%s: %s", path, why);
	}
	{
		struct file_section sec;

		if (!feature_section(r, fh, FEAT_EVENT_DESC, &sec))
			read_event_desc(r, &sec);
		if (!feature_section(r, fh, FEAT_TRACING_DATA, &sec)) {
			err = read_tracing(r, &sec);
			if (err)
				return err;
		}
		if (!feature_section(r, fh, FEAT_BUILD_ID, &sec)) {
			err = read_build_ids(r, &sec);
			if (err)
				return err;
		}
	}
	r->data_off = fh->data.offset;
	r->data_size = fh->data.size;
	if (fseeko(r->f, (off_t)r->data_off, SEEK_SET) != 0)
		return -errno;
	return 0;
}

static int reader_start(struct ds_reader *r, int fd, const char *name, bool by_path)
{
	struct file_header fh;
	struct stat st;
	uint64_t magic_size[2];
	int err;

	snprintf(r->name, sizeof(r->name), "%s", name);
	if (fstat(fd, &st) != 0) {
		err = -errno;
		close(fd);
		return rerr(r, err, "%s: %s", name, strerror(-err));
	}
	/* a path must be a regular file (a FIFO there would block or be
	 * read as a stream by mistake); an fd may also be a pipe or socket */
	if (!S_ISREG(st.st_mode) && (by_path || !(S_ISFIFO(st.st_mode) ||
						  S_ISSOCK(st.st_mode)))) {
		const char *what = S_ISDIR(st.st_mode) ? "a directory" :
				   S_ISFIFO(st.st_mode) ? "a FIFO (read a pipe as standard "
							  "input: -i -)" :
				   S_ISSOCK(st.st_mode) ? "a socket" :
				   isatty(fd) ? "a terminal" : "a device";

		close(fd);
		return rerr(r, S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL,
			    "%s: is %s, not a perf.data file", name, what);
	}
	if (!S_ISREG(st.st_mode)) {
		int fl = fcntl(fd, F_GETFL);

		r->stream = true;	/* blocking reads from now on */
		if (fl >= 0)
			fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	}
	r->f = fdopen(fd, "rb");
	if (!r->f) {
		err = -errno;
		close(fd);
		return rerr(r, err, "%s: %s", name, strerror(-err));
	}
	r->file_size = r->stream ? UINT64_MAX : (uint64_t)st.st_size;
	r->buf_cap = 65536;
	r->buf = malloc(r->buf_cap);
	r->rcap = RB_SIZE;
	r->rb = malloc(r->rcap);
	if (!r->buf || !r->rb)
		return -ENOMEM;
	if (r->stream)
		setvbuf(r->f, NULL, _IOFBF, 65536);
	memset(magic_size, 0, sizeof(magic_size));
	{
		size_t got = fread(magic_size, 1, sizeof(magic_size), r->f);

		if (ferror(r->f))
			return rerr(r, -EIO, "%s: read error", name);
		if (got < 8)
			return rerr(r, -EINVAL, "%s: not a perf.data file (too short)", name);
		if (magic_size[0] == PERF_MAGIC2_SWAPPED)
			return rerr(r, -EOPNOTSUPP, "%s: byte-swapped perf.data is not "
				    "supported", name);
		if (magic_size[0] == PERF_MAGIC1)
			return rerr(r, -EOPNOTSUPP, "%s: old PERFFILE format is not supported",
				    name);
		if (magic_size[0] != PERF_MAGIC2)
			return rerr(r, -EINVAL, "%s: bad magic, not a perf.data file", name);
		if (got < 16)
			return rerr(r, -EINVAL, "%s: truncated header", name);
	}
	if (magic_size[1] == 16) {
		/* pipe mode: attrs, names and build-ids come as records */
		r->pipe = true;
		r->data_off = 16;
		r->data_size = r->stream ? UINT64_MAX - 16 : r->file_size - 16;
		return 0;
	}
	if (r->stream)
		return rerr(r, -EINVAL, "%s: a perf.data in file mode cannot be read from a "
			    "pipe (its header is at the end); give it as a file (-i FILE)",
			    name);
	memset(&fh, 0, sizeof(fh));
	return open_file_mode(r, &fh);
}

static int reader_finish_open(struct ds_reader **out, struct ds_reader *r, int err,
			      const struct ds_reader_opts *o)
{
	if (!err) {
		*out = r;
		return 0;
	}
	if (!r->err[0])
		rerr(r, err, "%s: %s", r->name, strerror(-err));
	if (o->errbuf && o->errbuf_len)
		snprintf(o->errbuf, o->errbuf_len, "%s", r->err);
	ds_reader_close(r);
	return err;
}

int ds_reader_open_fd(struct ds_reader **out, int fd, const char *name,
		      const struct ds_reader_opts *opts)
{
	struct ds_reader_opts o;
	struct ds_reader *r;
	int err = ds_opts_copy(&o, sizeof(o), opts, opts ? opts->sz : 0);

	*out = NULL;
	if (err) {
		close(fd);
		return err;
	}
	r = calloc(1, sizeof(*r));
	if (r && !(r->last_id = calloc(1, sizeof(*r->last_id)))) {
		free(r);
		r = NULL;
	}
	if (!r) {
		close(fd);
		return -ENOMEM;
	}
	return reader_finish_open(out, r, reader_start(r, fd, name ? name : "input", false), &o);
}

int ds_reader_open(struct ds_reader **out, const char *path,
		   const struct ds_reader_opts *opts)
{
	struct ds_reader_opts o;
	struct ds_reader *r;
	int fd, err = ds_opts_copy(&o, sizeof(o), opts, opts ? opts->sz : 0);

	*out = NULL;
	if (err)
		return err;
	r = calloc(1, sizeof(*r));
	if (r && !(r->last_id = calloc(1, sizeof(*r->last_id)))) {
		free(r);
		r = NULL;
	}
	if (!r)
		return -ENOMEM;
	snprintf(r->name, sizeof(r->name), "%s", path);
	/* O_NONBLOCK: opening a FIFO must not wait for a writer */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		rerr(r, err, "cannot open %s: %s", path, strerror(-err));
		return reader_finish_open(out, r, err, &o);
	}
	return reader_finish_open(out, r, reader_start(r, fd, path, true), &o);
}

void ds_reader_close(struct ds_reader *r)
{
	if (!r)
		return;
	if (r->f)
		fclose(r->f);
	for (size_t i = 0; r->attrs && i < r->nr_attrs; i++) {
		free(r->attrs[i].ids);
		free(r->attrs[i].name);
	}
	free(r->attrs);
	ds_htab_free(&r->ids);
	free(r->last_id);
	free(r->buf);
	free(r->rb);
	ZSTD_freeDStream(r->zd);
	free(r->zb);
	for (size_t i = 0; i < r->nr_build_ids; i++)
		free(r->build_ids[i].path);
	free(r->build_ids);
	free(r->tracing);
	free(r);
}

/* Pipe mode: a HEADER_ATTR record (attr of attr.size bytes, then ids). */
static int pipe_attr(struct ds_reader *r, const uint8_t *b, size_t len)
{
	struct ds_attr *da;
	uint32_t asz;
	size_t nids;
	int err;

	if (len < 8 + PERF_ATTR_SIZE_VER0)
		return rerr(r, -EINVAL, "bad HEADER_ATTR record at data offset %llu",
			    (unsigned long long)r->pos);
	asz = ds_rd32(b + 8 + 4);	/* attr.size */
	if (!asz)
		asz = PERF_ATTR_SIZE_VER0;
	if (asz < PERF_ATTR_SIZE_VER0 || asz > len - 8 || (len - 8 - asz) % 8 ||
	    r->nr_attrs >= MAX_ATTRS)
		return rerr(r, -EINVAL, "bad HEADER_ATTR record at data offset %llu",
			    (unsigned long long)r->pos);
	err = ds_grow(&r->attrs, &r->cap_attrs, r->nr_attrs + 1, sizeof(*r->attrs));
	if (err)
		return err;
	da = &r->attrs[r->nr_attrs];
	memset(da, 0, sizeof(*da));
	da->sz = sizeof(*da);
	memcpy(&da->attr, b + 8, asz < sizeof(da->attr) ? asz : sizeof(da->attr));
	nids = (len - 8 - asz) / 8;
	if (nids) {
		da->ids = malloc(nids * 8);
		if (!da->ids)
			return -ENOMEM;
		memcpy(da->ids, b + 8 + asz, nids * 8);
		da->nr_ids = nids;
	}
	r->nr_attrs++;
	err = index_ids(r, r->nr_attrs - 1);
	if (err)
		return err;
	r->sample_id_all = r->attrs[0].attr.sample_id_all;
	return pick_id_mode(r);
}

/* Pipe mode: an EVENT_UPDATE record of type NAME: u64 type, u64 id, name. */
static int pipe_event_update(struct ds_reader *r, const uint8_t *b, size_t len)
{
	uintptr_t ai;
	const char *name;

	if (len < 25 || ds_rd64(b + 8) != EVENT_UPDATE_NAME)
		return 0;
	ai = (uintptr_t)ds_htab_get(&r->ids, ds_rd64(b + 16), NULL, NULL);
	name = (const char *)b + 24;
	if (!ai || !memchr(name, 0, len - 24) || r->attrs[ai - 1].name)
		return 0;
	r->attrs[ai - 1].name = strdup(name);
	return r->attrs[ai - 1].name ? 0 : -ENOMEM;
}

/* At least n (<= rcap) bytes at rb + rpos if the input has them: the
 * number there (less: the end of the input, or a read error, rerror). */
static size_t want(struct ds_reader *r, size_t n)
{
	size_t have = r->rend - r->rpos;

	while (have < n && !r->rerror) {
		size_t ask, got;

		if (r->rpos) {
			memmove(r->rb, r->rb + r->rpos, have);
			r->rpos = 0;
			r->rend = have;
		}
		/* a regular file in big pieces; a stream only what is needed,
		 * as it comes */
		ask = r->stream ? n - have : r->rcap - r->rend;
		got = fread(r->rb + r->rend, 1, ask, r->f);
		r->rend += got;
		have += got;
		if (got < ask) {
			r->rerror = ferror(r->f);
			break;
		}
	}
	return have < n ? have : n;
}

/* Read the n bytes that follow a record (pipe mode payloads) into to, or
 * drop them (to NULL). */
static int payload_bytes(struct ds_reader *r, uint64_t n, uint8_t *to)
{
	while (n) {
		size_t k = want(r, n < r->rcap ? (size_t)n : r->rcap);

		if (!k)
			return rerr(r, -EINVAL, "truncated payload at data offset %llu",
				    (unsigned long long)r->pos);
		if (to) {
			memcpy(to, r->rb + r->rpos, k);
			to += k;
		}
		r->rpos += k;
		r->pos += k;
		n -= k;
	}
	return 0;
}

/* A HEADER_TRACING_DATA record's payload, kept (the last one wins). */
static int pipe_tracing(struct ds_reader *r, uint64_t n)
{
	uint8_t *b;
	int err;

	if (!n || n > MAX_TRACING)
		return payload_bytes(r, n, NULL);
	b = malloc(n);
	if (!b)
		return -ENOMEM;
	err = payload_bytes(r, n, b);
	if (err) {
		free(b);
		return err;
	}
	free(r->tracing);
	r->tracing = b;
	r->tracing_len = n;
	return 0;
}

static int read_record(struct ds_reader *r, const struct perf_event_header **rec)
{
	struct perf_event_header h;
	uint64_t left = r->data_size - r->pos;
	/* the writer may have been killed, the file cut short */
	bool cut_ok = r->unfinished || r->pipe || r->missing;
	size_t got;
	const uint8_t *p;

	if (left == 0)
		return 0;
	if (left < sizeof(h) && cut_ok)
		goto cut;
	if (left < sizeof(h))
		return rerr(r, -EINVAL, "truncated record header at data offset %llu",
			    (unsigned long long)r->pos);
	got = want(r, sizeof(h));
	if (got == 0 && r->stream && !r->rerror)
		return 0;	/* the end of the stream */
	if (got != sizeof(h) && r->stream && !r->rerror) {
		left = got;
		goto cut;
	}
	if (got != sizeof(h))
		return rerr(r, -EIO, "read error at data offset %llu",
			    (unsigned long long)r->pos);
	memcpy(&h, r->rb + r->rpos, sizeof(h));
	if (cut_ok && !r->pipe && (h.size < sizeof(h) || h.size > left))
		goto cut;
	if (h.size < sizeof(h))
		return rerr(r, -EINVAL, "record of size %u (type %u) at data offset %llu",
			    h.size, h.type, (unsigned long long)r->pos);
	if (h.size > left && r->pipe) {
		left = sizeof(h);
		goto cut;
	}
	if (h.size > left)
		return rerr(r, -EINVAL,
			    "record of size %u at data offset %llu runs past the data "
			    "section (%llu bytes left): truncated?", h.size,
			    (unsigned long long)r->pos, (unsigned long long)left);
	got = want(r, h.size);
	if (got != h.size) {
		if (r->rerror)
			return rerr(r, -EIO, "read error at data offset %llu",
				    (unsigned long long)r->pos);
		left = got;
		goto cut;
	}
	p = r->rb + r->rpos;
	if ((uintptr_t)p & 7) {		/* sizes not multiples of 8: copied */
		memcpy(r->buf, p, h.size);
		p = r->buf;
	}
	r->rpos += h.size;
	r->pos += h.size;
	*rec = (const void *)p;
	return 1;
cut:
	/* a killed writer: a cut (or never written) last record ends the data */
	r->trailing = left;
	r->pos = r->data_size;
	return 0;
}

/* The next record decompressed from compressed ones: 1, 0 (no whole one
 * left: the rest goes on in the next compressed record), or an error. */
static int z_record(struct ds_reader *r, const struct perf_event_header **rec)
{
	struct perf_event_header h;
	size_t have = r->zend - r->zpos;
	const uint8_t *p = r->zb + r->zpos;

	if (have < sizeof(h))
		return 0;
	memcpy(&h, p, sizeof(h));
	if (h.size < sizeof(h))
		return rerr(r, -EINVAL, "decompressed record of size %u (type %u) in the "
			    "compressed records before data offset %llu", h.size, h.type,
			    (unsigned long long)r->pos);
	if (h.size > have)
		return 0;
	if ((uintptr_t)p & 7) {
		memcpy(r->buf, p, h.size);
		p = r->buf;
	}
	r->zpos += h.size;
	*rec = (const void *)p;
	return 1;
}

/* Decompress a compressed record's data after what is left of the last. */
static int z_feed(struct ds_reader *r, const struct perf_event_header *h)
{
	const uint8_t *src = (const uint8_t *)h + sizeof(*h);
	size_t n = h->size - sizeof(*h);
	unsigned long long at = (unsigned long long)(r->pos - h->size);
	ZSTD_inBuffer in;

	if (h->type == REC_COMPRESSED2) {
		if (n < 8 || ds_rd64(src) > n - 8)
			return rerr(r, -EINVAL, "compressed record of size %u with a bad data "
				    "size at data offset %llu", h->size, at);
		n = (size_t)ds_rd64(src);
		src += 8;
	}
	if (!r->zd) {
		r->zd = ZSTD_createDStream();
		if (!r->zd || ZSTD_isError(ZSTD_initDStream(r->zd)))
			return rerr(r, -ENOMEM, "out of memory for zstd");
	}
	if (r->zpos) {
		memmove(r->zb, r->zb + r->zpos, r->zend - r->zpos);
		r->zend -= r->zpos;
		r->zpos = 0;
	}
	in.src = src;
	in.size = n;
	in.pos = 0;
	for (;;) {
		ZSTD_outBuffer out;
		size_t ret;

		if (r->zcap - r->zend < 65536) {
			size_t cap = r->zcap ? 2 * r->zcap : RB_SIZE;
			uint8_t *nb;

			if (cap > ZB_MAX)
				return rerr(r, -EINVAL, "compressed record at data offset %llu: more "
					    "than %u MiB of records", at, ZB_MAX >> 20);
			nb = realloc(r->zb, cap);
			if (!nb)
				return rerr(r, -ENOMEM, "out of memory for decompressed records");
			r->zb = nb;
			r->zcap = cap;
		}
		out.dst = r->zb;
		out.size = r->zcap;
		out.pos = r->zend;
		ret = ZSTD_decompressStream(r->zd, &out, &in);
		if (ZSTD_isError(ret))
			return rerr(r, -EINVAL, "compressed record at data offset %llu: zstd: %s",
				    at, ZSTD_getErrorName(ret));
		r->zend = out.pos;
		if (in.pos == in.size && out.pos < out.size)
			return 0;
	}
}

int ds_reader_next(struct ds_reader *r, const struct perf_event_header **rec)
{
	for (;;) {
		const uint8_t *b;
		int ret;

		if (r->zpos < r->zend && (ret = z_record(r, rec)) != 0)
			return ret;
		ret = read_record(r, rec);
		if (ret > 0 && ((*rec)->type == REC_COMPRESSED ||
				(*rec)->type == REC_COMPRESSED2) && (r->nr_attrs || !r->pipe)) {
			if ((ret = z_feed(r, *rec)) < 0)
				return ret;
			continue;
		}
		if (!ret && r->zpos < r->zend) {
			/* the last decompressed record is cut: like a cut file */
			r->trailing += r->zend - r->zpos;
			r->zpos = r->zend;
		}
		if (ret <= 0 || !r->pipe) {
			if (!ret && r->pipe && !r->nr_attrs)
				return rerr(r, -EINVAL, "no events (HEADER_ATTR records) in the "
					    "pipe-mode stream");
			return ret;
		}
		b = (const uint8_t *)*rec;
		if (!r->nr_attrs && ((*rec)->type < DS_RECORD_USER_TYPE_START ||
				     (*rec)->type >= 128))
			return rerr(r, -EINVAL, "not a pipe-mode perf.data stream (a record "
				    "of type %u before any HEADER_ATTR at data offset %llu)",
				    (*rec)->type,
				    (unsigned long long)(r->pos - (*rec)->size));
		switch ((*rec)->type) {
		case REC_HEADER_ATTR:
			ret = pipe_attr(r, b, (*rec)->size);
			break;
		case REC_EVENT_UPDATE:
			ret = pipe_event_update(r, b, (*rec)->size);
			break;
		case REC_HEADER_BUILD_ID:
			ret = add_build_id(r, b, (*rec)->size);
			break;
		case REC_HEADER_TRACING_DATA:	/* u32 size, then that many bytes */
			ret = (*rec)->size >= 12 ? pipe_tracing(r, ds_rd32(b + 8)) : 0;
			break;
		case REC_AUXTRACE:		/* u64 size, then the trace data */
			ret = (*rec)->size >= 16 ? payload_bytes(r, ds_rd64(b + 8), NULL) : 0;
			break;
		default:
			return 1;
		}
		if (ret < 0)
			return ret;
	}
}

const void *ds_reader_tracing_data(const struct ds_reader *r, size_t *len)
{
	*len = r->tracing_len;
	return r->tracing;
}

const char *ds_reader_error(const struct ds_reader *r)
{
	return r->err;
}

size_t ds_reader_nr_attrs(const struct ds_reader *r)
{
	return r->nr_attrs;
}

const struct ds_attr *ds_reader_attr(const struct ds_reader *r, size_t i)
{
	return i < r->nr_attrs ? &r->attrs[i] : NULL;
}

const struct ds_build_id *ds_reader_build_ids(const struct ds_reader *r, size_t *nr)
{
	*nr = r->nr_build_ids;
	return r->build_ids;
}

bool ds_reader_unfinished(const struct ds_reader *r)
{
	return r->unfinished;
}

bool ds_reader_pipe_mode(const struct ds_reader *r)
{
	return r->pipe;
}

uint64_t ds_reader_trailing(const struct ds_reader *r)
{
	return r->trailing;
}

uint64_t ds_reader_truncated(const struct ds_reader *r)
{
	return r->missing;
}

uint64_t ds_reader_offset(const struct ds_reader *r)
{
	return r->pos;
}

const struct ds_attr *ds_reader_attr_of(const struct ds_reader *r,
					const struct perf_event_header *rec)
{
	uintptr_t ai;
	uint64_t id;

	if (!r->nr_attrs)
		return NULL;
	if (!r->use_identifier)
		return &r->attrs[0];
	if (rec->type == PERF_RECORD_SAMPLE && rec->size >= r->id_sample_off + 8)
		id = ds_rd64((const uint8_t *)rec + r->id_sample_off);
	else if (rec->type != PERF_RECORD_SAMPLE && r->sample_id_all &&
		 rec->type < DS_RECORD_USER_TYPE_START && rec->size >= 8 + r->id_other_back)
		id = ds_rd64((const uint8_t *)rec + rec->size - r->id_other_back);
	else
		return &r->attrs[0];
	if (r->last_id->ai && r->last_id->id == id) {
		ai = r->last_id->ai;
	} else {
		ai = (uintptr_t)ds_htab_get(&r->ids, id, NULL, NULL);
		r->last_id->id = id;
		r->last_id->ai = ai;
	}
	return ai ? &r->attrs[ai - 1] : &r->attrs[0];
}

size_t ds_reader_attr_index(const struct ds_reader *r, const struct perf_event_header *rec)
{
	const struct ds_attr *a = ds_reader_attr_of(r, rec);

	return a ? (size_t)(a - r->attrs) : 0;
}

const char *ds_attr_name(const struct ds_attr *a, char *buf, size_t len)
{
	static const char *const hw[] = {
		"cycles", "instructions", "cache-references", "cache-misses",
		"branches", "branch-misses", "bus-cycles", "stalled-cycles-frontend",
		"stalled-cycles-backend", "ref-cycles",
	};
	static const char *const sw[] = {
		"cpu-clock", "task-clock", "page-faults", "context-switches",
		"cpu-migrations", "minor-faults", "major-faults", "alignment-faults",
		"emulation-faults", "dummy", "bpf-output", "cgroup-switches",
	};
	struct ds_attr tmp;
	uint64_t c;

	/* an older caller's smaller struct: its fields, the rest 0 */
	if (!(a = ds_sz_in(a, &tmp, sizeof(tmp), DS_SZ_MIN(struct ds_attr, attr)))) {
		snprintf(buf, len, "unknown");
		return buf;
	}
	c = a->attr.config;
	if (a->name && *a->name)
		return a->name;
	if (a->attr.type == PERF_TYPE_HARDWARE && c < sizeof(hw) / sizeof(hw[0]))
		return hw[c];
	if (a->attr.type == PERF_TYPE_SOFTWARE && c < sizeof(sw) / sizeof(sw[0]))
		return sw[c];
	snprintf(buf, len, "type%u/config%#llx", a->attr.type, (unsigned long long)c);
	return buf;
}

int ds_reader_parse(const struct ds_reader *r, const struct perf_event_header *rec,
		    struct ds_event *ev)
{
	const struct ds_attr *a = ds_reader_attr_of(r, rec);

	if (!a)
		return -EINVAL;
	return ds_event_parse_attr(rec, rec->size, &a->attr, r->sample_id_all, ev);
}

/* ---------------------------------------------------------------- writer */

struct ds_writer {
	FILE *f;
	bool pipe;		/* pipe-mode format */
	uint64_t data_off, data_size;
	uint64_t good;		/* data_size at the last successful flush */
	struct ds_attr *attrs;
	size_t nr_attrs;
	uint8_t *tracing;	/* HEADER_TRACING_DATA, or NULL */
	size_t tracing_len;
	bool ids_added;		/* ds_writer_add_ids(): the lists move at close */
	int err;
};

/* The first error sticks, with the errno of the failed write (ENOSPC,
 * EFBIG, EDQUOT ...), not a generic EIO. */
static void wr(struct ds_writer *w, const void *p, size_t n)
{
	errno = 0;
	if (!w->err && n && fwrite(p, 1, n, w->f) != n)
		w->err = errno ? -errno : -EIO;
}

static void flush(struct ds_writer *w)
{
	errno = 0;
	if (!w->err && fflush(w->f) != 0)
		w->err = errno ? -errno : -EIO;
	if (!w->err)
		w->good = w->data_size;
}

/* File mode: drop whatever follows the data flushed last (a record cut
 * by a failed write, an unfinished round), back to a file whose header
 * says "not finished" and whose data ends at a whole round. */
static int cut_back(struct ds_writer *w)
{
	off_t end = (off_t)(w->data_off + w->good);

	__fpurge(w->f);	/* what the failed write left buffered */
	if (ftruncate(fileno(w->f), end) != 0 || fseeko(w->f, end, SEEK_SET) != 0)
		return -errno;
	w->data_size = w->good;
	return 0;
}

int ds_writer_rewind(struct ds_writer *w, uint64_t *dropped)
{
	uint64_t before = w->data_size;
	int err;

	if (dropped)
		*dropped = 0;
	if (!w->f || w->pipe)
		return -ESPIPE;
	err = cut_back(w);
	if (err)
		return err;
	if (dropped)
		*dropped = before - w->good;
	w->err = 0;
	return 0;
}

static uint64_t wpos(struct ds_writer *w)
{
	off_t o = ftello(w->f);

	if (o < 0 && !w->err)
		w->err = -errno;
	return o < 0 ? 0 : (uint64_t)o;
}

int ds_writer_open(struct ds_writer **out, const char *path, const struct ds_attr *attrs,
		   size_t nr_attrs, const struct ds_writer_opts *opts)
{
	int fd;

	*out = NULL;
	if (!nr_attrs || nr_attrs > MAX_ATTRS ||
	    ds_sz_array_ok(attrs, nr_attrs, DS_SZ_MIN(struct ds_attr, attr)))
		return -EINVAL;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0)
		return -errno;
	return ds_writer_open_fd(out, fd, attrs, nr_attrs, opts);
}

/* Pipe mode: a HEADER_ATTR record per attr (attr, then its ids) and an
 * EVENT_UPDATE record naming it (as perf record -o - writes them). */
static void wr_pipe_attrs(struct ds_writer *w)
{
	for (size_t i = 0; i < w->nr_attrs; i++) {
		const struct ds_attr *a = &w->attrs[i];
		struct perf_event_header h = { REC_HEADER_ATTR, 0, 0 };
		size_t size = 8 + sizeof(a->attr) + a->nr_ids * 8;
		char nb[64];
		const char *name = ds_attr_name(a, nb, sizeof(nb));
		size_t nl = strlen(name) + 1, npad = (nl + 7) & ~(size_t)7;
		static const char zero[8];
		uint64_t u[2] = { EVENT_UPDATE_NAME, a->nr_ids ? a->ids[0] : 0 };

		if (size > 65535) {
			if (!w->err)
				w->err = -E2BIG;
			return;
		}
		h.size = (uint16_t)size;
		wr(w, &h, sizeof(h));
		wr(w, &a->attr, sizeof(a->attr));
		wr(w, a->ids, a->nr_ids * 8);
		if (!a->nr_ids || 24 + npad > 65535)
			continue;
		h.type = REC_EVENT_UPDATE;
		h.size = (uint16_t)(24 + npad);
		wr(w, &h, sizeof(h));
		wr(w, u, sizeof(u));
		wr(w, name, nl);
		wr(w, zero, npad - nl);
	}
}

/* perf's HEADER_TRACING_DATA record: u32 size (8-aligned), u32 pad, then
 * the data and its padding, which the record's size does not count */
static void wr_pipe_tracing(struct ds_writer *w)
{
	static const char zero[8];
	struct perf_event_header h = { REC_HEADER_TRACING_DATA, 0, 16 };
	uint32_t u[2] = { (uint32_t)((w->tracing_len + 7) & ~(size_t)7), 0 };

	if (!w->tracing)
		return;
	wr(w, &h, sizeof(h));
	wr(w, u, sizeof(u));
	wr(w, w->tracing, w->tracing_len);
	wr(w, zero, u[0] - w->tracing_len);
}

int ds_writer_open_fd(struct ds_writer **out, int fd, const struct ds_attr *attrs,
		      size_t nr_attrs, const struct ds_writer_opts *opts)
{
	struct ds_writer_opts o;
	struct file_header fh;
	struct ds_writer *w;
	int err = ds_opts_copy(&o, sizeof(o), opts, opts ? opts->sz : 0);

	*out = NULL;
	if (!err && (!nr_attrs || nr_attrs > MAX_ATTRS))
		err = -EINVAL;
	/* the caller's array: stride sz, each read as ours */
	if (!err)
		err = ds_sz_array_ok(attrs, nr_attrs, DS_SZ_MIN(struct ds_attr, attr));
	w = err ? NULL : calloc(1, sizeof(*w));
	if (!err && !w)
		err = -ENOMEM;
	if (err) {
		close(fd);
		return err;
	}
	w->pipe = o.pipe;
	w->attrs = calloc(nr_attrs, sizeof(*w->attrs));
	if (!w->attrs) {
		close(fd);
		free(w);
		return -ENOMEM;
	}
	w->nr_attrs = nr_attrs;
	if (o.tracing_data && o.tracing_data_len) {
		if (o.tracing_data_len > UINT32_MAX - 8)
			goto nomem;
		w->tracing = malloc(o.tracing_data_len);
		if (!w->tracing)
			goto nomem;
		memcpy(w->tracing, o.tracing_data, o.tracing_data_len);
		w->tracing_len = o.tracing_data_len;
	}
	for (size_t i = 0; i < nr_attrs; i++) {
		struct ds_attr tmp;
		const struct ds_attr *a = ds_sz_in(ds_sz_elem(attrs, i), &tmp, sizeof(tmp), 0);

		w->attrs[i].sz = sizeof(w->attrs[i]);
		w->attrs[i].attr = a->attr;
		w->attrs[i].attr.size = sizeof(struct perf_event_attr);
		w->attrs[i].nr_ids = a->nr_ids;
		if (a->nr_ids) {
			w->attrs[i].ids = malloc(a->nr_ids * 8);
			if (!w->attrs[i].ids)
				goto nomem;
			memcpy(w->attrs[i].ids, a->ids, a->nr_ids * 8);
		}
		if (a->name && !(w->attrs[i].name = strdup(a->name)))
			goto nomem;
	}
	w->f = fdopen(fd, "wb");
	if (!w->f) {
		err = -errno;
		close(fd);
		ds_writer_close(w, NULL);
		return err;
	}
	memset(&fh, 0, sizeof(fh));
	fh.magic = PERF_MAGIC2;
	if (w->pipe) {
		/* pipe mode: a 16-byte header, the attrs as records; nothing is
		 * ever rewritten, so any fd will do */
		fh.size = 16;
		wr(w, &fh, 16);
		wr_pipe_attrs(w);
		wr_pipe_tracing(w);
		goto done;
	}
	/*
	 * A valid header right away, as perf does: magic, attrs and ids, data
	 * size 0 and no features mean "not finished", and readers take the
	 * records up to the end of the file.  ds_writer_close() rewrites it.
	 * A recorder that is killed leaves a readable file.
	 */
	fh.size = sizeof(fh);
	fh.attr_size = sizeof(struct perf_event_attr) + sizeof(struct file_section);
	fh.attrs.offset = sizeof(fh);
	fh.attrs.size = nr_attrs * fh.attr_size;
	fh.data.offset = sizeof(fh) + fh.attrs.size;
	for (size_t i = 0; i < nr_attrs; i++)
		fh.data.offset += w->attrs[i].nr_ids * 8;
	wr(w, &fh, sizeof(fh));
	/* attr array after the header, ids arrays after it, then data */
	{
		uint64_t ids_off = sizeof(fh) + nr_attrs *
			(sizeof(struct perf_event_attr) + sizeof(struct file_section));

		for (size_t i = 0; i < nr_attrs; i++) {
			struct file_section sec = { ids_off, w->attrs[i].nr_ids * 8 };

			wr(w, &w->attrs[i].attr, sizeof(struct perf_event_attr));
			wr(w, &sec, sizeof(sec));
			ids_off += sec.size;
		}
		for (size_t i = 0; i < nr_attrs; i++)
			wr(w, w->attrs[i].ids, w->attrs[i].nr_ids * 8);
		w->data_off = ids_off;
	}
done:
	flush(w);
	if (w->err) {
		err = w->err;
		fclose(w->f);
		w->f = NULL;
		ds_writer_close(w, NULL);
		return err;
	}
	*out = w;
	return 0;
nomem:
	close(fd);
	ds_writer_close(w, NULL);
	return -ENOMEM;
}

int ds_writer_write(struct ds_writer *w, const struct perf_event_header *rec)
{
	if (rec->size < sizeof(*rec))
		return -EINVAL;
	wr(w, rec, rec->size);
	w->data_size += rec->size;
	return w->err;
}

int ds_writer_round(struct ds_writer *w)
{
	struct perf_event_header h = { DS_RECORD_FINISHED_ROUND, 0, sizeof(h) };

	/* whole rounds reach the file: what a killed recorder leaves ends
	 * at a round, or in the middle of the last one */
	ds_writer_write(w, &h);
	flush(w);
	return w->err;
}

/* struct perf_header_string: u32 len (incl. NUL, padded to 64) + bytes */
static void wr_string(struct ds_writer *w, const char *s)
{
	static const char zero[64];
	uint32_t n = (uint32_t)strlen(s) + 1, len = (n + 63) & ~63u;

	wr(w, &len, 4);
	wr(w, s, n);
	wr(w, zero, len - n);
}

/* perf's build_id_event: the id padded to 24 bytes with its size in byte
 * 20 (misc BUILD_ID_SIZE), the name padded with NULs to a multiple of 64 */
static void wr_build_id(struct ds_writer *w, const struct ds_build_id *b, uint32_t type)
{
	static const char zero[64];
	struct ds_build_id tmp;
	uint8_t hdr[BID_HDR];
	struct perf_event_header h;
	size_t n, len;
	int32_t pid;

	b = ds_sz_in(b, &tmp, sizeof(tmp), 0);	/* the caller's: stride checked */
	if (!b->path)
		return;
	n = strlen(b->path) + 1;
	len = (n + 63) & ~(size_t)63;
	pid = b->pid;
	if (BID_HDR + len > 65535 || !b->size || b->size > DS_BUILD_ID_MAX)
		return;
	memset(hdr, 0, sizeof(hdr));
	h.type = type;
	h.misc = (uint16_t)((b->kernel ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER) |
			    MISC_BUILD_ID_SIZE);
	h.size = (uint16_t)(BID_HDR + len);
	memcpy(hdr, &h, sizeof(h));
	memcpy(hdr + 8, &pid, 4);
	memcpy(hdr + 12, b->id, b->size);
	hdr[12 + 20] = b->size;
	wr(w, hdr, sizeof(hdr));
	wr(w, b->path, n);
	wr(w, zero, len - n);
}

int ds_writer_add_ids(struct ds_writer *w, size_t attr, const uint64_t *ids, size_t n)
{
	struct ds_attr *a;
	uint64_t *v;

	if (!w || attr >= w->nr_attrs || (n && !ids))
		return -EINVAL;
	if (w->pipe)
		return -EOPNOTSUPP;
	a = &w->attrs[attr];
	if (n > MAX_IDS || a->nr_ids + n > MAX_IDS)
		return -E2BIG;
	if (!n)
		return 0;
	v = realloc(a->ids, (a->nr_ids + n) * 8);
	if (!v)
		return -ENOMEM;
	memcpy(v + a->nr_ids, ids, n * 8);
	a->ids = v;
	a->nr_ids += n;
	w->ids_added = true;
	return 0;
}

int ds_writer_close(struct ds_writer *w, const struct ds_writer_info *info)
{
	struct ds_writer_info in;
	/* the caller's, in our size (an older one's newer fields 0): or
	 * none at all when its sz is bad, an error returned after closing */
	int err, bad = ds_opts_copy(&in, sizeof(in), info, info ? info->sz : 0);

	if (!bad)
		bad = ds_sz_array_ok(in.build_ids, in.nr_build_ids,
				     DS_SZ_MIN(struct ds_build_id, path));
	if (bad)
		memset(&in, 0, sizeof(in));
	info = &in;
	if (w->f && w->pipe) {
		/* pipe mode: the build-ids as HEADER_BUILD_ID records */
		for (size_t k = 0; k < info->nr_build_ids; k++)
			wr_build_id(w, ds_sz_elem(info->build_ids, k), REC_HEADER_BUILD_ID);
	} else if (w->f) {
		struct file_header fh;
		struct file_section secs[10];
		struct file_section *moved = NULL;
		int feats[10], nf = 0;
		uint64_t table;

		/* in feature bit order: perf reads the table that way */
		if (w->tracing)
			feats[nf++] = FEAT_TRACING_DATA;
		if (info->nr_build_ids)
			feats[nf++] = FEAT_BUILD_ID;
		if (info->hostname)
			feats[nf++] = FEAT_HOSTNAME;
		if (info->osrelease)
			feats[nf++] = FEAT_OSRELEASE;
		if (info->version)
			feats[nf++] = FEAT_VERSION;
		if (info->arch)
			feats[nf++] = FEAT_ARCH;
		if (info->nr_cpus_avail)
			feats[nf++] = FEAT_NRCPUS;
		if (info->argv)
			feats[nf++] = FEAT_CMDLINE;
		feats[nf++] = FEAT_EVENT_DESC;

		table = w->data_off + w->data_size;
		memset(secs, 0, sizeof(secs));
		wr(w, secs, nf * sizeof(secs[0]));	/* placeholder table */
		for (int i = 0; i < nf; i++) {
			secs[i].offset = wpos(w);
			switch (feats[i]) {
			case FEAT_TRACING_DATA: wr(w, w->tracing, w->tracing_len); break;
			case FEAT_BUILD_ID:
				for (size_t k = 0; k < info->nr_build_ids; k++)
					wr_build_id(w, ds_sz_elem(info->build_ids, k), 0);
				break;
			case FEAT_HOSTNAME: wr_string(w, info->hostname); break;
			case FEAT_OSRELEASE: wr_string(w, info->osrelease); break;
			case FEAT_VERSION: wr_string(w, info->version); break;
			case FEAT_ARCH: wr_string(w, info->arch); break;
			case FEAT_NRCPUS:
				wr(w, &info->nr_cpus_avail, 4);
				wr(w, &info->nr_cpus_online, 4);
				break;
			case FEAT_CMDLINE: {
				uint32_t n = (uint32_t)info->argc;

				wr(w, &n, 4);
				for (int k = 0; k < info->argc; k++)
					wr_string(w, info->argv[k]);
				break;
			}
			case FEAT_EVENT_DESC: {
				uint32_t n = (uint32_t)w->nr_attrs;
				uint32_t sz = sizeof(struct perf_event_attr);

				wr(w, &n, 4);
				wr(w, &sz, 4);
				for (size_t k = 0; k < w->nr_attrs; k++) {
					uint32_t nids = (uint32_t)w->attrs[k].nr_ids;
					char nb[64];

					wr(w, &w->attrs[k].attr, sz);
					wr(w, &nids, 4);
					wr_string(w, ds_attr_name(&w->attrs[k], nb, sizeof(nb)));
					wr(w, w->attrs[k].ids, nids * 8);
				}
				break;
			}
			}
			secs[i].size = wpos(w) - secs[i].offset;
		}
		/*
		 * Ids added after the header was written: each attr's whole
		 * list after the features (the header's room before the data
		 * holds only the first ones); the attrs are rewritten below.
		 */
		if (w->ids_added) {
			moved = calloc(w->nr_attrs, sizeof(*moved));
			if (!moved && !w->err)
				w->err = -ENOMEM;
			for (size_t k = 0; moved && k < w->nr_attrs; k++) {
				moved[k].offset = wpos(w);
				moved[k].size = w->attrs[k].nr_ids * 8;
				wr(w, w->attrs[k].ids, moved[k].size);
			}
		}
		memset(&fh, 0, sizeof(fh));
		fh.magic = PERF_MAGIC2;
		fh.size = sizeof(fh);
		fh.attr_size = sizeof(struct perf_event_attr) + sizeof(struct file_section);
		fh.attrs.offset = sizeof(fh);
		fh.attrs.size = w->nr_attrs * fh.attr_size;
		fh.data.offset = w->data_off;
		fh.data.size = w->data_size;
		for (int i = 0; i < nf; i++)
			fh.features[feats[i] / 64] |= 1ULL << (feats[i] % 64);
		if (!w->err && fseeko(w->f, (off_t)table, SEEK_SET) != 0)
			w->err = -errno;
		wr(w, secs, nf * sizeof(secs[0]));
		if (!w->err && fseeko(w->f, 0, SEEK_SET) != 0)
			w->err = -errno;
		wr(w, &fh, sizeof(fh));
		for (size_t k = 0; moved && k < w->nr_attrs; k++) {
			wr(w, &w->attrs[k].attr, sizeof(struct perf_event_attr));
			wr(w, &moved[k], sizeof(moved[k]));
		}
		free(moved);
		/* the features could not be written (a full disk): the file as
		 * it was at its last round, "not finished" but readable */
		if (w->err && w->data_off)
			cut_back(w);
	}
	if (w->f) {
		errno = 0;
		if (fclose(w->f) != 0 && !w->err)
			w->err = errno ? -errno : -EIO;
	}
	err = w->err ? w->err : bad;
	for (size_t i = 0; w->attrs && i < w->nr_attrs; i++) {
		free(w->attrs[i].ids);
		free(w->attrs[i].name);
	}
	free(w->attrs);
	free(w->tracing);
	free(w);
	return err;
}
