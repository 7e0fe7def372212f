// SPDX-License-Identifier: MIT
/*
 * Linearity of symbolization in the number of distinct functions met:
 *
 *   symscale [-d MAXDWFL] OBJECT [K...]
 *
 * OBJECT is mapped whole (an MMAP2 record at a fixed base) into a fresh
 * struct ds_symbols per K; K of its sized functions, evenly spread, are
 * looked up once each (an address inside each), timed (the first lookup
 * reads the object's symbol table, so it is counted).  Default Ks: an
 * eighth, a quarter, a half and all of the functions.  One line per K: the
 * time, per function, and how many resolved to their own name.  Then
 * libdwfl's dwfl_module_addrinfo() (what the library asked per function
 * before it read tables once) on min(K, MAXDWFL) of them (default 2000;
 * 0: skipped), as time per function and the time all K would take.
 * Figures only; exits non-zero only on a usage or setup error.
 */
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "streams.h"

#define BASE 0x10000000ULL

struct fn {
	uint64_t vaddr, off;
	const char *name;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_fn(const void *a, const void *b)
{
	const struct fn *x = a, *y = b;

	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

/* The sized functions of e (.symtab, else .dynsym), one per address, with
 * their file offsets. */
static struct fn *functions(Elf *e, size_t *nr)
{
	Elf_Scn *scn = NULL, *dyn = NULL, *tab = NULL;
	struct fn *v = NULL;
	size_t n = 0, cap = 0, nph = 0, k = 0;
	GElf_Shdr sh;
	Elf_Data *d;

	while ((scn = elf_nextscn(e, scn))) {
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			tab = scn;
		else if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNSYM)
			dyn = scn;
	}
	scn = tab ? tab : dyn;
	if (!scn || !gelf_getshdr(scn, &sh) || !(d = elf_getdata(scn, NULL)) ||
	    elf_getphdrnum(e, &nph))
		return NULL;
	for (size_t i = 0; sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
		GElf_Sym y;

		if (!gelf_getsym(d, (int)i, &y) || GELF_ST_TYPE(y.st_info) != STT_FUNC ||
		    !y.st_size || y.st_shndx == SHN_UNDEF)
			continue;
		for (size_t p = 0; p < nph; p++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(e, (int)p, &ph) || ph.p_type != PT_LOAD ||
			    y.st_value < ph.p_vaddr || y.st_value - ph.p_vaddr >= ph.p_filesz)
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 4096;
				v = realloc(v, cap * sizeof(*v));
				if (!v)
					return NULL;
			}
			v[n].vaddr = y.st_value;
			v[n].off = y.st_value - ph.p_vaddr + ph.p_offset;
			v[n].name = elf_strptr(e, sh.sh_link, y.st_name);
			n++;
			break;
		}
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_fn);
	for (size_t i = 0; i < n; i++) {
		if (!k || v[i].vaddr != v[k - 1].vaddr)
			v[k++] = v[i];
	}
	*nr = k;
	return v;
}

static const Dwfl_Callbacks cbs = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

int main(int argc, char **argv)
{
	size_t maxdwfl = 2000, nfn = 0, ks[32], nks = 0;
	struct fn *fn;
	struct stat st;
	int a = 1, fd;
	Elf *e;

	if (argc > 2 && !strcmp(argv[1], "-d")) {
		maxdwfl = strtoul(argv[2], NULL, 0);
		a = 3;
	}
	if (a >= argc) {
		fprintf(stderr, "usage: symscale [-d MAXDWFL] OBJECT [K...]\n");
		return 2;
	}
	elf_version(EV_CURRENT);
	fd = open(argv[a], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) || !(e = elf_begin(fd, ELF_C_READ, NULL))) {
		perror(argv[a]);
		return 1;
	}
	fn = functions(e, &nfn);
	if (!fn || nfn < 8) {
		fprintf(stderr, "symscale: %s: too few sized functions\n", argv[a]);
		return 1;
	}
	for (int i = a + 1; i < argc && nks < 32; i++) {
		size_t k = strtoul(argv[i], NULL, 0);

		ks[nks++] = k && k < nfn ? k : nfn;
	}
	if (!nks) {
		ks[0] = nfn / 8;
		ks[1] = nfn / 4;
		ks[2] = nfn / 2;
		ks[3] = nfn;
		nks = 4;
	}
	printf("%s: %zu sized functions\n", argv[a], nfn);
	for (size_t x = 0; x < nks; x++) {
		size_t k = ks[x], named = 0, step = nfn / k;
		struct ds_symbols *sym;
		struct sbuf s = { 0 };
		struct ds_event ev = { .sz = sizeof(ev) };
		double t0, t;
		char buf[256];

		if (ds_symbols_new(&sym, NULL))
			return 1;
		sb_mmap2(&s, 1, BASE, ((uint64_t)st.st_size + 4095) & ~4095ULL, argv[a], 1);
		if (ds_event_parse(s.b, s.len, TST_ST, true, &ev) || ds_symbols_event(sym, &ev))
			return 1;
		t0 = now();
		for (size_t i = 0; i < k; i++) {
			const struct fn *f = &fn[i * step];
			struct ds_sym_info si = { .sz = sizeof(si) };

			ds_symbols_lookup(sym, 1, BASE + f->off + 1, false, &si, buf, sizeof(buf));
			named += si.sym && si.sym_off == 1;
		}
		t = now() - t0;
		printf("  deferstack  %6zu functions: %8.1f ms, %6.2f us per function, %zu named\n",
		       k, t * 1e3, t * 1e6 / (double)k, named);
		ds_symbols_free(sym);
		free(s.b);
	}
	for (size_t x = 0; maxdwfl && x < nks; x++) {
		size_t k = ks[x], m = k < maxdwfl ? k : maxdwfl, step = nfn / m;
		Dwfl *dwfl = dwfl_begin(&cbs);
		Dwfl_Module *mod;
		int dfd = open(argv[a], O_RDONLY);
		double t0, t;

		if (!dwfl || dfd < 0)
			return 1;
		dwfl_report_begin(dwfl);
		mod = dwfl_report_elf(dwfl, "m", argv[a], dfd, 0, false);
		dwfl_report_end(dwfl, NULL, NULL);
		if (!mod)
			return 1;
		dwfl_module_getsymtab(mod);	/* loading it is not the point */
		t0 = now();
		for (size_t i = 0; i < m; i++) {
			GElf_Off o;
			GElf_Sym y;

			dwfl_module_addrinfo(mod, fn[i * step].vaddr + 1, &o, &y, NULL, NULL, NULL);
		}
		t = now() - t0;
		printf("  libdwfl     %6zu functions: %8.1f ms, %6.2f us per function (%zu "
		       "asked, the rest extrapolated)\n", k, t * 1e3 * (double)k / (double)m,
		       t * 1e6 / (double)m, m);
		dwfl_end(dwfl);
	}
	free(fn);
	elf_end(e);
	close(fd);
	return 0;
}
