/* ring_means.c - (bench/ring_means.py) scopes of a known length on two threads, timed by
 * the program's own clock: each thread runs K scopes of about 1 us and K of
 * about 20 us (a busy wait on CLOCK_MONOTONIC inside the scope); the
 * program's figure of a scope is the time between its first and its last
 * clock read inside it. Prints {"pid": N}, waits for SIGUSR1, works, prints
 * {"short_mean": ns, "long_mean": ns, "count": scopes of each name},
 * waits for SIGUSR2.
 *   ring_means K */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <qprof/qprof.h>

static uint64_t k = 20000;

static uint64_t now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* A scope of about NS: its own clock read first and last inside it. */
static uint64_t timed(uint64_t ns, int which)
{
	uint64_t a, b;

	if (which) {
		QPROF_SCOPE("means_long");
		a = now();
		do
			b = now();
		while (b - a < ns);
	} else {
		QPROF_SCOPE("means_short");
		a = now();
		do
			b = now();
		while (b - a < ns);
	}
	return b - a;
}

struct sums {
	uint64_t s_short, s_long;
};

static void *worker(void *arg)
{
	struct sums *s = arg;
	uint64_t i;

	for (i = 0; i < k; i++) {
		s->s_short += timed(1000, 0);
		if (i % 8 == 0)
			s->s_long += timed(20000, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct sums s[2] = { { 0, 0 }, { 0, 0 } };
	pthread_t th[2];
	sigset_t set;
	int sig, i;

	if (argc > 1)
		k = strtoull(argv[1], NULL, 10);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	sigdelset(&set, SIGUSR2);
	sigwait(&set, &sig);
	for (i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, worker, &s[i]);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	printf("{\"short_mean\": %.1f, \"long_mean\": %.1f, \"short_count\": %llu, \"long_count\": %llu}\n",
	       (double)(s[0].s_short + s[1].s_short) / (double)(2 * k),
	       (double)(s[0].s_long + s[1].s_long) / (double)(2 * ((k + 7) / 8)),
	       (unsigned long long)(2 * k), (unsigned long long)(2 * ((k + 7) / 8)));
	fflush(stdout);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	sigwait(&set, &sig);
	return 0;
}
