/* scope_loop.c - N x { QPROF_SCOPE enter, work, exit }, timed. Run detached
 * and under qprofd (bench/run.sh): the difference is the attached cost of a
 * qprof scope.   scope_loop N [--start-file PATH] */
#include <qprof/qprof.h>

#include "bench_common.h"

static __attribute__((noinline)) uint64_t loop(uint64_t n)
{
	uint64_t x = 1;
	for (uint64_t i = 0; i < n; i++) {
		QPROF_SCOPE("bench_scope");
		x = bench_work(x, i);
	}
	return x;
}

int main(int argc, char **argv)
{
	const char *start_file;
	uint64_t n = bench_timed_args(argc, argv, &start_file);

	bench_ready(start_file);
	uint64_t t0 = bench_now_ns();
	uint64_t x = loop(n);
	bench_report("scope_loop", n, bench_now_ns() - t0, x);
	return 0;
}
