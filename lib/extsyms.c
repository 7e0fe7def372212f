// SPDX-License-Identifier: MIT
/*
 * Names libdwfl does not give (lib/symtab.h): PLT stubs named after the
 * function they jump to ("rand@plt"), JIT code named by a perf map
 * (/tmp/perf-PID.map), and the calling process's vDSO image, saved so that
 * a report can name [vdso] frames.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deferstack/deferstack.h"
#include "internal.h"
#include "symtab.h"

/* Longest name kept from a perf map (longer ones are cut): a corrupt file
 * of one huge line costs this much, not the line. */
#define NAME_MAX_LEN 4096

struct ntbuild {
	struct ds_namedrange *r;
	size_t nr, cap;
	char *strs;		/* names; r[].name holds offsets until the end */
	size_t slen, scap;
	uint32_t *order;	/* file order, to keep the last of equal starts */
};

static int nt_add(struct ntbuild *b, uint64_t start, uint64_t end, const char *name,
		  size_t nlen, const char *suffix)
{
	size_t sl = strlen(suffix), need = nlen + sl + 1;

	if (ds_grow(&b->r, &b->cap, b->nr + 1, sizeof(*b->r)) ||
	    ds_grow(&b->strs, &b->scap, b->slen + need, 1))
		return -ENOMEM;
	memcpy(b->strs + b->slen, name, nlen);
	memcpy(b->strs + b->slen + nlen, suffix, sl + 1);
	b->r[b->nr].start = start;
	b->r[b->nr].end = end;
	b->r[b->nr].name = (const char *)(uintptr_t)b->slen;
	b->nr++;
	b->slen += need;
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct ds_namedrange *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* the names' offsets are in the order they were read: later last */
	return x->name < y->name ? -1 : x->name > y->name;
}

/* Sorted by start; of equal starts the one read last stays. */
static int nt_finish(struct ntbuild *b, struct ds_nametab *t)
{
	size_t k = 0;

	if (b->nr)
		qsort(b->r, b->nr, sizeof(*b->r), cmp_range);
	for (size_t i = 0; i < b->nr; i++) {
		if (k && b->r[k - 1].start == b->r[i].start)
			k--;
		b->r[k] = b->r[i];
		b->r[k].name = b->strs + (uintptr_t)b->r[i].name;
		k++;
	}
	t->r = b->r;
	t->nr = k;
	t->strs = b->strs;
	return 0;
}

_Static_assert(offsetof(struct ds_namedrange, start) == 0, "ds_count_starts() reads it");

const struct ds_namedrange *ds_nametab_find(const struct ds_nametab *t, uint64_t addr)
{
	size_t lo = ds_count_starts(t->r, t->nr, sizeof(*t->r), addr);

	if (!lo || addr >= t->r[lo - 1].end)
		return NULL;
	return &t->r[lo - 1];
}

void ds_nametab_free(struct ds_nametab *t)
{
	free(t->r);
	free(t->strs);
	memset(t, 0, sizeof(*t));
}

/* ---- PLT stubs */

/* A GOT slot and the symbol its relocation names. */
struct slot {
	uint64_t addr;
	const char *name;
};

struct pltctx {
	Elf *elf;
	uint64_t bias;
	struct slot *slots;	/* by address */
	size_t nr_slots, cap_slots;
	const char **jmprel;	/* .rela.plt's symbols by index (NULL: none) */
	size_t nr_jmprel;
};

