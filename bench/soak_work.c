/* soak_work.c - the workload of bench/soak.sh: THREADS threads that run
 * nested qprof scopes flat out (per loop: one "soak_outer" around four
 * "soak_inner", so five scope events), with a QPROF_VALUE and a QPROF_MARK
 * every 1024 loops and a QPROF_LOG every 16384, and count what they did, so
 * that every event qprofd did not measure can be matched with a counter.
 *
 *   soak_work THREADS --start-file PATH --stop-file PATH [--rate R]
 *
 * --rate R paces each thread at about R scopes/s (its loops in 1 ms steps,
 * on an absolute clock, so that a late step is caught up); without it the
 * threads run flat out.
 *
 * Prints "ready PID", waits for the start file (the tracer attaches
 * meanwhile), runs until the stop file exists, prints
 * "soak_work scopes S values V marks M logs L" and then waits for a signal,
 * so that qprofd is read while the process still lives. */
#define _GNU_SOURCE
#include <qprof/qprof.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include "bench_common.h"

#define MAX_THREADS 64

struct worker {
	pthread_t th;
	uint64_t scopes, values, marks, logs, result;
};

static atomic_int stop;
static uint64_t rate; /* scopes/s a thread, 0: flat out */

static __attribute__((noinline)) void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t x = 1, i, step = 0, t0 = bench_now_ns();
	/* loops (5 scopes each) a 1 ms step, when paced */
	uint64_t per_ms = rate ? (rate + 4999) / 5000 : 0;

	for (i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++) {
		if (per_ms && i % per_ms == 0) {
			uint64_t at = t0 + step++ * 1000000ull;
			struct timespec ts = { (time_t)(at / 1000000000ull), (long)(at % 1000000000ull) };

			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		}
		{
			QPROF_SCOPE("soak_outer");
			for (uint64_t j = 0; j < 4; j++) {
				QPROF_SCOPE("soak_inner");
				x = bench_work(x, j);
			}
		}
		w->scopes += 5;
		if ((i & 1023) == 0) {
			QPROF_VALUE("soak_value", (double)(i & 0xffff));
			QPROF_MARK("soak_mark");
			w->values++;
			w->marks++;
		}
		if ((i & 16383) == 0) {
			QPROF_LOG("soak loop %llu", (unsigned long long)i);
			w->logs++;
		}
	}
	w->result = x;
	return NULL;
}

int main(int argc, char **argv)
{
	static struct worker w[MAX_THREADS];
	const struct timespec tick = { 0, 10000000 };
	uint64_t s = 0, v = 0, m = 0, l = 0;
	sigset_t set;
	int n, i, sig;

	if ((argc != 6 && argc != 8) || strcmp(argv[2], "--start-file") || strcmp(argv[4], "--stop-file") ||
	    (argc == 8 && strcmp(argv[6], "--rate"))) {
		fprintf(stderr, "usage: %s THREADS --start-file PATH --stop-file PATH [--rate SCOPES_PER_S]\n",
			argv[0]);
		return 2;
	}
	if (argc == 8)
		rate = bench_parse_count(argv[7]);
	n = atoi(argv[1]);
	if (n < 1 || n > MAX_THREADS) {
		fprintf(stderr, "THREADS must be 1..%d\n", MAX_THREADS);
		return 2;
	}
	/* the signals that end the hold, blocked in every thread */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	bench_ready(argv[3]); /* a signal while it waits ends it at once */
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (i = 0; i < n; i++) {
		if (pthread_create(&w[i].th, NULL, work, &w[i])) {
			fprintf(stderr, "cannot start thread %d\n", i);
			return 1;
		}
	}
	while (access(argv[5], F_OK) != 0)
		if (sigtimedwait(&set, NULL, &tick) > 0)
			return 130; /* the run was stopped (its script interrupted): no figures */
	atomic_store(&stop, 1);
	for (i = 0; i < n; i++) {
		pthread_join(w[i].th, NULL);
		s += w[i].scopes;
		v += w[i].values;
		m += w[i].marks;
		l += w[i].logs;
	}
	printf("soak_work scopes %llu values %llu marks %llu logs %llu\n", (unsigned long long)s,
	       (unsigned long long)v, (unsigned long long)m, (unsigned long long)l);
	fflush(stdout);
	sigwait(&set, &sig);
	return 0;
}
