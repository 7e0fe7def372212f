/* SPDX-License-Identifier: GPL-2.0 */
/* Host shim: a task with an mm, and the user address limit. */
#ifndef EHFRAME_SHIM_SCHED_H
#define EHFRAME_SHIM_SCHED_H

struct mm_struct;

struct task_struct {
	struct mm_struct *mm;
};

extern struct task_struct *sfglue_current;
#define current		sfglue_current
#define TASK_SIZE_MAX	((1UL << 47) - 4096)

#endif
