// SPDX-License-Identifier: MIT
/*
 * An object's symbols, read once into a sorted array of address ranges and
 * looked up by binary search (lib/symtab.h).
 *
 * libdwfl's dwfl_module_addrinfo() looks at every symbol of the table for
 * each address it is asked: one lookup per distinct function met made a
 * large library (16 k functions of libLLVM, 45 k symbols) cost seconds.  Its
 * answer is kept exactly (folded stacks and golden files do not change), so
 * here are its rules, as elfutils 0.158 and later apply them, and how this
 * file computes them for all addresses in one sweep.
 *
 * Symbols: libdwfl's table of the module (the main file's or the debug
 * file's .symtab, or .dynsym; MiniDebugInfo's appended), with the value
 * dwfl_module_getsym_info() gives (module address; section-less and
 * non-allocated symbols as they are).  A symbol takes part if it has a
 * name, a section (not SHN_UNDEF) and is not a section, file or TLS
 * symbol, and if its value is <= the address.  The global (and weak)
 * symbols are searched first, in table order; the local ones only if that
 * found no sized symbol covering the address and no size-less symbol
 * exactly at it.
 *
 * 1. A sized symbol covers [value, value + size).  Of those covering the
 *    address, in table order, one replaces the one kept so far if it
 *    starts higher, or binds more strongly (global 3, weak 2, local 1,
 *    others 0; even if it starts lower), or starts at the same address
 *    with the same binding and is smaller.
 * 2. With no sized symbol covering the address in the global pass, a
 *    size-less global one exactly at the address wins (the last one).
 * 3. Then the local pass as in 1.
 * 4. Otherwise a size-less symbol ("label"): let M be the highest end
 *    (value + size, a label's value) of the symbols taking part in the
 *    passes searched; the answer is the last, in search order, size-less
 *    symbol with value M that is "in the same section" as the address:
 *    for a symbol of a special section (>= SHN_LORESERVE, or
 *    non-allocated) that means value == address, for any other the
 *    section of the main file containing its value and the one
 *    containing the address are the same one, as libdwfl's binary search
 *    over the allocated sections sorted by address finds them (an end
 *    address belongs to its section unless the next one starts there; no
 *    section: index 0).  No such label: no symbol.
 *
 * The answer changes only at a symbol's value, the address after a
 * label's value, a symbol's end, and a section's start, end and end + 1:
 * the sweep visits those in order, keeps the covering sized symbols of
 * each pass (by table order) and M, and stores one range per answer.
 * ppc64 ELFv1 function descriptors, which libdwfl resolves to a second
 * value per symbol, are not modelled (-ENOTSUP: the caller asks libdwfl).
 */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <unistd.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "symtab.h"

struct esym {
	uint64_t value;
	uint64_t last;		/* last address a sized symbol covers */
	uint64_t label_end;	/* value + size (wrapping, as libdwfl adds) */
	uint64_t size;
	const char *name;
	uint32_t order;		/* search order: global pass, then local */
	uint8_t bind;		/* binding: global 3, weak 2, local 1, other 0 */
	bool local;		/* found in the local pass */
	bool special;		/* special or non-allocated section */
	bool unread;		/* name in the main file's image, not read yet */
};

/* The main file's image as libelf holds it (usually mapped: touching a
 * name there faults in the pages around it), and a descriptor of the
 * same file to read names with instead (-1: read them in the image). */
struct image {
	const char *base;
	size_t size;
	int fd;
};

struct secref {
	uint64_t start, end;
	size_t ndx;
};

/* main file, debug file, MiniDebugInfo, and one to spare */
#define SWEEP_ELFS 4

struct sweep {
	struct esym *e;		/* by value, then search order */
	size_t n;
	uint32_t *labels;	/* the size-less ones: indices into e, same order */
	size_t nr_labels;
	struct secref *secs;	/* allocated sections by start (stable) */
	size_t nr_secs;
	uint32_t *act[2];	/* covering sized symbols, global and local pass */
	size_t nr_act[2];
	Elf *elfs[SWEEP_ELFS];	/* the files the symbols came from */
};

static int bind_value(unsigned char info)
{
	switch (GELF_ST_BIND(info)) {
	case STB_GLOBAL:
		return 3;
	case STB_WEAK:
		return 2;
	case STB_LOCAL:
		return 1;
	default:
		return 0;
	}
}

