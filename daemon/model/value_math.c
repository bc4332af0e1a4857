/* value_math.c - QPROF_VALUE arithmetic on the kernel's order keys (see
 * bpf/scopes.h): keys back to doubles, and the mean and percentiles read from
 * the sparse histogram. A bucket holds the doubles whose order keys share
 * their top 24 bits: 1/4096 of the value wide, so the mean and percentiles
 * read from bucket midpoints are within 0.013% of the exact ones; min, max,
 * last and the counts are exact. */
#include <math.h>
#include <string.h>
#include "model_values.h"

uint64_t qp_value_key(double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	return (bits >> 63) ? ~bits : bits | (1ULL << 63);
}

double qp_value_from_key(uint64_t key)
{
	uint64_t bits = (key >> 63) ? key & ~(1ULL << 63) : ~key;
	double v;

	memcpy(&v, &bits, sizeof(v));
	return v;
}

static double bucket_mid(uint64_t b)
{
	uint64_t lo = b << QPROF_VALUE_BUCKET_SHIFT;
	uint64_t hi = lo | ((1ULL << QPROF_VALUE_BUCKET_SHIFT) - 1);
	double a = qp_value_from_key(lo), z = qp_value_from_key(hi);

	if (!isfinite(a) || !isfinite(z))
		return isfinite(a) ? a : z;
	return a + (z - a) / 2;
}

static double clamp_row(const struct qp_value_row *r, double v)
{
	double mn = qp_value_from_key(r->st.min_key), mx = qp_value_from_key(r->st.max_key);

	return v < mn ? mn : v > mx ? mx : v;
}

double qp_value_mean(const struct qp_value_row *r)
{
	long double sum = 0;
	uint64_t n = 0;
	size_t i;

	if (r->has_sum) /* the ring collector summed them (compensated, long double) */
		return r->st.count ? (double)(r->sum / (long double)r->st.count) : 0;
	for (i = 0; i < r->nbuckets; i++) {
		sum += (long double)bucket_mid(r->buckets[i].bucket) * r->buckets[i].count;
		n += r->buckets[i].count;
	}
	if (!n)
		return 0;
	if (r->st.min_key == r->st.max_key)
		return qp_value_from_key(r->st.min_key);
	return clamp_row(r, (double)(sum / n));
}

double qp_value_quantile(const struct qp_value_row *r, double q)
{
	uint64_t n = 0, rank, cum = 0;
	size_t i;

	for (i = 0; i < r->nbuckets; i++)
		n += r->buckets[i].count;
	if (!n)
		return 0;
	rank = (uint64_t)ceil(q * (double)n - 1e-9);
	if (rank < 1)
		rank = 1;
	for (i = 0; i < r->nbuckets; i++) {
		cum += r->buckets[i].count;
		if (cum >= rank)
			return clamp_row(r, bucket_mid(r->buckets[i].bucket));
	}
	return qp_value_from_key(r->st.max_key);
}

