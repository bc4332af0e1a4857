/* test_hist.c - the histogram layout (bpf/hist.h) and percentile estimates
 * (daemon/hist.c) against exact percentiles of known distributions. */
#include <stdlib.h>
#include "testlib.h"
#include "bpf/hist.h"
#include "model/percentile.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t rng = 88172645463325252ULL;
static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}
static double uniform(void) { return (double)(xorshift() >> 11) / 9007199254740992.0; }

/* Fill a histogram from VALS and compare p50/p90/p99/p99.9 with the exact
 * nearest-rank percentiles: within TOL relative. */
static void check_distribution(const char *name, uint64_t *vals, size_t n, double tol)
{
	static uint64_t hist[QPROF_HIST_BUCKETS];
	static const double qs[] = { 0.5, 0.9, 0.99, 0.999 };
	uint64_t min = UINT64_MAX, max = 0;
	size_t i;

	for (i = 0; i < QPROF_HIST_BUCKETS; i++)
		hist[i] = 0;
	for (i = 0; i < n; i++) {
		hist[qprof_hist_index(vals[i])]++;
		if (vals[i] < min)
			min = vals[i];
		if (vals[i] > max)
			max = vals[i];
	}
	qsort(vals, n, sizeof(*vals), cmp_u64);
	for (i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		size_t rank = (size_t)ceil(qs[i] * (double)n - 1e-9);
		double exact = (double)vals[rank - 1];
		double est = qp_hist_quantile(hist, n, qs[i], min, max);

		if (fabs(est - exact) > tol * exact)
			fprintf(stderr, "%s q=%g exact=%g est=%g\n", name, qs[i], exact, est);
		CHECK_REL(est, exact, tol);
	}
}

int main(void)
{
	static uint64_t vals[200000];
	size_t n = sizeof(vals) / sizeof(vals[0]), i;
	uint64_t v;
	unsigned int idx, prev;

	/* layout: every value falls inside its bucket; buckets are contiguous */
	CHECK_INT(QPROF_HIST_BUCKETS, 1056);
	CHECK_INT(qprof_hist_index(0), 0);
	CHECK_INT(qprof_hist_index(31), 31);
	CHECK_INT(qprof_hist_index(32), 32);
	CHECK_INT(qprof_hist_index(63), 63);
	CHECK_INT(qprof_hist_index(64), 64);
	CHECK_INT(qprof_hist_index(65), 64);
	CHECK_INT(qprof_hist_index(66), 65);
	CHECK_INT(qprof_hist_index(1ULL << 36), 1024);
	CHECK_INT(qprof_hist_index((1ULL << 37) - 1), 1055);
	CHECK_INT(qprof_hist_index(1ULL << 40), 1055);
	CHECK_INT(qprof_hist_index(UINT64_MAX), 1055);
	for (i = 0; i < 64; i++)
		CHECK_INT(qprof_log2_u64(1ULL << i), i);
	prev = 0;
	for (v = 1; v < (1ULL << 37); v += 1 + v / 1000) {
		idx = qprof_hist_index(v);
		if (idx < prev || v < qprof_hist_lower(idx) ||
		    v >= qprof_hist_lower(idx) + qprof_hist_width(idx)) {
			CHECK(!"value outside its bucket");
			fprintf(stderr, "v=%llu idx=%u\n", (unsigned long long)v, idx);
			break;
		}
		prev = idx;
	}
	for (idx = 1; idx < QPROF_HIST_BUCKETS; idx++)
		if (qprof_hist_lower(idx) != qprof_hist_lower(idx - 1) + qprof_hist_width(idx - 1))
			break;
	CHECK_INT(idx, QPROF_HIST_BUCKETS);
	/* relative width never above 1/32 past the exact region */
	for (idx = 64; idx < QPROF_HIST_BUCKETS; idx++)
		if ((double)qprof_hist_width(idx) / (double)qprof_hist_lower(idx) > 1.0 / 32 + 1e-12)
			break;
	CHECK_INT(idx, QPROF_HIST_BUCKETS);

	/* percentiles within 3% of the exact ones */
	for (i = 0; i < n; i++) /* uniform 10 us .. 1 ms */
		vals[i] = 10000 + (uint64_t)(uniform() * 990000);
	check_distribution("uniform", vals, n, 0.03);
	for (i = 0; i < n; i++) /* exponential, mean 50 us */
		vals[i] = 1 + (uint64_t)(-50000.0 * log(1.0 - uniform()));
	check_distribution("exponential", vals, n, 0.03);
	for (i = 0; i < n; i++) /* log-normal around 20 us, heavy tail */
		vals[i] = 100 + (uint64_t)(20000.0 * exp(1.5 * (uniform() + uniform() + uniform() - 1.5)));
	check_distribution("lognormal", vals, n, 0.03);
	for (i = 0; i < n; i++) /* bimodal: 95% at ~2 us, 5% at ~5 ms */
		vals[i] = (xorshift() % 100 < 95) ? 1800 + xorshift() % 400 : 4900000 + xorshift() % 200000;
	check_distribution("bimodal", vals, n, 0.03);
	for (i = 0; i < 1000; i++) /* small exact values */
		vals[i] = 3 + i % 40;
	check_distribution("small", vals, 1000, 0.0);
	for (i = 0; i < 1000; i++) /* one value repeated: clamped to min==max */
		vals[i] = 123457;
	check_distribution("constant", vals, 1000, 0.0);

	/* empty and single */
	{
		static uint64_t h[QPROF_HIST_BUCKETS];
		uint64_t lo, hi;

		CHECK(qp_hist_quantile(h, 0, 0.5, 0, 0) == 0);
		h[qprof_hist_index(5000)] = 1;
		CHECK_REL(qp_hist_quantile(h, 1, 0.99, 5000, 5000), 5000, 0);
		qp_hist_bounds(h, &lo, &hi);
		CHECK(lo <= 5000 && hi >= 5000 && hi - lo < 5000 / 32 + 1);
	}
	return test_done("hist");
}
