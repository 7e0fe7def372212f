/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Host shim: the task's address space is an ELF file mapped by the harness
 * (host.c), each PT_LOAD segment at its own p_vaddr. Returns the bytes not
 * copied, as the kernel's copy_from_user() does.
 */
#ifndef EHFRAME_SHIM_UACCESS_H
#define EHFRAME_SHIM_UACCESS_H

#include <linux/types.h>

unsigned long copy_from_user(void *dst, const void *src, unsigned long n);

#endif
