/* SPDX-License-Identifier: GPL-2.0 */
/* Host shim: the kernel's limits. */
#ifndef EHFRAME_SHIM_LIMITS_H
#define EHFRAME_SHIM_LIMITS_H

#include <limits.h>
#include <stdint.h>

#define U16_MAX		((u16)~0U)
#define U32_MAX		((u32)~0U)
#define S32_MAX		((s32)(U32_MAX >> 1))

#endif
