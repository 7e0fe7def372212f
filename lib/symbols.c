// SPDX-License-Identifier: MIT
/*
 * Symbolization: user ips through the MMAP/MMAP2 records of their process
 * and the symbol tables of the mapped files and their debug files (elfutils
 * libdwfl: build-id paths under /usr/lib/debug, .gnu_debuglink, MiniDebugInfo
 * in .gnu_debugdata), C++ names demangled, unless the file's build-id is not
 * the recorded one; kernel ips through a kallsyms text file.
 */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "deferstack/deferstack.h"
#include "hash.h"
#include "internal.h"
#include "symtab.h"

struct sym {
	uint64_t start;
	const char *name;
};

struct seg {
	uint64_t offset, filesz, vaddr;
};

struct dso {
	char *path;
	uint32_t idx;		/* in dsos */
	const char *short_name;	/* base name, into path */
	const char *load_path;	/* the file read for it when not path: [vdso]'s
				 * image (owned by struct ds_symbols) */
	bool perfmap;		/* a perf map (path): JIT code, by address */
	bool loaded, ok;
	bool mismatch;		/* build-id differs from the recorded one */
	const struct ds_build_id *recorded;	/* its recorded build-id, or NULL */
	Dwfl *dwfl;		/* NULL if the file could not be read as ELF */
	Dwfl_Module *mod;
	struct seg *segs;
	size_t nr_segs;
	unsigned char build_id[DS_BUILD_ID_MAX];
	size_t build_id_len;
	struct ds_symtab tab;	/* its symbols, read at the first lookup */
	bool tab_tried, tab_ok;	/* !tab_ok: libdwfl per address (ppc64 ELFv1) */
	struct ds_nametab names;	/* PLT stubs, or a perf map's lines */
	uint64_t plt_lo, plt_hi;	/* module addresses of the PLT stubs */
	bool plt_read;		/* their names read into names */
	struct ds_ktab frame_by_off;	/* file offset -> frame id + 1 */
	char **demangled;	/* demangled names, owned */
	size_t nr_demangled, cap_demangled;
	bool full_names;	/* C++ names with parameters (ds_symbols_opts) */
	int name_fd;		/* a big file's own descriptor to read its
				 * symbols' names with, or -1 (read_name()) */
};

struct map {
	uint64_t start, end, pgoff;
	struct dso *dso;
};

/* [start, end) of a process's address space where mapping map (an index
 * into maps) is the one an address finds */
struct mseg {
	uint64_t start, end;
	uint32_t map;
};

struct mapset {
	uint32_t pid;
	uint32_t gen;		/* changed by every MMAP, exec and fork; not 0 */
	struct map *maps;	/* in the order mapped: a later one hides an earlier */
	size_t nr, cap;
	struct mseg *segs;	/* what is visible, by address: built at the first
				 * lookup after the mappings changed */
	size_t nr_segs, cap_segs;
	uint32_t segs_gen;	/* the gen segs were built for; 0: none */
	size_t last_seg;	/* where the last address was found */
	int8_t perfmap;		/* has a perf map: 1, none: -1, not looked yet: 0 */
};

struct comm {
	uint32_t tid;
	char name[16];
};

/*
 * Frames: what addresses resolve to (struct ds_sym_info, map fields 0),
 * interned per object and file offset (user), per address (kernel), and one
 * for "no mapping"; ids are dense and stay valid until ds_symbols_free().
 * A frame keeps only what its object does not give (struct frame); the
 * rest is filled in from the object when it is asked for (frame_fill()).
 * A user address is found through its process's visible mappings (sorted,
 * binary search) and the object's file offset -> frame table, so that each
 * distinct object and offset is resolved once.
 */
struct frame {
	const char *name;	/* ds_sym_info's; its sym is name or NULL */
	uint64_t sym_off;
	uint64_t dso_off;	/* kernel: the ip */
	uint32_t dso;		/* index into dsos, or FRAME_KERNEL, FRAME_NONE */
	bool has_sym;
};

struct frame_infos {
	struct ds_sym_info **chunks;	/* FRAME_CHUNK each, or NULL */
	size_t cap;
};

#define FRAME_KERNEL UINT32_MAX
#define FRAME_NONE (UINT32_MAX - 1)
#define FRAME_CHUNK_BITS 10
#define FRAME_CHUNK (1u << FRAME_CHUNK_BITS)
#define NO_MAP UINT32_MAX
#define STR_BLOCK 65536
/* files from this size on read their names through a descriptor of their
 * own (read_name()), at most NAME_FDS of them open */
#define NAME_FD_MIN (4 << 20)
#define NAME_FDS 64

struct ds_symbols {
	/* kallsyms' text symbols by address: their starts, and their names'
	 * offsets in kstrs (12 bytes a symbol, where a struct sym took 16) */
	uint64_t *kaddr;
	uint32_t *kname;
	size_t nr_ksyms;
	char *kstrs;
	/* a kallsyms file (not /proc's) is kept open and its names read
	 * when a frame needs one: kname is then the name's file offset,
	 * klen its length, and knames (symbol index -> kcache index + 1)
	 * what was read (a real recording meets 2 k of 120 k names) */
	int kfd;
	struct stat kst;	/* the file as it was read */
	uint16_t *klen;
	struct ds_ktab knames;
	const char **kcache;
	size_t nr_kcache, cap_kcache;
	char **old_kstrs;	/* of kallsyms loaded before: frames name them */
	size_t nr_old_kstrs;
	uint64_t ktext;
	struct frame **fchunks;	/* frames, FRAME_CHUNK per chunk */
	size_t nr_frames, cap_fchunks;
	/* whole frames handed out by ds_symbols_frame_info(), each made at
	 * that call's first for it (infos itself is allocated at open: the
	 * call takes a const s) */
	struct frame_infos *infos;
	uint32_t unknown_frame;	/* id + 1 of "[unknown]" (no mapping), 0: none yet */
	struct ds_ktab kframes;	/* kernel ip -> frame id + 1 */
	uint32_t gen_seq;	/* the last mapset generation given */
	uint32_t kgen;		/* kallsyms (re)loads */
	struct mapset *last_ms;	/* the last process looked up */
	struct comm *last_comm;	/* the last task's comm looked up */
	char **sblocks;		/* names made up for frames ("[dso+0xoff]") */
	size_t nr_sblocks, cap_sblocks, sblock_used, sblock_size;
	struct dso **dsos;
	size_t nr_dsos, cap_dsos;
	struct ds_htab dso_by_path;	/* struct dso, key: hash of the path */
	struct ds_htab maps;	/* struct mapset, key pid */
	struct ds_htab comms;	/* struct comm, key tid */
	struct ds_htab rec_ids;	/* recorded struct ds_build_id, key: hash of path */
	/* the recorded kernel's build-id (kbid_len 0: none) */
	unsigned char kbid[DS_BUILD_ID_MAX];
	size_t kbid_len;
	struct ds_symbols_opts o;
	char *vdso;		/* the vDSO image's path, NULL: none */
	char *perf_map_dir;
	char *buildid_dir;	/* perf's build-id cache, NULL: none */
	char *debuginfo_path;	/* libdwfl's, with buildid_dir */
	size_t nr_name_fds;	/* the dsos' name_fd open */
	Dwfl_Callbacks cbs;	/* libdwfl's standard ones, that path */
	bool debuginfod;	/* DEBUGINFOD_URLS set when opened */
};

static int cmp_sym(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* names are stored in file order: equal starts stay in file order,
	 * so the last one listed wins, whatever qsort does */
	return x->name < y->name ? -1 : x->name > y->name;
}

/* ds_count_starts() finds them by their first field */
_Static_assert(offsetof(struct sym, start) == 0, "start first");
_Static_assert(offsetof(struct mseg, start) == 0, "start first");


static bool bid_is(const void *val, const void *path)
{
	return !strcmp(((const struct ds_build_id *)val)->path, path);
}

/* Keep a copy of the recorded user objects' build-ids (the first per path). */
static int add_recorded_ids(struct ds_symbols *s, const struct ds_build_id *arr, size_t n)
{
	int err = ds_sz_array_ok(arr, n, DS_SZ_MIN(struct ds_build_id, path));

	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		struct ds_build_id tmp;
		const struct ds_build_id *v = ds_sz_in(ds_sz_elem(arr, i), &tmp, sizeof(tmp), 0);
		uint64_t h;
		struct ds_build_id *b;

		if (v->kernel && !s->kbid_len && v->size && v->size <= DS_BUILD_ID_MAX &&
		    v->path && !strcmp(v->path, "[kernel.kallsyms]")) {
			memcpy(s->kbid, v->id, v->size);
			s->kbid_len = v->size;
		}
		if (v->kernel || !v->path || !v->size || v->size > DS_BUILD_ID_MAX)
			continue;
		h = ds_hash_str(v->path);
		if (ds_htab_get(&s->rec_ids, h, bid_is, v->path))
			continue;
		b = malloc(sizeof(*b));
		if (!b)
			return -ENOMEM;
		memcpy(b, v, sizeof(*b));
		b->sz = sizeof(*b);
		b->path = strdup(v->path);
		if (!b->path || ds_htab_put(&s->rec_ids, h, b)) {
			free(b->path);
			free(b);
			return -ENOMEM;
		}
	}
	return 0;
}

static int set_paths(struct ds_symbols *s);

int ds_symbols_open(struct ds_symbols **out, const struct ds_symbols_opts *opts)
{
	struct ds_symbols *s = calloc(1, sizeof(*s));
	const struct ds_build_id *bids;
	const char *kallsyms;
	size_t nr_bids;
	int err;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->kfd = -1;
	/* the fields an older caller's smaller struct lacks read as 0 in the
	 * copy only: never read opts past opts->sz */
	err = ds_opts_copy(&s->o, sizeof(s->o), opts, opts ? opts->sz : 0);
	if (err) {
		free(s);
		return err;
	}
	kallsyms = s->o.kallsyms;
	bids = s->o.build_ids;
	nr_bids = s->o.nr_build_ids;
	s->o.kallsyms = NULL;		/* not kept */
	s->o.build_ids = NULL;
	s->o.nr_build_ids = 0;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		free(s);
		return -ENOSYS;
	}
	s->infos = calloc(1, sizeof(*s->infos));
	err = s->infos ? set_paths(s) : -ENOMEM;
	if (!err && kallsyms)
		err = ds_symbols_load_kallsyms(s, kallsyms);
	if (!err)
		err = add_recorded_ids(s, bids, nr_bids);
	if (err) {
		ds_symbols_free(s);
		return err;
	}
	*out = s;
	return 0;
}

