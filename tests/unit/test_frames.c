// SPDX-License-Identifier: MIT
/* Unit tests of the symbolization caches and the id-based folding: frame
 * interning, a process's visible mappings across processes, objects, new
 * (overlapping) mappings, exec and fork, kallsyms loaded again, an
 * object's symbols read once into a table that answers as libdwfl does,
 * the compact index table, ds_fold_add_chain against the string path. */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "streams.h"
#include "hash.h"
#include "internal.h"

static char tmpdir[] = "/tmp/ds-frames-XXXXXX";

static const char *tpath(const char *name)
{
	static char buf[4][256];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", tmpdir, name);
	return buf[k];
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Feed one record built in s to the symbols, s emptied. */
static void feed(struct ds_symbols *sym, struct sbuf *s)
{
	struct ds_event ev = { .sz = sizeof(ev) };

	assert_int_equal(ds_event_parse(s->b, s->len, TST_ST, true, &ev), 0);
	assert_int_equal(ds_symbols_event(sym, &ev), 0);
	s->len = 0;
}

static void mmap_at(struct ds_symbols *sym, struct sbuf *s, uint32_t pid, uint64_t start,
		    uint64_t len, uint64_t pgoff, const char *path)
{
	sb_mmap2_at(s, pid, start, len, pgoff, path, 0);
	feed(sym, s);
}

static void exec_comm(struct ds_symbols *sym, struct sbuf *s, uint32_t pid, const char *comm)
{
	size_t at = sb_begin(s, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC);
	char name[16] = { 0 };

	strncpy(name, comm, 15);
	sb_u32x2(s, pid, pid);
	sb_put(s, name, 16);
	sb_sid(s, pid, pid, 0, 0);
	sb_end(s, at);
	feed(sym, s);
}

static void fork_rec(struct ds_symbols *sym, struct sbuf *s, uint32_t pid, uint32_t ppid)
{
	size_t at = sb_begin(s, PERF_RECORD_FORK, 0);

	sb_u32x2(s, pid, ppid);
	sb_u32x2(s, pid, ppid);
	sb_u64(s, 0);
	sb_sid(s, pid, pid, 0, 0);
	sb_end(s, at);
	feed(sym, s);
}

/* The name ip of pid resolves to, through the frame id (checked stable;
 * the struct the library keeps and the one it fills the same). */
static const char *frame_name(struct ds_symbols *sym, uint32_t pid, uint64_t ip, bool kernel,
			      uint32_t *idp)
{
	uint32_t id, again;
	const struct ds_sym_info *si;
	struct ds_sym_info got = { .sz = sizeof(got) };

	assert_int_equal(ds_symbols_frame(sym, pid, ip, kernel, &id), 0);
	assert_int_equal(ds_symbols_frame(sym, pid, ip, kernel, &again), 0);
	assert_int_equal(id, again);
	si = ds_symbols_frame_info(sym, id);
	assert_non_null(si);
	assert_int_equal(ds_symbols_frame_get(sym, id, &got), 0);
	assert_int_equal(si->sz, sizeof(*si));
	assert_ptr_equal(got.name, si->name);
	assert_ptr_equal(got.sym, si->sym);
	assert_int_equal(got.sym_off, si->sym_off);
	assert_ptr_equal(got.dso, si->dso);
	assert_ptr_equal(got.dso_short, si->dso_short);
	assert_int_equal(got.dso_off, si->dso_off);
	assert_int_equal(got.map_start | got.map_end | got.map_pgoff, 0);
	assert_ptr_equal(got.build_id, si->build_id);
	assert_int_equal(got.build_id_len, si->build_id_len);
	assert_int_equal(got.kernel, si->kernel);
	assert_int_equal(got.mismatch, si->mismatch);
	if (idp)
		*idp = id;
	return si->name;
}

/* Frames: per object and offset, whatever the process; a process's
 * visible mappings follow new (overlapping) mappings, exec and fork;
 * kallsyms loaded again. */
static void t_frames(void **state)
{
	struct ds_symbols *sym;
	struct sbuf s = { 0 };
	struct ds_sym_info si = { .sz = sizeof(si) };
	uint32_t a, b, c, k1, k2;
	const struct ds_sym_info *old;
	char buf[64];

	(void)state;
	write_text(tpath("a.bin"), "not an ELF file\n");
	write_text(tpath("b.bin"), "nor this one\n");
	write_text(tpath("ks1"), "ffffffff81000000 T _text\nffffffff81000100 T one\n");
	write_text(tpath("ks2"), "ffffffff81000000 T _text\nffffffff81000100 T two\n");
	assert_int_equal(ds_symbols_new(&sym, tpath("ks1")), 0);

	/* the same address in two processes, two objects */
	mmap_at(sym, &s, 10, UADDR(0), 0x10000, 0, tpath("a.bin"));
	mmap_at(sym, &s, 11, UADDR(0), 0x10000, 0, tpath("b.bin"));
	assert_string_equal(frame_name(sym, 10, UADDR(0x40), false, &a), "[a.bin+0x40]");
	assert_string_equal(frame_name(sym, 11, UADDR(0x40), false, &b), "[b.bin+0x40]");
	assert_int_not_equal(a, b);
	/* one object in two processes at two addresses: the same frame,
	 * each with its own mapping; a file offset */
	mmap_at(sym, &s, 12, UADDR(0x100000), 0x10000, 0, tpath("a.bin"));
	assert_string_equal(frame_name(sym, 12, UADDR(0x100040), false, &c), "[a.bin+0x40]");
	assert_int_equal(a, c);
	ds_symbols_lookup(sym, 10, UADDR(0x40), false, &si, buf, sizeof(buf));
	assert_int_equal(si.map_start, UADDR(0));
	ds_symbols_lookup(sym, 12, UADDR(0x100040), false, &si, buf, sizeof(buf));
	assert_int_equal(si.map_start, UADDR(0x100000));
	assert_int_equal(si.dso_off, 0x40);
	mmap_at(sym, &s, 14, UADDR(0x200000), 0x10000, 0x2000, tpath("a.bin"));
	ds_symbols_lookup(sym, 14, UADDR(0x200040), false, &si, buf, sizeof(buf));
	assert_string_equal(si.name, "[a.bin+0x2040]");
	assert_int_equal(si.map_pgoff, 0x2000);
	assert_int_equal(si.dso_off, 0x2040);
	/* outside any mapping, an unknown process: "[unknown]", one frame */
	assert_string_equal(frame_name(sym, 10, UADDR(0x20000), false, &a), "[unknown]");
	assert_string_equal(frame_name(sym, 99, UADDR(0x40), false, &b), "[unknown]");
	assert_int_equal(a, b);
	assert_null(ds_symbols_frame_info(sym, 1u << 30));
	assert_int_equal(ds_symbols_frame_get(sym, 1u << 30, &si), -ENOENT);
	{
		/* an older caller's smaller struct: what fits, nothing past */
		struct ds_sym_info small[2];
		const size_t sz = DS_SZ_MIN(struct ds_sym_info, name);

		memset(small, 0xa5, sizeof(small));
		small[0].sz = sz;
		assert_int_equal(ds_symbols_frame_get(sym, a, &small[0]), 0);
		assert_string_equal(small[0].name, "[unknown]");
		assert_int_equal(((unsigned char *)&small[0])[sz], 0xa5);
		small[0].sz = sz - 1;
		assert_int_equal(ds_symbols_frame_get(sym, a, &small[0]), -EINVAL);
	}

	/* a new mapping over a cached address wins */
	assert_string_equal(frame_name(sym, 10, UADDR(0x80), false, NULL), "[a.bin+0x80]");
	mmap_at(sym, &s, 10, UADDR(0), 0x1000, 0, tpath("b.bin"));
	assert_string_equal(frame_name(sym, 10, UADDR(0x80), false, NULL), "[b.bin+0x80]");
	assert_string_equal(frame_name(sym, 10, UADDR(0x1080), false, NULL), "[a.bin+0x1080]");
	/* exec forgets the mappings; the new image's come */
	exec_comm(sym, &s, 10, "newimage");
	assert_string_equal(frame_name(sym, 10, UADDR(0x80), false, NULL), "[unknown]");
	mmap_at(sym, &s, 10, UADDR(0), 0x10000, 0, tpath("a.bin"));
	assert_string_equal(frame_name(sym, 10, UADDR(0x80), false, NULL), "[a.bin+0x80]");
	/* a fork gets its parent's mappings, the parent keeps them */
	assert_string_equal(frame_name(sym, 13, UADDR(0x80), false, NULL), "[unknown]");
	fork_rec(sym, &s, 13, 11);
	assert_string_equal(frame_name(sym, 13, UADDR(0x80), false, NULL), "[b.bin+0x80]");
	assert_string_equal(frame_name(sym, 11, UADDR(0x80), false, NULL), "[b.bin+0x80]");
	assert_string_equal(ds_symbols_resolve(sym, 13, UADDR(0x90), false, buf, sizeof(buf)),
			    "[b.bin+0x90]");

	/* mappings over mappings: each address finds the latest one there,
	 * the earlier ones show around it with their own offsets */
	mmap_at(sym, &s, 30, UADDR(0), 0x10000, 0, tpath("a.bin"));
	assert_string_equal(frame_name(sym, 30, UADDR(0x4000), false, NULL), "[a.bin+0x4000]");
	mmap_at(sym, &s, 30, UADDR(0x4000), 0x2000, 0x100, tpath("b.bin"));
	mmap_at(sym, &s, 30, UADDR(0x5000), 0x800, 0x9000, tpath("a.bin"));
	mmap_at(sym, &s, 30, UADDR(0x20000), 0x1000, 0, tpath("b.bin"));
	assert_string_equal(frame_name(sym, 30, UADDR(0x3ff0), false, NULL), "[a.bin+0x3ff0]");
	assert_string_equal(frame_name(sym, 30, UADDR(0x4000), false, NULL), "[b.bin+0x100]");
	assert_string_equal(frame_name(sym, 30, UADDR(0x4ff0), false, NULL), "[b.bin+0x10f0]");
	assert_string_equal(frame_name(sym, 30, UADDR(0x5000), false, NULL), "[a.bin+0x9000]");
	assert_string_equal(frame_name(sym, 30, UADDR(0x57ff), false, NULL), "[a.bin+0x97ff]");
	assert_string_equal(frame_name(sym, 30, UADDR(0x5800), false, NULL), "[b.bin+0x1900]");
	assert_string_equal(frame_name(sym, 30, UADDR(0x6000), false, NULL), "[a.bin+0x6000]");
	assert_string_equal(frame_name(sym, 30, UADDR(0xffff), false, NULL), "[a.bin+0xffff]");
	assert_string_equal(frame_name(sym, 30, UADDR(0x10000), false, NULL), "[unknown]");
	assert_string_equal(frame_name(sym, 30, UADDR(0x20010), false, NULL), "[b.bin+0x10]");
	assert_string_equal(frame_name(sym, 30, UADDR(0x21000), false, NULL), "[unknown]");
	ds_symbols_lookup(sym, 30, UADDR(0x5010), false, &si, buf, sizeof(buf));
	assert_int_equal(si.map_start, UADDR(0x5000));
	assert_int_equal(si.map_pgoff, 0x9000);
	/* the same mapping again, whole: it hides all three */
	mmap_at(sym, &s, 30, UADDR(0), 0x10000, 0, tpath("a.bin"));
	assert_string_equal(frame_name(sym, 30, UADDR(0x5010), false, NULL), "[a.bin+0x5010]");
	ds_symbols_lookup(sym, 30, UADDR(0x5010), false, &si, buf, sizeof(buf));
	assert_int_equal(si.map_start, UADDR(0));

	/* kernel: by address; loaded again, the new names, the old frames
	 * still readable */
	assert_string_equal(frame_name(sym, 0, KADDR(0x150), true, &k1), "one");
	assert_string_equal(frame_name(sym, 5, KADDR(0x150), true, &k2), "one");
	assert_int_equal(k1, k2);
	assert_string_equal(frame_name(sym, 0, KADDR(0x10), true, NULL), "_text");
	assert_int_equal(ds_symbols_load_kallsyms(sym, tpath("ks2")), 0);
	assert_string_equal(frame_name(sym, 0, KADDR(0x150), true, &k2), "two");
	assert_int_not_equal(k1, k2);
	old = ds_symbols_frame_info(sym, k1);
	assert_string_equal(old->name, "one");
	ds_symbols_lookup(sym, 0, KADDR(0x150), true, &si, buf, sizeof(buf));
	assert_string_equal(si.sym, "two");
	assert_int_equal(si.sym_off, 0x50);
	assert_int_equal(ds_symbols_load_kallsyms(sym, "/dev/null"), 0);
	assert_string_equal(frame_name(sym, 0, KADDR(0x150), true, NULL), "[kernel.kallsyms]");
	assert_string_equal(old->name, "one");
	/* names are read from the file when a frame needs one: a file
	 * written to in place since is not read (no name), the same path
	 * loaded again gives the new names */
	write_text(tpath("ks3"), "ffffffff81000000 T _text\nffffffff81000100 T three\n"
				 "ffffffff81000200 T three_b\n");
	assert_int_equal(ds_symbols_load_kallsyms(sym, tpath("ks3")), 0);
	assert_string_equal(frame_name(sym, 0, KADDR(0x150), true, NULL), "three");
	write_text(tpath("ks3"), "ffffffff81000000 T _text\nffffffff81000100 T four\n"
				 "ffffffff81000200 T fourth_bbb\n");
	assert_string_equal(frame_name(sym, 0, KADDR(0x150), true, NULL), "three");
	assert_string_equal(frame_name(sym, 0, KADDR(0x210), true, NULL), "[kernel.kallsyms]");
	assert_int_equal(ds_symbols_load_kallsyms(sym, tpath("ks3")), 0);
	assert_string_equal(frame_name(sym, 0, KADDR(0x150), true, NULL), "four");
	assert_string_equal(frame_name(sym, 0, KADDR(0x210), true, NULL), "fourth_bbb");

	/* many addresses in many processes: the cache grows, every address
	 * still resolves to its own object and offset */
	for (uint32_t pid = 20; pid < 28; pid++)
		mmap_at(sym, &s, pid, UADDR(0), 0x10000, 0, tpath(pid & 1 ? "b.bin" : "a.bin"));
	for (int round = 0; round < 2; round++) {
		for (uint32_t pid = 20; pid < 28; pid++) {
			for (uint64_t off = 0; off < 0x10000; off += 0x13) {
				char want[64];

				snprintf(want, sizeof(want), "[%s+0x%" PRIx64 "]",
					 pid & 1 ? "b.bin" : "a.bin", off);
				assert_string_equal(frame_name(sym, pid, UADDR(off), false, NULL),
						    want);
			}
		}
	}
	ds_symbols_free(sym);
	free(s.b);
}

/* Our executable's symbols asked through the symbol table equal what
 * libdwfl says address by address. */
static const Dwfl_Callbacks cbs = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

static int direct_name(Dwfl_Module *mod, GElf_Addr bias, Elf *e, uint64_t off, char *name,
		       size_t len, uint64_t *sym_off)
{
	size_t nph;

	elf_getphdrnum(e, &nph);
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		GElf_Off o = 0;
		GElf_Sym sym;
		const char *n;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || off < ph.p_offset ||
		    off - ph.p_offset >= ph.p_filesz)
			continue;
		n = dwfl_module_addrinfo(mod, off - ph.p_offset + ph.p_vaddr + bias, &o, &sym,
					 NULL, NULL, NULL);
		if (!n || !*n || (sym.st_size && o >= sym.st_size))
			return 0;
		snprintf(name, len, "%s", n);
		*sym_off = o;
		return 1;
	}
	return 0;
}