/* A key and what it sorts (an index, or nothing). */
struct rkey {
	uint64_t key;
	uint64_t idx;
};

/* Sort a[0, n) by key, stably (equal keys keep their order): least
 * significant byte first, a byte all keys share skipped; tmp holds n.
 * Symbol tables are large (libLLVM's 45 k symbols, 100 k breakpoints) and
 * their keys are addresses: linear, where qsort's comparisons were a tenth
 * of a real recording's instructions. */
static void radix_sort(struct rkey *a, struct rkey *tmp, size_t n)
{
	struct rkey *src = a, *dst = tmp;

	for (unsigned shift = 0; shift < 64; shift += 8) {
		size_t count[256] = { 0 }, pos = 0;

		for (size_t i = 0; i < n; i++)
			count[(src[i].key >> shift) & 0xff]++;
		if (n && count[(src[0].key >> shift) & 0xff] == n)
			continue;	/* one byte value: nothing to do */
		for (size_t b = 0; b < 256; b++) {
			size_t c = count[b];

			count[b] = pos;
			pos += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i].key >> shift) & 0xff]++] = src[i];
		dst = src;
		src = src == a ? tmp : a;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
}

/* The same for bare keys (the sweep's breakpoints: no index to carry, half
 * the bytes moved and touched). */
static void radix_sort_keys(uint64_t *a, uint64_t *tmp, size_t n)
{
	uint64_t *src = a, *dst = tmp;

	for (unsigned shift = 0; shift < 64; shift += 8) {
		size_t count[256] = { 0 }, pos = 0;

		for (size_t i = 0; i < n; i++)
			count[(src[i] >> shift) & 0xff]++;
		if (n && count[(src[0] >> shift) & 0xff] == n)
			continue;	/* one byte value: nothing to do */
		for (size_t b = 0; b < 256; b++) {
			size_t c = count[b];

			count[b] = pos;
			pos += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i] >> shift) & 0xff]++] = src[i];
		dst = src;
		src = src == a ? tmp : a;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
}

/* The section index libdwfl's find_section() gives addr (0: none). */
static size_t sec_of(const struct sweep *w, uint64_t addr)
{
	size_t l = 0, u = w->nr_secs;

	while (l < u) {
		size_t i = (l + u) / 2;

		if (addr < w->secs[i].start) {
			u = i;
		} else if (addr > w->secs[i].end) {
			l = i + 1;
		} else {
			if (addr == w->secs[i].end && i + 1 < w->nr_secs &&
			    addr == w->secs[i + 1].start)
				i++;
			return w->secs[i].ndx;
		}
	}
	return 0;
}

/* The main file's allocated sections, in module addresses, sorted by start;
 * equal starts keep the file's order.  On a libelf error libdwfl finds no
 * section for any address: none here either. */
static int read_sections(struct sweep *w, Elf *elf, uint64_t bias)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx, cap = 0;

	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		struct secref r;
		size_t k;

		if (!gelf_getshdr(scn, &sh)) {
			w->nr_secs = 0;
			return 0;
		}
		if (!(sh.sh_flags & SHF_ALLOC))
			continue;
		if (!elf_strptr(elf, shstrndx, sh.sh_name)) {
			w->nr_secs = 0;
			return 0;
		}
		r.start = sh.sh_addr + bias;
		r.end = r.start + sh.sh_size;
		r.ndx = elf_ndxscn(scn);
		if (ds_grow(&w->secs, &cap, w->nr_secs + 1, sizeof(*w->secs)))
			return -ENOMEM;
		/* insertion: stable, and a file has few sections */
		for (k = w->nr_secs; k > 0 && w->secs[k - 1].start > r.start; k--)
			w->secs[k] = w->secs[k - 1];
		w->secs[k] = r;
		w->nr_secs++;
	}
	return 0;
}

/* The files the table came from (the main file, its debug file,
 * MiniDebugInfo's image), for release_image(). */
static void note_elf(struct sweep *w, Elf *elf)
{
	size_t k = 0;

	while (k < SWEEP_ELFS && w->elfs[k] && w->elfs[k] != elf)
		k++;
	if (elf && k < SWEEP_ELFS)
		w->elfs[k] = elf;
}

/* libelf and libdwfl write into a private mapping of an ELF image only to
 * convert a file of the other byte order, or to relocate an ET_REL file */
