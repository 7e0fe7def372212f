#!/usr/bin/env bash
# Differential check against the stock 7.x kernel: the same guest test binaries
# print "# layout:" lines (record types, field layout, misc bits, marker and
# cookie placement, first ip of the deferred record) and "# attr:" lines
# (which attr combinations are accepted). Both consoles must show the same set.
#
#   tests/differential.sh OUR_CONSOLE.log REFERENCE_CONSOLE.log
set -uo pipefail
ours=$1 ref=$2
extract() { grep -aoE '# (layout|attr): .*' "$1" | sed 's/\r$//; s/  */ /g' | sort -u; }
if ! [ -s "$ours" ] || ! [ -s "$ref" ]; then
	echo "differential: missing console log" >&2
	exit 1
fi
a=$(extract "$ours") b=$(extract "$ref")
if [ -z "$b" ]; then
	echo "differential: the reference printed no layout lines" >&2
	exit 1
fi
if [ "$a" = "$b" ]; then
	echo "differential: $(echo "$a" | wc -l) layout/attr facts identical on both kernels"
	echo "$a" | sed 's/^/  /'
	exit 0
fi
echo "differential: our kernel and the reference differ:"
diff <(echo "$a") <(echo "$b") | sed 's/^</  ours:/; s/^>/  ref: /' | grep -E 'ours|ref'
exit 1