/* The executable mapping of an object whose path contains what, from
 * /proc/self/maps: 1 if found. */
static int find_map(const char *what, unsigned long long *a, unsigned long long *e,
		    unsigned long long *pgoff, char *path)
{
	char line[600], perms[8];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f)) {
		found = sscanf(line, "%llx-%llx %7s %llx %*s %*s %399s", a, e, perms, pgoff,
			       path) == 5 && perms[2] == 'x' && strstr(path, what);
	}
	fclose(f);
	return found;
}

/* A sized function, a gap, an assembler label without size, another
 * function: libdwfl names the label's bytes after it, none in the gap. */
__asm__(".text\n"
	".globl ds_tf_sized\n.type ds_tf_sized, @function\nds_tf_sized:\n"
	".fill 32, 1, 0x90\n.size ds_tf_sized, 32\n"
	".fill 32, 1, 0xcc\n"
	".globl ds_tf_label\nds_tf_label:\n.fill 16, 1, 0x90\n"
	".globl ds_tf_after\n.type ds_tf_after, @function\nds_tf_after:\n"
	".fill 16, 1, 0x90\n.size ds_tf_after, 16\n");
extern const char ds_tf_sized[], ds_tf_after[];

struct obj {
	struct ds_symbols *sym;
	Dwfl_Module *mod;
	GElf_Addr bias;
	Elf *elf;
	unsigned long long a, pgoff;
	int checked, named, plt;
};

