/* timer_loop.c - the seed tutorial's in-process timer, the baseline of the
 * ring collector's cost (bench/ring.sh): N x { clock_gettime, work,
 * clock_gettime, store the duration into a buffer }, timed.
 *   timer_loop N */
#include "bench_common.h"

static uint64_t durations[4096];

static __attribute__((noinline)) uint64_t loop(uint64_t n)
{
	uint64_t x = 1;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t t0 = bench_now_ns();
		x = bench_work(x, i);
		durations[i & 4095] = bench_now_ns() - t0;
	}
	return x + durations[n & 4095];
}

int main(int argc, char **argv)
{
	const char *start_file;
	uint64_t n = bench_timed_args(argc, argv, &start_file);

	bench_ready(start_file);
	uint64_t t0 = bench_now_ns();
	uint64_t x = loop(n);
	bench_report("timer_loop", n, bench_now_ns() - t0, x);
	return 0;
}
