/* tsc_loop.c - the floor of any collector that stamps a scope in the
 * thread itself (bench/ring.sh): N x { read the time stamp counter, work,
 * read it again, store the difference into a buffer }, timed. The ring's
 * markers read the counter once per record, twice a scope, so their
 * attached cost cannot fall below this loop's less the detached loop's.
 *   tsc_loop N */
#include "bench_common.h"
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define TSC_NOW() __rdtsc()
#else
#define TSC_NOW() bench_now_ns()
#endif

static uint64_t durations[4096];

static __attribute__((noinline)) uint64_t loop(uint64_t n)
{
	uint64_t x = 1;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t t0 = TSC_NOW();
		x = bench_work(x, i);
		durations[i & 4095] = TSC_NOW() - t0;
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
	bench_report("tsc_loop", n, bench_now_ns() - t0, x);
	return 0;
}