static void check_ip(struct obj *o, unsigned long long ip)
{
	struct ds_sym_info si = { .sz = sizeof(si) };
	char want[512], buf[64];
	uint64_t want_off = 0;
	int has = direct_name(o->mod, o->bias, o->elf, ip - o->a + o->pgoff, want, sizeof(want),
			      &want_off);

	ds_symbols_lookup(o->sym, 77, ip, false, &si, buf, sizeof(buf));
	if (has && want[0] == '_' && want[1] == 'Z')
		has = 2;	/* demangled: only its offset compared */
	if (has) {
		assert_non_null(si.sym);
		if (has == 1)
			assert_string_equal(si.sym, want);
		assert_int_equal(si.sym_off, want_off);
		o->named++;
	} else if (si.sym) {
		/* no symbol: only a PLT stub has a name (lib/extsyms.c) */
		size_t n = strlen(si.sym);

		assert_true(n > 4 && !strcmp(si.sym + n - 4, "@plt"));
		o->plt++;
	}
	o->checked++;
}

static void check_object(const char *what, unsigned long long len, unsigned step,
			 unsigned long long lo, unsigned long long hi)
{
	struct obj o = { 0 };
	struct sbuf s = { 0 };
	char path[400];
	unsigned long long e;
	Dwfl *dwfl;
	int fd;

	assert_true(find_map(what, &o.a, &e, &o.pgoff, path));
	assert_int_equal(ds_symbols_new(&o.sym, NULL), 0);
	mmap_at(o.sym, &s, 77, o.a, e - o.a, o.pgoff, path);
	dwfl = dwfl_begin(&cbs);
	assert_non_null(dwfl);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	dwfl_report_begin(dwfl);
	o.mod = dwfl_report_elf(dwfl, "t", path, fd, 0, false);
	dwfl_report_end(dwfl, NULL, NULL);
	assert_non_null(o.mod);
	o.elf = dwfl_module_getelf(o.mod, &o.bias);
	assert_non_null(o.elf);
	/* not every byte (ASan makes the direct lookups slow), then every
	 * byte of [lo, hi) */
	for (unsigned long long ip = o.a; ip < e && ip < o.a + len; ip += step)
		check_ip(&o, ip);
	assert_true(o.checked > 1000);
	assert_true(o.named > 100);
	for (unsigned long long ip = lo; ip < hi; ip++)
		check_ip(&o, ip);
	dwfl_end(dwfl);
	ds_symbols_free(o.sym);
	free(s.b);
}

