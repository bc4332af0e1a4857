/* scope_threads.c - T threads, pinned one to a CPU, each running N x
 * { QPROF_SCOPE("bench_scope"), work } on the same scope site at once: with
 * T = 2 two CPUs hit the same (process, scope, parent) aggregate, the case
 * where shared aggregates contend. Prints the mean ns of thread CPU time
 * per iteration (the probes' BPF runs in the thread's time; CPU time, not
 * wall-clock, so that other load on the machine does not count) and the
 * mean wall-clock ns (bench/scope_ab.sh).
 *   scope_threads T N [--start-file PATH] [--end-file PATH]
 * --end-file: after the report, wait for PATH before exiting (a tracer
 * that ends with the process can still be read). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <qprof/qprof.h>

#include "bench_common.h"

static uint64_t iters;
static pthread_barrier_t barrier;

static __attribute__((noinline)) uint64_t loop(uint64_t n)
{
	uint64_t x = 1;
	for (uint64_t i = 0; i < n; i++) {
		QPROF_SCOPE("bench_scope");
		x = bench_work(x, i);
	}
	return x;
}

struct th {
	pthread_t t;
	int cpu;
	uint64_t ns, wall, x;
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *run(void *arg)
{
	struct th *th = arg;
	cpu_set_t set;
	uint64_t t0, w0;

	CPU_ZERO(&set);
	CPU_SET(th->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);	/* best effort */
	pthread_barrier_wait(&barrier);
	w0 = bench_now_ns();
	t0 = thread_cpu_ns();
	th->x = loop(iters);
	th->ns = thread_cpu_ns() - t0;
	th->wall = bench_now_ns() - w0;
	return NULL;
}

int main(int argc, char **argv)
{
	const char *start_file = NULL, *end_file = NULL;
	struct th th[64];
	uint64_t ns = 0, wall = 0, x = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int t, nt;

	for (t = 3; t + 1 < argc; t += 2) {
		if (!strcmp(argv[t], "--start-file"))
			start_file = argv[t + 1];
		else if (!strcmp(argv[t], "--end-file"))
			end_file = argv[t + 1];
		else
			break;
	}
	if (argc < 3 || t != argc) {
		fprintf(stderr, "usage: %s T N [--start-file PATH] [--end-file PATH]\n", argv[0]);
		return 2;
	}
	nt = (int)bench_parse_count(argv[1]);
	if (nt > 64) {
		fprintf(stderr, "at most 64 threads\n");
		return 2;
	}
	iters = bench_parse_count(argv[2]);
	if (ncpu < 1)
		ncpu = 1;
	pthread_barrier_init(&barrier, NULL, (unsigned int)nt);
	bench_ready(start_file);
	for (t = 0; t < nt; t++) {
		th[t].cpu = (int)(t % ncpu);
		pthread_create(&th[t].t, NULL, run, &th[t]);
	}
	for (t = 0; t < nt; t++) {
		pthread_join(th[t].t, NULL);
		ns += th[t].ns;
		wall += th[t].wall;
		x ^= th[t].x;
	}
	bench_report("scope_threads", iters, ns / (uint64_t)nt, x);
	printf("wall_ns_per_iter %.3f\n", (double)(wall / (uint64_t)nt) / (double)iters);
	if (end_file) {
		printf("done\n");
		fflush(stdout);
		bench_wait_for_file(end_file);
	}
	return 0;
}