static int cmp_slot(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static const char *slot_name(const struct pltctx *c, uint64_t addr)
{
	size_t lo = 0, hi = c->nr_slots;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->slots[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nr_slots && c->slots[lo].addr == addr ? c->slots[lo].name : NULL;
}

/* The relocations of a SHT_RELA section against dynamic symbols: GOT slot
 * -> name; jmprel: also by index (.rela.plt, for the lazy stubs' push). */
static int read_relocs(struct pltctx *c, Elf_Scn *scn, const GElf_Shdr *sh, bool jmprel)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	Elf_Scn *symscn = elf_getscn(c->elf, sh->sh_link);
	GElf_Shdr ssh;
	Elf_Data *sd;
	size_t n;

	if (!d || !symscn || !gelf_getshdr(symscn, &ssh) || !(sd = elf_getdata(symscn, NULL)) ||
	    !sh->sh_entsize || !ssh.sh_entsize)
		return 0;
	n = d->d_size / sh->sh_entsize;
	if (jmprel) {
		c->jmprel = calloc(n ? n : 1, sizeof(*c->jmprel));
		if (!c->jmprel)
			return -ENOMEM;
		c->nr_jmprel = n;
	}
	for (size_t i = 0; i < n; i++) {
		GElf_Rela r;
		GElf_Sym sym;
		size_t si;
		const char *name;

		if (!gelf_getrela(d, (int)i, &r))
			break;
		si = GELF_R_SYM(r.r_info);
		if (!si || si >= sd->d_size / ssh.sh_entsize || !gelf_getsym(sd, (int)si, &sym))
			continue;
		name = elf_strptr(c->elf, ssh.sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		if (jmprel)
			c->jmprel[i] = name;
		if (ds_grow(&c->slots, &c->cap_slots, c->nr_slots + 1, sizeof(*c->slots)))
			return -ENOMEM;
		c->slots[c->nr_slots].addr = r.r_offset + c->bias;
		c->slots[c->nr_slots].name = name;
		c->nr_slots++;
	}
	return 0;
}

/* x86-64: the function a stub of len bytes at addr jumps to, from its
 * "jmp *disp32(%rip)" (ff 25; first, after a bnd prefix, after endbr64, or
 * both) through a GOT slot, else from the lazy stub's "push $index" (68;
 * first, after endbr64, or after the jmp) into .rela.plt. */
static const char *x86_64_stub(const struct pltctx *c, const uint8_t *p, size_t len,
			       uint64_t addr)
{
	static const uint8_t jmp_at[] = { 0, 1, 4, 5 }, push_at[] = { 0, 4, 6 };

	for (size_t i = 0; i < sizeof(jmp_at); i++) {
		size_t k = jmp_at[i];

		if (k + 6 <= len && p[k] == 0xff && p[k + 1] == 0x25) {
			int32_t disp = (int32_t)ds_rd32(p + k + 2);
			const char *n = slot_name(c, addr + k + 6 + (uint64_t)(int64_t)disp);

			if (n)
				return n;
			break;
		}
	}
	for (size_t i = 0; i < sizeof(push_at); i++) {
		size_t k = push_at[i];

		if (k + 5 <= len && p[k] == 0x68) {
			uint32_t idx = ds_rd32(p + k + 1);

			return idx < c->nr_jmprel ? c->jmprel[idx] : NULL;
		}
	}
	return NULL;
}

static int plt_section(struct pltctx *c, struct ntbuild *b, Elf_Scn *scn, const GElf_Shdr *sh,
		       uint16_t machine, bool lazy_plt)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	uint64_t ent = sh->sh_entsize, first = 0, addr = sh->sh_addr + c->bias;
	int err = 0;

	if (!d || !d->d_buf || sh->sh_type != SHT_PROGBITS)
		return 0;
	if (machine == EM_AARCH64) {
		/* no decoding: a 32-byte header, then 16-byte stubs in
		 * .rela.plt's order */
		if (!lazy_plt)
			return 0;
		for (uint64_t o = 32, i = 0; o + 16 <= d->d_size && i < c->nr_jmprel; o += 16, i++) {
			if (c->jmprel[i])
				err = nt_add(b, addr + o, addr + o + 16, c->jmprel[i],
					     strlen(c->jmprel[i]), "@plt");
			if (err)
				return err;
		}
		return 0;
	}
	if (ent < 8 || ent > 64)
		ent = 16;
	for (uint64_t o = first; o + ent <= d->d_size; o += ent) {
		const char *n = x86_64_stub(c, (const uint8_t *)d->d_buf + o, ent, addr + o);

		if (n && (err = nt_add(b, addr + o, addr + o + ent, n, strlen(n), "@plt")))
			return err;
	}
	return 0;
}

/* The sections of a file's PLT stubs and of their relocations. */
struct pltsecs {
	Elf_Scn *stubs[3];	/* .plt, .plt.sec, .plt.got; NULL: none */
	Elf_Scn *rela_plt, *rela_dyn;
	uint16_t machine;
};

static const char *const stub_names[3] = { ".plt", ".plt.sec", ".plt.got" };

/* false: no PLT this file knows how to name (not x86-64 or AArch64). */
static bool find_plt(Elf *elf, struct pltsecs *ps)
{
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	size_t shstrndx;

	memset(ps, 0, sizeof(*ps));
	if (!gelf_getehdr(elf, &eh) || (eh.e_machine != EM_X86_64 && eh.e_machine != EM_AARCH64) ||
	    elf_getshdrstrndx(elf, &shstrndx) < 0)
		return false;
	ps->machine = eh.e_machine;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (sh.sh_type == SHT_RELA && !strcmp(name, ".rela.plt") && !ps->rela_plt)
			ps->rela_plt = scn;
		else if (sh.sh_type == SHT_RELA && !strcmp(name, ".rela.dyn") && !ps->rela_dyn)
			ps->rela_dyn = scn;
		for (int i = 0; i < 3; i++) {
			if ((sh.sh_flags & SHF_EXECINSTR) && !ps->stubs[i] &&
			    !strcmp(name, stub_names[i]))
				ps->stubs[i] = scn;
		}
	}
	return ps->stubs[0] || ps->stubs[1] || ps->stubs[2];
}

