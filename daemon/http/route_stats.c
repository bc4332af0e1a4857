/* route_stats.c - see route_stats.h. */
#include <stdbool.h>
#include "common/json_writer.h"
#include "route_stats.h"

#define MAX_US (1ull << 40)

unsigned int qp_route_bucket(uint64_t us)
{
	unsigned int e;

	if (us >= MAX_US)
		us = MAX_US - 1;
	if (us < 16)
		return (unsigned int)us;
	e = 63u - (unsigned int)__builtin_clzll(us);	/* 4 .. 39 */
	return 16 + (e - 4) * 8 + (unsigned int)((us >> (e - 3)) & 7);
}

uint64_t qp_route_bucket_le(unsigned int i)
{
	unsigned int e, sub;

	if (i < 16)
		return i;
	e = 4 + (i - 16) / 8;
	sub = (i - 16) % 8;
	return ((uint64_t)(8 + sub + 1) << (e - 3)) - 1;
}

static void hist_add(struct qp_route_hist *h, uint64_t ns)
{
	uint64_t us = ns / 1000, m = __atomic_load_n(&h->max_us, __ATOMIC_RELAXED);

	__atomic_fetch_add(&h->b[qp_route_bucket(us)], 1, __ATOMIC_RELAXED);
	while (us > m && !__atomic_compare_exchange_n(&h->max_us, &m, us, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

void qp_route_stats_note(struct qp_route_stats *s, size_t i, const char *name, uint64_t handling_ns,
			 uint64_t lock_ns)
{
	struct qp_route_stat *r;

	if (i >= QP_ROUTE_STATS_MAX)
		return;
	r = &s->r[i];
	__atomic_store_n(&r->name, name, __ATOMIC_RELAXED);
	hist_add(&r->handling, handling_ns);
	hist_add(&r->lock_wait, lock_ns);
	__atomic_fetch_add(&r->requests, 1, __ATOMIC_RELEASE);
}

/* The bound of the bucket holding the Q-th fraction of N (at most the max). */
static uint64_t quantile(const uint64_t *b, uint64_t n, uint64_t max_us, double q)
{
	uint64_t want = (uint64_t)(q * (double)n + 0.999999), seen = 0;
	unsigned int i;

	if (!want)
		want = 1;
	for (i = 0; i < QP_ROUTE_BUCKETS; i++) {
		seen += b[i];
		if (seen >= want)
			return qp_route_bucket_le(i) < max_us ? qp_route_bucket_le(i) : max_us;
	}
	return max_us;
}

static void hist_json(const struct qp_route_hist *h, const char *key, struct qp_json *j)
{
	uint64_t b[QP_ROUTE_BUCKETS], n = 0, max_us = __atomic_load_n(&h->max_us, __ATOMIC_RELAXED);
	unsigned int i;

	for (i = 0; i < QP_ROUTE_BUCKETS; i++)
		n += b[i] = __atomic_load_n(&h->b[i], __ATOMIC_RELAXED);
	qp_json_key(j, key);
	qp_json_obj_begin(j);
	qp_json_kv_u64(j, "p50", quantile(b, n, max_us, 0.50));
	qp_json_kv_u64(j, "p99", quantile(b, n, max_us, 0.99));
	qp_json_kv_u64(j, "max", max_us);
	/* [largest value the bucket holds, count], the buckets with counts */
	qp_json_key(j, "buckets");
	qp_json_arr_begin(j);
	for (i = 0; i < QP_ROUTE_BUCKETS; i++) {
		if (!b[i])
			continue;
		qp_json_arr_begin(j);
		qp_json_u64(j, qp_route_bucket_le(i));
		qp_json_u64(j, b[i]);
		qp_json_arr_end(j);
	}
	qp_json_arr_end(j);
	qp_json_obj_end(j);
}

void qp_route_stats_json(const struct qp_route_stats *s, struct qp_json *j)
{
	size_t i;

	qp_json_key(j, "routes");
	qp_json_arr_begin(j);
	for (i = 0; i < QP_ROUTE_STATS_MAX; i++) {
		const struct qp_route_stat *r = &s->r[i];
		uint64_t n = __atomic_load_n(&r->requests, __ATOMIC_ACQUIRE);
		const char *name = __atomic_load_n(&r->name, __ATOMIC_RELAXED);

		if (!n || !name)
			continue;
		qp_json_obj_begin(j);
		qp_json_kv_str(j, "route", name);
		qp_json_kv_u64(j, "requests", n);
		hist_json(&r->handling, "handling_us", j);
		hist_json(&r->lock_wait, "lock_wait_us", j);
		qp_json_obj_end(j);
	}
	qp_json_arr_end(j);
}
