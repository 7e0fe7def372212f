/* SPDX-License-Identifier: GPL-2.0 */
/*
 * For workloads that tell their test where their functions lie: one
 * "NAME START END" line on stdout, from the dynamic symbol table
 * (dladdr1(): the program is linked with -rdynamic). END is 0 when the
 * symbol is not found. Used by sf_dyn (built in the sid chroot, which gets
 * this directory's headers) and eh_work (tests/guest/Makefile).
 */
#ifndef DS_WHERE_H
#define DS_WHERE_H

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>

static void where(const char *name, void *addr)
{
	const ElfW(Sym) *sym = NULL;
	Dl_info info;

	if (!dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym) {
		printf("%s %p 0\n", name, addr);
		return;
	}
	printf("%s %#lx %#lx\n", name, (unsigned long)info.dli_saddr,
	       (unsigned long)info.dli_saddr + sym->st_size);
}

#endif
