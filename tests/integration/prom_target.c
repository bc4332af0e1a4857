/* prom_target.c - the workload of the Prometheus test (test_prometheus.py).
 * It prints its pid and waits for SIGUSR1; then it runs the scope "work"
 * once and a scope of an odd name (quotes, backslash, newline, UTF-8 and a
 * byte that is not UTF-8) once, so that their series exist before the bulk
 * of the work, and prints {"phase": 1}. At the next SIGUSR1 it runs "work"
 * once per duration of its list (microseconds, busy-waited), the list
 * ROUNDS times over, prints {"done": N} and waits for SIGUSR2. With --rt it
 * runs under SCHED_FIFO (best effort), so that other tasks do not preempt
 * its busy waits: a preemption of milliseconds is a duration far above the
 * others, and a few of them move a p99.
 *
 *   prom_target US[,US...] ROUNDS [--rt] */
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <qprof/qprof.h>

static volatile sig_atomic_t go, leave;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

static void on_usr2(int sig)
{
	(void)sig;
	leave = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void busy(uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (now_ns() < end)
		;
}

static __attribute__((noinline)) void work(uint64_t ns)
{
	QPROF_SCOPE("work");
	busy(ns);
}

static __attribute__((noinline)) void odd(void)
{
	QPROF_SCOPE("odd \"q\" back\\slash\nline \xc3\xbc \xff");
	busy(1000);
}

static void wait_go(void)
{
	while (!go)
		usleep(1000);
	go = 0;
}

int main(int argc, char **argv)
{
	uint64_t us[256];
	size_t n = 0, i;
	long rounds, r, done = 0;
	char *p, *end;

	if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "--rt"))) {
		fprintf(stderr, "usage: %s US[,US...] ROUNDS [--rt]\n", argv[0]);
		return 2;
	}
	if (argc == 4) {
		struct sched_param sp = { .sched_priority = 10 };

		sched_setscheduler(0, SCHED_FIFO, &sp);	/* best effort */
	}
	for (p = argv[1]; *p && n < 256; p = *end ? end + 1 : end) {
		us[n] = strtoull(p, &end, 10);
		if (end == p || (*end && *end != ',') || us[n] > 1000000) {
			fprintf(stderr, "bad duration list '%s'\n", argv[1]);
			return 2;
		}
		n++;
	}
	rounds = strtol(argv[2], &end, 10);
	if (!n || *end || rounds < 1 || rounds > 100000) {
		fprintf(stderr, "bad rounds '%s'\n", argv[2]);
		return 2;
	}
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	printf("{\"pid\": %d}\n", (int)getpid());
	fflush(stdout);
	wait_go();
	work(us[0] * 1000);
	odd();
	printf("{\"phase\": 1}\n");
	fflush(stdout);
	wait_go();
	for (r = 0; r < rounds; r++)
		for (i = 0; i < n; i++, done++)
			work(us[i] * 1000);
	printf("{\"done\": %ld}\n", done);
	fflush(stdout);
	while (!leave)
		usleep(1000);
	return 0;
}
