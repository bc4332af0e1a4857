/* keys_target.c - makes many distinct scope aggregates at once, on every
 * CPU: T threads (SCHED_FIFO, pinned round-robin to the CPUs) each run R
 * rounds of 16 scopes, each holding all 16 scopes nested inside it, so that
 * 16 + 16 * 16 (site, parent) keys are made within a few milliseconds while
 * every CPU spins. Protocol of scope_target.c: prints {"pid": N}, waits for
 * SIGUSR1, works, prints {"threads", "reps", "keys", "per_key"}, waits for
 * SIGUSR2.
 *
 * usage: keys_target [--threads T] [--reps R] */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <qprof/qprof.h>

#define NSITES 16

static int reps = 20;
static int ncpus = 1;

static void spin_1us(void)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 1000);
}

static void inner_all(void);

/* Scope site N (0..15) around inner_all() when OUTER, around a 1 us spin otherwise. */
#define CASE(n)                                         \
	case n: {                                       \
		QPROF_SCOPE("k" #n);                    \
		if (outer)                              \
			inner_all();                    \
		else                                    \
			spin_1us();                     \
		break;                                  \
	}

static __attribute__((noinline)) void scope_n(int n, int outer)
{
	switch (n) {
	CASE(0) CASE(1) CASE(2) CASE(3) CASE(4) CASE(5) CASE(6) CASE(7)
	CASE(8) CASE(9) CASE(10) CASE(11) CASE(12) CASE(13) CASE(14) CASE(15)
	}
}

static void inner_all(void)
{
	int i;

	for (i = 0; i < NSITES; i++)
		scope_n(i, 0);
}

static void *worker(void *arg)
{
	long k = (long)arg;
	struct sched_param sp = { .sched_priority = 10 };
	cpu_set_t set;
	int r, j;

	CPU_ZERO(&set);
	CPU_SET((int)(k % ncpus), &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);	/* best effort */
	pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);		/* best effort */
	for (r = 0; r < reps; r++)
		for (j = 0; j < NSITES; j++)
			scope_n(j, 1);
	return NULL;
}

static volatile sig_atomic_t go, leave;
static void on_usr1(int s) { go = 1; }
static void on_usr2(int s) { leave = 1; }

int main(int argc, char **argv)
{
	int threads = 4, i;
	pthread_t th[64];

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--threads T] [--reps R]\n", argv[0]);
			return 2;
		}
	}
	if (threads < 1 || threads > 64 || reps < 1) {
		fprintf(stderr, "keys_target: --threads 1..64, --reps >= 1\n");
		return 2;
	}
	ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpus < 1)
		ncpus = 1;
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	while (!go)
		usleep(1000);
	for (i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, worker, (void *)(long)i);
	for (i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	printf("{\"threads\": %d, \"reps\": %d, \"keys\": %d, \"per_key\": %d}\n", threads, reps,
	       NSITES + NSITES * NSITES, threads * reps);
	fflush(stdout);
	while (!leave)
		usleep(1000);
	return 0;
}