bool ds_plt_bounds(Elf *elf, uint64_t bias, uint64_t *lo, uint64_t *hi)
{
	struct pltsecs ps;

	*lo = *hi = 0;
	if (!find_plt(elf, &ps))
		return false;
	for (int i = 0; i < 3; i++) {
		GElf_Shdr sh;

		if (!ps.stubs[i] || !gelf_getshdr(ps.stubs[i], &sh) || !sh.sh_size)
			continue;
		if (!*hi || sh.sh_addr + bias < *lo)
			*lo = sh.sh_addr + bias;
		if (sh.sh_addr + bias + sh.sh_size > *hi)
			*hi = sh.sh_addr + bias + sh.sh_size;
	}
	return *hi > *lo;
}

int ds_plt_build(struct ds_nametab *t, Elf *elf, uint64_t bias)
{
	struct pltctx c = { .elf = elf, .bias = bias };
	struct ntbuild b = { 0 };
	struct pltsecs ps;
	GElf_Shdr sh;
	int err = 0;

	memset(t, 0, sizeof(*t));
	if (!find_plt(elf, &ps))
		return 0;
	/* the relocations first: .rela.plt (JUMP_SLOT), and .rela.dyn
	 * (GLOB_DAT) only for .plt.got: a large library's .rela.dyn has
	 * hundreds of thousands of relative relocations */
	if (ps.rela_plt && gelf_getshdr(ps.rela_plt, &sh))
		err = read_relocs(&c, ps.rela_plt, &sh, true);
	if (!err && ps.stubs[2] && ps.rela_dyn && gelf_getshdr(ps.rela_dyn, &sh))
		err = read_relocs(&c, ps.rela_dyn, &sh, false);
	if (!err && c.nr_slots)
		qsort(c.slots, c.nr_slots, sizeof(*c.slots), cmp_slot);
	for (int i = 0; !err && c.nr_slots && i < 3; i++) {
		if (ps.stubs[i] && gelf_getshdr(ps.stubs[i], &sh))
			err = plt_section(&c, &b, ps.stubs[i], &sh, ps.machine, i == 0);
	}
	free(c.slots);
	free(c.jmprel);
	if (!err)
		return nt_finish(&b, t);
	free(b.r);
	free(b.strs);
	return err;
}

