# The wall time in seconds, the peak RSS in KiB and the CPU time (user +
# system) in seconds of one run, from the output of /usr/bin/time -v:
# "SECONDS KIB CPU" (bench/file-bench.sh, bench/real-bench.sh).
BEGIN { FS = ": " }
/Elapsed \(wall clock\)/ {
	n = split($2, p, ":")
	s = 0
	for (j = 1; j <= n; j++)
		s = s * 60 + p[j]
}
/Maximum resident set size/ { m = $2 }
/User time \(seconds\)|System time \(seconds\)/ { c += $2 }
END { print s, m, c }
