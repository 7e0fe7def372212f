// SPDX-License-Identifier: MIT
// A C++ program built against the public header (deferstack/deferstack.h,
// perf_abi.h) and linked with the library: read FILE, stitch in file order
// (a lambda as the callback), fold the stacks, print the counts and the
// first event's name.  The options structs of the long calls
// (ds_fold_chain_opts, ds_profile_sample) and the sz of caller-allocated
// structs (ds_event, ds_sym_info, ds_frames) as a C++ caller fills them
// (no designated initializers before C++20).  Then the same file through
// ds_pipeline, the library's read pipeline.
#include <cstdio>
#include <string>
#include <vector>

#include <deferstack/deferstack.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		std::fprintf(stderr, "usage: cxx_consumer FILE\n");
		return 2;
	}
	ds_reader *r = nullptr;
	ds_stitcher *s = nullptr;
	struct out {
		ds_fold *fold = nullptr;
		ds_symbols *sym = nullptr;
		ds_profile *prof = nullptr;
		unsigned long long leaf_named = 0;
	} out;
	std::vector<char> why(256);
	ds_reader_opts ro = {};
	ro.sz = sizeof(ro);
	ro.errbuf = why.data();
	ro.errbuf_len = why.size();
	if (ds_reader_open(&r, argv[1], &ro)) {
		std::fprintf(stderr, "cxx_consumer: %s\n", why.data());
		return 1;
	}
	ds_stitch_opts so = {};
	so.sz = sizeof(so);
	so.cb_arg = &out;
	so.cb = [](void *arg, const ds_stitch_out *o) -> int {
		struct out *u = static_cast<struct out *>(arg);

		if (o->kind == DS_OUT_RECORD)
			return ds_symbols_event(u->sym, o->ev);
		if (!o->chain)
			return 0;
		ds_fold_chain_opts fo = {};
		fo.sz = sizeof(fo);
		fo.comm = "cxx";
		fo.pid = o->ev->pid;
		fo.chain = o->chain;
		fo.nr = o->nr;
		fo.samples = 1;
		fo.weight = 1;
		int e = ds_fold_add_chain_opts(u->fold, u->sym, &fo);
		if (e)
			return e;
		ds_profile_sample ps = {};
		ps.sz = sizeof(ps);
		ps.comm = "cxx";
		ps.pid = o->ev->pid;
		ps.cpu = -1;
		ps.event = "cpu-clock";
		ps.chain = o->chain;
		ps.nr = o->nr;
		ps.period = 1;
		e = ds_profile_add_sample(u->prof, u->sym, &ps);
		if (e)
			return e;
		// the leaf (the chain's first address after its context marker)
		for (uint64_t i = 0; i < o->nr; i++) {
			if (o->chain[i] >= (uint64_t)PERF_CONTEXT_MAX)
				continue;
			ds_sym_info si = {};
			si.sz = sizeof(si);
			char buf[128];
			if (!ds_symbols_lookup(u->sym, o->ev->pid, o->chain[i],
					       o->chain[i] >= 0xffff800000000000ULL, &si, buf,
					       sizeof(buf)) && si.name && si.sz == sizeof(si))
				u->leaf_named++;
			break;
		}
		return 0;
	};
	int err = ds_fold_new(&out.fold);
	if (!err)
		err = ds_profile_new(&out.prof);
	if (!err)
		err = ds_symbols_new(&out.sym, nullptr);
	if (!err)
		err = ds_stitch_new(&s, &so);
	const perf_event_header *rec;
	int ret = 0;
	while (!err && (ret = ds_reader_next(r, &rec)) > 0) {
		ds_event ev = {};
		ev.sz = sizeof(ev);

		if (rec->type == DS_RECORD_FINISHED_ROUND)
			continue;
		err = ds_reader_parse(r, rec, &ev);
		if (!err)
			err = ds_stitch_event(s, &ev);
	}
	if (!err && ret < 0)
		err = ret;
	if (!err)
		err = ds_stitch_finish(s);
	if (!err) {
		char buf[64];
		std::string name = ds_attr_name(ds_reader_attr(r, 0), buf, sizeof(buf));
		const ds_stitch_stats *st = ds_stitch_get_stats(s);

		std::printf("event=%s samples=%llu stitched=%llu folded=%llu\n", name.c_str(),
			    (unsigned long long)st->samples, (unsigned long long)st->stitched,
			    (unsigned long long)ds_fold_samples(out.fold));
		std::printf("profiled=%llu leaves=%llu stats_sz_ok=%d\n",
			    (unsigned long long)ds_profile_samples(out.prof), out.leaf_named,
			    st->sz == sizeof(*st));
	} else {
		std::fprintf(stderr, "cxx_consumer: error %d\n", err);
	}
	// the same file through the library's pipeline (read, merge, stitch,
	// symbols as one object), a lambda as its callback
	if (!err) {
		struct pl_out {
			ds_pipeline *p = nullptr;
			unsigned long long named = 0;
		} po;
		ds_pipeline_opts opts = {};
		opts.sz = sizeof(opts);
		opts.symbols = true;
		opts.cb_arg = &po;
		opts.cb = [](void *arg, const ds_stitch_out *o) -> int {
			struct pl_out *u = static_cast<struct pl_out *>(arg);

			if (o->kind != DS_OUT_RECORD && ds_pipeline_symbols(u->p) &&
			    std::string(ds_pipeline_comm(u->p, o->ev)) != "")
				u->named++;
			return 0;
		};
		ds_pipeline_summary sum = {};
		sum.sz = sizeof(sum);
		err = ds_pipeline_new(&po.p, &opts);
		if (!err)
			err = ds_pipeline_open(po.p, argv[1]);
		if (!err)
			err = ds_pipeline_run(po.p);
		if (!err)
			err = ds_pipeline_get_summary(po.p, &sum);
		if (!err)
			std::printf("pipeline samples=%llu stitched=%llu kernel_only=%llu "
				    "outputs=%llu summary_sz_ok=%d\n",
				    (unsigned long long)sum.samples,
				    (unsigned long long)sum.stitched,
				    (unsigned long long)sum.kernel_only, po.named,
				    sum.sz == sizeof(sum));
		else
			std::fprintf(stderr, "cxx_consumer: %s\n",
				     po.p ? ds_pipeline_error(po.p) : "ds_pipeline_new");
		ds_pipeline_free(po.p);
	}
	ds_stitch_free(s);
	ds_fold_free(out.fold);
	ds_profile_free(out.prof);
	ds_symbols_free(out.sym);
	ds_reader_close(r);
	return err ? 1 : 0;
}