static void t_intervals(void **state)
{
	(void)state;
	check_object("test_frames", 0x30000, 3, (uintptr_t)ds_tf_sized,
		     (uintptr_t)ds_tf_after + 24);
	{
		/* and the names there are the expected ones */
		struct ds_symbols *sym;
		struct sbuf s = { 0 };
		char path[400], buf[64];
		unsigned long long a, e, pgoff;
		struct ds_sym_info si = { .sz = sizeof(si) };

		assert_true(find_map("test_frames", &a, &e, &pgoff, path));
		assert_int_equal(ds_symbols_new(&sym, NULL), 0);
		mmap_at(sym, &s, 77, a, e - a, pgoff, path);
		for (int round = 0; round < 2; round++) {	/* table built, then reused */
			for (int i = 0; i < 40; i++)
				ds_symbols_lookup(sym, 77, (uintptr_t)ds_tf_sized + i, false, &si,
						  buf, sizeof(buf));
			ds_symbols_lookup(sym, 77, (uintptr_t)ds_tf_sized + 5, false, &si, buf,
					  sizeof(buf));
			assert_string_equal(si.sym, "ds_tf_sized");
			assert_int_equal(si.sym_off, 5);
			ds_symbols_lookup(sym, 77, (uintptr_t)ds_tf_sized + 40, false, &si, buf,
					  sizeof(buf));
			assert_null(si.sym);
			ds_symbols_lookup(sym, 77, (uintptr_t)ds_tf_after - 3, false, &si, buf,
					  sizeof(buf));
			assert_string_equal(si.sym, "ds_tf_label");
			assert_int_equal(si.sym_off, 13);
		}
		ds_symbols_free(sym);
		free(s.b);
	}
	/* libc: assembler functions, aliases, its debug file when installed */
	check_object("/libc.so", 0x80000, 29, 0, 0);
}

