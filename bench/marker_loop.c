/* marker_loop.c - instructions executed by the qprof markers when no tracer is
 * attached. Built twice (marker_loop, marker_loop_disabled = -DQPROF_DISABLE)
 * and run under callgrind; the difference of instructions in the loop_*
 * functions, divided by the markers executed, is the detached cost per marker.
 *
 *   marker_loop MODE N
 *     scope  N x { QPROF_SCOPE (enter + exit) around the work; QPROF_MARK }  3 markers
 *     value  N x { work; QPROF_VALUE }     1 marker (semaphore check only)
 *     span   N x { QPROF_SPAN_BEGIN; work; QPROF_SPAN_STEP; work; QPROF_SPAN_END }  3 markers
 *     log    N x { work; QPROF_LOG }       1 marker (semaphore check only)
 */
#include <qprof/qprof.h>

#include "bench_common.h"

static __attribute__((noinline)) uint64_t loop_scope(uint64_t n)
{
	uint64_t x = 1;
	for (uint64_t i = 0; i < n; i++) {
		{
			QPROF_SCOPE("bench_scope");
			x = bench_work(x, i);
		}
		QPROF_MARK("bench_mark");
	}
	return x;
}

static __attribute__((noinline)) uint64_t loop_value(uint64_t n)
{
	uint64_t x = 1;
	for (uint64_t i = 0; i < n; i++) {
		x = bench_work(x, i);
		QPROF_VALUE("bench_value", (double)x);
	}
	return x;
}

static const char bench_span[] = "bench_span";

static __attribute__((noinline)) uint64_t loop_span(uint64_t n)
{
	uint64_t x = 1;
	for (uint64_t i = 0; i < n; i++) {
		QPROF_SPAN_BEGIN(bench_span, i);
		x = bench_work(x, i);
		QPROF_SPAN_STEP(bench_span, i, "step");
		x = bench_work(x, i);
		QPROF_SPAN_END(bench_span, i);
	}
	return x;
}

static __attribute__((noinline)) uint64_t loop_log(uint64_t n)
{
	uint64_t x = 1;
	for (uint64_t i = 0; i < n; i++) {
		x = bench_work(x, i);
		QPROF_LOG("x=%llu", (unsigned long long)x);
	}
	return x;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s scope|value|span|log N\n", argv[0]);
		return 2;
	}
	uint64_t n = bench_parse_count(argv[2]), x;
	int markers;
	if (strcmp(argv[1], "scope") == 0) {
		x = loop_scope(n);
		markers = 3;
	} else if (strcmp(argv[1], "value") == 0) {
		x = loop_value(n);
		markers = 1;
	} else if (strcmp(argv[1], "span") == 0) {
		x = loop_span(n);
		markers = 3;
	} else if (strcmp(argv[1], "log") == 0) {
		x = loop_log(n);
		markers = 1;
	} else {
		fprintf(stderr, "unknown mode '%s'\n", argv[1]);
		return 2;
	}
	printf("mode %s iterations %llu markers_per_iteration %d result %llx\n", argv[1],
	       (unsigned long long)n, markers, (unsigned long long)x);
	return 0;
}
