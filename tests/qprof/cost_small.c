/* cost_small.c - the detached cost of a marker in a small function that is
 * not inlined, counted by tests/qprof/test_marker_cost.sh under callgrind
 * (instructions of the small_* functions, built with and without
 * -DQPROF_DISABLE; whatever frame a marker makes the compiler add counts).
 *   cost_small MODE N     MODE: scope func mark value span log (C or C++)
 */
#include <stdlib.h>
#include <string.h>

#include <qprof/qprof.h>

#ifdef __cplusplus
#define SMALL extern "C" __attribute__((noinline))
#else
#define SMALL __attribute__((noinline))
#endif

volatile uint64_t small_global;
static const char small_span_name[] = "small_span";

SMALL void small_scope(void)
{
	QPROF_SCOPE("small_scope");
	small_global += 1;
}

SMALL void small_func(void)
{
	QPROF_FUNC();
	small_global += 1;
}

SMALL void small_mark(void)
{
	small_global += 1;
	QPROF_MARK("small_mark");
}

SMALL void small_value(uint64_t x)
{
	small_global += x;
	QPROF_VALUE("small_value", (double)x);
}

SMALL void small_span(uint64_t id)
{
	small_global += 1;
	QPROF_SPAN_BEGIN(small_span_name, id);
}

SMALL void small_log(uint64_t x)
{
	small_global += x;
	QPROF_LOG("x=%llu", (unsigned long long)x);
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 0;
	const char *m = argc > 1 ? argv[1] : "";

	for (long i = 0; i < n; i++) {
		if (!strcmp(m, "scope"))
			small_scope();
		else if (!strcmp(m, "func"))
			small_func();
		else if (!strcmp(m, "mark"))
			small_mark();
		else if (!strcmp(m, "value"))
			small_value((uint64_t)i);
		else if (!strcmp(m, "span"))
			small_span((uint64_t)i);
		else if (!strcmp(m, "log"))
			small_log((uint64_t)i);
		else
			return 2;
	}
	return 0;
}
