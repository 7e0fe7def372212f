/* SPDX-License-Identifier: MIT */
/*
 * Internal: one object's symbols read once into a sorted array of address
 * ranges, each with the symbol libdwfl's dwfl_module_addrinfo() gives its
 * addresses (lib/symtab.c).  Not exported.
 */
#ifndef DS_SYMTAB_H
#define DS_SYMTAB_H

#include <elfutils/libdwfl.h>
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

/* The range of module address addr, or NULL (no symbol there). */
struct ds_symrange *ds_symtab_find(const struct ds_symtab *t, uint64_t addr);

void ds_symtab_free(struct ds_symtab *t);

#endif
