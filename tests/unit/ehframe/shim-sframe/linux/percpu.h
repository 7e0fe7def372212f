/* SPDX-License-Identifier: GPL-2.0 */
/* Host shim: one CPU. */
#ifndef EHFRAME_SHIM_PERCPU_H
#define EHFRAME_SHIM_PERCPU_H

#define DECLARE_PER_CPU(type, name)	extern __typeof__(type) name
#define this_cpu_inc(var)		((var)++)

#endif
