// SPDX-License-Identifier: MIT
/* GNU build-ids (NT_GNU_BUILD_ID notes) of ELF files and of the kernel. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "deferstack/deferstack.h"
#include "internal.h"

#define NT_GNU_BUILD_ID_TYPE 3

int ds_build_id_from_notes(const void *notes, size_t len, size_t align, uint8_t *id,
			   size_t cap)
{
	const uint8_t *p = notes, *end = p + len;

	if (align != 8)
		align = 4;
	while ((size_t)(end - p) >= 12) {
		uint32_t namesz = ds_rd32(p), descsz = ds_rd32(p + 4), type = ds_rd32(p + 8);
		size_t name_pad = (namesz + align - 1) & ~(align - 1);
		size_t desc_pad = (descsz + align - 1) & ~(align - 1);
		const uint8_t *name = p + 12, *desc;

		if (name_pad < namesz || (size_t)(end - name) < name_pad)
			break;
		desc = name + name_pad;
		if (desc_pad < descsz || (size_t)(end - desc) < desc_pad)
			break;
		if (type == NT_GNU_BUILD_ID_TYPE && namesz == 4 && !memcmp(name, "GNU", 4) &&
		    descsz > 0) {
			size_t n = descsz < cap ? descsz : cap;

			memcpy(id, desc, n);
			return (int)n;
		}
		p = desc + desc_pad;
	}
	return -ENOENT;
}

int ds_build_id_of_file(const char *path, uint8_t *id, size_t cap)
{
	Elf *e = NULL;
	Elf_Scn *scn = NULL;
	size_t nph = 0;
	int fd, ret = -ENOENT;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	fd = ds_open_regular(path, NULL);
	if (fd < 0)
		return fd;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		ret = -ENOEXEC;
		goto out;
	}
	/* the loaded notes first (what the program headers name) */
	if (!elf_getphdrnum(e, &nph)) {
		for (size_t i = 0; i < nph && ret < 0; i++) {
			GElf_Phdr ph;
			Elf_Data *d;

			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_NOTE)
				continue;
			d = elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE);
			if (d && d->d_buf)
				ret = ds_build_id_from_notes(d->d_buf, d->d_size, ph.p_align, id, cap);
		}
	}
	while (ret < 0 && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_rawdata(scn, NULL);
		if (d && d->d_buf)
			ret = ds_build_id_from_notes(d->d_buf, d->d_size, sh.sh_addralign, id, cap);
	}
out:
	if (e)
		elf_end(e);
	close(fd);
	return ret;
}

int ds_build_id_of_kernel(uint8_t *id, size_t cap)
{
	uint8_t buf[4096];
	ssize_t n;
	int fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0)
		return -EIO;
	return ds_build_id_from_notes(buf, (size_t)n, 4, id, cap);
}

char *ds_build_id_hex(const uint8_t *id, size_t n, char *out, size_t len)
{
	size_t k = 0;

	for (size_t i = 0; i < n && k + 3 <= len; i++, k += 2)
		snprintf(out + k, 3, "%02x", id[i]);
	if (len)
		out[k < len ? k : len - 1] = 0;
	return out;
}