int ds_symbols_new(struct ds_symbols **out, const char *kallsyms_path)
{
	struct ds_symbols_opts o = { .sz = sizeof(o), .kallsyms = kallsyms_path };

	return ds_symbols_open(out, &o);
}

static void dso_free(struct dso *d)
{
	if (d->dwfl)
		dwfl_end(d->dwfl);
	if (d->name_fd >= 0)
		close(d->name_fd);
	for (size_t i = 0; i < d->nr_demangled; i++)
		free(d->demangled[i]);
	free(d->demangled);
	ds_symtab_free(&d->tab);
	ds_nametab_free(&d->names);
	ds_ktab_free(&d->frame_by_off);
	free(d->path);
	free(d->segs);
	free(d);
}

static void close_kallsyms(struct ds_symbols *s);

void ds_symbols_free(struct ds_symbols *s)
{
	if (!s)
		return;
	free(s->kaddr);
	free(s->kname);
	free(s->kstrs);
	close_kallsyms(s);
	for (size_t i = 0; i < s->nr_old_kstrs; i++)
		free(s->old_kstrs[i]);
	free(s->old_kstrs);
	for (size_t i = 0; i < s->cap_fchunks; i++)
		free(s->fchunks[i]);
	free(s->fchunks);
	if (s->infos) {
		for (size_t i = 0; i < s->infos->cap; i++)
			free(s->infos->chunks[i]);
		free(s->infos->chunks);
		free(s->infos);
	}
	ds_ktab_free(&s->kframes);
	for (size_t i = 0; i < s->nr_sblocks; i++)
		free(s->sblocks[i]);
	free(s->sblocks);
	for (size_t i = 0; i < s->nr_dsos; i++)
		dso_free(s->dsos[i]);
	free(s->dsos);
	ds_htab_free(&s->dso_by_path);
	for (size_t i = 0; i < s->maps.used; i++) {
		struct mapset *m = s->maps.e[i].val;

		free(m->maps);
		free(m->segs);
		free(m);
	}
	ds_htab_free(&s->maps);
	for (size_t i = 0; i < s->comms.used; i++)
		free(s->comms.e[i].val);
	ds_htab_free(&s->comms);
	for (size_t i = 0; i < s->rec_ids.used; i++) {
		struct ds_build_id *b = s->rec_ids.e[i].val;

		free(b->path);
		free(b);
	}
	ds_htab_free(&s->rec_ids);
	free(s->vdso);
	free(s->perf_map_dir);
	free(s->buildid_dir);
	free(s->debuginfo_path);
	free(s);
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* 1 to 16 plain hex digits at p, then a space: their value, *end after
 * them; else *end NULL (strtoull decides). */
static unsigned long long hex_prefix(const char *p, char **end)
{
	uint64_t v;
	size_t n = ds_hex_run(p, &v);

	*end = n >= 1 && n <= 16 && is_space(p[n]) && !(n == 1 && p[0] == '0' &&
							 (p[1] | 0x20) == 'x') ?
	       (char *)(uintptr_t)(p + n) : NULL;
	return v;
}

/* sscanf(line, "%llx %c %255s", addr, type, name) == 3, a few times
 * faster (a /proc/kallsyms has 200,000 lines): the name is not copied but
 * pointed to (*name, its first *nlen <= 255 bytes). */
static bool parse_kallsyms_line(const char *p, unsigned long long *addr, char *type,
				const char **name, size_t *nlen)
{
	const char *digits;
	char *end;
	size_t n = 0;

	while (is_space(*p))
		p++;
	/* strtoull is what %llx converts with; it must see a digit */
	if (!(*p == '+' || *p == '-' || (*p >= '0' && *p <= '9') ||
	      (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F')))
		return false;
	digits = p + (*p == '+' || *p == '-');
	*addr = hex_prefix(p, &end);
	if (!end)
		*addr = strtoull(p, &end, 16);	/* signs, prefixes, overflow */
	if (end == p)
		return false;
	if ((*end == 'x' || *end == 'X') && *digits == '0' && end == digits + 1)
		end++;	/* "0x" and no digit: scanf takes the prefix */
	for (p = end; is_space(*p); p++)
		;
	if (!*p)
		return false;
	*type = *p++;
	while (is_space(*p))
		p++;
	*name = p;
	while (n < 255) {	/* spaces and NUL are at most ' ' */
		unsigned char c = (unsigned char)p[n];

		if (c <= ' ' && (!c || is_space((char)c)))
			break;
		n++;
	}
	*nlen = n;
	return n > 0;
}

/* 8 lowercase hex digits at p (the first one the most significant): their
 * value into *v; false if one is not such a digit.  All bytes at once:
 * each byte's top bit says whether it is in '0'-'9' ('a'-'f'), with no
 * carry between bytes below 0x80. */
static inline bool hex8_value(const unsigned char *p, uint32_t *v)
{
	const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
	uint64_t x, dg, al, n;

	memcpy(&x, p, 8);
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
	x = __builtin_bswap64(x);
#endif
	if (x & high)
		return false;
	dg = (x + (0x80 - '0') * ones) & ((0x80 + '9') * ones - x);
	al = (x + (0x80 - 'a') * ones) & ((0x80 + 'f') * ones - x);
	if (((dg | al) & high) != high)
		return false;
	n = (x & 0x0f * ones) + ((al & high) >> 7) * 9;
	n = ((n & 0x000f000f000f000fULL) << 4) | ((n & 0x0f000f000f000f00ULL) >> 8);
	n = ((n & 0x000000ff000000ffULL) << 8) | ((n & 0x00ff000000ff0000ULL) >> 16);
	n = ((n & 0x000000000000ffffULL) << 16) | ((n & 0x0000ffff00000000ULL) >> 32);
	*v = (uint32_t)n;
	return true;
}

/*
 * The lines as the kernel writes them, "%016lx %c %s" (and "\t[module]"
 * after the name): 16 lowercase hex digits, a space, the type, a space,
 * the name.  The same answer as parse_kallsyms_line() in a few
 * instructions per byte; false: not such a line, ask it.  len: the line's
 * bytes before its NUL.
 */
static bool parse_kallsyms_fast(const char *p, size_t len, unsigned long long *addr,
				char *type, const char **name, size_t *nlen)
{
	const unsigned char *u = (const unsigned char *)p;
	uint32_t hi, lo;
	size_t n = 0, max;

	if (len < 20 || u[16] != ' ' || u[18] != ' ' || u[17] <= ' ' || u[19] <= ' ' ||
	    !hex8_value(u, &hi) || !hex8_value(u + 8, &lo))
		return false;
	/* the name: up to the first space or NUL (bytes at most ' ' are
	 * tested one by one), 255 bytes at most; 8 bytes at a time while
	 * none is below '!' */
	u += 19;
	max = len - 19 < 255 ? len - 19 : 255;
	while (n + 8 <= max) {
		uint64_t x;

		memcpy(&x, u + n, 8);
		if ((x - 0x2121212121212121ULL) & ~x & 0x8080808080808080ULL)
			break;
		n += 8;
	}
	while (n < max) {
		unsigned char c = u[n];

		if (c <= ' ' && (!c || is_space((char)c)))
			break;
		n++;
	}
	*addr = (uint64_t)hi << 32 | lo;
	*type = p[17];
	*name = p + 19;
	*nlen = n;
	return true;
}

/*
 * The lines of kallsyms text as fgets(line, 512, f) gives them (a line of
 * more than 511 bytes comes in pieces of 511), each NUL-terminated in
 * place of its newline (the same to the parser: a newline is only ever
 * skipped as space or ends a word), from 256 KiB reads of fd.
 */
#define KS_CHUNK (256u << 10)
#define KS_LINE 511
#define KS_OVER 16	/* bytes a name's copy may read and write past its end */

struct ks_reader {
	int fd;
	char *buf;
	size_t len, at;		/* bytes in buf, the next line's start */
	uint64_t base;		/* the file offset of buf[0] */
	bool eof;
	int err;
	char piece[KS_LINE + 1 + KS_OVER];	/* a 511-byte piece, a last line without
						 * newline */
};

/* The next line, NUL-terminated (*len bytes before the NUL; *off: its
 * offset in the file), or NULL at the end (or at an error: r->err,
 * -errno). */
static char *ks_next(struct ks_reader *r, size_t *len, uint64_t *off)
{
	for (;;) {
		char *p = r->buf + r->at, *nl;
		size_t left = r->len - r->at, n = left < KS_LINE ? left : KS_LINE;

		*off = r->base + r->at;
		nl = memchr(p, '\n', n);
		if (nl) {
			*nl = 0;
			*len = (size_t)(nl - p);
			r->at += (size_t)(nl - p) + 1;
			return p;
		}
		if (left >= KS_LINE || (r->eof && left)) {
			/* a piece of a long line, or the last line without
			 * a newline */
			memcpy(r->piece, p, n);
			r->piece[n] = 0;
			*len = n;
			r->at += n;
			return r->piece;
		}
		if (r->eof)
			return NULL;
		/* the start of a line: kept, more read after it */
		r->base += r->at;
		memmove(r->buf, p, left);
		r->len = left;
		r->at = 0;
		for (;;) {
			ssize_t got = read(r->fd, r->buf + r->len, KS_CHUNK - r->len);

			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0) {
				r->err = -errno;
				return NULL;
			}
			r->eof = got == 0;
			r->len += (size_t)got;
			break;
		}
	}
}

/* Before kallsyms are (re)loaded: the kernel frames resolved so far keep
 * their names (the old strings stay until ds_symbols_free()), new lookups
 * resolve again. */
/* Sort the kallsyms symbols by address, equal ones in file order. */
static int sort_ksyms(struct ds_symbols *s)
{
	size_t n = s->nr_ksyms ? s->nr_ksyms : 1;
	struct sym *v = malloc(n * sizeof(*v));
	uint32_t *name = malloc(n * sizeof(*name));
	uint16_t *len = s->klen ? malloc(n * sizeof(*len)) : NULL;

	if (!v || !name || (s->klen && !len)) {
		free(v);
		free(name);
		free(len);
		s->nr_ksyms = 0;
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->nr_ksyms; i++) {
		v[i].start = s->kaddr[i];
		v[i].name = (const char *)(uintptr_t)i;	/* its place in the file */
	}
	qsort(v, s->nr_ksyms, sizeof(*v), cmp_sym);
	for (size_t i = 0; i < s->nr_ksyms; i++) {
		size_t from = (size_t)(uintptr_t)v[i].name;

		s->kaddr[i] = v[i].start;
		name[i] = s->kname[from];
		if (len)
			len[i] = s->klen[from];
	}
	free(s->kname);
	s->kname = name;
	if (len) {
		free(s->klen);
		s->klen = len;
	}
	free(v);
	return 0;
}

/* Forget the kallsyms file kept open and the names read from it (the
 * copies stay: frames name them). */
static void close_kallsyms(struct ds_symbols *s)
{
	if (s->kfd >= 0)
		close(s->kfd);
	s->kfd = -1;
	free(s->klen);
	s->klen = NULL;
	ds_ktab_free(&s->knames);
	free(s->kcache);
	s->kcache = NULL;
	s->nr_kcache = s->cap_kcache = 0;
}

static int retire_kstrs(struct ds_symbols *s)
{
	char **v;

	s->kgen++;
	ds_ktab_free(&s->kframes);
	close_kallsyms(s);
	if (!s->kstrs)
		return 0;
	v = realloc(s->old_kstrs, (s->nr_old_kstrs + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->old_kstrs = v;
	s->old_kstrs[s->nr_old_kstrs++] = s->kstrs;
	s->kstrs = NULL;
	return 0;
}

int ds_symbols_load_kallsyms(struct ds_symbols *s, const char *path)
{
	struct ks_reader r = { .fd = -1 };
	char *line;
	size_t cap = 0, slen = 0, scap = 0, len;
	bool nonzero = false, is_chr, lazy;
	uint64_t off;
	struct stat st;
	int err = 0, fd;

	fd = ds_open_regular(path, &is_chr);
	if (fd >= 0 || is_chr) {
		/* kernel frames resolved so far name the old strings: keep
		 * them, and resolve kernel addresses again */
		err = retire_kstrs(s);
		if (err) {
			if (fd >= 0)
				close(fd);
			return err;
		}
	}
	if (fd < 0 && is_chr) {
		/* /dev/null and friends: no kernel symbols, nothing read */
		free(s->kaddr);
		free(s->kname);
		s->kaddr = NULL;
		s->kname = NULL;
		s->kstrs = NULL;
		s->nr_ksyms = 0;
		s->ktext = 0;
		return 0;
	}
	if (fd < 0)
		return fd;
	r.fd = fd;
	r.buf = malloc(KS_CHUNK + KS_OVER);
	if (!r.buf) {
		close(fd);
		return -ENOMEM;
	}
	free(s->kaddr);
	free(s->kname);
	s->kaddr = NULL;
	s->kname = NULL;
	s->nr_ksyms = 0;
	/* a file that stays as it is (what record saved; not /proc's, whose
	 * size is 0 and whose text is made again at each read): its names
	 * are read from it when needed */
	lazy = !fstat(fd, &st) && st.st_size > 0 && (uint64_t)st.st_size <= UINT32_MAX;
	while ((line = ks_next(&r, &len, &off))) {
		char type;
		const char *name;
		unsigned long long addr;
		size_t nl;

		if (!parse_kallsyms_fast(line, len, &addr, &type, &name, &nl) &&
		    !parse_kallsyms_line(line, &addr, &type, &name, &nl))
			continue;
		if ((nl == 5 && !memcmp(name, "_text", 5)) ||
		    (nl == 6 && !memcmp(name, "_stext", 6))) {
			if (!s->ktext || nl == 5)
				s->ktext = addr;
		}
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		nonzero |= addr != 0;
		if (!lazy && slen + nl + 1 > UINT32_MAX) {
			err = -EFBIG;	/* names' offsets are 32 bits */
			break;
		}
		if (!lazy && (err = ds_grow(&s->kstrs, &scap, slen + nl + 1 + KS_OVER, 1)))
			break;
		if (s->nr_ksyms >= cap) {
			size_t c2 = cap, c3 = cap;

			if ((err = ds_grow(&s->kaddr, &cap, s->nr_ksyms + 1, sizeof(*s->kaddr))) ||
			    (err = ds_grow(&s->kname, &c2, cap, sizeof(*s->kname))) ||
			    (lazy && (err = ds_grow(&s->klen, &c3, cap, sizeof(*s->klen)))))
				break;
		}
		s->kaddr[s->nr_ksyms] = addr;
		if (lazy) {
			/* a line is at most KS_LINE bytes: so is a name */
			s->kname[s->nr_ksyms] = (uint32_t)(off + (uint64_t)(name - line));
			s->klen[s->nr_ksyms++] = (uint16_t)nl;
			continue;
		}
		/* 16 bytes at a time, past the name's end (into the line or
		 * the buffers' KS_OVER bytes; the rest of kstrs' room): a
		 * short name's memcpy costs more than its bytes */
		for (size_t i = 0; i < nl; i += 16)
			memcpy(s->kstrs + slen + i, name + i, 16);
		s->kstrs[slen + nl] = 0;
		s->kname[s->nr_ksyms] = (uint32_t)slen;
		s->nr_ksyms++;
		slen += nl + 1;
	}
	/* a read error ends the text, as it ended fgets() */
	free(r.buf);
	if (lazy && !err) {
		s->kfd = fd;
		s->kst = st;
	} else {
		close(fd);
		free(s->klen);
		s->klen = NULL;
	}
	if (err) {
		s->nr_ksyms = 0;	/* names not resolved yet: none */
		return err;
	}
	if (!nonzero) {		/* kptr_restrict: all zero, useless */
		s->nr_ksyms = 0;
		s->ktext = 0;
		return 0;
	}
	/* /proc/kallsyms is mostly in address order already (names'
	 * offsets grow in file order: equal starts are in order) */
	for (size_t i = 1; i < s->nr_ksyms; i++) {
		if (s->kaddr[i - 1] > s->kaddr[i])
			return sort_ksyms(s);
	}
	return 0;
}

uint64_t ds_symbols_kernel_start(const struct ds_symbols *s)
{
	return s->ktext;
}

/*
 * libdwfl finds the debug file of a module by build-id under
 * /usr/lib/debug/.build-id (also where Debian's -dbg and -dbgsym packages
 * put them) and the build-id cache's .build-id, by .gnu_debuglink next to
 * the file, in .debug/ and under /usr/lib/debug, and reads MiniDebugInfo
 * (.gnu_debugdata): libdwfl's default path ":.debug:/usr/lib/debug" and
 * the cache.  With DEBUGINFOD_URLS set, libdw (when built with it, as
 * Debian's is) asks those servers for what it did not find (without it,
 * find_debuginfo() keeps libdw from loading libdebuginfod).
 */
/*
 * name exists and is not a directory, or cannot be told not to (an error
 * other than ENOENT and ENOTDIR: libdwfl's open would stop on it).  A
 * directory is never a debug file, and perf's build-id cache is full of
 * them where the search looks: ~/.debug/usr/bin/ls/ is its directory for
 * /usr/bin/ls.
 */
static bool may_exist(const char *name)
{
	struct stat st;

	if (!stat(name, &st))
		return !S_ISDIR(st.st_mode);
	return errno != ENOENT && errno != ENOTDIR;
}

/* dir/sub/file may exist (dir or sub NULL: left out) */
static bool may_exist3(const char *dir, const char *sub, const char *file)
{
	char buf[PATH_MAX];
	int n = snprintf(buf, sizeof(buf), "%s%s%s%s%s", dir ? dir : "", dir ? "/" : "",
			 sub ? sub : "", sub ? "/" : "", file);

	return n < 0 || (size_t)n >= sizeof(buf) || may_exist(buf);
}

/*
 * Could libdwfl's search by name (dwfl_standard_find_debuginfo) find a
 * debug file for the main file file_name: one of the names it tries for
 * each element of path exists.  Errs towards true: true only means that
 * the standard search runs.  An empty element: file_name's directory; a
 * relative one: that subdirectory of it; an absolute one: under it, the
 * file's directory with 0, 1, 2, ... leading components cut.  The name:
 * the .gnu_debuglink name, or without one, the base name + ".debug" and
 * (not in the file's own directory) the base name.
 */
static bool debug_name_may_exist(const char *path, const char *file_name, const char *link)
{
	const char *base = strrchr(file_name, '/');
	char dir[PATH_MAX], lname[NAME_MAX + 8];
	const char *p = path;
	bool made = !link;

	base = base ? base + 1 : file_name;
	if ((size_t)(base - file_name) >= sizeof(dir))
		return true;
	memcpy(dir, file_name, (size_t)(base - file_name));
	dir[base > file_name ? (size_t)(base - file_name) - 1 : 0] = 0;
	if (made) {
		if (snprintf(lname, sizeof(lname), "%s.debug", base) >= (int)sizeof(lname))
			return true;
		link = lname;
	}
	while (p) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char el[PATH_MAX];

		if (len >= sizeof(el))
			return true;
		memcpy(el, p, len);
		el[len] = 0;
		p = end ? end + 1 : NULL;
		const char *q = el + (el[0] == '+' || el[0] == '-');
		const char *d = base == file_name ? NULL : dir;

		if (!*q) {
			if (may_exist3(d, NULL, link))
				return true;
		} else if (*q != '/') {
			if (may_exist3(d, q, link) || (made && may_exist3(d, q, base)))
				return true;
		} else if (d && d[0] == '/') {
			/* "usr/lib/x", "lib/x", "x", then none */
			for (const char *sub = d + 1;; sub = strchr(sub, '/') + 1) {
				if (*sub && (may_exist3(q, sub, link) ||
					     (made && may_exist3(q, sub, base))))
					return true;
				if (!strchr(sub, '/'))
					break;
			}
			if (may_exist3(q, NULL, link) || (made && may_exist3(q, NULL, base)))
				return true;
		}
	}
	return false;
}

/*
 * libdwfl's find_debuginfo callback: dwfl_standard_find_debuginfo (build-id
 * paths, then the debug link by name, then debuginfod), except when no
 * debuginfod server is configured and none of the local files it would try
 * exists: then nothing is found, as the standard search would find nothing,
 * without its last step, which loads libdebuginfod (and libcurl, GnuTLS,
 * libcrypto: 8 MB of peak RSS and 0.5 k page faults on a real recording)
 * only to be told there is no server.  The library reads no DWARF, so the
 * file looked for is always a module's separate debug file, never a dwz
 * alternate file.
 */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			  GElf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	const struct ds_symbols *s = *userdata;
	const unsigned char *bits = NULL;
	GElf_Addr bid_va;
	int n;

	if (!s || s->debuginfod || !file_name)
		goto standard;
	n = dwfl_module_build_id(mod, &bits, &bid_va);
	if (n > 0) {
		/* DIR/.build-id/XX/REST.debug for each absolute DIR */
		char id[2 * DS_BUILD_ID_MAX + 16], *o = id;
		const char *p = s->debuginfo_path;

		if (n > DS_BUILD_ID_MAX)
			goto standard;
		for (int i = 0; i < n; i++) {
			o += sprintf(o, "%02x", bits[i]);
			if (!i)
				*o++ = '/';
		}
		strcpy(o, ".debug");
		while (p) {
			const char *end = strchr(p, ':');
			size_t len = end ? (size_t)(end - p) : strlen(p);
			char dir[PATH_MAX];

			if (len >= sizeof(dir))
				goto standard;
			memcpy(dir, p, len);
			dir[len] = 0;
			p = end ? end + 1 : NULL;
			const char *q = dir + (dir[0] == '+' || dir[0] == '-');

			if (*q == '/' && may_exist3(q, ".build-id", id))
				goto standard;
		}
	}
	if (debug_name_may_exist(s->debuginfo_path, file_name, debuglink_file))
		goto standard;
	{
		/* the standard search also tries the name a symlink points to */
		char *canon = realpath(file_name, NULL);
		bool other = canon && strcmp(canon, file_name) &&
			     debug_name_may_exist(s->debuginfo_path, canon, debuglink_file);

		free(canon);
		if (other)
			goto standard;
	}
	errno = 0;
	return -1;
standard:
	return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name,
					    debuglink_file, debuglink_crc, debuginfo_file_name);
}

/* The options' paths, or their defaults, kept: 0 or -ENOMEM. */
static int set_paths(struct ds_symbols *s)
{
	const char *v = s->o.vdso, *bd = s->o.buildid_dir, *pm = s->o.perf_map_dir, *e;
	char buf[PATH_MAX];
	struct utsname u;
	size_t n;

	s->o.vdso = s->o.buildid_dir = s->o.perf_map_dir = NULL;	/* not kept */
	if (!v && !uname(&u) &&
	    snprintf(buf, sizeof(buf), "/lib/modules/%s/vdso/vdso64.so", u.release) <
	    (int)sizeof(buf) && !access(buf, R_OK))
		v = buf;
	if (v && !(s->vdso = strdup(v)))
		return -ENOMEM;
	if (!(s->perf_map_dir = strdup(pm ? pm : "/tmp")))
		return -ENOMEM;
	if (!bd) {
		const char *h = getenv("HOME");

		e = getenv("PERF_BUILDID_DIR");
		if (e && *e)
			bd = e;
		else if (h && *h && snprintf(buf, sizeof(buf), "%s/.debug", h) < (int)sizeof(buf))
			bd = buf;
	}
	if (bd && *bd && !(s->buildid_dir = strdup(bd)))
		return -ENOMEM;
	n = sizeof(":.debug:/usr/lib/debug:") + (s->buildid_dir ? strlen(s->buildid_dir) : 0);
	s->debuginfo_path = malloc(n);
	if (!s->debuginfo_path)
		return -ENOMEM;
	snprintf(s->debuginfo_path, n, ":.debug:/usr/lib/debug%s%s", s->buildid_dir ? ":" : "",
		 s->buildid_dir ? s->buildid_dir : "");
	/* libdebuginfod asks nothing without servers: read once here */
	s->debuginfod = (e = getenv("DEBUGINFOD_URLS")) && *e;
	s->cbs.find_elf = dwfl_build_id_find_elf;
	s->cbs.find_debuginfo = find_debuginfo;
	s->cbs.section_address = dwfl_offline_section_address;
	s->cbs.debuginfo_path = &s->debuginfo_path;
	return 0;
}

/* The file's build-id is not the recorded one (or it has none any more,
 * or cannot be read as ELF although it exists): warn once, and the object is
 * not symbolized unless force_symbols.  id/n: the id libdwfl read, n <= 0
 * if none. */
static void check_build_id(struct ds_symbols *s, struct dso *d, const unsigned char *id,
			   int n)
{
	const struct ds_build_id *b = d->recorded;
	char rec[2 * DS_BUILD_ID_MAX + 1], now[2 * DS_BUILD_ID_MAX + 1] = "";

	if (!b)
		return;		/* nothing recorded: nothing to compare */
	if (n == b->size && !memcmp(id, b->id, (size_t)n))
		return;
	if (n <= 0 && access(d->path, F_OK) != 0)
		return;		/* the file is gone: nothing to symbolize anyway */
	if (n > 0)
		ds_build_id_hex(id, (size_t)n, now, sizeof(now));
	d->mismatch = true;
	if (s->o.warn)
		s->o.warn(s->o.warn_arg, d->path, ds_build_id_hex(b->id, b->size, rec, sizeof(rec)),
			  now);
}

static void close_name_fd(struct ds_symbols *s, struct dso *d)
{
	if (d->name_fd >= 0) {
		close(d->name_fd);
		s->nr_name_fds--;
	}
	d->name_fd = -1;
}

/* Report path to a Dwfl of d's own (d->dwfl, d->mod) and read its build-id
 * into d: 0, or -errno when it cannot be opened or read as ELF (d->mod
 * NULL). */
static int dso_open(struct ds_symbols *s, struct dso *d, const char *path)
{
	const unsigned char *bits = NULL;
	GElf_Addr bid_va;
	struct stat st;
	int n, fd;

	/* a crafted MMAP record may name a FIFO or a device: never block,
	 * read regular files only */
	close_name_fd(s, d);	/* of a file opened before */
	fd = ds_open_regular(path, NULL);
	if (fd < 0)
		return fd;
	/* a big file (a large library: megabytes of names) gets a descriptor
	 * of its own to read its names with; not more than NAME_FDS of them */
	if (s->nr_name_fds < NAME_FDS && !fstat(fd, &st) && st.st_size >= NAME_FD_MIN &&
	    (d->name_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) >= 0)
		s->nr_name_fds++;
	d->dwfl = dwfl_begin(&s->cbs);
	if (!d->dwfl) {
		close(fd);
		close_name_fd(s, d);
		return -ENOMEM;
	}
	dwfl_report_begin(d->dwfl);
	/* ET_DYN placed at 0: module addresses are the file's vaddrs; the
	 * fd is the library's from here on */
	d->mod = dwfl_report_elf(d->dwfl, d->short_name, path, fd, 0, false);
	dwfl_report_end(d->dwfl, NULL, NULL);
	if (!d->mod) {
		close(fd);	/* consumed on success only (not an ELF file) */
		close_name_fd(s, d);
		return -ENOEXEC;
	}
	{
		void **ud = NULL;

		/* for find_debuginfo() */
		dwfl_module_info(d->mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
		if (ud)
			*ud = s;
	}
	/* the build-id of the file itself (its notes), as perf records it;
	 * longer than perf's 20 bytes: cut, as perf does */
	n = dwfl_module_build_id(d->mod, &bits, &bid_va);
	d->build_id_len = 0;
	if (n > 0) {
		d->build_id_len = (size_t)n < sizeof(d->build_id) ? (size_t)n : sizeof(d->build_id);
		memcpy(d->build_id, bits, d->build_id_len);
	}
	return 0;
}

static void dso_close(struct ds_symbols *s, struct dso *d)
{
	if (d->dwfl)
		dwfl_end(d->dwfl);
	close_name_fd(s, d);
	d->dwfl = NULL;
	d->mod = NULL;
	d->build_id_len = 0;
}

/* d's file has the contents of its code (not a debug file, whose PT_LOAD
 * segments keep no file offsets: symbols only, through libdwfl). */
static bool has_code(const struct dso *d)
{
	GElf_Addr bias;
	Elf *e = dwfl_module_getelf(d->mod, &bias);
	size_t nph = 0;

	if (!e || elf_getphdrnum(e, &nph))
		return false;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
		    ph.p_filesz)
			return true;
	}
	return false;
}

static bool dso_matches(const struct dso *d)
{
	const struct ds_build_id *b = d->recorded;

	return d->mod && d->build_id_len == b->size && !memcmp(d->build_id, b->id, b->size);
}

/*
 * perf's build-id cache (perf record, perf buildid-cache): the recorded
 * object under its build-id, in the layouts perf has used:
 * DIR/.build-id/XX/REST/elf (REST/ a link to DIR/PATH/BUILDID/),
 * DIR/.build-id/XX/REST (a link to the file), DIR/.build-id/XX/REST.debug,
 * DIR/PATH/BUILDID/elf, and the "debug" files perf keeps beside "elf".  The
 * first one with the recorded build-id and the code's file contents is d's
 * module: a debug file (--only-keep-debug) has no file offsets for the
 * recorded addresses; it names the functions of a stripped file that
 * still has the recorded build-id (libdwfl finds REST.debug then).
 */
static bool dso_from_cache(struct ds_symbols *s, struct dso *d)
{
	static const char *const fmt[] = {
		"%s/.build-id/%.2s/%s/elf", "%s/.build-id/%.2s/%s", "%s/.build-id/%.2s/%s.debug",
		"%s/.build-id/%.2s/%s/debug",
	};
	char hex[2 * DS_BUILD_ID_MAX + 1], path[PATH_MAX];
	const struct ds_build_id *b = d->recorded;

	if (!s->buildid_dir || !b || !b->size)
		return false;
	ds_build_id_hex(b->id, b->size, hex, sizeof(hex));
	for (size_t i = 0; i < 6; i++) {
		int n;

		if (i < 4)
			n = snprintf(path, sizeof(path), fmt[i], s->buildid_dir, hex, hex + 2);
		else if (d->path[0] == '/')
			n = snprintf(path, sizeof(path), "%s%s/%s/%s", s->buildid_dir, d->path, hex,
				     i == 4 ? "elf" : "debug");
		else
			break;
		if (n >= (int)sizeof(path))
			continue;
		dso_close(s, d);
		if (!dso_open(s, d, path) && dso_matches(d) && has_code(d))
			return true;
	}
	dso_close(s, d);
	return false;
}

/* Report d's file to a Dwfl of its own and read its PT_LOAD segments and
 * build-id (checked against the recorded one; a file that is gone or
 * changed since the recording is looked for in the build-id cache).  A
 * file that cannot be read, or whose build-id changed since the recording,
 * leaves d->ok false (frames show as [name+0xoff]). */
static void dso_load(struct ds_symbols *s, struct dso *d)
{
	Elf *e;
	GElf_Addr bias;
	size_t nph = 0;

	d->loaded = true;
	dso_open(s, d, d->load_path ? d->load_path : d->path);
	if (d->recorded && !dso_matches(d) && !dso_from_cache(s, d))
		dso_open(s, d, d->load_path ? d->load_path : d->path);	/* the file again */
	if (!d->mod) {
		check_build_id(s, d, NULL, 0);
		return;
	}
	check_build_id(s, d, d->build_id, d->build_id_len ? (int)d->build_id_len : -1);
	if (d->mismatch && !s->o.force_symbols)
		return;		/* its frames show as offsets, never wrong names */
	e = dwfl_module_getelf(d->mod, &bias);
	if (!e || elf_getphdrnum(e, &nph))
		return;
	d->segs = calloc(nph ? nph : 1, sizeof(*d->segs));
	if (!d->segs)
		return;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
			d->segs[d->nr_segs].offset = ph.p_offset;
			d->segs[d->nr_segs].filesz = ph.p_filesz;
			d->segs[d->nr_segs].vaddr = ph.p_vaddr + bias;
			d->nr_segs++;
		}
	}
	d->ok = true;
}