/* The compact index table: colliding hashes told apart, growth. */
static bool ieq(uint32_t idx, const void *arg)
{
	const uint64_t *want = arg;

	return idx == *want;
}

static void t_itab(void **state)
{
	enum { N = 50000 };
	struct ds_itab t = { 0 };

	(void)state;
	assert_int_equal(ds_itab_get(&t, 1, ieq, &(uint64_t){ 0 }), -1);
	for (uint32_t i = 0; i < N; i++) {
		/* one hash for 10 indices */
		assert_int_equal(ds_itab_put(&t, (i / 10) * 0x9e3779b97f4a7c15ULL, i), 0);
	}
	assert_int_equal(t.used, N);
	assert_true(t.used * 4 <= t.cap * 3);
	for (uint32_t i = 0; i < N; i++) {
		uint64_t want = i;

		assert_int_equal(ds_itab_get(&t, (i / 10) * 0x9e3779b97f4a7c15ULL, ieq, &want), i);
	}
	assert_int_equal(ds_itab_get(&t, 0x1234567, ieq, &(uint64_t){ 3 }), -1);
	assert_int_equal(ds_itab_put(&t, 1, UINT32_MAX), -ENOMEM);
	ds_itab_free(&t);
	assert_int_equal(ds_itab_get(&t, 0, ieq, &(uint64_t){ 0 }), -1);
}