/* ---- perf maps: "START SIZE name" per line, hex */

static bool hex_field(const char **pp, uint64_t *v)
{
	const char *p = *pp;
	size_t n;

	if (p[0] == '0' && (p[1] | 0x20) == 'x')
		p += 2;
	n = ds_hex_run(p, v);
	p += n;
	if (!n || n > 16 || (*p != ' ' && *p != '\t'))	/* > 64 bits */
		return false;
	while (*p == ' ' || *p == '\t')
		p++;
	*pp = p;
	return true;
}

int ds_perfmap_read(struct ds_nametab *t, const char *path, size_t *bad)
{
	struct ntbuild b = { 0 };
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;
	int fd, err = 0;

	memset(t, 0, sizeof(*t));
	*bad = 0;
	fd = ds_open_regular(path, NULL);
	if (fd < 0)
		return fd;
	err = ds_fdopen_read(fd, &f);
	if (err)
		return err;
	while (!err && (n = getline(&line, &cap, f)) > 0) {
		const char *p = line;
		uint64_t start, size;
		size_t len = (size_t)n;

		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (!len)
			continue;
		if (strlen(line) != len || !hex_field(&p, &start) || !hex_field(&p, &size) ||
		    !size || start + size < start || !*p) {
			++*bad;		/* a NUL, no number, no name, wraps */
			continue;
		}
		len -= (size_t)(p - line);
		err = nt_add(&b, start, start + size, p, len < NAME_MAX_LEN ? len : NAME_MAX_LEN,
			     "");
	}
	if (!err && ferror(f))
		err = -EIO;
	free(line);
	fclose(f);
	if (!err)
		return nt_finish(&b, t);
	free(b.r);
	free(b.strs);
	return err;
}

/* Copy the file at from to to (created, mode 0644). */
static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = ds_open_regular(from, NULL), out, err = 0;
	ssize_t n;

	if (in < 0)
		return in;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		err = -errno;
		close(in);
		return err;
	}
	while (!err && (n = read(in, buf, sizeof(buf))) != 0) {
		ssize_t w;

		if (n < 0) {
			err = -errno;
			break;
		}
		w = write(out, buf, (size_t)n);
		if (w != n)
			err = w < 0 ? -errno : -EIO;
	}
	close(in);
	if (close(out) && !err)
		err = -errno;
	if (err)
		unlink(to);	/* a full disk: no cut copy */
	return err;
}

int ds_perf_map_save(const char *dir, uint32_t pid)
{
	char from[64], to[4096];
	struct stat st;

	snprintf(from, sizeof(from), "/tmp/perf-%u.map", pid);
	if (stat(from, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	if (snprintf(to, sizeof(to), "%s/perf-%u.map", dir, pid) >= (int)sizeof(to))
		return -ENAMETOOLONG;
	return copy_file(from, to);
}

/* ---- the vDSO */

int ds_vdso_image(const void **image, size_t *len)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	int err = -ENOENT;

	*image = NULL;
	*len = 0;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;
		size_t n = strlen(line);

		while (n && line[n - 1] == '\n')
			line[--n] = 0;
		if (n < 7 || strcmp(line + n - 7, " [vdso]") ||
		    sscanf(line, "%llx-%llx", &lo, &hi) != 2 || hi <= lo)
			continue;
		*image = (const void *)(uintptr_t)lo;
		*len = (size_t)(hi - lo);
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

int ds_vdso_save(const char *path)
{
	const void *img;
	size_t len;
	int fd, err = ds_vdso_image(&img, &len);

	if (err)
		return err;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	for (size_t done = 0; !err && done < len;) {
		ssize_t n = write(fd, (const char *)img + done, len - done);

		if (n <= 0)
			err = n < 0 ? -errno : -EIO;
		else
			done += (size_t)n;
	}
	if (close(fd) && !err)
		err = -errno;
	if (err)
		unlink(path);	/* a full disk: no cut image */
	return err;
}