/* __cxa_demangle from libstdc++ (cxxabi.h; C linkage): malloc'd or NULL */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* Demangled copy of an Itanium C++ name (owned by d), or name itself;
 * a function's as perf prints it unless d->full_names; a PLT stub's
 * "_Z...@plt" too, as perf names it. */
static const char *demangle(struct dso *d, const char *name)
{
	size_t len = strlen(name), plt = len > 4 && !strcmp(name + len - 4, "@plt") ? 4 : 0;
	char *dm, *m = NULL;
	int status = -1;

	if (name[0] != '_' || name[1] != 'Z')
		return name;
	if (plt && !(m = strndup(name, len - plt)))
		return name;
	dm = __cxa_demangle(m ? m : name, NULL, NULL, &status);
	free(m);
	if (!dm || status) {
		free(dm);
		return name;
	}
	if (!d->full_names && name[2] != 'T' && name[2] != 'G')
		ds_cxx_perf_name(dm);	/* not thunks, typeinfo... (_ZT, _ZG) */
	if (plt) {
		char *t = realloc(dm, strlen(dm) + 5);

		if (!t) {
			free(dm);
			return name;
		}
		dm = strcat(t, "@plt");
	}
	if (ds_grow(&d->demangled, &d->cap_demangled, d->nr_demangled + 1, sizeof(char *))) {
		free(dm);
		return name;
	}
	d->demangled[d->nr_demangled++] = dm;
	return dm;
}