static bool native_image(Elf *elf)
{
	const unsigned char host = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB :
									      ELFDATA2MSB;
	const char *id = elf_getident(elf, NULL);
	GElf_Ehdr eh;

	return id && (unsigned char)id[EI_DATA] == host && gelf_getehdr(elf, &eh) &&
	       eh.e_type != ET_REL;
}

/*
 * Give back the pages of elf's image that reading a table faulted in.
 * libelf maps the file (MAP_PRIVATE), and a peak RSS counts every page
 * touched: the symbol table of a large library is megabytes, of which a
 * profile later reads a few names.  Only a file mapping that holds the
 * whole image is released (MADV_DONTNEED: a page read again comes back
 * from the page cache, as it was).  libdwfl maps it writable, but nothing
 * writes to it where native_image() holds.  An image libelf read into
 * memory (MiniDebugInfo, or where mmap() failed) is left alone.
 * /proc/self/maps tells which it is, once per object.
 */
static void release_image(Elf *elf)
{
	size_t size = 0;
	const char *base = elf ? elf_rawfile(elf, &size) : NULL;
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)base, hi;
	char line[512];
	FILE *f;

	if (!base || !size || pg <= 0 || lo % (uintptr_t)pg || !native_image(elf))
		return;
	hi = (lo + size + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return;
	/* "start-end perms offset dev inode ...", by hand: sscanf() cost
	 * 3 % of a report, as this process maps a file per object */
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *perms;
		unsigned long start, end, ino;

		start = strtoul(p, &p, 16);
		if (*p++ != '-')
			continue;
		end = strtoul(p, &p, 16);
		if (start > lo || lo >= end)
			continue;
		if (*p++ != ' ' || strlen(p) < 5)
			break;
		perms = p;
		p += 4;
		for (int field = 0; field < 2; field++) {	/* offset, dev */
			while (*p == ' ')
				p++;
			while (*p && *p != ' ')
				p++;
		}
		ino = strtoul(p, NULL, 10);
		if (ino && perms[0] == 'r' && perms[3] == 'p' && hi <= end)
			madvise((void *)lo, hi - lo, MADV_DONTNEED);
		break;
	}
	fclose(f);
}

/* Symbols [from, to) of mod's table that take part, appended to w->e
 * (room for the whole table).  A name in the main file's image (img->fd
 * >= 0) is not read here: whether it is empty is found later
 * (drop_unnamed()). */
static void read_syms(struct sweep *w, Dwfl_Module *mod, int from, int to, bool local,
		      const struct image *img)
{
	for (int i = from; i < to; i++) {
		GElf_Sym sym;
		GElf_Addr value;
		GElf_Word shndx;
		Elf *elf = NULL;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &value, &shndx, &elf,
							   NULL);
		struct esym *e;
		bool unread;
		int type;

		note_elf(w, elf);
		if (!name || sym.st_shndx == SHN_UNDEF)
			continue;
		unread = img->fd >= 0 && name >= img->base && name < img->base + img->size;
		if (!unread && !*name)
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if (type == STT_SECTION || type == STT_FILE || type == STT_TLS)
			continue;
		e = &w->e[w->n];
		e->value = value;
		e->size = sym.st_size;
		e->label_end = value + sym.st_size;
		e->last = e->label_end > value ? e->label_end - 1 : UINT64_MAX;
		e->name = name;
		e->order = (uint32_t)w->n;
		e->bind = (uint8_t)bind_value(sym.st_info);
		e->local = local;
		e->special = shndx >= SHN_LORESERVE;
		e->unread = unread;
		w->n++;
	}
}

/*
 * Drop the symbols read_syms() kept unread whose name is empty, as if it
 * had not kept them: the bytes from the first such name to the last
 * one's first byte are read from img->fd in 64 KiB pieces, their NULs
 * marked in a bitmap (an eighth of their size), not touched in the image.
 * A large library's string table is megabytes that a peak RSS would
 * count: reading a name in a mapped image faults in the pages around it
 * too, and the names are spread over all of it.  If a read fails, the
 * names are looked at in the image.
 */
#define PIECE (64u << 10)

