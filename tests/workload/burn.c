// SPDX-License-Identifier: MIT
/* Small frame-pointer workload with recognisable function names:
 * burn_outer -> burn_middle -> burn_leaf (user CPU) and
 * syscall_loop (kernel time via getppid/write to /dev/null). */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) void burn_leaf(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * 2654435761u;
}

__attribute__((noinline)) void burn_middle(unsigned long n)
{
	burn_leaf(n);
	sink++;
}

__attribute__((noinline)) void burn_outer(unsigned long n)
{
	burn_middle(n);
	sink++;
}

__attribute__((noinline)) void syscall_loop(int fd, int n)
{
	static char buf[4096];

	for (int i = 0; i < n; i++) {
		for (int j = 0; j < 512; j++)
			buf[(i + j) & 4095] += (char)j;
		if (write(fd, buf, sizeof(buf)) < 0)
			break;
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0, t0 = now();
	int fd = open("/dev/null", O_WRONLY);

	while (now() - t0 < secs) {
		burn_outer(300000);
		syscall_loop(fd, 3000);
	}
	close(fd);
	return 0;
}
