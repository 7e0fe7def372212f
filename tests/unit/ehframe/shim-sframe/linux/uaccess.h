/* SPDX-License-Identifier: GPL-2.0 */
/* Host shim: copy_from_user() as for ehframe.c, and get_user() over it. */
#ifndef EHFRAME_SHIM_SFRAME_UACCESS_H
#define EHFRAME_SHIM_SFRAME_UACCESS_H

#include "../../shim/linux/uaccess.h"
#include <linux/errno.h>

#define get_user(x, ptr) ({						\
	__typeof__(*(ptr)) __gu_v;					\
	int __gu_e = copy_from_user(&__gu_v, (ptr), sizeof(__gu_v)) ? -EFAULT : 0; \
	(x) = __gu_e ? 0 : __gu_v;					\
	__gu_e;								\
})

#endif