static void drop_unnamed(struct sweep *w, const struct image *img)
{
	size_t lo = SIZE_MAX, hi = 0, len, pos = 0, k = 0;
	uint64_t *nul = NULL;
	char *buf = NULL;

	for (size_t i = 0; i < w->n; i++) {
		if (w->e[i].unread) {
			size_t off = (size_t)(w->e[i].name - img->base);

			lo = off < lo ? off : lo;
			hi = off > hi ? off : hi;
		}
	}
	if (lo == SIZE_MAX)
		return;
	len = hi - lo + 1;
	nul = calloc((len + 63) / 64, sizeof(*nul));
	buf = malloc(PIECE);
	while (nul && buf && pos < len) {
		size_t want = len - pos < PIECE ? len - pos : PIECE;
		ssize_t r = pread(img->fd, buf, want, (off_t)(lo + pos));
		const char *p = buf, *end;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (end = buf + r; (p = memchr(p, 0, (size_t)(end - p))); p++) {
			size_t at = pos + (size_t)(p - buf);

			nul[at / 64] |= 1ULL << (at % 64);
		}
		pos += (size_t)r;
	}
	for (size_t i = 0; i < w->n; i++) {
		struct esym *e = &w->e[i];

		if (e->unread) {
			size_t at = (size_t)(e->name - img->base) - lo;

			if (pos == len ? nul[at / 64] >> (at % 64) & 1 : !*e->name)
				continue;
		}
		e->order = (uint32_t)k;	/* the same search order, no gaps */
		w->e[k++] = *e;
	}
	w->n = k;
	free(nul);
	free(buf);
}

/* Rule 1 over the covering sized symbols of one pass, in table order. */
static const struct esym *closest(const struct sweep *w, int pass)
{
	const struct esym *c = NULL;

	for (size_t i = 0; i < w->nr_act[pass]; i++) {
		const struct esym *s = &w->e[w->act[pass][i]];

		if (!c || c->value < s->value || c->bind < s->bind ||
		    (c->value == s->value && c->bind == s->bind && c->size > s->size))
			c = s;
	}
	return c;
}

/* Rule 4: the last label at m in search order in the section of addr. */
static const struct esym *label_at(const struct sweep *w, uint64_t m, uint64_t addr)
{
	size_t lo = 0, hi = w->nr_labels;
	int same = -1;		/* addr and m in one section; -1: not known yet */

	while (lo < hi) {	/* labels with value <= m */
		size_t mid = lo + (hi - lo) / 2;

		if (w->e[w->labels[mid]].value <= m)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo-- > 0) {
		const struct esym *s = &w->e[w->labels[lo]];

		if (s->value != m)
			break;
		if (s->special) {
			if (s->value == addr)
				return s;
			continue;
		}
		if (same < 0)
			same = sec_of(w, addr) == sec_of(w, m);
		if (same)
			return s;
	}
	return NULL;
}

/* Insert e index k into the pass's covering list, kept in table order. */
static void act_add(struct sweep *w, int pass, uint32_t k)
{
	uint32_t *a = w->act[pass];
	size_t i = w->nr_act[pass];

	for (; i > 0 && w->e[a[i - 1]].order > w->e[k].order; i--)
		a[i] = a[i - 1];
	a[i] = k;
	w->nr_act[pass]++;
}

static void act_expire(struct sweep *w, int pass, uint64_t addr)
{
	uint32_t *a = w->act[pass];
	size_t k = 0;

	for (size_t i = 0; i < w->nr_act[pass]; i++) {
		if (w->e[a[i]].last >= addr)
			a[k++] = a[i];
	}
	w->nr_act[pass] = k;
}

/* The answer from start on; t->r has room for every breakpoint. */
static void add_range(struct ds_symtab *t, uint64_t start, const struct esym *s)
{
	struct ds_symrange *p = t->nr ? &t->r[t->nr - 1] : NULL;
	const char *name = s ? s->name : NULL;
	uint64_t value = s ? s->value : 0;

	if (p && p->name == name && p->value == value)
		return;		/* the same name at the same offsets */
	p = &t->r[t->nr++];
	p->start = start;
	p->value = value;
	p->name = name;
}

/* Append key to out[0, *n) unless it is the last one there. */
static inline void put_bp(uint64_t *out, size_t *n, uint64_t key)
{
	if (!*n || out[*n - 1] != key)
		out[(*n)++] = key;
}

/*
 * The sweep's breakpoints into bps, sorted, each once: 0, the symbols'
 * values, the address after a label's value, the address after a sized
 * symbol's last one, and the sections' starts, ends and ends + 1.  bps
 * and tmp hold 2 * n + 3 * sections + 1 keys each.  The values (w->e is
 * by value) and the labels' next addresses come sorted, and the ends
 * mostly do (functions follow each other): they are sorted only when they
 * are not (radix, in bps), and the four lists merged.  Returns how many.
 */
