/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SFrame tables of ELF files read into memory (sframe_stack, sframe_stress):
 * where the table is, and damage of known kinds that the kernel must catch.
 */
#ifndef DS_SFRAME_UTIL_H
#define DS_SFRAME_UTIL_H

#include <elf.h>
#include <stddef.h>

/* The PT_GNU_SFRAME program header of the ELF file in @buf, or NULL. */
Elf64_Phdr *sframe_phdr(unsigned char *buf, size_t len);

#define SFRAME_DAMAGE_KINDS	6
/* Kind 5: every function claims 65,535 rows (V3's most). */
#define SFRAME_DAMAGE_ROWS	5

/* Damage @buf's table in way @kind; 0, or -1 when it is not a V3 table. */
int sframe_damage(unsigned char *buf, size_t len, int kind);
extern const char *const sframe_damage_names[SFRAME_DAMAGE_KINDS];

#endif
