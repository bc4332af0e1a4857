/* testlib.h - the smallest test harness that does the job: CHECK* macros count
 * failures and print file:line with the values; test_done() prints the
 * closing "N passed, N failed" line and returns the exit code. */
#ifndef QPROF_TESTLIB_H
#define QPROF_TESTLIB_H
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static int tl_pass, tl_fail;

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (cond) {                                                      \
			tl_pass++;                                               \
		} else {                                                         \
			tl_fail++;                                               \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__,  \
				__LINE__, #cond);                                \
		}                                                                \
	} while (0)
#define CHECK_INT(a, b)                                                          \
	do {                                                                     \
		long long tl_a = (long long)(a), tl_b = (long long)(b);          \
		if (tl_a == tl_b) {                                              \
			tl_pass++;                                               \
		} else {                                                         \
			tl_fail++;                                               \
			fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", \
				__FILE__, __LINE__, #a, #b, tl_a, tl_b);         \
		}                                                                \
	} while (0)
#define CHECK_STR(a, b)                                                          \
	do {                                                                     \
		const char *tl_a = (a), *tl_b = (b);                             \
		if (tl_a && tl_b && strcmp(tl_a, tl_b) == 0) {                   \
			tl_pass++;                                               \
		} else {                                                         \
			tl_fail++;                                               \
			fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", \
				__FILE__, __LINE__, #a, #b, tl_a ? tl_a : "(null)", \
				tl_b ? tl_b : "(null)");                         \
		}                                                                \
	} while (0)
/* |a - b| <= tol * |b| */
#define CHECK_REL(a, b, tol)                                                     \
	do {                                                                     \
		double tl_a = (double)(a), tl_b = (double)(b);                   \
		if (fabs(tl_a - tl_b) <= (tol) * fabs(tl_b)) {                   \
			tl_pass++;                                               \
		} else {                                                         \
			tl_fail++;                                               \
			fprintf(stderr, "%s:%d: %s ~ %s (tol %g) failed: %g vs %g\n", \
				__FILE__, __LINE__, #a, #b, (double)(tol), tl_a, tl_b); \
		}                                                                \
	} while (0)

static inline int test_done(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, tl_pass, tl_fail);
	return tl_fail ? 1 : 0;
}
#endif