/* ds_fold_add_chain gives what ds_symbolize_chain + ds_fold_add_weighted
 * give, folded and as a flame graph, for chains of every shape; the same
 * names from both paths are one stack. */
/* ds_ktab: keys in the slots; key 0, keys of one home slot (multiples of
 * a large power of two), absent keys, growth */
static void t_ktab(void **state)
{
	enum { N = 60000 };
	struct ds_ktab t = { 0 };

	(void)state;
	assert_int_equal(ds_ktab_get(&t, 0), 0);
	for (uint32_t i = 0; i < N; i++) {
		uint64_t key = i % 3 ? (uint64_t)i << 40 : i * 0x9e3779b97f4a7c15ULL;

		assert_int_equal(ds_ktab_get(&t, key), 0);
		assert_int_equal(ds_ktab_put(&t, key, i + 1), 0);
	}
	assert_int_equal(t.used, N);
	assert_true(t.used * 4 <= t.cap * 3);
	for (uint32_t i = 0; i < N; i++) {
		uint64_t key = i % 3 ? (uint64_t)i << 40 : i * 0x9e3779b97f4a7c15ULL;

		assert_int_equal(ds_ktab_get(&t, key), i + 1);
		assert_int_equal(ds_ktab_get(&t, key + 1), 0);
	}
	assert_int_equal(ds_ktab_put(&t, 5, 0), -EINVAL);
	ds_ktab_free(&t);
	assert_int_equal(ds_ktab_get(&t, 0), 0);
}

static char *folded(struct ds_fold *fo, bool svg)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	if (svg)
		assert_int_equal(ds_fold_write_svg(fo, f, "t"), 0);
	else
		assert_int_equal(ds_fold_write(fo, f), 0);
	fclose(f);
	return text;
}

