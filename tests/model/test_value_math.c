/* test_value_math.c - QPROF_VALUE order keys and histogram statistics,
 * against exactly known sequences. */
#include <float.h>
#include <stdlib.h>
#include "testlib.h"
#include "model/model_values.h"

/* A row as the kernel would fill it from VALS (finite ones). */
static void fill(struct qp_value_row *r, const double *vals, size_t n)
{
	size_t i, j;

	memset(r, 0, sizeof(*r));
	r->buckets = calloc(n, sizeof(*r->buckets));
	for (i = 0; i < n; i++) {
		uint64_t k = qp_value_key(vals[i]), b = k >> QPROF_VALUE_BUCKET_SHIFT;

		if (!r->st.count || k < r->st.min_key)
			r->st.min_key = k;
		if (k > r->st.max_key)
			r->st.max_key = k;
		r->st.count++;
		for (j = 0; j < r->nbuckets && r->buckets[j].bucket != b; j++)
			;
		if (j == r->nbuckets)
			r->buckets[r->nbuckets++].bucket = b;
		r->buckets[j].count++;
	}
	/* sorted by bucket, as the daemon reads them */
	for (i = 1; i < r->nbuckets; i++)
		for (j = i; j > 0 && r->buckets[j - 1].bucket > r->buckets[j].bucket; j--) {
			struct qp_value_bucket t = r->buckets[j];

			r->buckets[j] = r->buckets[j - 1];
			r->buckets[j - 1] = t;
		}
}

int main(void)
{
	static const double order[] = { -INFINITY, -DBL_MAX, -1e300, -2.5, -1.0, -DBL_MIN, -0.0,
					0.0, 4.9e-324, DBL_MIN, 1e-9, 1.0, 2.5, 1e300, DBL_MAX, INFINITY };
	static double vals[1000];
	struct qp_value_row r;
	size_t i;

	/* keys order like the doubles and map back exactly */
	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		CHECK(qp_value_from_key(qp_value_key(order[i])) == order[i]);
		if (i)
			CHECK(qp_value_key(order[i - 1]) < qp_value_key(order[i]));
	}
	CHECK(signbit(qp_value_from_key(qp_value_key(-0.0))));

	/* 1..1000: exact min/max; mean and percentiles within 0.013% */
	for (i = 0; i < 1000; i++)
		vals[i] = (double)(i + 1);
	fill(&r, vals, 1000);
	CHECK(qp_value_from_key(r.st.min_key) == 1.0);
	CHECK(qp_value_from_key(r.st.max_key) == 1000.0);
	CHECK_REL(qp_value_mean(&r), 500.5, 0.00013);
	CHECK_REL(qp_value_quantile(&r, 0.5), 500.0, 0.00013);
	CHECK_REL(qp_value_quantile(&r, 0.99), 990.0, 0.00013);
	CHECK_REL(qp_value_quantile(&r, 1.0), 1000.0, 0.00013);
	free(r.buckets);

	/* negatives and positives around zero: -500..499 */
	for (i = 0; i < 1000; i++)
		vals[i] = (double)i - 500.0;
	fill(&r, vals, 1000);
	CHECK(qp_value_from_key(r.st.min_key) == -500.0);
	CHECK(qp_value_from_key(r.st.max_key) == 499.0);
	CHECK(fabs(qp_value_mean(&r) - (-0.5)) < 0.1);
	CHECK_REL(qp_value_quantile(&r, 0.5), -1.0, 0.00013);
	CHECK_REL(qp_value_quantile(&r, 0.99), 489.0, 0.00013);
	free(r.buckets);

	/* the ring collector's rows carry the exact sum: the mean is sum / count,
	 * not the buckets' estimate */
	for (i = 0; i < 1000; i++)
		vals[i] = (double)(i + 1);
	fill(&r, vals, 1000);
	r.has_sum = true;
	r.sum = 500500;
	CHECK(qp_value_mean(&r) == 500.5);
	free(r.buckets);

	/* one value repeated: every statistic is that value exactly */
	for (i = 0; i < 1000; i++)
		vals[i] = 103.1171875 + 0.000123;
	fill(&r, vals, 1000);
	CHECK(qp_value_mean(&r) == vals[0]);
	CHECK(qp_value_quantile(&r, 0.5) == vals[0]);
	CHECK(qp_value_quantile(&r, 0.99) == vals[0]);
	free(r.buckets);

	/* prices: a random walk, percentiles within 0.013% of the exact ones */
	{
		static double sorted[1000];
		uint64_t x = 88172645463325252ULL;
		double p = 100.0, sum = 0;

		for (i = 0; i < 1000; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			p += ((double)(x % 2001) - 1000.0) / 10000.0;
			vals[i] = sorted[i] = p;
			sum += p;
		}
		fill(&r, vals, 1000);
		for (i = 1; i < 1000; i++) /* insertion sort: exact percentiles */
			for (size_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
				double t = sorted[j];

				sorted[j] = sorted[j - 1];
				sorted[j - 1] = t;
			}
		CHECK_REL(qp_value_mean(&r), sum / 1000, 0.00013);
		CHECK_REL(qp_value_quantile(&r, 0.5), sorted[499], 0.00013);
		CHECK_REL(qp_value_quantile(&r, 0.99), sorted[989], 0.00013);
		free(r.buckets);
	}

	/* no finite value */
	memset(&r, 0, sizeof(r));
	CHECK(qp_value_mean(&r) == 0);
	CHECK(qp_value_quantile(&r, 0.5) == 0);
	return test_done("value_math");
}
