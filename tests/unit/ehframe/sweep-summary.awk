# SPDX-License-Identifier: GPL-2.0
# Sums up `ehcheck check` lines (make sweep): objects, pcs, and the objects
# with anything wrong. Exits 1 if any.
/: FAILED$/ { bad++; print; next }
{
	n++
	for (i = 1; i < NF; i++) {
		if ($i == "pcs")
			pcs += $(i + 1)
		if ($i == "equal")
			equal += $(i + 1)
		if ($i == "ENOENT") {
			split($(i + 1), g, "/")
			gap_bad = (g[1] + 0 != g[2] + 0)
		}
	}
	if ($0 !~ /mismatches 0, cached-path mismatches 0, fde range mismatches 0,/ ||
	    $0 !~ /out-of-segment reads 0,/ || gap_bad) {
		bad++
		print
	}
}
END {
	printf "%d objects, %d pcs, %d equal, %d objects with a mismatch or failure\n",
	       n, pcs, equal, bad
	exit bad > 0
}
