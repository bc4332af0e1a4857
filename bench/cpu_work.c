/* cpu_work.c - a CPU-bound workload with known self-time proportions, for
 * bench/cpu.sh (sampling overhead, accuracy against perf, export cost).
 *
 *   cpu_work ROUNDS [--threads T] [--start-file PATH] [--hold]
 *
 * Each of T threads runs ROUNDS rounds; a round calls three leaf functions
 * with 5000, 3000 and 2000 iterations of the same loop body, so their self
 * time is 50%, 30% and 20% of the work:
 *
 *   main -> worker -> run_round -> work_a (50%) | work_b (30%) | work_c (20%)
 *
 * The threads are created before the start, so that a profiler attached
 * during the wait sees all of them. With --start-file the program prints
 * "ready PID" and waits until PATH exists. At the end it prints
 * "elapsed_ns N" (wall time from the start to the last thread's end) and,
 * with --hold, "done" and then waits for a signal, so that a profiler can
 * read the finished profile of a live process.
 *
 * The only qprof marker is one scope around each thread's whole run (2 probe
 * hits per thread): qprofd only attaches to processes with qprof notes, and
 * nothing should fire inside the timed loop. */
#include <qprof/qprof.h>

#include <pthread.h>
#include <signal.h>

#include "bench_common.h"

#define ITERS_A 5000u
#define ITERS_B 3000u
#define ITERS_C 2000u

/* Same loop body, different constants: noipa keeps GCC from merging them
 * (-fipa-icf) or inlining them into the caller. */
#define WORK_FN(name, mul)                                                   \
	static __attribute__((noinline, noipa)) uint64_t name(uint64_t x, uint32_t n) \
	{                                                                    \
		for (uint32_t i = 0; i < n; i++) {                           \
			x = x * (mul) + i;                                   \
			x ^= x >> 29;                                        \
		}                                                            \
		return x;                                                    \
	}
WORK_FN(work_a, 6364136223846793005ull)
WORK_FN(work_b, 2862933555777941757ull)
WORK_FN(work_c, 3935559000370003845ull)

static __attribute__((noinline, noipa)) uint64_t run_round(uint64_t x)
{
	x = work_a(x, ITERS_A);
	x = work_b(x, ITERS_B);
	x = work_c(x, ITERS_C);
	return x;
}

struct worker_arg {
	pthread_barrier_t *start;
	uint64_t rounds, result, end_ns;
	unsigned seed;
};

static __attribute__((noinline)) void *worker(void *p)
{
	struct worker_arg *a = p;
	uint64_t x = a->seed;

	pthread_barrier_wait(a->start);
	{
		QPROF_SCOPE("cpu_work_run");
		for (uint64_t r = 0; r < a->rounds; r++)
			x = run_round(x);
	}
	a->result = x;
	a->end_ns = bench_now_ns();
	return NULL;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s ROUNDS [--threads T] [--start-file PATH] [--hold]\n"
		"  T threads x ROUNDS rounds of work_a/work_b/work_c (50/30/20%% of the work);\n"
		"  prints elapsed_ns; --start-file: print 'ready PID', wait for PATH;\n"
		"  --hold: print 'done' at the end and wait for a signal\n",
		argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *start_file = NULL;
	unsigned threads = 1;
	int hold = 0;

	if (argc < 2)
		usage(argv[0]);
	uint64_t rounds = bench_parse_count(argv[1]);
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			uint64_t t = bench_parse_count(argv[++i]);
			if (t > 256)
				usage(argv[0]);
			threads = (unsigned)t;
		} else if (!strcmp(argv[i], "--start-file") && i + 1 < argc) {
			start_file = argv[++i];
		} else if (!strcmp(argv[i], "--hold")) {
			hold = 1;
		} else {
			usage(argv[0]);
		}
	}

	pthread_barrier_t start;
	pthread_t tid[256];
	struct worker_arg args[256];

	pthread_barrier_init(&start, NULL, threads + 1);
	for (unsigned i = 0; i < threads; i++) {
		args[i] = (struct worker_arg){ .start = &start, .rounds = rounds, .seed = i + 1 };
		if (pthread_create(&tid[i], NULL, worker, &args[i])) {
			perror("pthread_create");
			return 1;
		}
	}
	bench_ready(start_file);
	uint64_t t0 = bench_now_ns(), end = t0, result = 0;
	pthread_barrier_wait(&start);
	for (unsigned i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		if (args[i].end_ns > end)
			end = args[i].end_ns;
		result ^= args[i].result;
	}
	printf("cpu_work threads %u rounds %llu elapsed_ns %llu result %llx\n", threads,
	       (unsigned long long)rounds, (unsigned long long)(end - t0),
	       (unsigned long long)result);
	fflush(stdout);
	if (hold) {
		sigset_t none;

		printf("done\n");
		fflush(stdout);
		sigemptyset(&none);
		for (;;)
			sigsuspend(&none);	/* SIGTERM/SIGINT end it (default action) */
	}
	return 0;
}
