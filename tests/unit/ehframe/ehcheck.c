// SPDX-License-Identifier: GPL-2.0
/*
 * Host harness of the kernel's .eh_frame reader (kernel/unwind/ehframe.c),
 * compiled unchanged against the shim headers in shim/.
 *
 * The "task" is an ELF file mapped privately: each PT_LOAD segment at its
 * own p_vaddr (load bias 0), read by copy_from_user() below, bounds checked.
 *
 *   ehcheck check FILE...   every FDE of FILE against readelf -wF
 *   ehcheck hostile FILE    corrupted variants: errors, no crash, no hang
 *   ehcheck variants FILE DIR [HEXADDR]
 *                           the same variants written as files DIR/NN (and
 *                           DIR/index), aimed at the FDE of HEXADDR
 *   ehcheck dump-vdso FILE  write this process's vDSO to FILE (to check it)
 *   ehcheck bench FILE KIND ROUNDS
 *                           lookups of a pc in the middle of each function
 *                           for an instruction count (callgrind): KIND full
 *                           (nothing kept), walk (the last lookup's FDE
 *                           kept: its CIE reused) or cached (the FDE of the
 *                           pc kept: no search)
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/types.h>
#include "ehframe.h"

/* ---- the task's address space: one mapped ELF file ---- */

struct seg {
	unsigned long vaddr, filesz, off;
};

struct image {
	const char *path;
	u8 *map;
	size_t size;
	struct seg seg[32];
	int nseg;
	unsigned long hdr, hdr_size, seg_start, seg_end;
};

static struct image *task;
static unsigned long n_reads, n_bytes, n_oob, n_faults;

/* make compare: an SFrame table written by compare(), at its own address. */
static u8 *sf_buf;
static unsigned long sf_addr = 0x7e0000000000UL, sf_len;

unsigned long copy_from_user(void *dst, const void *src, unsigned long n)
{
	unsigned long a = (unsigned long)src, k;
	int i;

	n_reads++;
	n_bytes += n;
	if (sf_buf && a >= sf_addr && a - sf_addr < sf_len) {
		k = sf_len - (a - sf_addr);
		k = k < n ? k : n;
		memcpy(dst, sf_buf + (a - sf_addr), k);
		return n - k;
	}
	/* The reader must never leave the segment it was given. */
	if (a < task->seg_start || a > task->seg_end || n > task->seg_end - a)
		n_oob++;
	for (i = 0; i < task->nseg; i++) {
		const struct seg *s = &task->seg[i];

		if (a < s->vaddr || a - s->vaddr >= s->filesz)
			continue;
		k = s->filesz - (a - s->vaddr);
		if (k > n)
			k = n;
		memcpy(dst, task->map + s->off + (a - s->vaddr), k);
		if (k < n)
			n_faults++;
		return n - k;
	}
	n_faults++;
	return n;
}

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	exit(2);
}

/* Map @path privately (writable copy-on-write: hostile variants edit it). */
static void image_load(struct image *im, const char *path)
{
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	struct stat st;
	int fd, i, have_hdr = 0;

	memset(im, 0, sizeof(*im));
	im->path = path;
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		die("%s: %s\n", path, strerror(errno));
	im->size = st.st_size;
	im->map = mmap(NULL, im->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	close(fd);
	if (im->map == MAP_FAILED)
		die("%s: mmap: %s\n", path, strerror(errno));
	eh = (Elf64_Ehdr *)im->map;
	if (im->size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_phentsize != sizeof(*ph) ||
	    eh->e_phoff + (unsigned long)eh->e_phnum * sizeof(*ph) > im->size)
		die("%s: not a 64-bit ELF file\n", path);
	ph = (Elf64_Phdr *)(im->map + eh->e_phoff);
	for (i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && im->nseg < 32) {
			if (ph[i].p_offset + ph[i].p_filesz > im->size)
				die("%s: segment past the file\n", path);
			im->seg[im->nseg++] = (struct seg){ ph[i].p_vaddr, ph[i].p_filesz,
							    ph[i].p_offset };
		}
		if (ph[i].p_type == PT_GNU_EH_FRAME) {
			im->hdr = ph[i].p_vaddr;
			im->hdr_size = ph[i].p_filesz;
			have_hdr = 1;
		}
	}
	if (!have_hdr)
		die("%s: no PT_GNU_EH_FRAME\n", path);
	for (i = 0; i < im->nseg; i++) {
		if (im->hdr >= im->seg[i].vaddr &&
		    im->hdr - im->seg[i].vaddr < im->seg[i].filesz) {
			im->seg_start = im->seg[i].vaddr;
			im->seg_end = im->seg[i].vaddr + im->seg[i].filesz;
		}
	}
	if (!im->seg_end)
		die("%s: .eh_frame_hdr in no segment\n", path);
}

static void image_unload(struct image *im)
{
	munmap(im->map, im->size);
}

/* The bytes at task address @a (harness side: to read or corrupt them). */
static u8 *P(struct image *im, unsigned long a)
{
	int i;

	for (i = 0; i < im->nseg; i++)
		if (a >= im->seg[i].vaddr && a - im->seg[i].vaddr < im->seg[i].filesz)
			return im->map + im->seg[i].off + (a - im->seg[i].vaddr);
	die("%s: %#lx not mapped\n", im->path, a);
	return NULL;
}

static int table_setup(struct image *im, struct ehframe_table *t)
{
	u8 buf[EHFRAME_HDR_LEN];
	size_t len = im->hdr_size < sizeof(buf) ? im->hdr_size : sizeof(buf);

	memset(t, 0, sizeof(*t));
	t->hdr = im->hdr;
	t->hdr_size = im->hdr_size;
	t->seg_start = im->seg_start;
	t->seg_end = im->seg_end;
	if (copy_from_user(buf, (void *)im->hdr, len))
		return -ENODATA;
	return ehframe_hdr_parse(t, buf, len);
}

static const char *const why_name[EHFRAME_WHY_NR] = {
	"none", "cfa_expr", "cfa_reg", "ra_rule", "fp_rule", "opcode", "format", "cap",
};

static const char *err_name(int ret)
{
	switch (ret) {
	case 0: return "ok";
	case -EINVAL: return "EINVAL";
	case -EOPNOTSUPP: return "EOPNOTSUPP";
	case -ENOENT: return "ENOENT";
	case -ENODATA: return "ENODATA";
	}
	return "other";
}

/* ---- readelf -wF ---- */

struct xrow {
	unsigned long loc;
	char cfa[64], ra[64], rbp[64];	/* rbp "" when no column */
};

struct xent {
	unsigned long off, len, cie, lo, hi;
	int is_cie, row0, nrows;
	char aug[32];
	/* ld's lazy .plt expression in the FDE: its K and N; -1 none, -2 others too */
	int plt_k;
	long plt_off;
};

static struct xent *ents;
static struct xrow *rows;
static int nents, nrows, caps_ents, caps_rows;

