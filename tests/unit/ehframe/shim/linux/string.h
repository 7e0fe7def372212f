/* SPDX-License-Identifier: GPL-2.0 */
/* Host shim. */
#ifndef EHFRAME_SHIM_STRING_H
#define EHFRAME_SHIM_STRING_H

#include <string.h>

#endif
