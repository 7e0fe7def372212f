/* SPDX-License-Identifier: GPL-2.0 */
/* Host shim: the kernel tree's own header (KDIR_UNWIND_USER_H, a path). */
#include KDIR_UNWIND_USER_H
