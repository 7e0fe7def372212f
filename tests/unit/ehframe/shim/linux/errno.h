/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Host shim: the errno values the kernel file uses are the system's (the C
 * library's <errno.h> reaches the kernel's uapi <linux/errno.h> too).
 */
#include_next <linux/errno.h>
