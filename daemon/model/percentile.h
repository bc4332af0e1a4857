/* percentile.h - percentiles and windows over the log-linear histogram of
 * bpf/hist.h, in user space. */
#ifndef QPROF_PERCENTILE_H
#define QPROF_PERCENTILE_H
#include <stddef.h>
#include <stdint.h>
#include "bpf/hist.h" /* bpf/hist.h: bucket layout */

/* The value at quantile Q (0 < Q <= 1, nearest-rank definition) estimated
 * from the histogram: the rank's bucket, interpolated linearly inside it and
 * clamped to [min, max]. 0 when COUNT is 0. */
double qp_hist_quantile(const uint64_t *hist, uint64_t count, double q, uint64_t min, uint64_t max);

/* Lowest value of the lowest non-empty bucket and highest value of the
 * highest one: the bounds of a window whose exact min/max are unknown. */
void qp_hist_bounds(const uint64_t *hist, uint64_t *lo, uint64_t *hi);

/* A non-empty bucket of a histogram: its index and count. */
struct qp_hist_count {
	uint32_t idx;
	uint64_t n;
};

/* The non-empty buckets of HIST in index order into OUT (room for
 * QPROF_HIST_BUCKETS, or NULL to count them only); their number. */
size_t qp_hist_sparse(const uint64_t *hist, struct qp_hist_count *out);
#endif
