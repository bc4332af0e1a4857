/* percentile.c - reading percentiles out of the kernel's log-linear histograms.
 * The bucket layout lives in bpf/hist.h so BPF and this file cannot drift. */
#include <math.h>
#include <stddef.h>
#include "percentile.h"

double qp_hist_quantile(const uint64_t *hist, uint64_t count, double q, uint64_t min, uint64_t max)
{
	uint64_t rank, cum = 0;
	double v;
	unsigned int i;

	if (!count)
		return 0;
	if (!(q > 0))
		return (double)min;
	if (q > 1)
		q = 1;
	/* nearest rank: the ceil(q * n)-th smallest value, 1-based */
	rank = (uint64_t)ceil(q * (double)count - 1e-9);
	if (rank < 1)
		rank = 1;
	if (rank > count)
		rank = count;
	for (i = 0; i < QPROF_HIST_BUCKETS; i++) {
		uint64_t c = hist[i];

		if (!c || cum + c < rank) {
			cum += c;
			continue;
		}
		if (qprof_hist_width(i) == 1) {
			v = (double)qprof_hist_lower(i);
		} else {
			/* the k-th of c values spread evenly over the bucket */
			double k = (double)(rank - cum);

			v = (double)qprof_hist_lower(i) +
			    (double)qprof_hist_width(i) * (k - 0.5) / (double)c;
		}
		if (v < (double)min)
			v = (double)min;
		if (max && v > (double)max)
			v = (double)max;
		return v;
	}
	return (double)max; /* histogram holds fewer than count values */
}

void qp_hist_bounds(const uint64_t *hist, uint64_t *lo, uint64_t *hi)
{
	int i;

	*lo = *hi = 0;
	for (i = 0; i < (int)QPROF_HIST_BUCKETS; i++) {
		if (hist[i]) {
			*lo = qprof_hist_lower(i);
			break;
		}
	}
	for (i = QPROF_HIST_BUCKETS - 1; i >= 0; i--) {
		if (hist[i]) {
			*hi = qprof_hist_lower(i) + qprof_hist_width(i) - 1;
			break;
		}
	}
}

size_t qp_hist_sparse(const uint64_t *hist, struct qp_hist_count *out)
{
	size_t n = 0;
	unsigned int i;

	for (i = 0; i < QPROF_HIST_BUCKETS; i++) {
		if (!hist[i])
			continue;
		if (out)
			out[n] = (struct qp_hist_count){ .idx = i, .n = hist[i] };
		n++;
	}
	return n;
}
