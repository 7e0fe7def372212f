# Distinct functions in `deferstack script` output (bench/real-bench.sh):
# (symbol, object) of every frame line that names a symbol.  Prints the
# total on stdout, "count<TAB>object" per object on stderr.
BEGIN { FS = "\t" }
NF > 1 {
	line = $2
	sub(/^ *[0-9a-f]+ /, "", line)
	if (line ~ /^\[unknown\]/)
		next
	obj = line
	sub(/.* \(/, "", obj)
	sub(/\)$/, "", obj)
	fn = line
	sub(/\+0x[0-9a-f]+ \(.*$/, "", fn)
	sub(/ \(.*$/, "", fn)
	if (!((fn, obj) in seen)) {
		seen[fn, obj] = 1
		per[obj]++
		n++
	}
}
END {
	printf "  distinct functions met (symbol, object): %d; most in:\n", n
	for (o in per)
		printf "%d\t%s\n", per[o], o > "/dev/stderr"
}
