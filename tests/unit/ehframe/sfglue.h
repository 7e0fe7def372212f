/* SPDX-License-Identifier: GPL-2.0 */
/* ehcheck.c's view of sfglue.c: the kernel's SFrame reader on the host. */
#ifndef EHFRAME_SFGLUE_H
#define EHFRAME_SFGLUE_H

#include <stdbool.h>
#include <stddef.h>

struct sfglue_row {
	int cfa_sp;		/* CFA from %rsp, else from %rbp */
	int count;		/* data words: 1 (CFA) or 2 (and %rbp) */
	int cfa_off;
	int fp_off;
};

int sfglue_init(unsigned long addr, unsigned long size, const void *hdr, size_t len);
int sfglue_row(unsigned long pc, bool keep, struct sfglue_row *out);

#endif
