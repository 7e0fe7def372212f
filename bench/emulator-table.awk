# The table of bench/emulator-compare.sh: one row per kernel, TCG mode and
# pin mode, from its result lines
# "KERNEL MODE PIN SEED VERDICT CALLS SECONDS LOG".
{
	row = $1 " " $2 " " $3
	runs[row]++
	verdict[row " " $5]++
	calls[row] += $6
	secs[row] += $7
}
END {
	for (row in runs) {
		split(row, f, " ")
		printf "%-6s %-7s %-5s %5d %5d %5d %6d %5d %10d %9d\n", f[1], f[2], f[3],
			verdict[row " pass"], verdict[row " int3"], verdict[row " splat"],
			verdict[row " hang"], verdict[row " fail"], calls[row] / runs[row],
			secs[row] / runs[row]
	}
}
