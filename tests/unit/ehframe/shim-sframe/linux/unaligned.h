/* SPDX-License-Identifier: GPL-2.0 */
/* Host shim: get_unaligned() too. */
#ifndef EHFRAME_SHIM_SFRAME_UNALIGNED_H
#define EHFRAME_SHIM_SFRAME_UNALIGNED_H

#include "../../shim/linux/unaligned.h"

#define get_unaligned(p) ({						\
	__typeof__(*(p)) __ua_v;					\
	memcpy(&__ua_v, (p), sizeof(__ua_v));				\
	__ua_v;								\
})

#endif