static void t_fold_chain(void **state)
{
	struct ds_symbols *sym, *other;
	struct ds_fold *fa, *fb;
	struct ds_frames fr = { .sz = sizeof(fr) };
	struct sbuf s = { 0 };
	char **names = NULL;
	unsigned seed = 7;
	char *ta, *tb;

	(void)state;
	write_text(tpath("ks"), "ffffffff81000000 T _text\nffffffff81000100 T k_one\n"
		   "ffffffff81000200 T k;two\nffffffff81000300 t k_three\n"
		   "ffffffff81000400 t k.cold\n");
	write_text(tpath("lib1.so"), "x\n");
	write_text(tpath("lib2.so"), "y\n");
	assert_int_equal(ds_symbols_new(&sym, tpath("ks")), 0);
	for (uint32_t pid = 1; pid <= 3; pid++) {
		mmap_at(sym, &s, pid, UADDR(0), 0x100, 0, tpath("lib1.so"));
		mmap_at(sym, &s, pid, UADDR(0x100), 0x100, 0, tpath(pid == 2 ? "lib1.so" :
								    "lib2.so"));
	}
	assert_int_equal(ds_fold_new(&fa), 0);
	assert_int_equal(ds_fold_new(&fb), 0);
	for (int n = 0; n < 3000; n++) {
		uint64_t chain[40];
		size_t nr = 0, k;
		uint32_t pid;
		const char *comm, *root;
		int shape;

		seed = seed * 1103515245 + 12345;
		pid = 1 + (seed >> 16) % 3;
		shape = (int)((seed >> 8) % 6);
		comm = (seed >> 20) % 4 ? "app" : (seed >> 22) % 2 ? "a;pp" : "";
		/* kernel part */
		if (shape != 3) {
			chain[nr++] = PERF_CONTEXT_KERNEL;
			for (k = (seed >> 3) % 4; k-- > 0;) {
				seed = seed * 1103515245 + 12345;
				chain[nr++] = KADDR(0x100 + (seed >> 10) % 0x400);
			}
		}
		if (shape == 4) {	/* kernel-only deferred sample */
			chain[nr++] = DS_CONTEXT_USER_DEFERRED;
			chain[nr++] = seed;	/* the cookie */
		} else if (shape == 5) {	/* no marker before the user ips */
			nr = 0;
			chain[nr++] = KADDR(0x150);
		} else if (shape != 0) {
			chain[nr++] = PERF_CONTEXT_USER;
		}
		if (shape != 4) {
			for (k = 1 + (seed >> 12) % 6; k-- > 0;) {
				seed = seed * 1103515245 + 12345;
				/* a few call paths: the chain cache hits */
				chain[nr++] = UADDR(((seed >> 10) % 3) * 0x40 + k * 0x11 +
						    (k == 0 ? (seed >> 4) % 16 : 0));
			}
		}
		if (shape == 2)		/* a marker of another context */
			chain[nr++] = PERF_CONTEXT_GUEST_KERNEL, chain[nr++] = KADDR(0x310);
		root = shape == 4 ? "[user stack not stitched]" : NULL;
		assert_int_equal(ds_fold_add_chain(fa, sym, comm, pid, chain, nr, root, 1, n % 7),
				 0);
		assert_int_equal(ds_symbolize_chain(sym, pid, chain, nr, &fr), 0);
		names = realloc(names, (fr.nr + 1) * sizeof(*names));
		if (root)
			names[0] = (char *)root;
		memcpy(names + !!root, fr.names, fr.nr * sizeof(*names));
		{
			struct ds_frames view = fr;

			view.names = names;
			view.nr = fr.nr + !!root;
			assert_int_equal(ds_fold_add_weighted(fb, comm, &view, 1, n % 7), 0);
		}
	}
	assert_int_equal(ds_fold_total(fa), ds_fold_total(fb));
	assert_int_equal(ds_fold_samples(fa), ds_fold_samples(fb));
	ta = folded(fa, false);
	tb = folded(fb, false);
	assert_string_equal(ta, tb);
	assert_non_null(strstr(ta, "a:pp;"));	/* ';' in names made ':' */
	assert_non_null(strstr(ta, "k:two"));
	free(ta);
	free(tb);
	ta = folded(fa, true);
	tb = folded(fb, true);
	assert_string_equal(ta, tb);
	free(ta);
	free(tb);
	/* the same names through the other path: counted in the same line */
	{
		char *one[] = { "[lib1.so+0x0]" };
		struct ds_frames v = { .sz = sizeof(v), .names = one, .nr = 1 };
		uint64_t chain[] = { PERF_CONTEXT_USER, UADDR(0) };
		size_t lines = 0;

		ta = folded(fa, false);
		for (const char *p = ta; (p = strchr(p, '\n')); p++)
			lines++;
		free(ta);
		assert_int_equal(ds_fold_add_weighted(fa, "solo", &v, 1, 5), 0);
		assert_int_equal(ds_fold_add_chain(fa, sym, "solo", 1, chain, 2, NULL, 1, 5), 0);
		ta = folded(fa, false);
		assert_non_null(strstr(ta, "\nsolo;[lib1.so+0x0] 10\n"));
		for (const char *p = ta; (p = strchr(p, '\n')); p++)
			lines--;
		assert_int_equal(lines, (size_t)-1);
		free(ta);
	}
	/* one fold, one ds_symbols */
	assert_int_equal(ds_symbols_new(&other, NULL), 0);
	assert_int_equal(ds_fold_add_chain(fa, other, "x", 1, NULL, 0, NULL, 1, 1), -EINVAL);
	ds_symbols_free(other);
	ds_fold_free(fa);
	ds_fold_free(fb);
	ds_frames_free(&fr);
	free(names);
	ds_symbols_free(sym);
	free(s.b);
}

/* kallsyms text read as fgets(line, 512) and sscanf("%llx %c %255s") read
 * it (the reader before 0.3.1, kept here as the reference): lines across
 * the reader's 256 KiB pieces, lines longer than 511 bytes (their pieces
 * are lines), CR, tabs and module names, a "0x" prefix, names longer than
 * 255 bytes, data symbols, lines out of order, a last line without a
 * newline; every text symbol the reference reads names its address. */
