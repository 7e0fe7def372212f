// SPDX-License-Identifier: GPL-2.0
/* SFrame tables of ELF files in memory, and known ways to damage them. */
#include <string.h>

#include "sframe_util.h"

/* The PT_GNU_SFRAME program header of the ELF file in @buf, or NULL. */
Elf64_Phdr *sframe_phdr(unsigned char *buf, size_t len)
{
	const Elf64_Ehdr *eh = (const void *)buf;

	if (len < sizeof(*eh) || eh->e_phoff + (size_t)eh->e_phnum * sizeof(Elf64_Phdr) > len)
		return NULL;
	for (int i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr *ph = (void *)(buf + eh->e_phoff + i * sizeof(Elf64_Phdr));

		if (ph->p_type == 0x6474e554 && ph->p_offset + ph->p_filesz <= len &&
		    ph->p_filesz >= 28)
			return ph;
	}
	return NULL;
}

/* Little-endian fields of the SFrame header (28 bytes) and of V3 index entries. */
#define SF_NUM_FDES	8
#define SF_FRE_LEN	16
#define SF_FDEOFF	20
#define SF_FREOFF	24
#define SF_FDI_SIZE	16

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

/*
 * Damage of a known kind, each caught at a different place: the table cut
 * short by its program header, a header claiming rows beyond the section,
 * index entries out of order (the first and the last swapped: caught when
 * the table is indexed), a table segment whose file offset no longer
 * matches the loaded segment it lies in, row attributes of an unknown kind
 * and functions that claim 65,535 rows each, running into the next
 * function's (both caught at use, not when indexed).
 * Returns 0, or -1 when the table is not V3 as expected.
 */
int sframe_damage(unsigned char *buf, size_t len, int kind)
{
	Elf64_Phdr *ph = sframe_phdr(buf, len);
	unsigned char *t;
	uint32_t n, fdes, fres;

	if (!ph)
		return -1;
	t = buf + ph->p_offset;
	n = get32(t + SF_NUM_FDES);
	fdes = 28 + t[7] + get32(t + SF_FDEOFF);
	fres = 28 + t[7] + get32(t + SF_FREOFF);
	if (t[2] != 3 || n < 1 || (kind == 2 && n < 2) || fdes + (size_t)n * SF_FDI_SIZE > ph->p_filesz)
		return -1;
	switch (kind) {
	case 0:		/* truncated */
		ph->p_filesz = fdes + (size_t)n / 2 * SF_FDI_SIZE;
		break;
	case 1:		/* rows beyond the section */
		put32(t + SF_FRE_LEN, get32(t + SF_FRE_LEN) + 4096);
		break;
	case 2: {	/* unsorted: the first and the last entry swapped */
		unsigned char tmp[SF_FDI_SIZE];
		unsigned char *a = t + fdes, *b = t + fdes + (size_t)(n - 1) * SF_FDI_SIZE;

		memcpy(tmp, a, sizeof(tmp));
		memcpy(a, b, sizeof(tmp));
		memcpy(b, tmp, sizeof(tmp));
		break;
	}
	case 3:		/* the segment's file offset past the end of the file */
		ph->p_offset = len - 8;
		break;
	case 5:		/* each function claims 65,535 rows (V3's most) */
		for (uint32_t i = 0; i < n; i++) {
			uint32_t fda = fres + get32(t + fdes + (size_t)i * SF_FDI_SIZE + 12);

			if (fda + 5 > ph->p_filesz)
				return -1;
			t[fda] = 0xff;
			t[fda + 1] = 0xff;
		}
		break;
	case 4:		/* each function's rows: start addresses of 8 bytes */
		for (uint32_t i = 0; i < n; i++) {
			uint32_t fda = fres + get32(t + fdes + (size_t)i * SF_FDI_SIZE + 12);

			if (fda + 5 > ph->p_filesz)
				return -1;
			t[fda + 2] = (t[fda + 2] & ~0xf) | 3;
		}
		break;
	}
	return 0;
}

const char *const sframe_damage_names[SFRAME_DAMAGE_KINDS] = {
	"truncated", "rows beyond the section", "unsorted", "segment offset past the end of the file",
	"rows of an unknown kind", "65,535 rows per function",
};
