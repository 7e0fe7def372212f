/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Forced first (-include), as the kernel build forces compiler_types.h:
 * what the kernel's files take for granted without an #include.
 */
#ifndef EHFRAME_SHIM_KERNEL_HOST_H
#define EHFRAME_SHIM_KERNEL_HOST_H

#define __user
#define __always_inline inline __attribute__((__always_inline__))

#endif