static void t_kallsyms_lines(void **state)
{
	const char *path = tpath("ks-lines");
	FILE *f = fopen(path, "w");
	unsigned long long addr = 0xffffffff81000000ULL, a;
	struct ds_symbols *sym;
	char line[512], name[256], type, big[1200];
	size_t checked = 0;

	(void)state;
	assert_non_null(f);
	fprintf(f, "%016llx T _text\n", addr);
	for (int i = 0; i < 30000; i++) {
		addr += 0x40;
		switch (i % 997) {
		case 5:	/* 511 bytes, then a piece that is a line of its own */
			memset(big, 'a', sizeof(big));
			snprintf(big, sizeof(big), "%016llx T ", addr);
			big[19] = 'a';
			big[511] = 0;
			fprintf(f, "%s%016llx T piece%d %.*s\n", big, addr + 0x20, i, i % 700,
				big + 20);
			break;
		case 17:
			fprintf(f, "%016llx t cr%d\r\n", addr, i);
			break;
		case 23:
			fprintf(f, "%016llx t mod%d\t[mod%d]\n", addr, i, i);
			break;
		case 31:
			fprintf(f, "  0x%016llx T pref%d\n", addr, i);
			break;
		case 40:
			fprintf(f, "%016llx D data%d\n", addr, i);
			break;
		case 41:	/* out of order */
			fprintf(f, "%016llx W back%d\n", addr - 0x60, i);
			break;
		case 50:
			memset(big, 'n', 300);
			fprintf(f, "%016llx T %.*s%d\n", addr, 300, big, i);
			break;
		case 60:
			fprintf(f, "\n garbage line %d\n", i);
			break;
		default:
			fprintf(f, "%016llx %c f%0*d\n", addr, "tTwW"[i % 4], 1 + i % 40, i);
		}
	}
	fprintf(f, "%016llx T lastline", addr + 0x40);
	fclose(f);
	assert_int_equal(ds_symbols_new(&sym, path), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3 ||
		    (type != 't' && type != 'T' && type != 'w' && type != 'W'))
			continue;
		assert_string_equal(frame_name(sym, 0, a, true, NULL), name);
		checked++;
	}
	fclose(f);
	assert_true(checked > 29000);
	/* between two symbols: the one before */
	assert_string_equal(frame_name(sym, 0, 0xffffffff81000000ULL + 32 * 0x40 + 3, true, NULL),
			    "pref31");
	ds_symbols_free(sym);
}

/* /proc/kallsyms (size 0: its names copied at load) and a copy of it
 * (names read from the file when needed) name the same symbols. */
static void t_kallsyms_proc(void **state)
{
	const char *copy = tpath("ks-proc");
	struct ds_symbols *live, *saved;
	char line[600], name[512], type;
	unsigned long long a;
	size_t checked = 0, n = 0;
	FILE *in, *out;

	(void)state;
	in = fopen("/proc/kallsyms", "r");
	if (!in)
		skip();
	out = fopen(copy, "w");
	assert_non_null(out);
	while (fgets(line, sizeof(line), in))
		fputs(line, out);
	fclose(in);
	fclose(out);
	assert_int_equal(ds_symbols_new(&live, "/proc/kallsyms"), 0);
	assert_int_equal(ds_symbols_new(&saved, copy), 0);
	if (!ds_symbols_kernel_start(saved)) {	/* kptr_restrict: no addresses */
		ds_symbols_free(live);
		ds_symbols_free(saved);
		skip();
	}
	in = fopen(copy, "r");
	assert_non_null(in);
	while (fgets(line, sizeof(line), in)) {
		/* modules may come and go between the two reads */
		if (sscanf(line, "%llx %c %511s", &a, &type, name) != 3 ||
		    (type != 't' && type != 'T') || strchr(line, '[') || n++ % 97)
			continue;
		assert_string_equal(frame_name(saved, 0, a, true, NULL),
				    frame_name(live, 0, a, true, NULL));
		checked++;
	}
	fclose(in);
	assert_true(checked > 100);
	ds_symbols_free(live);
	ds_symbols_free(saved);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_frames),
		cmocka_unit_test(t_intervals),
		cmocka_unit_test(t_itab),
		cmocka_unit_test(t_ktab),
		cmocka_unit_test(t_fold_chain),
		cmocka_unit_test(t_kallsyms_lines),
		cmocka_unit_test(t_kallsyms_proc),
	};

	elf_version(EV_CURRENT);
	return cmocka_run_group_tests_name("frames", tests, setup, teardown);
}