static size_t breakpoints(struct sweep *w, uint64_t *bps, uint64_t *tmp)
{
	uint64_t *a = tmp, *b, *c, *d;
	size_t na = 0, nb = 0, nc = 0, nd = 0, ia = 0, ib = 0, ic = 0, id = 0, n = 0;
	bool sorted = true;

	for (size_t i = 0; i < w->n; i++)
		a[na++] = w->e[i].value;
	b = a + na;
	for (size_t i = 0; i < w->n; i++) {
		const struct esym *e = &w->e[i];

		if (!e->size && e->value != UINT64_MAX)
			b[nb++] = e->value + 1;
		if (!e->size)
			w->labels[w->nr_labels++] = (uint32_t)i;
	}
	c = b + nb;
	for (size_t i = 0; i < w->n; i++) {
		const struct esym *e = &w->e[i];

		if (e->size && e->last != UINT64_MAX) {
			sorted &= !nc || c[nc - 1] <= e->last + 1;
			c[nc++] = e->last + 1;
		}
	}
	if (!sorted)
		radix_sort_keys(c, bps, nc);
	d = c + nc;
	d[nd++] = 0;
	for (size_t i = 0; i < w->nr_secs; i++) {
		d[nd++] = w->secs[i].start;
		d[nd++] = w->secs[i].end;
		if (w->secs[i].end != UINT64_MAX)
			d[nd++] = w->secs[i].end + 1;
	}
	for (size_t i = 1; i < nd; i++) {	/* a few: insertion */
		uint64_t v = d[i];
		size_t j = i;

		for (; j > 0 && d[j - 1] > v; j--)
			d[j] = d[j - 1];
		d[j] = v;
	}
	/* the four merged into bps (which c was sorted through before) */
	while (ia < na || ib < nb || ic < nc || id < nd) {
		uint64_t v = UINT64_MAX;
		int from = -1;

		if (ia < na && (from < 0 || a[ia] < v))
			v = a[ia], from = 0;
		if (ib < nb && (from < 0 || b[ib] < v))
			v = b[ib], from = 1;
		if (ic < nc && (from < 0 || c[ic] < v))
			v = c[ic], from = 2;
		if (id < nd && (from < 0 || d[id] < v))
			v = d[id], from = 3;
		switch (from) {
		case 0: ia++; break;
		case 1: ib++; break;
		case 2: ic++; break;
		default: id++; break;
		}
		put_bp(bps, &n, v);
	}
	return n;
}

static int sweep(struct ds_symtab *t, struct sweep *w)
{
	uint64_t *bps = NULL, *tmp = NULL;
	uint64_t m = 0;
	size_t nbps, next = 0, max;
	struct ds_symrange *shrunk;
	int err = -ENOMEM;

	if (w->n > (SIZE_MAX / sizeof(*bps) - 3 * w->nr_secs - 1) / 2)
		return -ENOMEM;
	max = 2 * w->n + 3 * w->nr_secs + 1;
	bps = malloc(max * sizeof(*bps));
	tmp = malloc(max * sizeof(*tmp));
	w->labels = malloc((w->n ? w->n : 1) * sizeof(*w->labels));
	w->act[0] = malloc((w->n ? w->n : 1) * sizeof(uint32_t));
	w->act[1] = malloc((w->n ? w->n : 1) * sizeof(uint32_t));
	if (!bps || !tmp || !w->labels || !w->act[0] || !w->act[1])
		goto out;
	nbps = breakpoints(w, bps, tmp);
	t->r = malloc(nbps * sizeof(*t->r));
	if (!t->r)
		goto out;
	for (size_t b = 0; b < nbps; b++) {
		uint64_t addr = bps[b];
		const struct esym *exact = NULL, *ans;

		act_expire(w, 0, addr);
		act_expire(w, 1, addr);
		for (; next < w->n && w->e[next].value <= addr; next++) {
			const struct esym *e = &w->e[next];

			if (e->label_end > m)
				m = e->label_end;
			if (e->size && e->last >= addr)
				act_add(w, e->local, (uint32_t)next);
			else if (!e->size && !e->local && e->value == addr)
				exact = e;	/* later in search order */
		}
		ans = closest(w, 0);
		if (!ans)
			ans = exact;
		if (!ans)
			ans = closest(w, 1);
		if (!ans)
			ans = label_at(w, m, addr);
		add_range(t, addr, ans);
	}
	/* ranges of a table that stays: no slack */
	shrunk = realloc(t->r, t->nr * sizeof(*t->r));
	if (shrunk)
		t->r = shrunk;
	t->shown = calloc((t->nr + 63) / 64, sizeof(*t->shown));
	err = t->shown ? 0 : -ENOMEM;
out:
	free(bps);
	free(tmp);
	return err;
}

