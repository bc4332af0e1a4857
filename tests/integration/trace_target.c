/* trace_target.c - the program the trace and calibration tests profile. It
 * prints its pid, waits for SIGUSR1 (qprofd attached, the trace begun), runs
 * a fixed workload on two threads named "worker0" and "worker1", prints its
 * own figures as JSON, then waits for SIGUSR2.
 *
 *   --mode trace   per thread N iterations of outer{10 us, inner{5 us}};
 *                  worker0 also, every 10th iteration, a mark "tick", a value
 *                  "level" (the iteration) and a log line "iter %d"
 *   --mode truth   per thread N scopes "s1us" of a 1 us busy wait, then N/10
 *                  scopes "s20us" of 20 us; each timed by the program's own
 *                  clock inside the scope (the figure the collector must match)
 *   --iters N      (default 2000)  --rt: SCHED_FIFO workers (best effort)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <qprof/qprof.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void busy_until(uint64_t end)
{
	while (now_ns() < end)
		;
}

struct worker {
	int idx;
	uint64_t n1, sum1, n20, sum20;	/* truth: counts and own-clock sums */
	uint64_t outer, inner, marks;	/* trace: counts */
};

static int iters = 2000, realtime;
static const char *mode = "trace";

static void trace_work(struct worker *w)
{
	int i;

	for (i = 0; i < iters; i++) {
		{
			QPROF_SCOPE("outer");
			busy_until(now_ns() + 10000);
			{
				QPROF_SCOPE("inner");
				busy_until(now_ns() + 5000);
			}
			w->inner++;
		}
		w->outer++;
		if (w->idx == 0 && i % 10 == 0) {
			QPROF_MARK("tick");
			QPROF_VALUE("level", (double)i);
			QPROF_LOG("iter %d", i);
			w->marks++;
		}
	}
}

/* The scope's own duration as the program sees it: both clock reads inside. */
static __attribute__((noinline)) uint64_t timed_1us(void)
{
	QPROF_SCOPE("s1us");
	uint64_t t0 = now_ns();

	busy_until(t0 + 1000);
	return now_ns() - t0;
}

static __attribute__((noinline)) uint64_t timed_20us(void)
{
	QPROF_SCOPE("s20us");
	uint64_t t0 = now_ns();

	busy_until(t0 + 20000);
	return now_ns() - t0;
}

static void truth_work(struct worker *w)
{
	int i;

	for (i = 0; i < iters; i++) {
		w->sum1 += timed_1us();
		w->n1++;
	}
	for (i = 0; i < iters / 10; i++) {
		w->sum20 += timed_20us();
		w->n20++;
	}
}

static void *run(void *arg)
{
	struct worker *w = arg;
	char name[16];

	snprintf(name, sizeof(name), "worker%d", w->idx);
	pthread_setname_np(pthread_self(), name);
	if (realtime) {
		struct sched_param sp = { .sched_priority = 10 };

		pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	}
	if (!strcmp(mode, "truth"))
		truth_work(w);
	else
		trace_work(w);
	return NULL;
}

static volatile sig_atomic_t go, leave;
static void on_usr1(int s) { go = 1; }
static void on_usr2(int s) { leave = 1; }

int main(int argc, char **argv)
{
	struct worker w[2] = { { .idx = 0 }, { .idx = 1 } };
	pthread_t th[2];
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mode") && i + 1 < argc)
			mode = argv[++i];
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--rt"))
			realtime = 1;
		else {
			fprintf(stderr, "usage: %s [--mode trace|truth] [--iters N] [--rt]\n", argv[0]);
			return 2;
		}
	}
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	while (!go)
		usleep(1000);
	for (i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, run, &w[i]);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	printf("{\"outer\": %llu, \"inner\": %llu, \"marks\": %llu, "
	       "\"n1\": %llu, \"mean1\": %.2f, \"n20\": %llu, \"mean20\": %.2f}\n",
	       (unsigned long long)(w[0].outer + w[1].outer), (unsigned long long)(w[0].inner + w[1].inner),
	       (unsigned long long)(w[0].marks + w[1].marks), (unsigned long long)(w[0].n1 + w[1].n1),
	       w[0].n1 + w[1].n1 ? (double)(w[0].sum1 + w[1].sum1) / (double)(w[0].n1 + w[1].n1) : 0.0,
	       (unsigned long long)(w[0].n20 + w[1].n20),
	       w[0].n20 + w[1].n20 ? (double)(w[0].sum20 + w[1].sum20) / (double)(w[0].n20 + w[1].n20) : 0.0);
	fflush(stdout);
	while (!leave)
		usleep(1000);
	return 0;
}