static int xent_by_off(unsigned long off)
{
	int lo = 0, hi = nents;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (ents[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nents && ents[lo].off == off ? lo : -1;
}

static void readelf_load(const char *path)
{
	char cmd[4200], line[2048], tok[48][64];
	int ra_col = -1, rbp_col = -1;
	FILE *f;

	nents = nrows = 0;
	snprintf(cmd, sizeof(cmd), "readelf -wF '%s' 2>/dev/null", path);
	f = popen(cmd, "r");
	if (!f)
		die("readelf: %s\n", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b, c, lo, hi, cie;
		char kind[8], aug[32];
		int n, i;

		if (sscanf(line, "%lx %lx %lx %7s", &a, &b, &c, kind) == 4 &&
		    (!strcmp(kind, "CIE") || !strcmp(kind, "FDE"))) {
			struct xent *e;

			if (nents == caps_ents) {
				caps_ents = caps_ents ? 2 * caps_ents : 1024;
				ents = realloc(ents, caps_ents * sizeof(*ents));
			}
			e = &ents[nents++];
			memset(e, 0, sizeof(*e));
			e->off = a;
			e->len = b;
			e->row0 = nrows;
			e->plt_k = -1;
			if (!strcmp(kind, "CIE")) {
				e->is_cie = 1;
				if (sscanf(line, "%*x %*x %*x CIE \"%31[^\"]\"", aug) == 1)
					snprintf(e->aug, sizeof(e->aug), "%s", aug);
			} else if (sscanf(line, "%*x %*x %*x FDE cie=%lx pc=%lx..%lx",
					  &cie, &lo, &hi) == 3) {
				e->cie = cie;
				e->lo = lo;
				e->hi = hi;
			} else {
				die("readelf: cannot parse: %s", line);
			}
			continue;
		}
		{
			char *save = NULL, *w;

			n = 0;
			for (w = strtok_r(line, " \t\n", &save); w && n < 48;
			     w = strtok_r(NULL, " \t\n", &save)) {
				/* "r10 (r10)": a register rule and its name, one column */
				if (w[0] == '(' && n)
					continue;
				snprintf(tok[n++], sizeof(tok[0]), "%s", w);
			}
		}
		if (n >= 2 && !strcmp(tok[0], "LOC") && !strcmp(tok[1], "CFA")) {
			ra_col = rbp_col = -1;
			for (i = 2; i < n; i++) {
				if (!strcmp(tok[i], "ra"))
					ra_col = i;
				if (!strcmp(tok[i], "rbp"))
					rbp_col = i;
			}
			continue;
		}
		if (n >= 2 && nents && strlen(tok[0]) == 16 &&
		    sscanf(tok[0], "%lx", &a) == 1) {
			struct xrow *r;

			if (nrows == caps_rows) {
				caps_rows = caps_rows ? 2 * caps_rows : 4096;
				rows = realloc(rows, caps_rows * sizeof(*rows));
			}
			r = &rows[nrows++];
			memset(r, 0, sizeof(*r));
			r->loc = a;
			snprintf(r->cfa, sizeof(r->cfa), "%s", tok[1]);
			if (ra_col > 0 && ra_col < n)
				snprintf(r->ra, sizeof(r->ra), "%s", tok[ra_col]);
			if (rbp_col > 0 && rbp_col < n)
				snprintf(r->rbp, sizeof(r->rbp), "%s", tok[rbp_col]);
			ents[nents - 1].nrows++;
		}
	}
	/* readelf exits 1 on some stock objects (libc) after a complete dump. */
	pclose(f);
	if (!nents)
		die("readelf: no frames in %s\n", path);
}

/*
 * readelf -wf: the FDEs whose CFA expression is ld's for lazy .plt entries
 * (%rsp + N + (((%rip & 15) >= K) << 3)), into ents[].plt_k and plt_off. An
 * FDE with another expression as well is marked -2 (no row of it expected
 * to be followed).
 */
static void readelf_plt(const char *path)
{
	char cmd[4200], line[2048];
	int cur = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf -wf '%s' 2>/dev/null", path);
	f = popen(cmd, "r");
	if (!f)
		die("readelf: %s\n", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b, c;
		char kind[8];
		long off;
		unsigned int k;
		int end = 0;

		if (sscanf(line, "%lx %lx %lx %7s", &a, &b, &c, kind) == 4 &&
		    (!strcmp(kind, "CIE") || !strcmp(kind, "FDE"))) {
			cur = !strcmp(kind, "FDE") ? xent_by_off(a) : -1;
			continue;
		}
		if (cur < 0 || !strstr(line, "DW_CFA_def_cfa_expression"))
			continue;
		if (sscanf(line, " DW_CFA_def_cfa_expression (DW_OP_breg7 (rsp): %ld; DW_OP_breg16 (rip): 0; "
			   "DW_OP_lit15; DW_OP_and; DW_OP_lit%u; DW_OP_ge; DW_OP_lit3; DW_OP_shl; "
			   "DW_OP_plus)%n", &off, &k, &end) == 2 && end && ents[cur].plt_k != -2) {
			ents[cur].plt_k = k;
			ents[cur].plt_off = off;
		} else {
			ents[cur].plt_k = -2;
		}
	}
	pclose(f);
}

/* What readelf's row says the decoder must give. */
struct expect {
	int ret;
	u8 why;
	u8 cfa_reg, ra_rule;
	s32 cfa_off, ra_off, fp_off;
	u8 plt_ge;
	unsigned int fp_rules;		/* mask of acceptable enum ehframe_rule */
};

/* @e: readelf's FDE of the row, for its PLT expression; NULL: none followed. */
static void expect_of(const struct xrow *r, const struct xent *x, struct expect *e)
{
	memset(e, 0, sizeof(*e));
	if (!strncmp(r->cfa, "rsp", 3) || !strncmp(r->cfa, "rbp", 3)) {
		e->cfa_reg = r->cfa[1] == 's' ? EHFRAME_REG_SP : EHFRAME_REG_FP;
		e->cfa_off = strtol(r->cfa + 3, NULL, 10);
	} else if (!strcmp(r->cfa, "exp") && x && x->plt_k >= 0) {
		e->cfa_reg = EHFRAME_REG_PLT;
		e->cfa_off = x->plt_off;
		e->plt_ge = x->plt_k;
	} else {
		e->ret = -EOPNOTSUPP;
		e->why = !strcmp(r->cfa, "exp") ? EHFRAME_WHY_CFA_EXPR : EHFRAME_WHY_CFA_REG;
		return;
	}
	if (r->ra[0] == 'c') {
		e->ra_rule = EHFRAME_RULE_OFFSET;
		e->ra_off = strtol(r->ra + 1, NULL, 10);
	} else if (!strcmp(r->ra, "u")) {
		e->ra_rule = EHFRAME_RULE_UNDEF;
	} else {
		e->ret = -EOPNOTSUPP;
		e->why = EHFRAME_WHY_RA_RULE;
		return;
	}
	/* readelf prints "u" for both "no rule yet" and DW_CFA_undefined. */
	if (!r->rbp[0] || !strcmp(r->rbp, "u")) {
		e->fp_rules = 1 << EHFRAME_RULE_SAME | 1 << EHFRAME_RULE_UNDEF;
	} else if (!strcmp(r->rbp, "s")) {
		e->fp_rules = 1 << EHFRAME_RULE_SAME;
	} else if (r->rbp[0] == 'c') {
		e->fp_rules = 1 << EHFRAME_RULE_OFFSET;
		e->fp_off = strtol(r->rbp + 1, NULL, 10);
	} else {
		e->ret = -EOPNOTSUPP;
		e->why = EHFRAME_WHY_FP_RULE;
	}
}

static int row_matches(int ret, const struct ehframe_row *row, const struct expect *e)
{
	if (ret != e->ret)
		return 0;
	if (ret)
		return row->why == e->why;
	if (row->cfa_reg != e->cfa_reg || row->cfa_off != e->cfa_off ||
	    row->ra_rule != e->ra_rule || !(e->fp_rules & 1 << row->fp_rule))
		return 0;
	if (row->ra_rule == EHFRAME_RULE_OFFSET && row->ra_off != e->ra_off)
		return 0;
	if (row->cfa_reg == EHFRAME_REG_PLT && row->plt_ge != e->plt_ge)
		return 0;
	if (row->fp_rule == EHFRAME_RULE_OFFSET && row->fp_off != e->fp_off)
		return 0;
	return 1;
}

static int cmp_ul(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

struct range {
	unsigned long lo, hi;
};

static int cmp_range(const void *a, const void *b)
{
	return cmp_ul(a, b);
}

static int covered(const struct range *r, int n, unsigned long pc)
{
	int lo = 0, hi = n, i;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (r[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Ranges may nest or touch: look back over a few. */
	for (i = lo - 1; i >= 0 && i >= lo - 8; i--)
		if (pc >= r[i].lo && pc < r[i].hi)
			return 1;
	return 0;
}

static void row_str(int ret, const struct ehframe_row *r, char *buf, size_t len)
{
	static const char *const rule[] = { "same", "undef", "off", "other" };

	if (ret) {
		snprintf(buf, len, "%s(%s)", err_name(ret),
			 ret == -EOPNOTSUPP && r->why < EHFRAME_WHY_NR ? why_name[r->why] : "");
		return;
	}
	snprintf(buf, len, "cfa=%s%+d ra=%s%+d rbp=%s%+d flags=%u",
		 r->cfa_reg == EHFRAME_REG_SP ? "rsp" : r->cfa_reg == EHFRAME_REG_FP ? "rbp" : "plt",
		 r->cfa_off,
		 rule[r->ra_rule & 3], r->ra_off, rule[r->fp_rule & 3], r->fp_off, r->flags);
}

static int check_file(const char *path)
{
	unsigned long pcs_n = 0, equal = 0, unsup[EHFRAME_WHY_NR] = { 0 }, mism = 0;
	unsigned long fdes = 0, empty = 0, cached_mism = 0, gaps = 0, gaps_ok = 0;
	unsigned long range_mism = 0, signal_fdes = 0, signal_ok = 0;
	unsigned long eq_cfa_fp = 0, eq_fp_saved = 0, eq_ra_undef = 0, eq_plt = 0;
	unsigned long reads0, bytes0, lookups = 0;
	struct ehframe_table t;
	struct ehframe_fde fde;
	struct range *ranges;
	struct image im;
	int i, j, k, ret, nr = 0, shown = 0;
	char a[160], b[160];

	image_load(&im, path);
	task = &im;
	ret = table_setup(&im, &t);
	if (ret)
		die("%s: ehframe_hdr_parse: %s\n", path, err_name(ret));
	readelf_load(path);
	readelf_plt(path);

	ranges = calloc(nents + 1, sizeof(*ranges));
	for (i = 0; i < nents; i++)
		if (!ents[i].is_cie && ents[i].hi > ents[i].lo)
			ranges[nr++] = (struct range){ ents[i].lo, ents[i].hi };
	qsort(ranges, nr, sizeof(*ranges), cmp_range);

	reads0 = n_reads;
	bytes0 = n_bytes;
	/* Kept from FDE to FDE, as a walker keeps its last: its CIE is reused. */
	memset(&fde, 0, sizeof(fde));
	for (i = 0; i < nents; i++) {
		const struct xent *e = &ents[i], *cie;
		unsigned long pc[512];
		struct ehframe_fde none;
		int np = 0, cret, ci;

		if (e->is_cie)
			continue;
		fdes++;
		if (e->hi <= e->lo) {
			empty++;
			continue;
		}
		ci = xent_by_off(e->cie);
		if (ci < 0 || !ents[ci].is_cie || ents[ci].nrows > 1)
			die("%s: FDE %#lx: no CIE row at %#lx\n", path, e->off, e->cie);
		cie = &ents[ci];

		pc[np++] = e->lo;
		pc[np++] = e->hi - 1;
		pc[np++] = e->lo + (e->hi - e->lo) / 2;
		for (j = 0; j < e->nrows && np < 508; j++) {
			unsigned long loc = rows[e->row0 + j].loc;

			if (loc > e->lo && loc < e->hi) {
				pc[np++] = loc;
				pc[np++] = loc - 1;
			}
		}
		qsort(pc, np, sizeof(pc[0]), cmp_ul);

		/* The walker's path: its FDE kept from the last, CIE and all. */
		{
			struct ehframe_row row;

			cret = ehframe_find_row(&t, e->lo, &fde, &row);
			if ((!cret || cret == -EOPNOTSUPP) &&
			    (fde.start != e->lo || fde.end != e->hi))
				range_mism++;
			if (strchr(cie->aug, 'S')) {
				signal_fdes++;
				if (fde.start == e->lo && (fde.init.flags & EHFRAME_ROW_SIGNAL))
					signal_ok++;
			}
		}

		for (j = 0; j < np; j++) {
			/* A CIE of nops has no row: no CFA rule yet. */
			static const struct xrow no_rule = { .cfa = "none" };
			const struct xrow *xr = cie->nrows ? &rows[cie->row0] : &no_rule;
			struct ehframe_row row, row2;
			struct expect ex;

			if (j && pc[j] == pc[j - 1])
				continue;
			for (k = 0; k < e->nrows; k++)
				if (rows[e->row0 + k].loc <= pc[j])
					xr = &rows[e->row0 + k];
			expect_of(xr, e, &ex);
			memset(&row, 0, sizeof(row));
			memset(&none, 0, sizeof(none));
			ret = ehframe_find_row(&t, pc[j], &none, &row);
			lookups++;
			pcs_n++;
			/*
			 * Past EHFRAME_MAX_INSNS instructions into a function the
			 * decoder gives up; only an FDE that long can have them.
			 */
			if (ret == -EOPNOTSUPP && row.why == EHFRAME_WHY_CAP &&
			    e->len > EHFRAME_MAX_INSNS && !ex.ret) {
				ex.ret = -EOPNOTSUPP;
				ex.why = EHFRAME_WHY_CAP;
			}
			if (row_matches(ret, &row, &ex)) {
				if (ret) {
					unsup[row.why]++;
				} else {
					equal++;
					eq_cfa_fp += row.cfa_reg == EHFRAME_REG_FP;
					eq_fp_saved += row.fp_rule == EHFRAME_RULE_OFFSET;
					eq_ra_undef += row.ra_rule == EHFRAME_RULE_UNDEF;
					eq_plt += row.cfa_reg == EHFRAME_REG_PLT;
				}
			} else {
				mism++;
				if (shown++ < 20) {
					row_str(ret, &row, a, sizeof(a));
					fprintf(stderr, "MISMATCH %s FDE %#lx pc %#lx: got %s; readelf cfa=%s ra=%s rbp=%s\n",
						path, e->off, pc[j], a, xr->cfa, xr->ra,
						xr->rbp[0] ? xr->rbp : "-");
				}
			}
			/* The walker's path, its FDE kept: the same row. */
			memset(&row2, 0, sizeof(row2));
			cret = ehframe_find_row(&t, pc[j], &fde, &row2);
			if (cret != ret || (!ret && memcmp(&row, &row2, sizeof(row))) ||
			    (ret == -EOPNOTSUPP && row.why != row2.why)) {
				cached_mism++;
				if (shown++ < 20) {
					row_str(ret, &row, a, sizeof(a));
					row_str(cret, &row2, b, sizeof(b));
					fprintf(stderr, "CACHED %s pc %#lx: %s vs %s\n",
						path, pc[j], a, b);
				}
			}
		}
		/* Just past the function: no FDE, unless another starts there. */
		if (!covered(ranges, nr, e->hi)) {
			struct ehframe_row row;

			gaps++;
			memset(&none, 0, sizeof(none));
			ret = ehframe_find_row(&t, e->hi, &none, &row);
			lookups++;
			if (ret == -ENOENT)
				gaps_ok++;
			else if (shown++ < 20)
				fprintf(stderr, "GAP %s pc %#lx: %s\n", path, e->hi, err_name(ret));
		}
	}
	printf("%s: fdes %lu (table %u, empty %lu), pcs %lu, equal %lu (cfa=rbp %lu, rbp saved %lu, ra undefined %lu, ld's plt expression %lu), unsupported",
	       path, fdes, t.fde_count, empty, pcs_n, equal, eq_cfa_fp, eq_fp_saved, eq_ra_undef,
	       eq_plt);
	for (i = 1; i < EHFRAME_WHY_NR; i++)
		if (unsup[i])
			printf(" %s=%lu", why_name[i], unsup[i]);
	printf(", mismatches %lu, cached-path mismatches %lu, fde range mismatches %lu, gaps ENOENT %lu/%lu, signal FDEs flagged %lu/%lu, out-of-segment reads %lu, reads/lookup %.1f, bytes/lookup %.1f\n",
	       mism, cached_mism, range_mism, gaps_ok, gaps, signal_ok, signal_fdes, n_oob,
	       (double)(n_reads - reads0) / lookups, (double)(n_bytes - bytes0) / lookups);
	free(ranges);
	image_unload(&im);
	return mism || cached_mism || range_mism || gaps_ok != gaps || fdes != t.fde_count ||
	       signal_ok != signal_fdes || n_oob;
}

/* ---- hostile variants ---- */

static unsigned long rng_state;

static unsigned long rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static s32 rd32(struct image *im, unsigned long a)
{
	s32 v;

	memcpy(&v, P(im, a), 4);
	return v;
}

static void wr32(struct image *im, unsigned long a, u32 v)
{
	memcpy(P(im, a), &v, 4);
}

static struct ehframe_table base;	/* of the file as it is */
static u32 K;				/* the table entry the variants aim at */
static u32 K2;				/* a short FDE: its window holds the next */

static unsigned long ent_start(struct image *im, u32 i)
{
	return base.hdr + rd32(im, base.table + 8UL * i);
}

static unsigned long ent_fde(struct image *im, u32 i)
{
	return base.hdr + rd32(im, base.table + 8UL * i + 4);
}

static unsigned long fde_cie(struct image *im, unsigned long fde)
{
	return fde + 4 - (u32)rd32(im, fde + 4);
}

/* Where FDE @fde's instructions start (zR, sdata4 pointers, empty aug data). */
static unsigned long fde_insns(struct image *im, unsigned long fde)
{
	return fde + 17;
}

static unsigned long fde_end(struct image *im, unsigned long fde)
{
	return fde + 4 + (u32)rd32(im, fde);
}

/* The CIE's augmentation length byte: after "zR\0", code, data, RA (1 byte each). */
static unsigned long cie_auglen(struct image *im, unsigned long cie)
{
	unsigned long a = cie + 9;

	while (*P(im, a))
		a++;
	return a + 4;
}

static void fill(struct image *im, unsigned long from, unsigned long to, const u8 *pat,
		 size_t n)
{
	unsigned long a;

	for (a = from; a < to; a++)
		*P(im, a) = pat[(a - from) % n];
}

static void random_bytes(struct image *im, unsigned long from, unsigned long to)
{
	unsigned long a;

	for (a = from; a < to; a++)
		*P(im, a) = rnd();
}

enum hdr_edit { HDR_SAME, HDR_SIZE4, HDR_SIZE_HALF };

struct variant {
	const char *name;
	void (*edit)(struct image *im);
	enum hdr_edit hdr;
	int target;		/* the lookup at the target must fail */
};

static unsigned long target_pc;

#define V(fn) static void fn(struct image *im)

V(v_none) { }
V(v_hdr_version) { *P(im, im->hdr) = 2; }
V(v_hdr_table_enc) { *P(im, im->hdr + 3) = 0x1b; }
V(v_hdr_count_omit) { *P(im, im->hdr + 2) = 0xff; }
V(v_hdr_ehframe_out) { wr32(im, im->hdr + 4, rd32(im, im->hdr + 4) + 0x10000000); }
V(v_hdr_count_huge) { wr32(im, im->hdr + 8, 0xffffffff); }
V(v_table_swap)
{
	u8 tmp[8];

	memcpy(tmp, P(im, base.table + 8UL * K), 8);
	memcpy(P(im, base.table + 8UL * K), P(im, base.table + 8UL * (K + 1)), 8);
	memcpy(P(im, base.table + 8UL * (K + 1)), tmp, 8);
	target_pc = ent_start(im, K) + 1;	/* now entry K+1's function */
}
V(v_table_reverse)
{
	u32 i, n = base.fde_count;
	u8 tmp[8];

	for (i = 0; i < n / 2; i++) {
		memcpy(tmp, P(im, base.table + 8UL * i), 8);
		memcpy(P(im, base.table + 8UL * i), P(im, base.table + 8UL * (n - 1 - i)), 8);
		memcpy(P(im, base.table + 8UL * (n - 1 - i)), tmp, 8);
	}
}
V(v_fde_outside) { wr32(im, base.table + 8UL * K + 4, 0x7fffffff); }
V(v_fde_in_hdr) { wr32(im, base.table + 8UL * K + 4, 0); }
V(v_start_mismatch) { wr32(im, base.table + 8UL * K, rd32(im, base.table + 8UL * K) + 1); target_pc++; }
V(v_fde_len_zero) { wr32(im, ent_fde(im, K), 0); }
V(v_fde_len_64) { wr32(im, ent_fde(im, K), 0xffffffff); }
V(v_fde_len_huge) { wr32(im, ent_fde(im, K), 0x7ffffff0); }
V(v_cie_zero) { wr32(im, ent_fde(im, K) + 4, 0); }
V(v_cie_self) { wr32(im, ent_fde(im, K) + 4, 4); }
V(v_cie_huge) { wr32(im, ent_fde(im, K) + 4, 0xfffffff0); }
V(v_cie_to_fde)
{
	/* FDE K's "CIE" is FDE K-1, whose "CIE" is made FDE K-1 itself: a loop. */
	unsigned long f = ent_fde(im, K), g = ent_fde(im, K - 1);

	wr32(im, f + 4, f + 4 - g);
	wr32(im, g + 4, 4);
}
V(v_cie_auglen_huge)
{
	unsigned long a = cie_auglen(im, fde_cie(im, ent_fde(im, K)));
	static const u8 big[] = { 0xff, 0xff, 0xff, 0x7f };

	fill(im, a, a + 4, big, 4);
}
V(v_cie_aug_unterminated)
{
	unsigned long cie = fde_cie(im, ent_fde(im, K));
	static const u8 z[] = { 'z' };

	fill(im, cie + 9, cie + 4 + (u32)rd32(im, cie), z, 1);
}
V(v_cie_version) { *P(im, fde_cie(im, ent_fde(im, K)) + 8) = 9; }
V(v_cie_ra_col) { *P(im, cie_auglen(im, fde_cie(im, ent_fde(im, K))) - 1) = 5; }
V(v_cie_enc_indirect) { *P(im, cie_auglen(im, fde_cie(im, ent_fde(im, K))) + 1) = 0x9b; }
V(v_fde_auglen_huge)
{
	static const u8 big[] = { 0xff, 0xff, 0xff, 0x0f };
	unsigned long f = ent_fde(im, K);

	fill(im, f + 16, f + 20, big, 4);
}
V(v_remember_deep)
{
	static const u8 op[] = { 0x0a };
	unsigned long f = ent_fde(im, K);

	fill(im, fde_insns(im, f), fde_end(im, f), op, 1);
}
V(v_restore_cycle)
{
	static const u8 op[] = { 0x0b, 0x0a };	/* restore before any remember */
	unsigned long f = ent_fde(im, K);

	fill(im, fde_insns(im, f), fde_end(im, f), op, 2);
}
V(v_uleb_endless)
{
	static const u8 op[] = { 0x0e, 0x80 };
	unsigned long f = ent_fde(im, K);

	fill(im, fde_insns(im, f), fde_insns(im, f) + 1, op, 1);
	fill(im, fde_insns(im, f) + 1, fde_end(im, f), op + 1, 1);
}
V(v_truncated_operand)
{
	static const u8 nop[] = { 0 };
	unsigned long f = ent_fde(im, K);

	fill(im, fde_insns(im, f), fde_end(im, f), nop, 1);
	*P(im, fde_end(im, f) - 1) = 0x04;	/* advance_loc4 with no operand */
	target_pc = ent_start(im, K) + 1;
}
V(v_short_truncated)
{
	static const u8 nop[] = { 0 };
	unsigned long f = ent_fde(im, K2);

	fill(im, fde_insns(im, f), fde_end(im, f), nop, 1);
	*P(im, fde_end(im, f) - 1) = 0x04;	/* its operand would be the next entry's */
	target_pc = ent_start(im, K2) + 1;
}
V(v_expr_len_huge)
{
	static const u8 op[] = { 0x0f, 0xff, 0xff, 0x03 };
	unsigned long f = ent_fde(im, K);

	fill(im, fde_insns(im, f), fde_insns(im, f) + 4, op, 4);
}
/* ld's PLT expression (ehframe_plt_expr()), spoilt three ways, then an advance */
static void plt_expr(struct image *im, const u8 *op, size_t n)
{
	unsigned long f = ent_fde(im, K);

	fill(im, fde_insns(im, f), fde_insns(im, f) + n, op, n);
}
V(v_plt_expr_op)
{
	/* DW_OP_eq for DW_OP_ge */
	static const u8 op[] = { 0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x29, 0x33, 0x24,
				 0x22, 0x41 };

	plt_expr(im, op, sizeof(op));
}
V(v_plt_expr_short)
{
	/* one byte short: its DW_OP_plus is read as an instruction */
	static const u8 op[] = { 0x0f, 10, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24,
				 0x22, 0x41 };

	plt_expr(im, op, sizeof(op));
}
V(v_plt_expr_leb)
{
	/* its %rsp offset a LEB128 that fills the expression: not ld's */
	static const u8 op[] = { 0x0f, 11, 0x77, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
				 0x80, 0x01, 0x41 };

	plt_expr(im, op, sizeof(op));
}
V(v_unknown_opcode) { *P(im, fde_insns(im, ent_fde(im, K))) = 0x3f; }
V(v_huge_offset)
{
	static const u8 op[] = { 0x0e, 0xff, 0xff, 0xff, 0xff, 0x0f };
	unsigned long f = ent_fde(im, K);

	fill(im, fde_insns(im, f), fde_insns(im, f) + 6, op, 6);
}
V(v_random_ehframe)
{
	random_bytes(im, base.eh_frame, im->seg_end);
}
V(v_random_table)
{
	random_bytes(im, base.table, base.table + 8UL * base.fde_count);
}
V(v_random_table_near)
{
	/* Starts and FDE pointers that land in the segment, in no order. */
	unsigned long span = im->seg_end - im->seg_start, i;

	for (i = 0; i < 2UL * base.fde_count; i++)
		wr32(im, base.table + 4 * i, im->seg_start - base.hdr + rnd() % span);
}
V(v_random_fde)
{
	unsigned long f = ent_fde(im, K);

	random_bytes(im, f + 4, fde_end(im, f));
}
V(v_random_all)
{
	random_bytes(im, im->hdr, im->seg_end);
}
V(v_random_sprinkle)
{
	int i;

	for (i = 0; i < 64; i++)
		*P(im, base.eh_frame + rnd() % (im->seg_end - base.eh_frame)) = rnd();
}

static const struct variant variants[] = {
	{ "none (the file as it is)", v_none, HDR_SAME, 0 },
	{ "hdr truncated to 4 bytes", v_none, HDR_SIZE4, 1 },
	{ "hdr truncated: table does not fit", v_none, HDR_SIZE_HALF, 1 },
	{ "hdr version 2", v_hdr_version, HDR_SAME, 1 },
	{ "hdr table encoding 0x1b", v_hdr_table_enc, HDR_SAME, 1 },
	{ "hdr fde_count omitted", v_hdr_count_omit, HDR_SAME, 1 },
	{ "hdr eh_frame_ptr outside", v_hdr_ehframe_out, HDR_SAME, 1 },
	{ "hdr fde_count 0xffffffff", v_hdr_count_huge, HDR_SAME, 1 },
	{ "table: two entries swapped", v_table_swap, HDR_SAME, 1 },
	{ "table: reversed", v_table_reverse, HDR_SAME, 0 },
	{ "table: FDE pointer outside", v_fde_outside, HDR_SAME, 1 },
	{ "table: FDE pointer into the hdr", v_fde_in_hdr, HDR_SAME, 1 },
	{ "table: start not the FDE's", v_start_mismatch, HDR_SAME, 1 },
	{ "FDE length 0", v_fde_len_zero, HDR_SAME, 1 },
	{ "FDE length 0xffffffff (64-bit)", v_fde_len_64, HDR_SAME, 1 },
	{ "FDE length past the segment", v_fde_len_huge, HDR_SAME, 1 },
	{ "FDE CIE pointer 0 (a CIE)", v_cie_zero, HDR_SAME, 1 },
	{ "FDE CIE pointer to itself", v_cie_self, HDR_SAME, 1 },
	{ "FDE CIE pointer before .eh_frame", v_cie_huge, HDR_SAME, 1 },
	{ "FDE CIE pointer loop through FDEs", v_cie_to_fde, HDR_SAME, 1 },
	{ "CIE augmentation length huge", v_cie_auglen_huge, HDR_SAME, 1 },
	{ "CIE augmentation string unterminated", v_cie_aug_unterminated, HDR_SAME, 1 },
	{ "CIE version 9", v_cie_version, HDR_SAME, 1 },
	{ "CIE RA column 5", v_cie_ra_col, HDR_SAME, 1 },
	{ "CIE FDE encoding indirect", v_cie_enc_indirect, HDR_SAME, 1 },
	{ "FDE augmentation length huge", v_fde_auglen_huge, HDR_SAME, 1 },
	{ "remember_state nested past the cap", v_remember_deep, HDR_SAME, 1 },
	{ "restore_state/remember_state cycle, unbalanced", v_restore_cycle, HDR_SAME, 1 },
	{ "ULEB128 that never ends", v_uleb_endless, HDR_SAME, 1 },
	{ "operand past the FDE's end", v_truncated_operand, HDR_SAME, 1 },
	{ "operand past a short FDE's end", v_short_truncated, HDR_SAME, 1 },
	{ "CFA expression longer than the FDE", v_expr_len_huge, HDR_SAME, 1 },
	{ "ld's PLT expression, an operator changed", v_plt_expr_op, HDR_SAME, 1 },
	{ "ld's PLT expression, its length one short", v_plt_expr_short, HDR_SAME, 1 },
	{ "ld's PLT expression, a 10-byte offset", v_plt_expr_leb, HDR_SAME, 1 },
	{ "unknown opcode", v_unknown_opcode, HDR_SAME, 1 },
	{ "CFA offset 2^32", v_huge_offset, HDR_SAME, 1 },
	{ "random .eh_frame (seed 1)", v_random_ehframe, HDR_SAME, 0 },
	{ "random .eh_frame (seed 2)", v_random_ehframe, HDR_SAME, 0 },
	{ "random .eh_frame (seed 3)", v_random_ehframe, HDR_SAME, 0 },
	{ "random search table (seed 1)", v_random_table, HDR_SAME, 0 },
	{ "random search table (seed 2)", v_random_table, HDR_SAME, 0 },
	{ "random search table, in-segment values", v_random_table_near, HDR_SAME, 0 },
	{ "random FDE body (seed 1)", v_random_fde, HDR_SAME, 0 },
	{ "random FDE body (seed 2)", v_random_fde, HDR_SAME, 0 },
	{ "random hdr and .eh_frame", v_random_all, HDR_SAME, 0 },
	{ "64 random bytes sprinkled (seed 1)", v_random_sprinkle, HDR_SAME, 0 },
	{ "64 random bytes sprinkled (seed 2)", v_random_sprinkle, HDR_SAME, 0 },
};

/*
 * A lookup with nothing kept, then the same pc with the FDE the last lookup
 * kept (a walker's path, its CIE reused): the same answer, or the variant
 * fails.
 */
static struct ehframe_fde kept;
static unsigned long kept_mism;

static int lookup(const struct ehframe_table *t, unsigned long pc, struct ehframe_row *row)
{
	struct ehframe_fde none = { 0 };
	struct ehframe_row r2 = { 0 };
	int ret, ret2;

	memset(row, 0, sizeof(*row));
	ret = ehframe_find_row(t, pc, &none, row);
	ret2 = ehframe_find_row(t, pc, &kept, &r2);
	if (ret != ret2 || (!ret && memcmp(row, &r2, sizeof(r2)))) {
		if (getenv("EHCHECK_DEBUG") && kept_mism < 5)
			fprintf(stderr, "kept differs at %#lx: %s vs %s, kept [%#lx, %#lx)\n", pc,
				err_name(ret), err_name(ret2), kept.start, kept.end);
		kept_mism++;
	}
	return ret;
}

static void on_alarm(int sig)
{
	static const char msg[] = "HANG: a variant ran for 20 s\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(3);
}

/*
 * The entries the variants aim at, among those with a neighbour on each
 * side: K, the FDE of @want's function if @want, else the longest FDE with
 * a "zR" CIE; K2, the first short "zR" FDE (its window holds the next).
 * Returns -1 when K is not a "zR" FDE.
 */
static int pick_targets(struct image *im, unsigned long want)
{
	u32 i;

	K = 0;
	K2 = 0;
	for (i = 1; i + 1 < base.fde_count; i++) {
		unsigned long f = ent_fde(im, i), cie = fde_cie(im, f);
		u32 len = rd32(im, f);
		int zr = !strcmp((char *)P(im, cie + 9), "zR");

		if (want ? ent_start(im, i) <= want && want < ent_start(im, i + 1) :
			   zr && len > 24 && (!K || len > (u32)rd32(im, ent_fde(im, K))))
			K = i;
		if (!K2 && zr && len >= 16 && len <= 28)
			K2 = i;
	}
	return K && !strcmp((char *)P(im, fde_cie(im, ent_fde(im, K)) + 9), "zR") ? 0 : -1;
}

/* base, K and K2 of the file at @path as it is (pick_targets()). */
static void setup_targets(const char *path, unsigned long want)
{
	struct image im;

	image_load(&im, path);
	task = &im;
	if (table_setup(&im, &base))
		die("%s: no usable .eh_frame_hdr\n", path);
	if (pick_targets(&im, want))
		die("%s: no zR FDE with neighbours at %#lx\n", path, want);
	image_unload(&im);
}

/*
 * @path loaded into @im with variant @v applied: its edit, its seed, its
 * target pc, and the header size its hdr edit gives in im->hdr_size.
 */
static void load_variant(struct image *im, const char *path, unsigned int v)
{
	const struct variant *var = &variants[v];

	image_load(im, path);
	task = im;
	rng_state = 0x9e3779b97f4a7c15UL + v;
	target_pc = ent_start(im, K);
	var->edit(im);
	if (var->hdr == HDR_SIZE4)
		im->hdr_size = 4;
	else if (var->hdr == HDR_SIZE_HALF)
		im->hdr_size = base.table - base.hdr + 8UL * (base.fde_count / 2);
}

static int hostile(const char *path)
{
	unsigned int v, failed = 0;
	struct image im;
	u32 i;
	int ret;

	signal(SIGALRM, on_alarm);
	setup_targets(path, 0);
	printf("%s: %u FDEs, target entries %u and %u (short)\n", path, base.fde_count, K, K2);

	for (v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
		const struct variant *var = &variants[v];
		unsigned long counts[6] = { 0 }, oob0, lookups = 0, pc;
		struct ehframe_table t;
		struct ehframe_row row;
		int pret, tret = 1, bad = 0;

		load_variant(&im, path, v);
		oob0 = n_oob;
		kept_mism = 0;
		memset(&kept, 0, sizeof(kept));
		alarm(20);
		pret = table_setup(&im, &t);
		if (!pret) {
			/* Every function start, one byte in, the target, and random pcs. */
			for (i = 0; i < base.fde_count; i++) {
				unsigned long s = base.hdr + rd32(&im, base.table + 8UL * i);

				if (var->edit == v_random_table || var->edit == v_random_all ||
				    var->edit == v_random_table_near ||
				    var->edit == v_table_reverse || var->edit == v_table_swap)
					s = rnd() % (im.seg_end + 0x100000);
				for (pc = s; pc < s + 2; pc++) {
					ret = lookup(&t, pc, &row);
					counts[ret == 0 ? 0 : ret == -EINVAL ? 1 : ret == -EOPNOTSUPP ? 2 :
					       ret == -ENOENT ? 3 : ret == -ENODATA ? 4 : 5]++;
					lookups++;
				}
			}
			for (i = 0; i < 2000; i++) {
				ret = lookup(&t, rnd() % (im.seg_end + 0x100000), &row);
				counts[ret == 0 ? 0 : ret == -EINVAL ? 1 : ret == -EOPNOTSUPP ? 2 :
				       ret == -ENOENT ? 3 : ret == -ENODATA ? 4 : 5]++;
				lookups++;
			}
			tret = lookup(&t, target_pc, &row);
		}
		alarm(0);
		if (var->target && !pret && !tret)
			bad = 1;	/* the corrupted entry gave a row */
		if (!var->target && var->edit == v_none && (pret || tret))
			bad = 1;
		if (n_oob != oob0 || counts[5] || kept_mism)
			bad = 1;
		failed += bad;
		printf("%-48s %s hdr %-10s target %-10s%s lookups %5lu: ok %lu EINVAL %lu EOPNOTSUPP %lu ENOENT %lu ENODATA %lu other %lu, out-of-segment reads %lu, kept-FDE differences %lu\n",
		       var->name, bad ? "FAIL" : "pass", err_name(pret), pret ? "-" : err_name(tret),
		       tret == -EOPNOTSUPP ? why_name[row.why] : "",
		       lookups, counts[0], counts[1], counts[2], counts[3], counts[4], counts[5],
		       n_oob - oob0, kept_mism);
		image_unload(&im);
	}
	printf("%s: %zu variants, %u failed\n", path, sizeof(variants) / sizeof(variants[0]),
	       failed);
	return failed != 0;
}

/*
 * The same variants written as files DIR/NN for a guest to run (the guest
 * test sframe_stack): each is FILE with one variant's edit, the header's
 * size edits made in its PT_GNU_EH_FRAME, aimed at the FDE of @want's
 * function (one every sampled stack goes through), if @want, else as
 * hostile() aims; DIR/index lists "NN name".
 */
static int write_variants(const char *path, const char *dir, unsigned long want)
{
	char out_path[4096];
	unsigned int v;
	struct image im;
	FILE *index;
	u32 i;

	setup_targets(path, want);
	snprintf(out_path, sizeof(out_path), "%s/index", dir);
	index = fopen(out_path, "w");
	if (!index)
		die("%s: %s\n", out_path, strerror(errno));
	for (v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
		const struct variant *var = &variants[v];
		Elf64_Ehdr *eh;
		Elf64_Phdr *ph;
		FILE *out;

		load_variant(&im, path, v);
		eh = (Elf64_Ehdr *)im.map;
		ph = (Elf64_Phdr *)(im.map + eh->e_phoff);
		for (i = 0; i < eh->e_phnum; i++)
			if (ph[i].p_type == PT_GNU_EH_FRAME && var->hdr != HDR_SAME)
				ph[i].p_filesz = ph[i].p_memsz = im.hdr_size;
		snprintf(out_path, sizeof(out_path), "%s/%02u", dir, v);
		out = fopen(out_path, "w");
		if (!out || fwrite(im.map, 1, im.size, out) != im.size || fclose(out))
			die("%s: %s\n", out_path, strerror(errno));
		chmod(out_path, 0755);
		fprintf(index, "%02u %s\n", v, var->name);
		image_unload(&im);
	}
	if (fclose(index))
		die("%s/index: %s\n", dir, strerror(errno));
	printf("%s: %zu variants in %s, target entry %u at %#lx, short entry %u\n", path,
	       sizeof(variants) / sizeof(variants[0]), dir, K, want, K2);
	return 0;
}

/* ---- lookups for an instruction count ---- */

/* The lookup measured: callgrind collects from here (--toggle-collect). */
static __attribute__((noinline)) int bench_one(const struct ehframe_table *t, unsigned long pc,
					       struct ehframe_fde *fde, struct ehframe_row *row)
{
	return ehframe_find_row(t, pc, fde, row);
}

static int bench(const char *path, const char *kind, int rounds)
{
	struct ehframe_fde *fdes, last = { 0 };
	unsigned long *pcs, ok = 0, lookups = 0, r0, b0;
	struct ehframe_table t;
	struct ehframe_row row;
	struct image im;
	u32 i, n;
	int r;

	image_load(&im, path);
	task = &im;
	if (table_setup(&im, &t))
		die("%s: no usable .eh_frame_hdr\n", path);
	n = t.fde_count;
	pcs = calloc(n, sizeof(*pcs));
	fdes = calloc(n, sizeof(*fdes));
	/*
	 * A pc in the middle of each function, as a return address would be:
	 * its size read here (pcrel|sdata4 FDEs, as in every stock object).
	 */
	for (i = 0; i < n; i++) {
		unsigned long s = t.hdr + rd32(&im, t.table + 8UL * i);

		pcs[i] = s + (u32)rd32(&im, t.hdr + rd32(&im, t.table + 8UL * i + 4) + 12) / 2;
		if (!strcmp(kind, "cached"))
			ehframe_find_row(&t, pcs[i], &fdes[i], &row);
	}
	r0 = n_reads;
	b0 = n_bytes;
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < n; i++) {
			struct ehframe_fde none = { 0 };
			int ret;

			if (!strcmp(kind, "full"))
				ret = bench_one(&t, pcs[i], &none, &row);
			else if (!strcmp(kind, "walk"))
				ret = bench_one(&t, pcs[i], &last, &row);
			else
				ret = bench_one(&t, pcs[i], &fdes[i], &row);
			ok += !ret;
			lookups++;
		}
	}
	printf("%s %s: %lu lookups, %lu ok, %.2f reads and %.1f bytes per lookup\n", path, kind,
	       lookups, ok, (double)(n_reads - r0) / lookups, (double)(n_bytes - b0) / lookups);
	return 0;
}

/* ---- the same lookups by the kernel's SFrame reader (sfglue.c) ---- */

#ifdef EHCHECK_COMPARE
#include "sfglue.h"

struct sf_fn {
	unsigned long lo, hi;
	int xi;			/* its readelf entry */
};

static int cmp_fn(const void *a, const void *b)
{
	return cmp_ul(a, b);
}

static void put(u8 **p, u64 v, unsigned int n)
{
	memcpy(*p, &v, n);
	*p += n;
}

static unsigned int word_size(long v)
{
	return v >= -128 && v <= 127 ? 0 : v >= -32768 && v <= 32767 ? 1 : 2;
}

/*
 * An SFrame (version 3) table of the functions of @path whose every row the
 * walker can follow (CFA %rsp or %rbp + offset, RA at CFA - 8, %rbp saved
 * or not), with readelf's rows; the others are left out.
 */
static struct sf_fn *sframe_write(const char *path, int *nfn)
{
	struct sf_fn *fn = calloc(nents + 1, sizeof(*fn));
	u8 *p, *q, *fdi, *fre;
	unsigned long last_loc = 0;
	u64 key, last_key = 0;
	u32 num_fres = 0, cnt_rows;
	int i, j, n = 0;

	for (i = 0; i < nents; i++) {
		const struct xent *e = &ents[i];
		int ci = e->is_cie ? -1 : xent_by_off(e->cie), ok = ci >= 0;

		if (!ok || e->hi <= e->lo || e->hi - e->lo > 0xffffffffUL)
			continue;
		for (j = 0; ok && j < (e->nrows ? e->nrows : 1); j++) {
			const struct xrow *r = e->nrows ? &rows[e->row0 + j] :
					       ents[ci].nrows ? &rows[ents[ci].row0] : NULL;
			struct expect ex;

			if (!r)
				break;
			expect_of(r, NULL, &ex);
			ok = !ex.ret && ex.ra_rule == EHFRAME_RULE_OFFSET && ex.ra_off == -8;
		}
		if (ok && (e->nrows || ents[ci].nrows))
			fn[n++] = (struct sf_fn){ e->lo, e->hi, i };
	}
	qsort(fn, n, sizeof(*fn), cmp_fn);

	sf_len = 28 + 16UL * n + 64UL * nrows + 8UL * n;
	sf_buf = calloc(1, sf_len);
	fdi = sf_buf + 28;
	fre = fdi + 16UL * n;
	for (i = 0; i < n; i++) {
		const struct xent *e = &ents[fn[i].xi];
		const struct xent *cie = &ents[xent_by_off(e->cie)];
		int nr = e->nrows ? e->nrows : 1, fre_type;
		unsigned long size = e->hi - e->lo;
		u8 *fda = fre;

		fre_type = size <= 0xff ? 0 : size <= 0xffff ? 1 : 2;
		p = fdi + 16UL * i;
		put(&p, e->lo - (sf_addr + (p - sf_buf)), 8);
		put(&p, size, 4);
		put(&p, fda - (sf_buf + 28 + 16UL * n), 4);
		p = fda + 5;
		for (j = 0, cnt_rows = 0; j < nr; j++) {
			const struct xrow *r = e->nrows ? &rows[e->row0 + j] : &rows[cie->row0];
			unsigned long loc = e->nrows ? r->loc - e->lo : 0;
			struct expect ex;
			unsigned int ws, cnt;

			expect_of(r, NULL, &ex);
			/* readelf's rows ascend (checked: none repeats a place). */
			if (loc >= size || (cnt_rows && loc <= last_loc))
				break;
			cnt = ex.fp_rules == 1 << EHFRAME_RULE_OFFSET ? 2 : 1;
			/* As gas writes SFrame: a row only where what it says changes. */
			key = (u64)(ex.cfa_reg == EHFRAME_REG_SP) << 60 | (u64)cnt << 61 |
			      (u64)(u32)ex.cfa_off << 24 | (u32)(cnt == 2 ? ex.fp_off : 0) % (1 << 24);
			if (cnt_rows && key == last_key)
				continue;
			last_key = key;
			last_loc = loc;
			ws = word_size(ex.cfa_off);
			if (cnt == 2 && word_size(ex.fp_off) > ws)
				ws = word_size(ex.fp_off);
			put(&p, loc, 1 << fre_type);
			put(&p, (ex.cfa_reg == EHFRAME_REG_SP) | cnt << 1 | ws << 5, 1);
			put(&p, ex.cfa_off, 1 << ws);
			if (cnt == 2)
				put(&p, ex.fp_off, 1 << ws);
			cnt_rows++;
			num_fres++;
		}
		q = fda;
		put(&q, cnt_rows, 2);
		put(&q, fre_type, 1);	/* info: FRE type, no PC mask, no signal */
		fre = p;
	}
	p = sf_buf;
	put(&p, 0xdee2, 2);
	put(&p, 3, 1);			/* version */
	put(&p, 0x1 | 0x4, 1);		/* sorted, PC-relative starts */
	put(&p, 3, 1);			/* AMD64 */
	put(&p, 0, 1);
	put(&p, (u8)-8, 1);		/* RA at CFA - 8 */
	put(&p, 0, 1);
	put(&p, n, 4);
	put(&p, num_fres, 4);
	put(&p, fre - (sf_buf + 28 + 16UL * n), 4);
	put(&p, 0, 4);			/* fdeoff */
	put(&p, 16UL * n, 4);		/* freoff */
	*nfn = n;
	(void)path;
	return fn;
}

static __attribute__((noinline)) int sf_one(unsigned long pc, bool keep, struct sfglue_row *r)
{
	return sfglue_row(pc, keep, r);
}

/*
 * KIND sf-full, sf-cached, eh-full or eh-cached: a pc in the middle of each
 * function both tables have, looked up by one reader, nothing kept (full)
 * or the function kept from a lookup just before (cached, not counted).
 */
static int compare(const char *path, const char *kind)
{
	unsigned long lookups = 0, ok = 0, same = 0, differ = 0, reads = 0, r0;
	struct ehframe_table t;
	struct image im;
	struct sf_fn *fn;
	int i, n, ret;

	image_load(&im, path);
	task = &im;
	if (table_setup(&im, &t))
		die("%s: no usable .eh_frame_hdr\n", path);
	readelf_load(path);
	fn = sframe_write(path, &n);
	if (sfglue_init(sf_addr, sf_len, sf_buf, 28))
		die("%s: the SFrame table written is refused\n", path);

	for (i = 0; i < n; i++) {
		unsigned long pc = fn[i].lo + (fn[i].hi - fn[i].lo) / 2;
		struct ehframe_fde none = { 0 }, kept = { 0 };
		struct ehframe_row row;
		struct sfglue_row sr;
		int eret, sret;

		/* Both readers give the same row, or the comparison is moot. */
		eret = ehframe_find_row(&t, pc, &none, &row);
		sret = sfglue_row(pc, false, &sr);
		if (!eret && !sret && sr.cfa_sp == (row.cfa_reg == EHFRAME_REG_SP) &&
		    sr.cfa_off == row.cfa_off &&
		    (sr.count == 2) == (row.fp_rule == EHFRAME_RULE_OFFSET) &&
		    (sr.count < 2 || sr.fp_off == row.fp_off))
			same++;
		else if (differ++ < 3 && getenv("EHCHECK_DEBUG"))
			fprintf(stderr, "differ at %#lx: eh %d cfa %s%+d fp %d%+d; sf %d cfa %s%+d count %d fp %+d\n",
				pc, eret, row.cfa_reg == EHFRAME_REG_SP ? "rsp" : "rbp", row.cfa_off,
				row.fp_rule, row.fp_off, sret, sr.cfa_sp ? "rsp" : "rbp", sr.cfa_off,
				sr.count, sr.fp_off);

		r0 = n_reads;
		if (!strcmp(kind, "sf-full")) {
			ret = sf_one(pc, false, &sr);
		} else if (!strcmp(kind, "sf-cached")) {
			sfglue_row(fn[i].lo, false, &sr);
			r0 = n_reads;
			ret = sf_one(pc, true, &sr);
		} else if (!strcmp(kind, "eh-full")) {
			memset(&none, 0, sizeof(none));
			ret = bench_one(&t, pc, &none, &row);
		} else {
			ehframe_find_row(&t, fn[i].lo, &kept, &row);
			r0 = n_reads;
			ret = bench_one(&t, pc, &kept, &row);
		}
		reads += n_reads - r0;
		ok += !ret;
		lookups++;
	}
	printf("%s %s: %lu lookups, %lu ok, %.2f user reads per lookup; rows of both readers: %lu same, %lu differ\n",
	       path, kind, lookups, ok, (double)reads / lookups, same, differ);
	return differ != 0;
}
#endif

/* Write this process's vDSO (the running kernel's) to @path, to check it too. */
static int dump_vdso(const char *path)
{
	unsigned long lo, hi;
	char line[512];
	FILE *maps = fopen("/proc/self/maps", "r"), *out;

	if (!maps)
		die("/proc/self/maps: %s\n", strerror(errno));
	while (fgets(line, sizeof(line), maps)) {
		if (!strstr(line, "[vdso]") || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		out = fopen(path, "w");
		if (!out || fwrite((void *)lo, 1, hi - lo, out) != hi - lo || fclose(out))
			die("%s: %s\n", path, strerror(errno));
		fclose(maps);
		return 0;
	}
	die("no [vdso] mapping\n");
	return 1;
}

int main(int argc, char **argv)
{
	int i, ret = 0;

	if (argc == 3 && !strcmp(argv[1], "dump-vdso"))
		return dump_vdso(argv[2]);

	if (argc >= 3 && !strcmp(argv[1], "check")) {
		for (i = 2; i < argc; i++)
			ret |= check_file(argv[i]);
		return ret;
	}
	if (argc == 3 && !strcmp(argv[1], "hostile"))
		return hostile(argv[2]);
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "variants"))
		return write_variants(argv[2], argv[3], argc == 5 ? strtoul(argv[4], NULL, 16) : 0);
	if (argc == 5 && !strcmp(argv[1], "bench"))
		return bench(argv[2], argv[3], atoi(argv[4]));
#ifdef EHCHECK_COMPARE
	if (argc == 4 && !strcmp(argv[1], "compare"))
		return compare(argv[2], argv[3]);
#endif
	fprintf(stderr, "usage: %s check FILE... | hostile FILE | variants FILE DIR [HEXADDR] | dump-vdso FILE | bench FILE full|walk|cached ROUNDS\n",
		argv[0]);
	return 2;
}
