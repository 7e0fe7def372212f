#!/usr/bin/env python3
"""Per kernel function, the guest instructions one sample costs.

  attribute.py SYSTEM_MAP GUEST_LOG PREFIX [ROWS]

PREFIX.1 to PREFIX.6 are the insn_profile.so windows of
bench/guest/insn-profile.sh: modes none, classic and deferred, each with
10 and 10 + REPS repetitions of the workload. GUEST_LOG holds its
"insn-profile: window" and "cost:" lines. A mode's instructions are its
second window's minus its first (REPS repetitions, nothing else); a
function's cost per sample in a mode is (its instructions there - in
mode none) / the samples of those REPS repetitions. The table lists the
functions where deferred and classic differ most, then the totals
(kernel only; user space is the workload and the ring reader).
"""
import bisect
import re
import sys
from collections import defaultdict


# What the code does for a sample, by function; the rest is "other".
GROUPS = [
    ("request (in the sample)", r"^(perf_defer_request|unwind_deferred_request|unwind_claim_cookie|"
     r"unwind_current_state|unwind_user_get_cookie|refcount_inc_not_zero|perf_callchain_defers|"
     r"task_work_add|kick_process|class_irqsave_destructor)$"),
    ("user stack walk", r"^(unwind_user.*|__get_user.*|perf_callchain_user|perf_callchain_store.*|"
     r"__cond_resched|rcu_all_qs|memcmp|sframe_.*|ehframe_.*|unwind_table.*|copy_from_user.*|"
     r"_copy_from_user|__copy_user.*|rep_movs_alternative)$"),
    ("record output", r"^(perf_defer_write|perf_output_.*|__output_copy.*|__perf_event_header__init_id|"
     r"perf_event__output_id_sample|perf_event_header__init|pid_nr_ns|__task_pid_nr_ns|"
     r"perf_event_pid|perf_event_tid|sched_clock.*|local_clock.*|perf_event_clock|"
     r"perf_output_sample|perf_prepare_sample|perf_event_output_forward)$"),
    ("delivery (task_work, asks, writer)", r"^(perf_defer_.*|perf_unwind_deferred|unwind_deferred_task_work|"
     r"task_work_run|resume_user_mode_work.*|ring_buffer_put|kfree|__srcu_read_.*|srcu_.*|"
     r"unwind_unqueue|refcount_dec_and_test|event_filter_match|perf_cgroup_match)$"),
    ("exit to user mode", r"^(syscall_exit_to_user_mode.*|irqentry_exit_to_user_mode|"
     r"exit_to_user_mode.*|arch_exit_to_user_mode_prepare.*)$"),
    ("page allocator (runs of the process, noise)", r"^(__free_one_page|find_buddy_page_pfn|"
     r"free_pcppages_bulk|__rmqueue_pcplist|expand|free_unref_page.*|get_pfnblock_flags_mask|"
     r"__nr_to_section|__pfn_to_section|account_freepages|__del_page_from_free_list.*|"
     r"__mod_zone_page_state|clear_page_erms|__free_pages|perf_mmap_free_page|get_page_from_freelist|"
     r"__list_del_entry_valid_or_report|__list_add_valid_or_report)$"),
]


def group(f):
    for name, pattern in GROUPS:
        if re.match(pattern, f):
            return name
    return "other kernel"


def load_map(path):
    addrs, names = [], []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[1] in "tTwW":
                addrs.append(int(parts[0], 16))
                names.append(parts[2])
    order = sorted(range(len(addrs)), key=addrs.__getitem__)
    return [addrs[i] for i in order], [names[i] for i in order]


def window(path, addrs, names):
    per = defaultdict(int)
    with open(path) as f:
        for line in f:
            pc, insns, _ = line.split()
            pc = int(pc, 16)
            if pc < 0xffff800000000000:
                per["[user]"] += int(insns)
                continue
            i = bisect.bisect_right(addrs, pc) - 1
            per[names[i] if i >= 0 else "[?]"] += int(insns)
    return per


def samples(log):
    """Samples per (mode, window size): cost_bench's lines after each window's."""
    n = defaultdict(int)
    key = None
    for line in open(log, errors="replace"):
        m = re.search(r"insn-profile: window (\S+) (\d+)", line)
        if m:
            key = (m.group(1), int(m.group(2)))
            continue
        m = re.search(r"cost: wl=\S+ mode=\S+ rep=\d+ ns=\d+ samples=(\d+)", line)
        if m and key:
            n[key] += int(m.group(1))
    return n


def diff(a, b):
    return {f: b.get(f, 0) - a.get(f, 0) for f in set(a) | set(b)}


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    addrs, names = load_map(sys.argv[1])
    ns = samples(sys.argv[2])
    w = [window(f"{sys.argv[3]}.{i}", addrs, names) for i in range(1, 7)]
    none, classic, deferred = diff(w[0], w[1]), diff(w[2], w[3]), diff(w[4], w[5])
    rows = int(sys.argv[4]) if len(sys.argv) > 4 else 40
    n = {}
    for mode in ("classic", "deferred"):
        sizes = sorted(k[1] for k in ns if k[0] == mode)
        n[mode] = ns[(mode, sizes[-1])] - ns[(mode, sizes[0])] if len(sizes) == 2 else 0
    if not n["classic"] or not n["deferred"]:
        sys.exit("attribute.py: no samples in the guest log")
    funcs = set(none) | set(classic) | set(deferred)
    cost = {}
    for f in funcs:
        c = (classic.get(f, 0) - none.get(f, 0)) / n["classic"]
        d = (deferred.get(f, 0) - none.get(f, 0)) / n["deferred"]
        cost[f] = (c, d)
    print(f"samples: classic {n['classic']}, deferred {n['deferred']}")
    print(f"{'function':40} {'classic':>9} {'deferred':>9} {'delta':>9}")
    for f in sorted(cost, key=lambda f: -abs(cost[f][1] - cost[f][0]))[:rows]:
        c, d = cost[f]
        print(f"{f:40} {c:9.1f} {d:9.1f} {d - c:+9.1f}")
    print()
    print(f"{'by what the code does':40} {'classic':>9} {'deferred':>9} {'delta':>9}")
    groups = defaultdict(lambda: [0.0, 0.0])
    for f, (c, d) in cost.items():
        if f != "[user]":
            g = groups[group(f)]
            g[0] += c
            g[1] += d
    for name, _ in GROUPS + [("other kernel", None)]:
        c, d = groups[name]
        print(f"{name:40} {c:9.1f} {d:9.1f} {d - c:+9.1f}")
    kc = sum(c for f, (c, d) in cost.items() if f != "[user]")
    kd = sum(d for f, (c, d) in cost.items() if f != "[user]")
    print(f"{'kernel, all functions':40} {kc:9.1f} {kd:9.1f} {kd - kc:+9.1f}")
    uc, ud = cost.get("[user]", (0, 0))
    print(f"{'[user] (workload, ring reader)':40} {uc:9.1f} {ud:9.1f} {ud - uc:+9.1f}")


main()
