# Assembly of a shared object with n sized functions (awk -v n=N):
# bench/real-bench.sh's linearity case.
BEGIN {
	print "\t.text"
	for (i = 0; i < n; i++) {
		printf "\t.globl gen_fn_%d\n\t.type gen_fn_%d, @function\ngen_fn_%d:\n", i, i, i
		printf "\t.fill %d, 1, 0x90\n\tret\n\t.size gen_fn_%d, . - gen_fn_%d\n", 7 + i % 24, i, i
	}
}
