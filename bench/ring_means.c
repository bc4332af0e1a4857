/* ring_means.c - (bench/ring_means.py) scopes of a known length on two threads, timed by
 * the program's own clock: each thread runs K scopes of about 1 us and K of
 * about 20 us (a busy wait on CLOCK_MONOTONIC inside the scope); the
 * program's figure of a scope is the time between its first and its last
 * clock read inside it. The workers ask for SCHED_FIFO (best effort, as
 * root): a preemption between a marker's time stamp and the program's first
 * or last clock read would lengthen the ring's figure alone. Each scope is
 * also timed from just before its enter to just after its exit (the
 * "outer" figures): a scope whose outer time exceeds its inner one by more
 * than 2 us was disturbed there (an interrupt, a preemption), and is
 * counted ("disturbed") with what it added ("disturbed_ns"). Prints
 * {"pid": N}, waits for SIGUSR1, works, prints {"short_mean": ns,
 * "long_mean": ns, "short_outer": ns, "long_outer": ns, "short_count",
 * "long_count", "disturbed", "disturbed_ns", "fifo"}, waits for SIGUSR2.
 *   ring_means K */
#include <pthread.h>
#include <sched.h>
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

struct sums {
	uint64_t s_short, s_long, o_short, o_long, disturbed, disturbed_ns;
	int fifo;
};

/* A scope of about NS: its own clock read first and last inside it. */
static void timed(struct sums *s, uint64_t ns, int which)
{
	uint64_t a, b, a0, d;

	a0 = now();

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
	d = now();
	if (which) {
		s->s_long += b - a;
		s->o_long += d - a0;
	} else {
		s->s_short += b - a;
		s->o_short += d - a0;
	}
	if ((d - a0) - (b - a) > 2000) {
		s->disturbed++;
		s->disturbed_ns += (d - a0) - (b - a);
	}
}

static void *worker(void *arg)
{
	struct sums *s = arg;
	struct sched_param sp = { .sched_priority = 10 };
	uint64_t i;

	s->fifo = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
	for (i = 0; i < k; i++) {
		timed(s, 1000, 0);
		if (i % 8 == 0)
			timed(s, 20000, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct sums s[2] = { { 0 }, { 0 } };
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
	printf("{\"short_mean\": %.1f, \"long_mean\": %.1f, \"short_outer\": %.1f, \"long_outer\": %.1f, "
	       "\"short_count\": %llu, \"long_count\": %llu, \"disturbed\": %llu, \"disturbed_ns\": %llu, "
	       "\"fifo\": %d}\n",
	       (double)(s[0].s_short + s[1].s_short) / (double)(2 * k),
	       (double)(s[0].s_long + s[1].s_long) / (double)(2 * ((k + 7) / 8)),
	       (double)(s[0].o_short + s[1].o_short) / (double)(2 * k),
	       (double)(s[0].o_long + s[1].o_long) / (double)(2 * ((k + 7) / 8)),
	       (unsigned long long)(2 * k), (unsigned long long)(2 * ((k + 7) / 8)),
	       (unsigned long long)(s[0].disturbed + s[1].disturbed),
	       (unsigned long long)(s[0].disturbed_ns + s[1].disturbed_ns), s[0].fifo && s[1].fifo);
	fflush(stdout);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	sigwait(&set, &sig);
	return 0;
}