/*
 * The name at offset off of the file of fd (max bytes to its end), read,
 * malloc'd, or NULL.  Touching a name in libelf's mapped image of a large
 * library faults in the pages around it too: a few thousand names met in
 * libLLVM's 3 MB of .dynstr mapped all of it (4 MB of peak RSS with its
 * .dynsym; libclang-cpp 3.5 MB).
 */
static char *read_name(int fd, size_t off, size_t max)
{
	size_t cap = 256, len = 0;
	char *b = NULL;

	for (;;) {
		size_t want = cap - len < max - len ? cap - len : max - len;
		char *t = realloc(b, cap), *z;
		ssize_t r;

		if (!t || !want) {
			free(t ? t : b);
			return NULL;
		}
		b = t;
		r = pread(fd, b + len, want, (off_t)(off + len));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			free(b);
			return NULL;
		}
		z = memchr(b + len, 0, (size_t)r);
		len += (size_t)r;
		if (z) {
			t = realloc(b, (size_t)(z - b) + 1);
			return t ? t : b;
		}
		cap *= 2;
	}
}

/* A range's name as shown (demangled): read through d->name_fd when it is
 * in the main file's image, else read there. */
static const char *shown_name(struct dso *d, const char *name)
{
	GElf_Addr bias;
	Elf *e = d->name_fd >= 0 ? dwfl_module_getelf(d->mod, &bias) : NULL;
	size_t size = 0;
	const char *base = e ? elf_rawfile(e, &size) : NULL, *dm;
	char *c;

	if (!base || name < base || name >= base + size ||
	    !(c = read_name(d->name_fd, (size_t)(name - base), size - (size_t)(name - base))))
		return demangle(d, name);
	dm = demangle(d, c);
	if (dm != c) {
		free(c);
		return dm;
	}
	if (ds_grow(&d->demangled, &d->cap_demangled, d->nr_demangled + 1, sizeof(char *))) {
		free(c);
		return name;	/* the same text, shown as is */
	}
	d->demangled[d->nr_demangled++] = c;
	return c;
}

