/* SPDX-License-Identifier: MIT */
/*
 * Internal: one object's symbols read once into a sorted array of address
 * ranges, each with the symbol libdwfl's dwfl_module_addrinfo() gives its
 * addresses (lib/symtab.c).  Not exported.
 */
#ifndef DS_SYMTAB_H
#define DS_SYMTAB_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Module addresses [start, the next range's start) all resolve to name
 * (not demangled; NULL: no symbol) at value.  A sized symbol covers every
 * address of its ranges; a label (size 0) names the addresses after it. */
struct ds_symrange {
	uint64_t start;
	uint64_t value;
	const char *name;	/* into the module's ELF string tables; the
				 * user may replace it (a demangled name) and
				 * mark it in shown */
};

struct ds_symtab {
	struct ds_symrange *r;	/* sorted by start, r[0].start == 0 */
	size_t nr;
	uint64_t *shown;	/* a bit per range, for the user; all 0 */
	size_t nr_syms;		/* symbols that can be found (statistics) */
};

/* Read mod's symbol table (libdwfl's: the file's .symtab or .dynsym, its
 * debug file's, MiniDebugInfo's) once.  0, -ENOMEM, or -ENOTSUP when
 * libdwfl would resolve function descriptors (ppc64 ELFv1), whose answers
 * this table does not model: ask dwfl_module_addrinfo() then.  A module
 * without symbols gives an empty table (every address: no symbol). */
int ds_symtab_build(struct ds_symtab *t, Dwfl_Module *mod);
/* The same, with fd (>= 0) open on the module's main file: the names in
 * that file are read through it, not in libelf's mapped image (see
 * drop_unnamed() in symtab.c); the ranges' names still point into the
 * image. */
int ds_symtab_build_fd(struct ds_symtab *t, Dwfl_Module *mod, int fd);

/* The range of module address addr, or NULL (no symbol there). */
struct ds_symrange *ds_symtab_find(const struct ds_symtab *t, uint64_t addr);

void ds_symtab_free(struct ds_symtab *t);

/* Names of address ranges that no symbol table gives (lib/extsyms.c):
 * [start, end) is name; sorted by start, not overlapping the next one's
 * start. */
struct ds_namedrange {
	uint64_t start, end;
	const char *name;	/* into the table's strings */
};

struct ds_nametab {
	struct ds_namedrange *r;
	size_t nr;
	char *strs;
};

/* The PLT stubs of an ELF file (.plt, .plt.sec, .plt.got) as "func@plt",
 * in module addresses (file vaddr + bias): x86-64 stubs decoded to their
 * GOT slot and the slot's relocation (.rela.plt, .rela.dyn), AArch64 ones
 * counted in .rela.plt's order.  0 (no PLT: an empty table) or -ENOMEM. */
int ds_plt_build(struct ds_nametab *t, Elf *elf, uint64_t bias);
/* Where those stubs are, [*lo, *hi) (cheap: section headers only): false
 * if there are none. */
bool ds_plt_bounds(Elf *elf, uint64_t bias, uint64_t *lo, uint64_t *hi);

/* A perf map (/tmp/perf-PID.map: "START SIZE name" lines, hex, as JITs
 * write them).  Lines that do not parse (no number, more than 64 bits, a
 * size of 0 or one that wraps, no name, a NUL) are skipped and counted in
 * *bad; names are cut at 4 KiB; of ranges starting at the same address the
 * last line wins.  0, -ENOMEM, -EIO, or the open's -errno. */
int ds_perfmap_read(struct ds_nametab *t, const char *path, size_t *bad);

/* The range containing addr, or NULL. */
const struct ds_namedrange *ds_nametab_find(const struct ds_nametab *t, uint64_t addr);

void ds_nametab_free(struct ds_nametab *t);

#endif
