/* SPDX-License-Identifier: GPL-2.0 */
/* Host shim: min() and friends, without the kernel's type checks. */
#ifndef EHFRAME_SHIM_MINMAX_H
#define EHFRAME_SHIM_MINMAX_H

#define min(a, b)	({ __typeof__(a) _a = (a); __typeof__(b) _b = (b); _a < _b ? _a : _b; })
#define max(a, b)	({ __typeof__(a) _a = (a); __typeof__(b) _b = (b); _a > _b ? _a : _b; })
#define min3(a, b, c)	min(min(a, b), c)
#define min_t(t, a, b)	min((t)(a), (t)(b))

#endif
