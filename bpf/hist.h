/* hist.h - the log-linear latency histogram shared by BPF and user space.
 *
 * Values below 64 ns have a bucket each; above, every power of two is split
 * into 32 equal buckets, so a bucket is at most 1/32 of its lower bound wide
 * and a percentile read at a bucket's midpoint is within ~1.6% of the exact
 * one. Powers up to 2^36 ns (68 s) are kept; longer values share the last
 * bucket (max_ns still holds them exactly). Index math only, no loops, so the
 * same code is verified by the kernel and unit-tested in user space. */
#ifndef QPROF_HIST_H
#define QPROF_HIST_H

#define QPROF_HIST_SUB_BITS 5
#define QPROF_HIST_SUB (1u << QPROF_HIST_SUB_BITS)	/* 32 */
#define QPROF_HIST_MAX_POW 36
#define QPROF_HIST_BUCKETS ((QPROF_HIST_MAX_POW - QPROF_HIST_SUB_BITS + 2) * QPROF_HIST_SUB) /* 1056 */

/* floor(log2(v)) for v > 0 */
static inline unsigned int qprof_log2_u64(unsigned long long v)
{
	unsigned int r, shift;

	r = (v > 0xFFFFFFFFULL) << 5;
	v >>= r;
	shift = (v > 0xFFFF) << 4;
	v >>= shift;
	r |= shift;
	shift = (v > 0xFF) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xF) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	r |= (unsigned int)(v >> 1);
	return r;
}

static inline unsigned int qprof_hist_index(unsigned long long v)
{
	unsigned int msb;

	if (v < QPROF_HIST_SUB)
		return (unsigned int)v;
	msb = qprof_log2_u64(v);
	if (msb > QPROF_HIST_MAX_POW)
		return QPROF_HIST_BUCKETS - 1;
	return ((msb - QPROF_HIST_SUB_BITS + 1) << QPROF_HIST_SUB_BITS) +
	       (unsigned int)((v >> (msb - QPROF_HIST_SUB_BITS)) & (QPROF_HIST_SUB - 1));
}

/* Lower bound of bucket IDX and its width (both in ns). */
static inline unsigned long long qprof_hist_lower(unsigned int idx)
{
	unsigned int msb;

	if (idx < QPROF_HIST_SUB)
		return idx;
	msb = (idx >> QPROF_HIST_SUB_BITS) + QPROF_HIST_SUB_BITS - 1;
	return (unsigned long long)(QPROF_HIST_SUB + (idx & (QPROF_HIST_SUB - 1))) << (msb - QPROF_HIST_SUB_BITS);
}

static inline unsigned long long qprof_hist_width(unsigned int idx)
{
	if (idx < QPROF_HIST_SUB)
		return 1;
	return 1ULL << ((idx >> QPROF_HIST_SUB_BITS) - 1);
}
#endif
