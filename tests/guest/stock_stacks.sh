#!/bin/sh
# Stock Debian sid programs as sid ships them (guest/pack-stock.sh: perl,
# python3, gzip, xz (with its liblzma) and sort; no frame pointers, no SFrame, only .eh_frame),
# profiled by perf 7.x with --call-graph fp,defer and with dwarf,65528.
# Per program and mode: the program's samples that have user frames, how many
# of those reach the process's outermost frame (its _start, called from libc's
# __libc_start_main: the last frame in the program's own file, the one before
# it in libc; before main, the loader's own _start), file bytes per sample and
# the top user leaf functions. Then every system call entry sampled twice in
# one recording, by an fp,defer event and by a dwarf one: per hit, the two
# user stacks compared where dwarf's reaches the outermost frame.
# On our kernel fp,defer must reach it for nearly every sample and give
# dwarf's stacks; on the stock kernel only the fp,defer figures are printed.
# Skips (exit 0) without perf 7.x or the stock programs in the initramfs.
if [ ! -x /usr/bin/perl ]; then
	echo "# SKIP: the stock programs are not in this initramfs"
	exit 0
fi
out=${DS_OUT:-/out/stock_stacks}
. "$(dirname "$0")/perf7_setup.sh"
ours=0
[ -e /sys/kernel/debug/unwind_user/stats ] && ours=1

# The awk functions both counts below share: hex(S), the value of hex digits
# S; root_mode(), after the samples are read, the commonest outermost
# address of the stacks that end in the loader (lroot[i], nlroot of them);
# is_root(I): sample I reaches the outermost frame, its program's _start
# called from libc (root[I] == 1), or before main the loader's own _start:
# the stack ends within 64 bytes of where most stacks that end in the
# loader do (in its _start, a few instructions long), not in some frame of
# the loader after main.
AWK_ROOT='
	function hex(s,    i, v) {
		v = 0
		s = tolower(s)
		for (i = 1; i <= length(s); i++)
			v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return v
	}
	# the last frame of sample i: root[i] 1 (program from libc), 2 (loader)
	function note_root(i, nl) {
		root[i] = 0
		if (dso[nl] == "(" prog ")" && dso[nl - 1] ~ /\/libc\.so\.6\)$/)
			root[i] = 1
		else if (dso[nl] ~ /\/ld-linux-x86-64\.so\.2\)$/) {
			root[i] = 2
			lroot[i] = hex(addr[nl])
			c = ++lcount[addr[nl]]	# by its text: awk would print the number %.6g
			if (c > lbest) {
				lbest = c
				lmode = lroot[i]
			}
		}
	}
	function is_root(i) {
		return root[i] == 1 || root[i] == 2 && lroot[i] - lmode <= 64 && lmode - lroot[i] <= 64
	}
