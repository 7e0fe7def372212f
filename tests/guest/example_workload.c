// SPDX-License-Identifier: GPL-2.0
/* The bundled example workload as a program: example_workload [MSEC [READ_BYTES]] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload.h"

int main(int argc, char **argv)
{
	unsigned int msec = argc > 1 ? (unsigned int)strtoul(argv[1], NULL, 0) : 2000;
	size_t bytes = argc > 2 ? strtoul(argv[2], NULL, 0) : 8 << 20;
	struct workload_stats st;
	int ret = workload_run(msec, bytes, "/dev/zero", &st);

	if (ret) {
		fprintf(stderr, "example_workload: %s\n", strerror(-ret));
		return 1;
	}
	printf("example_workload: %lu reads of %zu bytes, %lu spin rounds\n",
	       st.reads, bytes, st.spins);
	return 0;
}
