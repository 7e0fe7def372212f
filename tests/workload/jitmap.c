// SPDX-License-Identifier: MIT
/*
 * A tiny "JIT" for the side-data test: a spin loop copied into anonymous
 * executable memory, announced in /tmp/perf-PID.map (as JITs do), run for
 * SECS seconds (default 0.4) between calls to clock_gettime() (the vDSO).
 * The map stays (as python3 -X perf leaves it): whoever runs it removes it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	/* mov $0x200, %ecx; 1: dec %ecx; jnz 1b; ret (as long as a few
	 * clock_gettime() calls) */
	static const unsigned char code[] = { 0xb9, 0x00, 0x02, 0x00, 0x00, 0xff, 0xc9,
					      0x75, 0xfc, 0xc3 };
	double secs = argc > 1 ? atof(argv[1]) : 0.4;
	unsigned char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct timespec t0, t;
	char path[64];
	FILE *f;

	if (m == MAP_FAILED)
		return 1;
	memcpy(m + 0x40, code, sizeof(code));
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "%lx %zx jit_spin\n", (unsigned long)(uintptr_t)(m + 0x40), sizeof(code));
	fclose(f);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		((void (*)(void))(m + 0x40))();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
