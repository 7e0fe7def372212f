// SPDX-License-Identifier: MIT
/* deferstack record: side data.  The processes that exist before the
 * recording get COMM and MMAP records from /proc (the kernel only reports
 * new ones); the mapped files' build-ids and the sampled kernel symbols
 * are saved so that the report names frames as they were. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record.h"

/* Remember the file of a user MMAP/MMAP2 record, for its build-id. */
int note_object(struct rec *r, const struct perf_event_header *h)
{
	struct ds_event ev = { .sz = sizeof(ev) };

	if ((h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL ||
	    ds_event_parse(h, h->size, SAMPLE_TYPE, true, &ev) || !ev.filename ||
	    ev.filename[0] != '/')
		return 0;	/* anonymous, [vdso], [heap], ... */
	return tab_intern(&r->objs, ev.filename) ? 0 : -ENOMEM;
}

/* The build-ids of the kernel and of every mapped ELF file that has one,
 * for HEADER_BUILD_ID (perf's layout: perf buildid-list -i reads them). */
size_t collect_build_ids(struct rec *r, struct ds_build_id **out)
{
	struct ds_build_id *v = calloc(r->objs.used + 1, sizeof(*v));
	size_t n = 0;
	int len;

	*out = v;
	if (!v)
		return 0;
	for (size_t i = 0; i < r->objs.used + 1; i++)
		v[i].sz = sizeof(v[i]);
	len = ds_build_id_of_kernel(v[0].id, DS_BUILD_ID_MAX);
	if (len > 0) {
		v[0].pid = -1;
		v[0].kernel = true;
		v[0].size = (uint8_t)len;
		v[0].path = "[kernel.kallsyms]";
		n++;
	}
	for (size_t i = 0; i < r->objs.cap; i++) {
		char *path = r->objs.s[i].val;

		if (!path)
			continue;
		switch_drain(r);	/* a window switch: the rings too */
		len = ds_build_id_of_file(path, v[n].id, DS_BUILD_ID_MAX);
		if (len <= 0)
			continue;	/* not ELF, no build-id, gone */
		v[n].pid = -1;
		v[n].size = (uint8_t)len;
		v[n].path = path;
		n++;
	}
	return n;
}

/* sample_id trailer for SAMPLE_TYPE: tid, time, cpu, identifier */
struct sid {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu, res;
	uint64_t id;
};

static int synth_comm(struct rec *r, pid_t pid, pid_t tid, const char *comm)
{
	struct {
		struct perf_event_header h;
		uint32_t pid, tid;
		char comm[24];
		struct sid sid;
	} ev;

	memset(&ev, 0, sizeof(ev));
	ev.h.type = PERF_RECORD_COMM;
	ev.h.misc = PERF_RECORD_MISC_USER;
	ev.h.size = sizeof(ev);
	ev.pid = (uint32_t)pid;
	ev.tid = (uint32_t)tid;
	memcpy(ev.comm, comm, strnlen(comm, 15));
	ev.sid.pid = (uint32_t)pid;
	ev.sid.tid = (uint32_t)tid;
	ev.sid.id = tracking_id(r);
	return write_rec(r, &ev.h);
}

int synth_mmap(struct rec *r, pid_t pid, uint64_t start, uint64_t end, uint64_t pgoff,
	       const char *path, bool kernel)
{
	uint8_t buf[4096 + 128];
	struct perf_event_header h;
	size_t plen = strlen(path) + 1, off;
	struct sid sid;
	uint32_t u32;

	if (plen > 4096)
		return 0;
	memset(buf, 0, sizeof(buf));
	h.type = kernel ? PERF_RECORD_MMAP : PERF_RECORD_MMAP2;
	h.misc = kernel ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER;
	u32 = (uint32_t)pid;
	memcpy(buf + 8, &u32, 4);
	memcpy(buf + 12, &u32, 4);
	memcpy(buf + 16, &start, 8);
	end -= start;
	memcpy(buf + 24, &end, 8);
	memcpy(buf + 32, &pgoff, 8);
	off = 40;
	if (!kernel) {
		u32 = PROT_READ | PROT_EXEC;
		memcpy(buf + 64, &u32, 4);
		u32 = MAP_PRIVATE;
		memcpy(buf + 68, &u32, 4);
		off = 72;
	}
	memcpy(buf + off, path, plen);
	off = (off + plen + 7) & ~(size_t)7;
	memset(&sid, 0, sizeof(sid));
	sid.pid = sid.tid = (uint32_t)pid;
	sid.id = tracking_id(r);
	memcpy(buf + off, &sid, sizeof(sid));
	off += sizeof(sid);
	h.size = (uint16_t)off;
	memcpy(buf, &h, sizeof(h));
	return write_rec(r, (const void *)buf);
}

/* COMM + executable file mappings of an existing process from /proc. */
int synth_process(struct rec *r, pid_t pid)
{
	char path[64], line[4352], comm[64];
	DIR *d;
	FILE *f;
	struct dirent *de;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;	/* gone meanwhile */
	while ((de = readdir(d)) && !err) {
		pid_t tid = (pid_t)atoi(de->d_name);

		if (tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f)) {
			comm[strcspn(comm, "\n")] = 0;
			err = synth_comm(r, pid, tid, comm);
		}
		fclose(f);
	}
	closedir(d);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	if (!f && !err && (errno == EACCES || errno == EPERM)) {
		/* another user's, without CAP_SYS_PTRACE: what the recording
		 * saw of it (tools/record-maps.c) */
		bool found;

		err = maps_synth(r, pid, &found);
		r->maps_unread += !found;
	}
	if (!f)
		return err;
	while (!err && fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off;
		char perms[8], file[4096];

		file[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095[^\n]", &s, &e, perms, &off,
			   file) < 4)
			continue;
		if (perms[2] != 'x' || file[0] == 0)
			continue;
		err = synth_mmap(r, pid, s, e, off, file, false);
	}
	fclose(f);
	return err;
}

