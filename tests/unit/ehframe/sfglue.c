// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's SFrame reader (kernel/unwind/sframe.c), compiled unchanged on
 * the host for one purpose: the cost of its row lookup next to ehframe.c's,
 * on the same functions and pcs (make compare). ehcheck.c writes an SFrame
 * table with the rows readelf gives for the object's .eh_frame and calls
 * in here; sframe.c's functions are static, hence the #include.
 */
#include "sframe.c"

#include "sfglue.h"

struct task_struct *sfglue_current;
struct unwind_user_stats unwind_user_stats;

/* Not called: sfglue_row() sets the walk's table itself. */
int unwind_table_lookup(struct mm_struct *mm, unsigned long ip, u8 *finds_left,
			struct unwind_table *tbl, unsigned long *start, unsigned long *end)
{
	return -ENOENT;
}

void unwind_table_untrust(struct mm_struct *mm, unsigned long ip)
{
}

static struct unwind_user_state st;

int sfglue_init(unsigned long addr, unsigned long size, const void *hdr, size_t len)
{
	memset(&st, 0, sizeof(st));
	st.table.addr = addr;
	st.table.size = size;
	return sframe_table_init(&st.table, hdr, len);
}

/*
 * The row of @pc as a walk finds it: the function kept from the last
 * lookup when @pc is in it (@keep), else searched; the row read again
 * (not the walk's cache of the last pc's row, which a recursion hits).
 */
int sfglue_row(unsigned long pc, bool keep, struct sfglue_row *out)
{
	int ret;

	if (!keep || pc - st.fn_start >= st.fn_size) {
		ret = sframe_find_fn(&st, pc);
		if (ret)
			return ret;
	}
	st.rows_left = UNWIND_SFRAME_MAX_ROWS;
	st.row_pc = 0;
	ret = sframe_find_row(&st, pc);
	if (ret)
		return ret;
	out->cfa_sp = SFRAME_FRE_BASE_SP(st.row.info);
	out->count = SFRAME_FRE_COUNT(st.row.info);
	out->cfa_off = st.row.words[0];
	out->fp_off = st.row.words[1];
	return 0;
}
