/* sdt_loop.c - the baseline: N x { DTRACE_PROBE1(bench, enter), work,
 * DTRACE_PROBE1(bench, exit) } with plain <sys/sdt.h> probes (1-byte nop
 * sites), timed. bench/run.sh measures it detached and under bpftrace.
 *   sdt_loop N [--start-file PATH] */
#include <sys/sdt.h>

#include "bench_common.h"

static __attribute__((noinline)) uint64_t loop(uint64_t n)
{
	uint64_t x = 1;
	for (uint64_t i = 0; i < n; i++) {
		DTRACE_PROBE1(bench, enter, i);
		x = bench_work(x, i);
		DTRACE_PROBE1(bench, exit, i);
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
	bench_report("sdt_loop", n, bench_now_ns() - t0, x);
	return 0;
}
