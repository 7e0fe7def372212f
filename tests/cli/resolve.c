// SPDX-License-Identifier: MIT
/* Resolve addresses of an ELF file through libdeferstack, as if the file
 * were mapped by an MMAP2 record:
 *     resolve [--build-id HEX] [--as PATH] FILE VADDR|SYMBOL...
 * prints "name +0xsym_off dso build-id" per argument.  --build-id: FILE
 * was recorded with that build-id (the recording's build-id table); --as:
 * the MMAP2 record names PATH (FILE only gives the addresses' offsets).  A SYMBOL is looked
 * up in FILE's own symbol table (to test a stripped copy against the
 * original's addresses, pass hex vaddrs).  For the debug-symbol tests. */
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "streams.h"

#define BASE 0x10000000ULL

/* file offset of vaddr va in e's PT_LOAD segments, or -1 */
static int64_t offset_of(Elf *e, uint64_t va)
{
	size_t n = 0;

	if (elf_getphdrnum(e, &n))
		return -1;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    va >= ph.p_vaddr && va - ph.p_vaddr < ph.p_filesz)
			return (int64_t)(va - ph.p_vaddr + ph.p_offset);
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct ds_symbols_opts so = { .sz = sizeof(so) };
	struct ds_build_id rec = { .sz = sizeof(rec), .pid = -1 };
	struct ds_symbols *sym;
	struct sbuf s = { 0 };
	struct ds_event ev = { .sz = sizeof(ev) };
	struct stat st;
	const char *as = NULL;
	Elf *e;
	int fd, rc = 0;

	if (argc > 1 && !strcmp(argv[1], "--full-names")) {
		so.full_names = true;
		argv++;
		argc--;
	}
	if (argc > 2 && !strcmp(argv[1], "--build-id")) {
		const char *h = argv[2];

		for (; h[0] && h[1] && rec.size < DS_BUILD_ID_MAX; h += 2)
			rec.id[rec.size++] = (uint8_t)strtoul((char[]){ h[0], h[1], 0 }, NULL, 16);
		argv += 2;
		argc -= 2;
		so.build_ids = &rec;
		so.nr_build_ids = 1;
	}
	if (argc > 2 && !strcmp(argv[1], "--as")) {
		as = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: resolve [--full-names] [--build-id HEX] FILE VADDR...\n");
		return 2;
	}
	elf_version(EV_CURRENT);
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) || !(e = elf_begin(fd, ELF_C_READ, NULL))) {
		perror(argv[1]);
		return 1;
	}
	if (!as)
		as = argv[1];
	rec.path = (char *)(uintptr_t)as;
	if (ds_symbols_open(&sym, &so))
		return 1;
	sb_mmap2(&s, 1, BASE, ((uint64_t)st.st_size + 4095) & ~4095ULL, as, 1);
	if (ds_event_parse(s.b, s.len, TST_ST, true, &ev) || ds_symbols_event(sym, &ev))
		return 1;
	for (int i = 2; i < argc; i++) {
		char *end, buf[256];
		uint64_t va = strtoull(argv[i], &end, 16);
		struct ds_sym_info si = { .sz = sizeof(si) };
		int64_t off;

		if (*end) {	/* a symbol name: its value in FILE's symtab */
			Elf_Scn *scn = NULL;

			va = 0;
			while (!va && (scn = elf_nextscn(e, scn))) {
				GElf_Shdr sh;
				Elf_Data *d;

				if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB ||
				    !(d = elf_getdata(scn, NULL)))
					continue;
				for (size_t k = 0; k < sh.sh_size / sh.sh_entsize; k++) {
					GElf_Sym y;
					const char *nm;

					if (gelf_getsym(d, (int)k, &y) &&
					    (nm = elf_strptr(e, sh.sh_link, y.st_name)) &&
					    !strcmp(nm, argv[i])) {
						va = y.st_value;
						break;
					}
				}
			}
		}
		off = offset_of(e, va);
		if (!va || off < 0) {
			printf("%s: not found\n", argv[i]);
			rc = 1;
			continue;
		}
		ds_symbols_lookup(sym, 1, BASE + (uint64_t)off + 1, false, &si, buf,
				  sizeof(buf));
		printf("%s +%#" PRIx64 " %s ", si.name, si.sym_off, si.dso_short);
		for (size_t k = 0; k < si.build_id_len; k++)
			printf("%02x", si.build_id[k]);
		printf("\n");
	}
	free(s.b);
	ds_symbols_free(sym);
	elf_end(e);
	close(fd);
	return rc;
}
