/* SPDX-License-Identifier: GPL-2.0 */
/* Host shim: branch hints and inlining attributes. */
#ifndef EHFRAME_SHIM_COMPILER_H
#define EHFRAME_SHIM_COMPILER_H

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
#define noinline	__attribute__((__noinline__))

#endif
