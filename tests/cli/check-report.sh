# Sourced by tests/run-checks.sh (uses DSAN, T, check/ok/bad/expect_usage and
# $T/m.data, $T/flame.ks from check-flame.sh): report --text with sort keys,
# call graphs and filters; script's perf-script-like frames.
rep() { "$DSAN" report -i "$T/m.data" -k "$T/flame.ks" "$@" 2>/dev/null; }
rep --text > "$T/r-default.txt"
check "report --text: perf-like header and columns (Children, Self, Command, Shared Object, Symbol)" \
	grep -q '^# Children      Self  Command  Shared Object      Symbol' "$T/r-default.txt"
check "report --text: a row with children and self overhead" \
	grep -qE '^ +16\.67% +16\.67%  alpha +\[kernel\.kallsyms\] +\[k\] kfunc0$' "$T/r-default.txt"
rep --sort comm > "$T/r-comm.txt"
check "report --sort comm: alpha 66.67% self, beta 33.33%" \
	bash -c "grep -qE '^ +66\.67% +66\.67%  alpha$' '$T/r-comm.txt' && grep -qE '^ +33\.33% +33\.33%  beta$' '$T/r-comm.txt'"
rep --sort pid,sym --top 1 -g caller > "$T/r-caller.txt"
check "report -g caller: the chain from the root down to the function" \
	bash -c "grep -A9 'Pid  Symbol' '$T/r-caller.txt' | tr -s ' ' | tr '\n' '/' |
		grep -q '100 \[k\] kfunc0/ |/ ---\[unknown\]/ \[unknown\]/ \[unknown\]/ kfunc1/ kfunc0/'"
rep --sort sym --top 1 -g callee > "$T/r-callee.txt"
check "report -g callee: from the function up to its callers" \
	bash -c "tr -s ' ' < '$T/r-callee.txt' | tr '\n' '/' | grep -q '\[k\] kfunc0/ |/ ---kfunc0/ kfunc1/'"
rep --pid 200 --sort pid > "$T/r-pid.txt"
check "report --pid 200: only beta's samples" \
	bash -c "grep -q '^# Samples: 2 ' '$T/r-pid.txt' && grep -qE '^ +100\.00% +100\.00%  200$' '$T/r-pid.txt'"
rep --comm beta,alpha --sort comm > "$T/r-comms.txt"
check "report --comm beta,alpha: all 6 samples" grep -q '^# Samples: 6 ' "$T/r-comms.txt"
rep --comm nosuch > "$T/r-none.txt"
check "report --comm nosuch: no samples, exit 0" grep -q '^# Samples: 0 ' "$T/r-none.txt"
rep --dso '[kernel.kallsyms]' > "$T/r-dso.txt"
check "report --dso [kernel.kallsyms]: the samples whose own frame is in the kernel" \
	grep -q '^# Samples: 6 ' "$T/r-dso.txt"
rep --dso libc.so.6 --folded > "$T/r-dso.folded"
check "report --dso applies to --folded too" test ! -s "$T/r-dso.folded"
rep --children --sort sym > "$T/r-children.txt"
check "report --children: rows ordered by inclusive overhead" \
	bash -c "grep -v '^#' '$T/r-children.txt' | head -1 | grep -qE '^ +66\.67% +0\.00%  \[\.\] \[unknown\]$'"
expect_usage "bad --sort key 'foo'" report --sort foo -i "$T/m.data"
expect_usage "--sort key 'sym' given twice" report --sort sym,sym -i "$T/m.data"
expect_usage "bad -g 'sideways'" report -g sideways -i "$T/m.data"
expect_usage "bad -g threshold 'x'" report -g caller,x -i "$T/m.data"
expect_usage "bad --pid 'abc'" report --pid abc -i "$T/m.data"
expect_usage "--sort, --children and -g are for --text, not --folded" report --folded --sort sym -i "$T/m.data"
# script: like perf script (period, event, symbol+offset, object)
"$DSAN" script -i "$T/m.data" -k "$T/flame.ks" > "$T/s-perf.txt" 2>/dev/null
check "script: 'comm pid/tid [cpu] time: period event:' header" \
	grep -qE '^alpha +100/100 +\[000\] 0\.000001: +1000 cpu-clock: stitched cookie=0x100000001$' "$T/s-perf.txt"
check "script: frames as 'addr symbol+0xoff (object)'" \
	grep -qP '^\tffffffff81000001 kfunc1\+0x0 \(\[kernel\.kallsyms\]\)$' "$T/s-perf.txt"
check "script: unresolved user frames '[unknown] ([unknown])'" \
	grep -qP '^\t    555555550002 \[unknown\] \(\[unknown\]\)$' "$T/s-perf.txt"
