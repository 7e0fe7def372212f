/* SPDX-License-Identifier: GPL-2.0 */
/* Host shim: little-endian loads at any alignment (the host is x86-64). */
#ifndef EHFRAME_SHIM_UNALIGNED_H
#define EHFRAME_SHIM_UNALIGNED_H

#include <string.h>
#include <linux/types.h>

static inline u16 get_unaligned_le16(const void *p)
{
	u16 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline u32 get_unaligned_le32(const void *p)
{
	u32 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline u64 get_unaligned_le64(const void *p)
{
	u64 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

#endif