/* libdwfl's symbol of va (not demangled; NULL: none), its address, size */
static const char *dwfl_sym(struct dso *d, uint64_t va, uint64_t *value, uint64_t *size)
{
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(d->mod, va, &off, &sym, NULL, NULL, NULL);

	*value = va - off;
	*size = name ? sym.st_size : 0;
	return name && *name ? name : NULL;
}

/* The symbol of module address va: name (demangled) and offset.  The
 * object's symbols are read once, at its first address (lib/symtab.c);
 * each range's name is demangled once. */
static const char *dso_sym(struct dso *d, uint64_t va, uint64_t *sym_off)
{
	const char *name;
	uint64_t value, size, off;

	if (!d->tab_tried) {
		GElf_Addr bias;
		Elf *e = dwfl_module_getelf(d->mod, &bias);

		d->tab_tried = true;
		d->tab_ok = !ds_symtab_build_fd(&d->tab, d->mod, d->name_fd);
		/* the PLT stubs, named as perf does (they have no symbols):
		 * where they are now, their names at the first address in them */
		if (e)
			ds_plt_bounds(e, bias, &d->plt_lo, &d->plt_hi);
	}
	if (va >= d->plt_lo && va < d->plt_hi) {
		const struct ds_namedrange *p;

		if (!d->plt_read) {
			GElf_Addr bias;
			Elf *e = dwfl_module_getelf(d->mod, &bias);

			d->plt_read = true;
			if (!e || ds_plt_build(&d->names, e, bias))
				ds_nametab_free(&d->names);	/* without memory: none */
		}
		p = ds_nametab_find(&d->names, va);

		if (p) {
			/* C++ stubs demangled, once (d owns its table) */
			((struct ds_namedrange *)p)->name = demangle(d, p->name);
			*sym_off = va - p->start;
			return p->name;
		}
	}
	if (d->tab_ok) {
		struct ds_symrange *r = ds_symtab_find(&d->tab, va);
		size_t i;

		if (!r) {
			*sym_off = 0;
			return NULL;
		}
		i = (size_t)(r - d->tab.r);
		if (!(d->tab.shown[i / 64] >> (i % 64) & 1)) {
			r->name = shown_name(d, r->name);	/* once per range */
			d->tab.shown[i / 64] |= 1ULL << (i % 64);
		}
		*sym_off = va - r->value;	/* covered by its symbol */
		return r->name;
	}
	name = dwfl_sym(d, va, &value, &size);
	off = va - value;
	/* a sized symbol must cover the address (a stripped object's nearest
	 * dynamic symbol does not name its local code) */
	if (name && size && off >= size)
		name = NULL;
	*sym_off = name ? off : 0;
	return name ? demangle(d, name) : NULL;
}

static const char *base_name(const char *p)
{
	const char *b = strrchr(p, '/');

	return b ? b + 1 : p;
}

static bool dso_is(const void *val, const void *path)
{
	return !strcmp(((const struct dso *)val)->path, path);
}

static struct dso *dso_get(struct ds_symbols *s, const char *path)
{
	uint64_t h = ds_hash_str(path);
	struct dso *d = ds_htab_get(&s->dso_by_path, h, dso_is, path);

	if (d)
		return d;
	if (ds_grow(&s->dsos, &s->cap_dsos, s->nr_dsos + 1, sizeof(*s->dsos)))
		return NULL;
	d = calloc(1, sizeof(*d));
	if (d)
		d->name_fd = -1;
	if (!d || !(d->path = strdup(path)) || ds_htab_put(&s->dso_by_path, h, d)) {
		if (d)
			free(d->path);
		free(d);
		return NULL;
	}
	d->short_name = base_name(d->path);
	d->idx = (uint32_t)s->nr_dsos;
	d->full_names = s->o.full_names;
	d->recorded = ds_htab_get(&s->rec_ids, h, bid_is, d->path);
	if (!strcmp(path, "[vdso]"))
		d->load_path = s->vdso;	/* its image, if there is one */
	s->dsos[s->nr_dsos++] = d;
	return d;
}

