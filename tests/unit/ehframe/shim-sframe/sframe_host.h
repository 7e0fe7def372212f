/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Forced first when sfglue.c compiles the kernel's sframe.c on the host, for
 * a comparison of cost with ehframe.c (make compare): what sframe.c and
 * sframe.h use beyond the shim of ehframe.c.
 */
#ifndef EHFRAME_SHIM_SFRAME_HOST_H
#define EHFRAME_SHIM_SFRAME_HOST_H

#include "../shim/kernel_host.h"

#define IS_ENABLED(option)	1
#define CONFIG_UNWIND_USER_SFRAME 1
#define __packed		__attribute__((__packed__))

#include <limits.h>

#define test_bit(nr, addr)	((*(addr) >> (nr)) & 1)

#endif
