# The command blocks of a guide (docs/own-machine.md) for tests/own-machine.sh:
# each ```sh block right after a <!-- run: MARKS --> line is written to
# DIR/block-NN.sh and listed as "NN<TAB>MARKS" on standard output. A ```sh
# block without a mark is reported on standard error and makes the exit
# status 1.
#   awk -v dir=DIR -f tests/guide-blocks.awk GUIDE
/^<!-- run: .* -->$/ {
	m = $0
	sub(/^<!-- run: /, "", m)
	sub(/ -->$/, "", m)
	want = 1
	next
}
/^```sh$/ {
	fences++
	if (!want) {
		print "unmarked block at line " NR > "/dev/stderr"
		next
	}
	n++
	inb = 1
	want = 0
	f = sprintf("%s/block-%02d.sh", dir, n)
	printf "%02d\t%s\n", n, m
	printf "" > f
	next
}
inb && /^```$/ { inb = 0; close(f); next }
inb { print > f }
# a mark applies to the block right after it (blank lines between allowed)
!/^[[:space:]]*$/ { want = 0 }
END { if (fences != n) exit 1 }
