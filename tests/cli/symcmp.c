// SPDX-License-Identifier: MIT
/* The symbol table libdeferstack reads once (lib/symtab.c) against libdwfl's
 * dwfl_module_addrinfo(), address by address:
 *     symcmp [-n MAX] FILE...
 * For each ELF FILE (its debug file found as the library finds it), the
 * addresses compared are every symbol's value - 1, value, value + 1, end - 1
 * and end, every range bound of the table +-1, and every section's bounds
 * +-1, at most MAX of them (default 4000; evenly spread), plus as many
 * evenly spread over the executable segments.  Prints one line per file
 * and every difference; exits 1 on a difference, 2 on a usage error.  A
 * file that is not ELF is skipped with a note.  The table is also built
 * with the names in the file read through a descriptor
 * (ds_symtab_build_fd(), as the library does for large files): its ranges
 * must be the same, each one a difference if not. */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symtab.h"

static const Dwfl_Callbacks cbs = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

struct addrs {
	uint64_t *a;
	size_t n, cap;
};

static void add(struct addrs *v, uint64_t x)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? 2 * v->cap : 4096;
		v->a = realloc(v->a, v->cap * sizeof(*v->a));
		if (!v->a) {
			perror("realloc");
			exit(2);
		}
	}
	v->a[v->n++] = x;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* libdwfl's answer, with the library's rule that a sized symbol must cover */
static const char *want(Dwfl_Module *mod, uint64_t va, uint64_t *off)
{
	GElf_Off o = 0;
	GElf_Sym sym;
	const char *n = dwfl_module_addrinfo(mod, va, &o, &sym, NULL, NULL, NULL);

	if (!n || !*n || (sym.st_size && o >= sym.st_size))
		return NULL;
	*off = o;
	return n;
}

static int check_file(const char *path, size_t max)
{
	Dwfl *dwfl = dwfl_begin(&cbs);
	Dwfl_Module *mod;
	struct ds_symtab t;
	struct addrs cand = { 0 }, pick = { 0 };
	GElf_Addr bias;
	Elf *elf;
	size_t nph = 0, bad = 0;
	int fd = open(path, O_RDONLY), n, err;

	if (fd < 0 || !dwfl) {
		perror(path);
		return 2;
	}
	dwfl_report_begin(dwfl);
	mod = dwfl_report_elf(dwfl, "m", path, fd, 0, false);
	dwfl_report_end(dwfl, NULL, NULL);
	if (!mod) {
		printf("%s: not ELF, skipped\n", path);
		close(fd);
		dwfl_end(dwfl);
		return 0;
	}
	err = ds_symtab_build(&t, mod);
	if (err) {
		printf("%s: table: %s\n", path, strerror(-err));
		dwfl_end(dwfl);
		return err == -ENOTSUP ? 0 : 1;
	}
	{
		struct ds_symtab t2;
		int fd2 = open(path, O_RDONLY);
		int e2 = fd2 < 0 ? -errno : ds_symtab_build_fd(&t2, mod, fd2);

		if (e2) {
			printf("%s: table through a descriptor: %s\n", path, strerror(-e2));
			bad++;
		} else {
			for (size_t i = 0; i < t.nr || i < t2.nr; i++) {
				const struct ds_symrange *a = i < t.nr ? &t.r[i] : NULL;
				const struct ds_symrange *b = i < t2.nr ? &t2.r[i] : NULL;

				if (a && b && a->start == b->start && a->value == b->value &&
				    a->name == b->name)
					continue;
				if (bad++ < 10)
					printf("%s: range %zu: 0x%" PRIx64 " %s, through a descriptor "
					       "0x%" PRIx64 " %s\n", path, i, a ? a->start : 0,
					       a && a->name ? a->name : "-", b ? b->start : 0,
					       b && b->name ? b->name : "-");
			}
			ds_symtab_free(&t2);
		}
		if (fd2 >= 0)
			close(fd2);
	}
	n = dwfl_module_getsymtab(mod);
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr v;
		GElf_Word shndx;

		if (!dwfl_module_getsym_info(mod, i, &sym, &v, &shndx, NULL, NULL))
			continue;
		for (int d = -1; d <= 1; d++)
			add(&cand, v + (uint64_t)d);
		add(&cand, v + sym.st_size - 1);
		add(&cand, v + sym.st_size);
	}
	for (size_t i = 0; i < t.nr; i++) {
		for (int d = -1; d <= 1; d++)
			add(&cand, t.r[i].start + (uint64_t)d);
	}
	elf = dwfl_module_getelf(mod, &bias);
	if (elf) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;

			if (!gelf_getshdr(scn, &sh))
				continue;
			for (int d = -1; d <= 1; d++) {
				add(&cand, sh.sh_addr + bias + (uint64_t)d);
				add(&cand, sh.sh_addr + sh.sh_size + bias + (uint64_t)d);
			}
		}
	}
	if (cand.n)
		qsort(cand.a, cand.n, sizeof(*cand.a), cmp_u64);
	for (size_t i = 0; i < cand.n; i += cand.n > max ? cand.n / max + 1 : 1)
		add(&pick, cand.a[i]);
	if (elf && !elf_getphdrnum(elf, &nph)) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
			    !(ph.p_flags & PF_X) || !ph.p_memsz)
				continue;
			for (size_t k = 0; k < max; k++)
				add(&pick, ph.p_vaddr + bias + ph.p_memsz / max * k + k % 7);
		}
	}
	for (size_t i = 0; i < pick.n; i++) {
		uint64_t va = pick.a[i], woff = 0, goff = 0;
		const char *w = want(mod, va, &woff);
		const struct ds_symrange *r = ds_symtab_find(&t, va);
		const char *g = NULL;

		if (r) {
			goff = va - r->value;
			g = r->name;
		}
		if (w != g || (w && woff != goff)) {
			if (bad++ < 10)
				printf("%s: 0x%" PRIx64 ": libdwfl %s+0x%" PRIx64 ", table %s+0x%" PRIx64
				       "\n", path, va, w ? w : "-", woff, g ? g : "-", goff);
		}
	}
	printf("%s: %d symbols, %zu ranges, %zu addresses, %zu differ\n", path, n, t.nr,
	       pick.n, bad);
	ds_symtab_free(&t);
	free(cand.a);
	free(pick.a);
	dwfl_end(dwfl);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	size_t max = 4000;
	int i = 1, rc = 0;

	if (argc > 2 && !strcmp(argv[1], "-n")) {
		max = strtoul(argv[2], NULL, 0);
		i = 3;
	}
	if (i >= argc || !max) {
		fprintf(stderr, "usage: symcmp [-n MAX] FILE...\n");
		return 2;
	}
	for (; i < argc; i++) {
		int r = check_file(argv[i], max);

		if (r > rc)
			rc = r;
	}
	return rc;
}