/* w->e by value, then search order (the order they were read in). */
static int sort_syms(struct sweep *w)
{
	struct rkey *k = malloc((w->n ? w->n : 1) * sizeof(*k));
	struct rkey *tmp = malloc((w->n ? w->n : 1) * sizeof(*tmp));
	int err = -ENOMEM;

	if (k && tmp) {
		for (size_t i = 0; i < w->n; i++) {
			k[i].key = w->e[i].value;
			k[i].idx = i;
		}
		radix_sort(k, tmp, w->n);
		/* e[i] = old e[k[i].idx], in place, cycle by cycle (no second
		 * array of the table's size to fault in); a place filled is
		 * marked UINT64_MAX in k */
		for (size_t i = 0; i < w->n; i++) {
			struct esym first;
			size_t j = i;

			if (k[i].idx == UINT64_MAX)
				continue;
			first = w->e[i];
			while (k[j].idx != i) {
				size_t from = (size_t)k[j].idx;

				w->e[j] = w->e[from];
				k[j].idx = UINT64_MAX;
				j = from;
			}
			w->e[j] = first;
			k[j].idx = UINT64_MAX;
		}
		err = 0;
	}
	free(k);
	free(tmp);
	return err;
}

int ds_symtab_build(struct ds_symtab *t, Dwfl_Module *mod)
{
	return ds_symtab_build_fd(t, mod, -1);
}

int ds_symtab_build_fd(struct ds_symtab *t, Dwfl_Module *mod, int fd)
{
	struct sweep w = { 0 };
	struct image img = { NULL, 0, -1 };
	GElf_Addr bias;
	GElf_Ehdr eh;
	Elf *main_elf = dwfl_module_getelf(mod, &bias);
	int n = dwfl_module_getsymtab(mod), first_global, err;

	memset(t, 0, sizeof(*t));
	if (main_elf && gelf_getehdr(main_elf, &eh) && eh.e_machine == EM_PPC64)
		return -ENOTSUP;
	if (n <= 0 || !main_elf)
		return 0;	/* no symbols: no symbol anywhere */
	first_global = dwfl_module_getsymtab_first_global(mod);
	if (first_global < 0)
		return 0;
	if (fd >= 0 && (img.base = elf_rawfile(main_elf, &img.size)))
		img.fd = fd;
	note_elf(&w, main_elf);
	err = read_sections(&w, main_elf, bias);
	if (!err && !(w.e = malloc((size_t)n * sizeof(*w.e))))
		err = -ENOMEM;
	if (!err) {
		read_syms(&w, mod, first_global ? first_global : 1, n, false, &img);
		if (first_global > 1)
			read_syms(&w, mod, 1, first_global, true, &img);
		drop_unnamed(&w, &img);
		t->nr_syms = w.n;
		err = sort_syms(&w);
		if (!err)
			err = sweep(t, &w);
	}
	for (size_t k = 0; k < SWEEP_ELFS; k++)
		release_image(w.elfs[k]);
	free(w.e);
	free(w.labels);
	free(w.secs);
	free(w.act[0]);
	free(w.act[1]);
	if (err)
		ds_symtab_free(t);
	return err;
}

_Static_assert(offsetof(struct ds_symrange, start) == 0, "ds_count_starts() reads it");

struct ds_symrange *ds_symtab_find(const struct ds_symtab *t, uint64_t addr)
{
	size_t lo = ds_count_starts(t->r, t->nr, sizeof(*t->r), addr);

	if (!lo || !t->r[lo - 1].name)
		return NULL;
	return &t->r[lo - 1];
}

void ds_symtab_free(struct ds_symtab *t)
{
	free(t->r);
	free(t->shown);
	memset(t, 0, sizeof(*t));
}