int synth_all(struct rec *r)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int err = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) && !err) {
		pid_t pid = (pid_t)atoi(de->d_name);

		if (pid <= 0)
			continue;
		switch_drain(r);	/* a window switch: the rings too */
		err = synth_process(r, pid);
	}
	closedir(d);
	return err;
}

int synth_start(struct rec *r, bool all)
{
	int err = synth_kernel(r);

	if (!err && (all || r->o.all))
		err = synth_all(r);
	else if (!err && r->o.pid > 0)
		err = synth_process(r, r->o.pid);
	return err;
}

/* Remember the kernel addresses of a sample (its kernel ip and the kernel
 * part of its callchain): the kernel symbols the report will need. */
int note_kernel_ips(struct rec *r, const struct perf_event_header *h)
{
	static char present;
	struct ds_event ev = { .sz = sizeof(ev) };
	bool kernel = false;
	int err = 0;

	if (ds_event_parse(h, h->size, SAMPLE_TYPE, true, &ev))
		return 0;
	if ((ev.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL &&
	    !tab_get(&r->kips, ev.ip, NULL, NULL))
		err = tab_put(&r->kips, ev.ip, &present);
	for (uint64_t i = 0; i < ev.nr && !err; i++) {
		uint64_t ip = ev.chain[i];

		if (ip >= PERF_CONTEXT_MAX) {
			kernel = ip == PERF_CONTEXT_KERNEL;
			continue;
		}
		if (kernel && !tab_get(&r->kips, ip, NULL, NULL))
			err = tab_put(&r->kips, ip, &present);
	}
	return err;
}

struct ksym {
	uint64_t addr;
	size_t off, len;	/* its line in the text kept */
	bool edge;		/* _text, _stext: always kept */
	bool keep;
};

/*
 * The kernel's own text symbols ([_stext, _etext), [_sinittext,
 * _einittext)) of the last read of
 * /proc/kallsyms, sorted by address, with their lines: fixed for the boot
 * (modules, BPF programs and trampolines live outside the kernel image),
 * so a window whose sampled kernel addresses all fall in there takes its
 * symbols from here instead of reading /proc/kallsyms again.
 */
struct ksym_cache {
	struct ksym *v;
	size_t n;
	char *text;
	uint64_t stext, etext, sinit, einit;
	uint64_t ktext;		/* _text */
};

/* In the kernel's text or its init text (the return addresses at the
 * bottom of the boot CPU's idle task are there, freed or not)? */
static bool in_kernel_text(const struct ksym_cache *kc, uint64_t a)
{
	return (a >= kc->stext && a < kc->etext) || (a >= kc->sinit && a < kc->einit);
}

void kallsyms_cache_free(struct rec *r)
{
	if (r->kc) {
		free(r->kc->v);
		free(r->kc->text);
		free(r->kc);
		r->kc = NULL;
	}
}

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static int cmp_off(const void *a, const void *b)
{
	const struct ksym *const *x = a, *const *y = b;

	return (*x)->off < (*y)->off ? -1 : (*x)->off > (*y)->off;
}

/* "ADDR T NAME..." of /proc/kallsyms: the address and the type, or false. */
static bool ksym_line(const char *l, uint64_t *addr, char *type, const char **name)
{
	uint64_t a = 0;
	const char *p = l;

	for (;; p++) {
		int d = *p >= '0' && *p <= '9' ? *p - '0' :
			*p >= 'a' && *p <= 'f' ? *p - 'a' + 10 :
			*p >= 'A' && *p <= 'F' ? *p - 'A' + 10 : -1;

		if (d < 0)
			break;
		a = a << 4 | (uint64_t)d;
	}
	if (p == l || p[0] != ' ' || !p[1] || p[2] != ' ')
		return false;
	*addr = a;
	*type = p[1];
	*name = p + 3;
	return true;
}

static bool is_name(const char *name, const char *want)
{
	size_t n = strlen(want);

	return !strncmp(name, want, n) && (name[n] == '\n' || name[n] == 0 ||
					    name[n] == ' ' || name[n] == '\t');
}

/* Are all the sampled kernel addresses in the cached kernel text? */
static bool kips_in_cache(const struct rec *r)
{
	const struct ksym_cache *kc = r->kc;

	if (!kc || !kc->n || kc->etext <= kc->stext)
		return false;
	for (size_t i = 0; i < r->kips.cap; i++) {
		uint64_t ip = r->kips.s[i].key;

		if (r->kips.s[i].val && !in_kernel_text(kc, ip))
			return false;
	}
	return true;
}

/* _text from /proc/kallsyms (0 if unknown or hidden by kptr_restrict), for
 * the synthesized kernel MMAP record that perf needs; in a window after the
 * first, from the last whole read (ksym_cache: fixed for the boot). */
static uint64_t kallsyms_text(const struct rec *r)
{
	char *line = NULL;
	size_t cap = 0;
	uint64_t text = 0;
	FILE *in;

	if (r->kc && r->kc->ktext)
		return r->kc->ktext;
	in = fopen("/proc/kallsyms", "r");
	if (!in)
		return 0;
	while (getline(&line, &cap, in) > 0) {
		const char *name;
		uint64_t a;
		char t;

		if (ksym_line(line, &a, &t, &name) && is_name(name, "_text")) {
			text = a;
			break;
		}
	}
	free(line);
	fclose(in);
	return text;
}

int synth_kernel(struct rec *r)
{
	uint64_t ktext = kallsyms_text(r);

	if (!ktext)
		return 0;
	return synth_mmap(r, -1, ktext, UINT64_MAX, ktext, "[kernel.kallsyms]_text", true);
}

/* The kernel's own text symbols of a read (v sorted by address) into the
 * cache, replacing what it had. */
static void cache_kernel_text(struct rec *r, const struct ksym *v, size_t n, const char *text,
			      const uint64_t edges[5])
{
	struct ksym_cache *kc;
	size_t cap = 0, tcap = 0, tlen = 0;

	kallsyms_cache_free(r);
	if (!edges[0] || edges[1] <= edges[0])
		return;
	kc = calloc(1, sizeof(*kc));
	if (!kc)
		return;
	kc->stext = edges[0];
	kc->etext = edges[1];
	kc->ktext = edges[4];
	if (edges[3] > edges[2]) {
		kc->sinit = edges[2];
		kc->einit = edges[3];
	}
	for (size_t i = 0; i < n; i++) {
		if (!v[i].edge && !in_kernel_text(kc, v[i].addr))
			continue;
		if (ds_grow(&kc->v, &cap, kc->n + 1, sizeof(*kc->v)) ||
		    ds_grow(&kc->text, &tcap, tlen + v[i].len, 1)) {
			free(kc->v);
			free(kc->text);
			free(kc);
			return;	/* no cache: the next window reads the file */
		}
		memcpy(kc->text + tlen, text + v[i].off, v[i].len);
		kc->v[kc->n] = v[i];
		kc->v[kc->n++].off = tlen;
		tlen += v[i].len;
	}
	r->kc = kc;
}

/*
 * FILE.kallsyms: only the kernel symbols that cover the sampled kernel
 * addresses (for each, every text symbol at the greatest start at or
 * below it, as the report looks them up) plus _text/_stext, in
 * /proc/kallsyms' order: a few KB instead of a 5 MB copy per recording.
 * Written at the end of the recording or window (when OUT is a regular
 * file); a recorder that is killed leaves none, and report falls back to
 * /proc/kallsyms.  Reading /proc/kallsyms (the kernel formats every line
 * of it) is most of a window switch's time: it is read once, its text
 * lines kept in memory meanwhile, and a window whose kernel addresses are
 * all in the kernel's own text takes them from the last read (ksym_cache).
 * 0, or -errno of a failed write (reported).
 */
int save_kallsyms(struct rec *r, const char *out)
{
	char path[4096], *line = NULL;
	struct ksym *v = NULL, **kept = NULL;
	char *text = NULL;
	size_t n = 0, cap = 0, tlen = 0, tcap = 0, nl = 0, lcap = 0, nk = 0, kcap = 0;
	static const char *const edge_names[5] = {
		"_stext", "_etext", "_sinittext", "_einittext", "_text"
	};
	uint64_t edges[5] = { 0 };
	ssize_t got;
	FILE *in, *o;
	bool nonzero = false, sorted = true, cached;
	int err = 0;

	if (is_special(out))
		return 0;	/* no /dev/null.kallsyms, no -.kallsyms */
	if (snprintf(path, sizeof(path), "%s.kallsyms", out) >= (int)sizeof(path))
		return 0;
	cached = kips_in_cache(r);
	r->kallsyms_reads += !cached;
	if (cached) {
		v = r->kc->v;
		n = r->kc->n;
		text = r->kc->text;
		goto mark;
	}
	in = fopen("/proc/kallsyms", "r");
	if (!in)
		return 0;
	/* the text symbols (and _text, _stext) with their lines */
	while ((got = getline(&line, &lcap, in)) > 0) {
		size_t len = (size_t)got;
		const char *name;
		uint64_t a;
		char t;

		if (ksym_line(line, &a, &t, &name)) {
			bool edge = is_name(name, "_text") || is_name(name, "_stext");

			nonzero |= a != 0;
			for (int e = 0; e < 5; e++)
				if (is_name(name, edge_names[e]))
					edges[e] = a;
			if (t == 't' || t == 'T' || t == 'w' || t == 'W' || edge) {
				if (ds_grow(&v, &cap, n + 1, sizeof(*v)) ||
				    ds_grow(&text, &tcap, tlen + len, 1)) {
					err = -ENOMEM;
					break;
				}
				memcpy(text + tlen, line, len);
				sorted &= !n || v[n - 1].addr <= a;
				v[n++] = (struct ksym){ a, tlen, len, edge, false };
				tlen += len;
			}
		}
		if (++nl % 1024 == 0)
			switch_drain(r);	/* a window switch: the rings too */
	}
	free(line);
	fclose(in);
	if (err || !nonzero) {
		free(v);
		free(text);
		if (err)
			die_msg("cannot save kernel symbols: %s", strerror(-err));
		else if (!r->o.user_only)	/* no kernel frames anyway */
			die_msg("note: /proc/kallsyms addresses are hidden (kptr_restrict); "
				"kernel frames will not be symbolized");
		return err;
	}
	/* by address (most of the file already is), the line order kept */
	if (!sorted)
		qsort(v, n, sizeof(*v), cmp_ksym);
	if (r->o.switch_mode)
		cache_kernel_text(r, v, n, text, edges);
mark:
	for (size_t k = 0; k < n; k++)
		v[k].keep = v[k].edge;
	/* every sampled kernel address keeps the symbols at its start */
	for (size_t i = 0; i < r->kips.cap; i++) {
		uint64_t ip = r->kips.s[i].key;
		size_t lo = 0, hi = n;

		if (!r->kips.s[i].val)
			continue;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (v[mid].addr <= ip)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t k = lo; k-- > 0 && v[k].addr == v[lo - 1].addr;)
			v[k].keep = true;
	}
	/* the kept ones in the file's order */
	for (size_t k = 0; k < n && !err; k++)
		if (v[k].keep) {
			if (ds_grow(&kept, &kcap, nk + 1, sizeof(*kept)))
				err = -ENOMEM;
			else
				kept[nk++] = &v[k];
		}
	if (err) {
		die_msg("cannot save kernel symbols: %s", strerror(-err));
		goto out;
	}
	if (nk)
		qsort(kept, nk, sizeof(*kept), cmp_off);
	o = fopen(path, "w");
	if (!o) {
		err = -errno;
		die_msg("cannot create %s: %s", path, strerror(-err));
		goto out;
	}
	for (size_t k = 0; k < nk && !err; k++) {
		errno = 0;
		if (fwrite(text + kept[k]->off, 1, kept[k]->len, o) != kept[k]->len)
			err = errno ? -errno : -EIO;
	}
	if (!err)
		err = ds_stream_err(o);
	errno = 0;
	if (fclose(o) != 0 && !err)
		err = errno ? -errno : -EIO;
	if (err) {
		die_msg("writing %s: %s", path, strerror(-err));
		unlink(path);
	}
out:
	free(kept);
	if (!cached) {
		free(v);
		free(text);
	}
	return err;
}
