/* span_loop.c - N x { QPROF_SPAN_BEGIN(i), work, QPROF_SPAN_END(i) }, timed.
 * Run detached and under qprofd beside scope_loop: the difference is the
 * attached cost of a span across threads against a block scope's (here
 * both ends on one thread: the probe cost, not the hand-over).
 *   span_loop N [--start-file PATH] */
#include <qprof/qprof.h>

#include "bench_common.h"

static const char SPAN[] = "bench_span";

static __attribute__((noinline)) uint64_t loop(uint64_t n)
{
	uint64_t x = 1;
	for (uint64_t i = 0; i < n; i++) {
		QPROF_SPAN_BEGIN(SPAN, i);
		x = bench_work(x, i);
		QPROF_SPAN_END(SPAN, i);
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
	bench_report("span_loop", n, bench_now_ns() - t0, x);
	return 0;
}