static uint32_t new_gen(struct ds_symbols *s);

/* Anonymous memory, as MMAP records name it (JIT code is there). */
static bool is_anon(const char *f)
{
	return !*f || !strcmp(f, "//anon") || !strncmp(f, "[anon:", 6) ||
	       !strncmp(f, "/anon_hugepage", 14);
}

/* The perf map of m's process (perf_map_dir/perf-PID.map) into buf if
 * there is one (looked for once per process), else NULL. */
static const char *perf_map_of(struct ds_symbols *s, struct mapset *m, char *buf, size_t len)
{
	struct stat st;

	if (m->perfmap < 0)
		return NULL;	/* looked for: none */
	if (snprintf(buf, len, "%s/perf-%u.map", s->perf_map_dir, m->pid) >= (int)len)
		return NULL;
	if (!m->perfmap)
		m->perfmap = !stat(buf, &st) && S_ISREG(st.st_mode) ? 1 : -1;
	return m->perfmap > 0 ? buf : NULL;
}

static struct mapset *mapset_get(struct ds_symbols *s, uint32_t pid)
{
	struct mapset *m = ds_htab_get(&s->maps, pid, NULL, NULL);

	if (m)
		return m;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->pid = pid;
	m->gen = new_gen(s);
	if (ds_htab_put(&s->maps, pid, m)) {
		free(m);
		return NULL;
	}
	return m;
}

static int set_comm(struct ds_symbols *s, uint32_t tid, const char *name)
{
	struct comm *c = ds_htab_get(&s->comms, tid, NULL, NULL);

	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return -ENOMEM;
		c->tid = tid;
		if (ds_htab_put(&s->comms, tid, c)) {
			free(c);
			return -ENOMEM;
		}
	}
	snprintf(c->name, sizeof(c->name), "%s", name);
	return 0;
}

int ds_symbols_event(struct ds_symbols *s, const struct ds_event *ev)
{
	struct ds_event tmp;
	struct mapset *m;

	/* an older caller's smaller event: its fields, the rest 0 */
	if (!(ev = ds_sz_in(ev, &tmp, sizeof(tmp), DS_SZ_MIN(struct ds_event, hdr))))
		return -EINVAL;

	switch (ev->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2: {
		const char *path = ev->filename;
		uint64_t pgoff = ev->pgoff;
		char pm[PATH_MAX];
		struct dso *d;

		if (ev->misc & PERF_RECORD_MISC_KERNEL || !ev->len)
			return 0;
		m = mapset_get(s, ev->pid);
		if (!m)
			return -ENOMEM;
		/* anonymous memory of a process with a perf map: its JIT code,
		 * named by address (the "file offset" is the address) */
		if (is_anon(path) && perf_map_of(s, m, pm, sizeof(pm))) {
			path = pm;
			pgoff = ev->start;
		}
		d = dso_get(s, path);
		if (!d)
			return -ENOMEM;
		d->perfmap = path == pm;
		if (ds_grow(&m->maps, &m->cap, m->nr + 1, sizeof(struct map)))
			return -ENOMEM;
		m->maps[m->nr].start = ev->start;
		m->maps[m->nr].end = ev->start + ev->len;
		m->maps[m->nr].pgoff = pgoff;
		m->maps[m->nr].dso = d;
		m->nr++;
		m->gen = new_gen(s);
		return 0;
	}
	case PERF_RECORD_COMM:
		if (ev->misc & PERF_RECORD_MISC_COMM_EXEC) {
			m = ds_htab_get(&s->maps, ev->pid, NULL, NULL);
			if (m) {
				m->nr = 0;
				m->gen = new_gen(s);
			}
		}
		return set_comm(s, ev->tid, ev->comm);
	case PERF_RECORD_FORK: {
		struct mapset *parent;
		const char *pc = ds_symbols_comm(s, ev->ptid);
		int err;

		if (pc && !ds_htab_get(&s->comms, ev->tid, NULL, NULL)) {
			char tmp[16];

			snprintf(tmp, sizeof(tmp), "%s", pc);
			err = set_comm(s, ev->tid, tmp);
			if (err)
				return err;
		}
		if (ev->pid == ev->ppid)
			return 0;
		parent = ds_htab_get(&s->maps, ev->ppid, NULL, NULL);
		if (!parent || !parent->nr)
			return 0;
		m = mapset_get(s, ev->pid);
		parent = ds_htab_get(&s->maps, ev->ppid, NULL, NULL);
		if (!m || !parent || ds_grow(&m->maps, &m->cap, parent->nr, sizeof(struct map)))
			return -ENOMEM;
		memcpy(m->maps, parent->maps, parent->nr * sizeof(struct map));
		m->nr = parent->nr;
		m->gen = new_gen(s);
		return 0;
	}
	default:
		return 0;
	}
}

const char *ds_symbols_comm(struct ds_symbols *s, uint32_t tid)
{
	struct comm *c = s->last_comm;

	/* comms are never freed: the last one found stays valid */
	if (!c || c->tid != tid) {
		c = ds_htab_get(&s->comms, tid, NULL, NULL);
		if (c)
			s->last_comm = c;
	}

	/* the idle task has no COMM record; perf calls it swapper */
	return c ? c->name : tid == 0 ? "swapper" : NULL;
}

/* A max-heap of mapping indices (the latest mapping on top). */
static void heap_push(uint32_t *h, size_t *n, uint32_t v)
{
	size_t i = (*n)++;

	for (; i && h[(i - 1) / 2] < v; i = (i - 1) / 2)
		h[i] = h[(i - 1) / 2];
	h[i] = v;
}

static void heap_pop(uint32_t *h, size_t *n)
{
	uint32_t v = h[--*n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] > h[c])
			c++;
		if (h[c] <= v)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = v;
}