'
# whole_share FILE PROG: "SAMPLES WHOLE" of PROG's samples in perf script
# output FILE (blocks separated by blank lines, frames leaf first as
# "ADDR SYM+OFF (DSO)"), counting samples with at least one user frame.
whole_share() {
	awk -v prog="$2" "$AWK_ROOT"'
		function done() {
			if (nu > 0)
				note_root(++n, nl)
			nl = nu = 0
		}
		/^[ \t]+[0-9a-f]+ / {
			if ($NF !~ /kernel\.kallsyms|^\(\[/) {
				nu++
				nl++
				dso[nl] = $NF
				addr[nl] = $1
			}
			next
		}
		{ done() }
		END {
			done()
			for (i = 1; i <= n; i++)
				w += is_root(i)
			print n + 0, w + 0
		}' "$1"
}
# top_leaves FILE: the 5 commonest first user frames (symbol, no offset).
top_leaves() {
	awk '
		/^[ \t]+[0-9a-f]+ / {
			if (!got && $NF !~ /kernel\.kallsyms|^\(\[/) {
				s = $2; sub(/\+0x[0-9a-f]+$/, "", s); c[s]++; got = 1
			}
			next
		}
		{ got = 0 }
		END { for (s in c) print c[s], s }' "$1" | sort -rn | head -5 | tr '\n' ' '
}

# paired_cmp FILE PROG: the hits of perf script output FILE, where each
# system call entry of PROG was sampled twice (an fp,defer event and a dwarf
# one: two samples of one task in a row with the same tracepoint text; perf
# names both events alike, so the pair is compared both ways). Prints
# "SAMPLES PAIRS WHOLE SAME": the pairs where one of the two stacks reaches
# the outermost frame, and those where the two are the same frames
# (addresses equal or one apart: an unwinder may give a return address
# minus one); the first difference as comment lines.
paired_cmp() {
	awk -v prog="$2" "$AWK_ROOT"'
		function flush() {
			if (hdr) {
				k = ++cnt[tid]
				fr[tid, k] = frames
				txt[tid, k] = text
				note_root(tid SUBSEP k, nl)
			}
			hdr = 0
			frames = ""
			nl = 0
		}
		/^[ \t]+[0-9a-f]+ / {
			if ($NF !~ /kernel\.kallsyms/) {
				frames = frames " " $1
				nl++
				dso[nl] = $NF
				addr[nl] = $1
			}
			next
		}
		/raw_syscalls:sys_enter:/ {
			flush()
			hdr = 1
			tid = $2
			text = $0
			sub(/.*raw_syscalls:sys_enter: /, "", text)
			next
		}
		{ flush() }
		END {
			flush()
			for (t in cnt) {
				samples += cnt[t]
				for (k = 1; k <= cnt[t]; k++) {
					if (k == cnt[t] || txt[t, k] != txt[t, k + 1])
						continue
					pairs++
					if (is_root(t SUBSEP k) || is_root(t SUBSEP (k + 1))) {
						whole++
						na = split(fr[t, k], x, " ")
						nb = split(fr[t, k + 1], y, " ")
						same = na == nb
						for (i = 1; same && i <= na; i++) {
							d = hex(x[i]) - hex(y[i])
							same = d >= -1 && d <= 1
						}
						if (same)
							eq++
						else if (!shown++)
							printf "# first difference (%s):\n#  %s\n#  %s\n", txt[t, k], fr[t, k], fr[t, k + 1]
					}
					k++
				}
			}
			print samples + 0, pairs + 0, whole + 0, eq + 0
		}' "$1"
}
# NAME PROG ARGS...: every system call entry of PROG sampled by both events
# (a few hundred, paced where the program allows: perf reads 64 KiB samples
# slower than that under emulation and loses what does not fit)
run_paired() {
	name=$1
	prog=$2
	shift 2
	"$P" record -m 4096 --call-graph fp,defer -e raw_syscalls:sys_enter \
		-e 'raw_syscalls:sys_enter/call-graph=dwarf,stack-size=65528/' \
		-o /tmp/st.data -- "$prog" "$@" > /dev/null 2> "$name-paired.record.err"
	rc=$?
	"$P" script -i /tmp/st.data > "$name-paired.script" 2> "$name-paired.script.err"
	rm -f /tmp/st.data
	paired_cmp "$name-paired.script" "$prog" > "$name-paired.cmp"
	grep '^#' "$name-paired.cmp"
	grep -i 'lost' "$name-paired.script.err" | sed 's/^/# perf script: /'
	set -- $(grep -v '^#' "$name-paired.cmp") 0 0 0 0
	echo "# $name, each system call entry sampled by fp,defer and by dwarf,65528: $1 samples, $2 hits paired, $3 with a stack that reaches _start, the same stack from both in $4 of those ($(pct $4 $3)%)"
	check "$name, paired fp,defer and dwarf: record exits 0, hits paired ($2 of $1 samples)" \
		"[ $rc -eq 0 ] && [ $2 -ge 20 ] && [ $(( 4 * $2 )) -ge $1 ]"
	[ $rc -eq 0 ] || show "$name-paired.record.err" 5
	if [ $ours = 1 ]; then
		check "$name, on our kernel: fp,defer gives dwarf's stack ($4 of $3)" \
			"[ $3 -ge 10 ] && [ $4 -ge $(( $3 * 99 / 100 )) ]"
	fi
}

seq 1 600000 > /tmp/stock.txt
# dwarf's stacks are perf's own unwinding of a stack copy, the same on any
# kernel: on the stock kernel only fp,defer is measured, and not paired
modes=fp,defer
[ $ours = 1 ] && modes="fp,defer dwarf,65528"
# NAME PROG ARGS...: the workloads, each a few seconds under emulation
run_prog() {
	name=$1
	prog=$2
	shift 2
	for mode in $modes; do
		tag=$name-$(echo "$mode" | tr , - | cut -d- -f1-2)
		"$P" record -e cpu-clock -F 499 --call-graph "$mode" -o /tmp/st.data -- "$prog" "$@" \
			> /dev/null 2> "$tag.record.err"
		rc=$?
		"$P" script -i /tmp/st.data > "$tag.script" 2> "$tag.script.err"
		bytes=$(stat -c %s /tmp/st.data)
		res=$(whole_share "$tag.script" "$prog")
		n=${res% *}
		w=${res#* }
		echo "# $name, --call-graph $mode: $n samples with user frames, $w reach _start ($(pct $w $n)%), $(( bytes / (n + !n) )) file bytes per sample; top: $(top_leaves "$tag.script")"
		check "$name, --call-graph $mode: record exits 0 with samples ($n)" "[ $rc -eq 0 ] && [ $n -ge 30 ]"
		[ $rc -eq 0 ] || show "$tag.record.err" 5
		if [ $ours = 1 ] && [ "$mode" = fp,defer ]; then
			# the few that may not (docs/kernel.md): a function without
			# CFI stopped on its first instruction (libcrypt's _init),
			# the loader's lazy-binding trampoline (its CFA in %rbx)
			check "$name, fp,defer on our kernel: stacks reach _start ($w of $n)" \
				"[ $w -ge $(( n * 95 / 100 )) ] && [ $n -gt 0 ]"
		fi
		rm -f /tmp/st.data
	done
}
run_prog perl /usr/bin/perl -e 'my $s = 0; for my $i (1 .. 1500000) { $s += ($i * 7) % 13 } print "$s\n"'
run_prog python3 /usr/bin/python3 -S -I -c 'def f(n):
    s = 0
    for i in range(n):
        s += i * 7 % 13
    return s
print(f(1000000))'
run_prog gzip /usr/bin/gzip -c -6 /tmp/stock.txt
run_prog xz /usr/bin/xz -c -0 -T1 /tmp/stock.txt
run_prog sort /usr/bin/sort --parallel=1 -r /tmp/stock.txt
if [ $ours = 0 ]; then
	rm -f /tmp/stock.txt
	exit $fail
fi
run_paired perl /usr/bin/perl -e 'for my $i (1 .. 40) { open(my $f, "<", "/tmp/stock.txt") or die; read($f, my $b, 4096); close($f); select(undef, undef, undef, 0.02) }'
run_paired python3 /usr/bin/python3 -S -I -c 'import time
for i in range(40):
    with open("/tmp/stock.txt", "rb") as f:
        f.read(4096)
    time.sleep(0.02)'
run_paired gzip /usr/bin/gzip -c -6 /tmp/stock.txt
run_paired xz /usr/bin/xz -c -0 -T1 /tmp/stock.txt
run_paired sort /usr/bin/sort --parallel=1 -r /tmp/stock.txt
rm -f /tmp/stock.txt
exit $fail
