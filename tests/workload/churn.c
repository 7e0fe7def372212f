// SPDX-License-Identifier: MIT
/*
 * Workload of the window robustness tests (tests/cli/check-winrobust.sh):
 *   churn SECONDS BUSY CHURN
 * BUSY threads spin in a call chain for SECONDS; CHURN threads each start
 * and join short-lived threads in a loop (every one a new tid the
 * recorder sees come and go).  Prints the number of threads started.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static atomic_int stop;
static atomic_long started;

__attribute__((noinline)) static unsigned long churn_leaf(unsigned long x)
{
	for (int i = 0; i < 2000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

__attribute__((noinline)) static unsigned long churn_mid(unsigned long x)
{
	return churn_leaf(x) ^ churn_leaf(x + 1);
}

static void *busy(void *arg)
{
	unsigned long x = (unsigned long)arg;

	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		x = churn_mid(x);
	return (void *)x;
}

static void *brief(void *arg)
{
	return (void *)churn_leaf((unsigned long)arg);
}

static void *spawner(void *arg)
{
	unsigned long i = (unsigned long)arg;

	while (!atomic_load(&stop)) {
		pthread_t t;

		if (pthread_create(&t, NULL, brief, (void *)i++) == 0) {
			pthread_join(t, NULL);
			atomic_fetch_add(&started, 1);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1;
	int nbusy = argc > 2 ? atoi(argv[2]) : 2, nchurn = argc > 3 ? atoi(argv[3]) : 0;
	pthread_t *t = calloc((size_t)(nbusy + nchurn) + 1, sizeof(*t));
	struct timespec ts = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) };
	int n = 0;

	if (!t)
		return 1;
	for (int i = 0; i < nbusy; i++)
		if (pthread_create(&t[n], NULL, busy, (void *)(unsigned long)i) == 0)
			n++;
	for (int i = 0; i < nchurn; i++)
		if (pthread_create(&t[n], NULL, spawner, (void *)(unsigned long)i) == 0)
			n++;
	nanosleep(&ts, NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("%ld threads started\n", (long)atomic_load(&started));
	free(t);
	return 0;
}
