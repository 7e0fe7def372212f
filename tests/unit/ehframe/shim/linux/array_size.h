/* SPDX-License-Identifier: GPL-2.0 */
/* Host shim: the kernel's ARRAY_SIZE. */
#ifndef EHFRAME_SHIM_ARRAY_SIZE_H
#define EHFRAME_SHIM_ARRAY_SIZE_H

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#endif
