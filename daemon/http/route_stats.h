/* route_stats.h - how long each route of the API took to handle, and how
 * much of that its thread spent waiting for the daemon's shared locks
 * (qp_lock, util.h): request counts and log-linear histograms (16 buckets
 * of 1 us, then 8 per power of two: a bucket's bound is within 12.5 % of
 * what it counts), shown in /api/status under http.routes
 * (docs/reference/http-api.md). Lock-free: counters added atomically. */
#ifndef QPROF_ROUTE_STATS_H
#define QPROF_ROUTE_STATS_H
#include <stddef.h>
#include <stdint.h>

#define QP_ROUTE_STATS_MAX 40	/* routes */
#define QP_ROUTE_BUCKETS 320

struct qp_json;

struct qp_route_hist {
	uint64_t max_us;
	uint64_t b[QP_ROUTE_BUCKETS];
};

struct qp_route_stat {
	const char *name;	/* the route's path pattern (static), NULL: none yet */
	uint64_t requests;
	struct qp_route_hist handling, lock_wait;
};

struct qp_route_stats {
	struct qp_route_stat r[QP_ROUTE_STATS_MAX];
};

/* Route I (< QP_ROUTE_STATS_MAX), NAME, took HANDLING_NS of which its
 * thread waited LOCK_NS for locks. */
void qp_route_stats_note(struct qp_route_stats *s, size_t i, const char *name, uint64_t handling_ns,
			 uint64_t lock_ns);
/* "routes": [ one object per route asked for ] into J. */
void qp_route_stats_json(const struct qp_route_stats *s, struct qp_json *j);
/* The histogram's bucket of US microseconds, and the largest it holds. */
unsigned int qp_route_bucket(uint64_t us);
uint64_t qp_route_bucket_le(unsigned int i);
#endif