static int cmp_start(const void *a, const void *b, void *arg)
{
	const struct map *maps = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (maps[x].start != maps[y].start)
		return maps[x].start < maps[y].start ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int cmp_end(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* m->segs from m->maps: between two consecutive starts or ends of
 * mappings, the latest mapping covering the addresses (a sweep over the
 * starts with a heap of the covering mappings).  0 or -ENOMEM. */
static int build_segs(struct mapset *m)
{
	size_t n = m->nr, nh = 0, nb = 0, next = 0, k = 0;
	uint32_t *order = malloc((n ? n : 1) * sizeof(*order));
	uint32_t *heap = malloc((n ? n : 1) * sizeof(*heap));
	uint64_t *bounds = malloc((2 * n + 1) * sizeof(*bounds));
	int err = -ENOMEM;

	m->nr_segs = 0;
	if (!order || !heap || !bounds || n >= NO_MAP)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (m->maps[i].end <= m->maps[i].start)
			continue;	/* wraps: no address is in it */
		order[k++] = (uint32_t)i;
		bounds[nb++] = m->maps[i].start;
		bounds[nb++] = m->maps[i].end;
	}
	n = k;
	qsort_r(order, n, sizeof(*order), cmp_start, m->maps);
	qsort(bounds, nb, sizeof(*bounds), cmp_end);
	k = 0;
	for (size_t i = 0; i < nb; i++) {
		if (!k || bounds[i] != bounds[k - 1])
			bounds[k++] = bounds[i];
	}
	nb = k;
	/* [bounds[i], bounds[i + 1]): the latest mapping covering bounds[i] */
	for (size_t i = 0; i + 1 < nb; i++) {
		uint64_t at = bounds[i];
		struct mseg *last = m->nr_segs ? &m->segs[m->nr_segs - 1] : NULL;

		for (; next < n && m->maps[order[next]].start <= at; next++)
			heap_push(heap, &nh, order[next]);
		while (nh && m->maps[heap[0]].end <= at)
			heap_pop(heap, &nh);
		if (!nh)
			continue;	/* a gap */
		if (last && last->end == at && last->map == heap[0]) {
			last->end = bounds[i + 1];	/* the same mapping goes on */
			continue;
		}
		if (ds_grow(&m->segs, &m->cap_segs, m->nr_segs + 1, sizeof(*m->segs)))
			goto out;
		m->segs[m->nr_segs].start = at;
		m->segs[m->nr_segs].end = bounds[i + 1];
		m->segs[m->nr_segs].map = heap[0];
		m->nr_segs++;
	}
	err = 0;
out:
	free(order);
	free(heap);
	free(bounds);
	return err;
}

/* The mapping of ip in m (the latest one added wins), or NO_MAP. */
static uint32_t find_map(struct mapset *m, uint64_t ip)
{
	size_t lo;

	if (!m)
		return NO_MAP;
	if (m->segs_gen != m->gen) {
		if (build_segs(m)) {
			/* without memory: the mappings one by one */
			for (size_t i = m->nr; i-- > 0;) {
				if (ip >= m->maps[i].start && ip < m->maps[i].end)
					return i < NO_MAP ? (uint32_t)i : NO_MAP;
			}
			return NO_MAP;
		}
		m->segs_gen = m->gen;
		m->last_seg = 0;
	}
	/* a chain's frames are mostly in the object of the one before */
	if (m->last_seg < m->nr_segs && ip >= m->segs[m->last_seg].start &&
	    ip < m->segs[m->last_seg].end)
		return m->segs[m->last_seg].map;
	lo = ds_count_starts(m->segs, m->nr_segs, sizeof(*m->segs), ip);
	if (!lo || ip >= m->segs[lo - 1].end)
		return NO_MAP;
	m->last_seg = lo - 1;
	return m->segs[lo - 1].map;
}

static const char *keep_str(struct ds_symbols *s, const char *str);

/* The name of kallsyms symbol k, or NULL (the kept file was written to
 * since it was read, cannot be read any more, or no memory). */
static const char *ksym_name(struct ds_symbols *s, size_t k)
{
	char buf[KS_LINE + 1];
	struct stat st;
	const char *p;
	uint32_t at;
	ssize_t n;

	if (s->kfd < 0)
		return s->kstrs + s->kname[k];
	at = ds_ktab_get(&s->knames, k);
	if (at)
		return s->kcache[at - 1];
	if (fstat(s->kfd, &st) || st.st_size != s->kst.st_size ||
	    st.st_mtim.tv_sec != s->kst.st_mtim.tv_sec ||
	    st.st_mtim.tv_nsec != s->kst.st_mtim.tv_nsec)
		return NULL;
	do
		n = pread(s->kfd, buf, s->klen[k], s->kname[k]);
	while (n < 0 && errno == EINTR);
	if (n != s->klen[k] || n == 0)
		return NULL;
	buf[n] = 0;
	if (ds_grow(&s->kcache, &s->cap_kcache, s->nr_kcache + 1, sizeof(*s->kcache)) ||
	    !(p = keep_str(s, buf)) || ds_ktab_put(&s->knames, k, (uint32_t)s->nr_kcache + 1))
		return NULL;
	s->kcache[s->nr_kcache++] = p;
	return p;
}

/* What object d gives a frame of it: its names, and unless it is a perf
 * map its build-id (the recording's names the object profiled) and
 * whether the file's differs. */
static void dso_info(const struct dso *d, struct ds_sym_info *out)
{
	out->dso = d->path;
	out->dso_short = d->short_name;
	if (d->perfmap)
		return;
	if (d->recorded) {
		out->build_id = d->recorded->id;
		out->build_id_len = d->recorded->size;
	} else if (d->build_id_len) {
		out->build_id = d->build_id;
		out->build_id_len = d->build_id_len;
	}
	out->mismatch = d->mismatch;
}

/* What the kernel gives a frame of it. */
static void kernel_info(const struct ds_symbols *s, struct ds_sym_info *out)
{
	out->kernel = true;
	out->dso = out->dso_short = "[kernel.kallsyms]";
	if (s->kbid_len) {	/* a pprof mapping's build-id */
		out->build_id = s->kbid;
		out->build_id_len = s->kbid_len;
	}
}

static void resolve_kernel(struct ds_symbols *s, uint64_t ip, struct ds_sym_info *out)
{
	size_t k = ds_count_starts(s->kaddr, s->nr_ksyms, sizeof(*s->kaddr), ip);
	const char *name = NULL;

	memset(out, 0, sizeof(*out));
	kernel_info(s, out);
	out->dso_off = ip;
	if (k && ip - s->kaddr[k - 1] < (1u << 24) && (name = ksym_name(s, k - 1))) {
		out->name = out->sym = name;
		out->sym_off = ip - s->kaddr[k - 1];
	} else {
		out->name = "[kernel.kallsyms]";
	}
}

/* snprintf(buf, len, "[%s+0x%" PRIx64 "]", name, off), by hand: an
 * object's frames without a symbol are many (a tenth of the frames of a
 * real recording). */
static void addr_name(char *buf, size_t len, const char *name, uint64_t off)
{
	static const char xd[] = "0123456789abcdef";
	size_t n = strlen(name), nd = 1;
	char *p;

	while (nd < 16 && off >> (4 * nd))
		nd++;
	if (n + nd + 6 > len) {	/* "[" "+0x" "]" NUL */
		snprintf(buf, len, "[%s+0x%" PRIx64 "]", name, off);
		return;
	}
	p = buf;
	*p++ = '[';
	memcpy(p, name, n);
	p += n;
	memcpy(p, "+0x", 3);
	p += 3;
	for (size_t i = nd; i-- > 0; off >>= 4)
		p[i] = xd[off & 0xf];
	p += nd;
	*p++ = ']';
	*p = 0;
}

/* What file offset off of d resolves to (map fields 0); a made-up name
 * ("[dso+0xoff]") goes to buf. */
static void resolve_user(struct ds_symbols *s, struct dso *d, uint64_t off,
			 struct ds_sym_info *out, char *buf, size_t len)
{
	memset(out, 0, sizeof(*out));
	if (!d->loaded && d->perfmap) {
		size_t bad;

		d->loaded = true;
		/* lines that do not parse are left out (never a crash) */
		ds_perfmap_read(&d->names, d->path, &bad);
	} else if (!d->loaded && (d->path[0] == '/' || d->load_path)) {
		dso_load(s, d);
	}
	dso_info(d, out);
	out->dso_off = off;
	if (d->perfmap) {	/* off is the address (the map's pgoff, its start) */
		const struct ds_namedrange *r = ds_nametab_find(&d->names, off);

		if (r) {
			out->name = out->sym = r->name;
			out->sym_off = off - r->start;
		} else {
			addr_name(buf, len, d->short_name, off);
			out->name = buf;
		}
		return;
	}
	for (size_t k = 0; d->ok && k < d->nr_segs; k++) {
		const struct seg *sg = &d->segs[k];

		if (off < sg->offset || off - sg->offset >= sg->filesz)
			continue;
		out->sym = dso_sym(d, off - sg->offset + sg->vaddr, &out->sym_off);
		break;
	}
	if (out->sym) {
		out->name = out->sym;
	} else if (d->path[0] == '[') {
		out->name = d->path;	/* [vdso], [vsyscall], [heap], ... */
	} else {
		/* no symbol: per address in the object, like perf */
		addr_name(buf, len, d->short_name, off);
		out->name = buf;
	}
}

static void set_map(struct ds_sym_info *out, const struct map *mp)
{
	out->map_start = mp->start;
	out->map_end = mp->end;
	out->map_pgoff = mp->pgoff;
}

/* Without the frame caches (they could not grow): the same answer. */
static void lookup_uncached(struct ds_symbols *s, uint32_t pid, uint64_t ip, bool kernel,
			    struct ds_sym_info *out, char *buf, size_t len)
{
	struct mapset *m;
	uint32_t i;

	if (kernel) {
		resolve_kernel(s, ip, out);
		return;
	}
	m = ds_htab_get(&s->maps, pid, NULL, NULL);
	i = find_map(m, ip);
	if (i == NO_MAP) {
		memset(out, 0, sizeof(*out));
		out->name = "[unknown]";
		return;
	}
	resolve_user(s, m->maps[i].dso, ip - m->maps[i].start + m->maps[i].pgoff, out, buf, len);
	set_map(out, &m->maps[i]);
}

static const struct frame *frame_at(const struct ds_symbols *s, uint32_t id)
{
	return &s->fchunks[id >> FRAME_CHUNK_BITS][id & (FRAME_CHUNK - 1)];
}

/* The whole of frame f, into out (map fields 0): what its object gives,
 * as resolve_user() and resolve_kernel() put it. */
static void frame_fill(const struct ds_symbols *s, const struct frame *f,
		       struct ds_sym_info *out)
{
	memset(out, 0, sizeof(*out));
	out->sz = sizeof(*out);
	out->name = f->name;
	out->sym = f->has_sym ? f->name : NULL;
	out->sym_off = f->sym_off;
	out->dso_off = f->dso_off;
	if (f->dso == FRAME_KERNEL)
		kernel_info(s, out);
	else if (f->dso != FRAME_NONE)
		dso_info(s->dsos[f->dso], out);
}

/* A copy of str that lives as long as s: 0 or -ENOMEM. */
static const char *keep_str(struct ds_symbols *s, const char *str)
{
	size_t n = strlen(str) + 1;
	char *p;

	if (s->sblock_size - s->sblock_used < n) {
		size_t sz = n > STR_BLOCK ? n : STR_BLOCK;

		if (ds_grow(&s->sblocks, &s->cap_sblocks, s->nr_sblocks + 1, sizeof(char *)))
			return NULL;
		p = malloc(sz);
		if (!p)
			return NULL;
		s->sblocks[s->nr_sblocks++] = p;
		s->sblock_size = sz;
		s->sblock_used = 0;
	}
	p = s->sblocks[s->nr_sblocks - 1] + s->sblock_used;
	memcpy(p, str, n);
	s->sblock_used += n;
	return p;
}

/* Intern a new frame of object dso (a FRAME_* for none), what si says
 * (its name copied when it is in buf): 0 or -ENOMEM. */
static int frame_add(struct ds_symbols *s, const struct ds_sym_info *si, const char *buf,
		     uint32_t dso, uint32_t *id)
{
	size_t c = s->nr_frames >> FRAME_CHUNK_BITS;
	struct frame *f;

	if (s->nr_frames >= UINT32_MAX)
		return -ENOMEM;
	if (c >= s->cap_fchunks) {
		size_t cap = s->cap_fchunks;

		if (ds_grow(&s->fchunks, &cap, c + 1, sizeof(*s->fchunks)))
			return -ENOMEM;
		memset(s->fchunks + s->cap_fchunks, 0,
		       (cap - s->cap_fchunks) * sizeof(*s->fchunks));
		s->cap_fchunks = cap;
	}
	if (!s->fchunks[c] && !(s->fchunks[c] = malloc(FRAME_CHUNK * sizeof(*f))))
		return -ENOMEM;
	f = &s->fchunks[c][s->nr_frames & (FRAME_CHUNK - 1)];
	/* resolve_*() name a frame by its symbol when it has one */
	f->name = si->name;
	f->has_sym = si->sym != NULL;
	f->sym_off = si->sym_off;
	f->dso_off = si->dso_off;
	f->dso = dso;
	if (si->name == buf && !(f->name = keep_str(s, buf)))
		return -ENOMEM;
	*id = (uint32_t)s->nr_frames++;
	return 0;
}

static int kernel_frame(struct ds_symbols *s, uint64_t ip, uint32_t *id)
{
	uint32_t at = ds_ktab_get(&s->kframes, ip);
	struct ds_sym_info si;
	int err;

	if (at) {
		*id = (uint32_t)(at - 1);
		return 0;
	}
	resolve_kernel(s, ip, &si);
	err = frame_add(s, &si, NULL, FRAME_KERNEL, id);
	if (!err)
		err = ds_ktab_put(&s->kframes, ip, *id + 1);
	return err;
}

static int unknown_frame(struct ds_symbols *s, uint32_t *id)
{
	struct ds_sym_info si;
	int err;

	if (s->unknown_frame) {
		*id = s->unknown_frame - 1;
		return 0;
	}
	memset(&si, 0, sizeof(si));
	si.name = "[unknown]";
	err = frame_add(s, &si, NULL, FRAME_NONE, id);
	if (!err)
		s->unknown_frame = *id + 1;
	return err;
}

static int dso_frame(struct ds_symbols *s, struct dso *d, uint64_t off, uint32_t *id)
{
	uint32_t at = ds_ktab_get(&d->frame_by_off, off);
	struct ds_sym_info si;
	char buf[PATH_MAX + 32];
	int err;

	if (at) {
		*id = (uint32_t)(at - 1);
		return 0;
	}
	resolve_user(s, d, off, &si, buf, sizeof(buf));
	err = frame_add(s, &si, buf, d->idx, id);
	if (!err)
		err = ds_ktab_put(&d->frame_by_off, off, *id + 1);
	return err;
}

/* A new generation for a mapset whose mappings changed: the cached
 * frames of its addresses are resolved again. */
static uint32_t new_gen(struct ds_symbols *s)
{
	if (s->gen_seq == UINT32_MAX) {
		/* wrapped (4 G mapping changes): number the mapsets again
		 * (their address views built again); the kernel generation
		 * changes too, so that users' caches keyed by generations
		 * start over */
		s->kgen++;
		s->gen_seq = 0;
		for (size_t i = 0; i < s->maps.used; i++) {
			struct mapset *m = s->maps.e[i].val;

			m->gen = ++s->gen_seq;
			m->segs_gen = 0;
		}
	}
	return ++s->gen_seq;
}

void ds_symbols_prefetch(const struct ds_symbols *s, uint32_t pid, uint64_t ip)
{
	/* a hint: the process's mappings are small and mostly cached, and
	 * the object's offset table needs them first */
	(void)s;
	(void)pid;
	(void)ip;
}

/* The frame of user address ip of pid, and its mapping (NULL: none; valid
 * until the next MMAP, exec or fork record): 0 or -ENOMEM. */
static int user_frame(struct ds_symbols *s, uint32_t pid, uint64_t ip, uint32_t *id,
		      const struct map **mp)
{
	struct mapset *m = s->last_ms;
	uint32_t i;
	int err;

	*mp = NULL;
	if (!m || m->pid != pid) {
		m = ds_htab_get(&s->maps, pid, NULL, NULL);
		if (!m)
			return unknown_frame(s, id);
		s->last_ms = m;
	}
	i = find_map(m, ip);
	if (i == NO_MAP)
		return unknown_frame(s, id);
	err = dso_frame(s, m->maps[i].dso, ip - m->maps[i].start + m->maps[i].pgoff, id);
	if (!err)
		*mp = &m->maps[i];
	return err;
}

uint32_t ds_symbols_user_gen(struct ds_symbols *s, uint32_t pid)
{
	struct mapset *m = s->last_ms;

	if (!m || m->pid != pid) {
		m = ds_htab_get(&s->maps, pid, NULL, NULL);
		if (!m)
			return 0;
		s->last_ms = m;
	}
	return m->gen;
}

uint32_t ds_symbols_kernel_gen(const struct ds_symbols *s)
{
	return s->kgen;
}

int ds_symbols_frame(struct ds_symbols *s, uint32_t pid, uint64_t ip, bool kernel,
		     uint32_t *id)
{
	const struct map *mp;

	return kernel ? kernel_frame(s, ip, id) : user_frame(s, pid, ip, id, &mp);
}

int ds_symbols_frame_get(const struct ds_symbols *s, uint32_t id, struct ds_sym_info *out)
{
	struct ds_sym_info full;

	if (out->sz < DS_SZ_MIN(struct ds_sym_info, name))
		return -EINVAL;
	if (id >= s->nr_frames)
		return -ENOENT;
	if (out->sz == sizeof(full)) {
		frame_fill(s, frame_at(s, id), out);
		return 0;
	}
	frame_fill(s, frame_at(s, id), &full);
	ds_sz_out(out, &full, sizeof(full));
	return 0;
}

const struct ds_sym_info *ds_symbols_frame_info(const struct ds_symbols *s, uint32_t id)
{
	struct frame_infos *fi = s->infos;
	size_t c = id >> FRAME_CHUNK_BITS;
	struct ds_sym_info *si;

	if (id >= s->nr_frames)
		return NULL;
	if (c >= fi->cap) {
		size_t cap = fi->cap;

		if (ds_grow(&fi->chunks, &cap, c + 1, sizeof(*fi->chunks)))
			return NULL;
		memset(fi->chunks + fi->cap, 0, (cap - fi->cap) * sizeof(*fi->chunks));
		fi->cap = cap;
	}
	if (!fi->chunks[c] && !(fi->chunks[c] = calloc(FRAME_CHUNK, sizeof(**fi->chunks))))
		return NULL;
	/* made once (sz 0: not yet): what a frame resolves to stays */
	si = &fi->chunks[c][id & (FRAME_CHUNK - 1)];
	if (!si->sz)
		frame_fill(s, frame_at(s, id), si);
	return si;
}

/* ds_symbols_lookup() into our whole struct */
static void lookup(struct ds_symbols *s, uint32_t pid, uint64_t ip, bool kernel,
		   struct ds_sym_info *out, char *buf, size_t len)
{
	const struct map *mp = NULL;
	uint32_t id;
	int err;

	err = kernel ? kernel_frame(s, ip, &id) : user_frame(s, pid, ip, &id, &mp);
	if (err) {
		lookup_uncached(s, pid, ip, kernel, out, buf, len);
		return;
	}
	frame_fill(s, frame_at(s, id), out);
	if (mp)
		set_map(out, mp);
}

int ds_symbols_lookup(struct ds_symbols *s, uint32_t pid, uint64_t ip, bool kernel,
		      struct ds_sym_info *out, char *buf, size_t len)
{
	struct ds_sym_info full;

	if (out->sz == sizeof(full)) {
		lookup(s, pid, ip, kernel, out, buf, len);
		out->sz = sizeof(full);
		return 0;
	}
	/* another size: only the fields within the caller's sz written */
	if (out->sz < DS_SZ_MIN(struct ds_sym_info, name))
		return -EINVAL;
	lookup(s, pid, ip, kernel, &full, buf, len);
	ds_sz_out(out, &full, sizeof(full));
	return 0;
}

int ds_symbols_chain_ids(struct ds_symbols *s, uint32_t pid, uint64_t ctx,
			 const uint64_t *chain, uint64_t nr, uint32_t **ids, size_t *cap,
			 size_t *n)
{
	bool kernel = ctx == PERF_CONTEXT_KERNEL, have_ctx = ctx != 0;
	int err;

	*n = 0;
	for (uint64_t i = 0; i < nr; i++) {
		uint64_t ip = chain[i];
		const struct map *mp;
		uint32_t id;

		if (ip >= PERF_CONTEXT_MAX) {
			if (ip == DS_CONTEXT_USER_DEFERRED) {
				i++;	/* skip the cookie */
				continue;
			}
			have_ctx = true;
			kernel = ip == PERF_CONTEXT_KERNEL;
			continue;
		}
		if (have_ctx ? kernel : ip >= 0xffff800000000000ULL)
			err = kernel_frame(s, ip, &id);
		else
			err = user_frame(s, pid, ip, &id, &mp);
		if (!err)
			err = ds_grow(ids, cap, *n + 1, sizeof(**ids));
		if (err)
			return err;
		(*ids)[(*n)++] = id;
	}
	return 0;
}

const char *ds_symbols_resolve(struct ds_symbols *s, uint32_t pid, uint64_t ip, bool kernel,
			       char *buf, size_t len)
{
	struct ds_sym_info si;

	lookup(s, pid, ip, kernel, &si, buf, len);
	return si.name;
}

void ds_frames_reset(struct ds_frames *f)
{
	if (f->sz < sizeof(*f))
		return;
	f->nr = 0;
	f->store_len = 0;
}

void ds_frames_free(struct ds_frames *f)
{
	size_t sz = f->sz;

	if (sz < sizeof(*f))
		return;
	free(f->names);
	free(f->store);
	memset(f, 0, sz);
	f->sz = sz;
}

int ds_symbolize_chain(struct ds_symbols *s, uint32_t pid, const uint64_t *chain,
		       uint64_t nr, struct ds_frames *out)
{
	bool kernel = false, have_ctx = false;
	size_t n = 0;
	char buf[128];
	int err = 0;

	/* every field is needed: an older, smaller struct has none we lack */
	if (out->sz < sizeof(*out))
		return -EINVAL;
	ds_frames_reset(out);
	/* out->names holds the names' offsets in out->store until the end (no
	 * allocation per call once the arrays have grown) */
	for (uint64_t i = 0; i < nr; i++) {
		uint64_t ip = chain[i];
		const char *name;
		size_t nl;

		if (ip >= PERF_CONTEXT_MAX) {
			if (ip == DS_CONTEXT_USER_DEFERRED) {
				i++;	/* skip the cookie */
				continue;
			}
			have_ctx = true;
			kernel = ip == PERF_CONTEXT_KERNEL;
			continue;
		}
		name = ds_symbols_resolve(s, pid, ip,
					  have_ctx ? kernel : ip >= 0xffff800000000000ULL,
					  buf, sizeof(buf));
		nl = strlen(name) + 1;
		if ((err = ds_grow(&out->store, &out->store_cap, out->store_len + nl, 1)) ||
		    (err = ds_grow(&out->names, &out->cap, n + 1, sizeof(char *))))
			return err;
		memcpy(out->store + out->store_len, name, nl);
		out->names[n++] = (char *)(uintptr_t)out->store_len;
		out->store_len += nl;
	}
	err = ds_grow(&out->names, &out->cap, n ? n : 1, sizeof(char *));
	if (err)
		return err;
	/* chain is leaf first; frames are root first */
	for (size_t i = 0, j = n; i < j--; i++) {
		char *t = out->names[i];

		out->names[i] = out->names[j];
		out->names[j] = t;
	}
	for (size_t i = 0; i < n; i++)
		out->names[i] = out->store + (uintptr_t)out->names[i];
	out->nr = n;
	return 0;
}
