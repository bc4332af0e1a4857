/* model_values.c - see model_values.h. A bucket holds the doubles whose
 * order keys share their top 24 bits: 1/4096 of the value wide, so the mean
 * and percentiles read from bucket midpoints are within 0.013% of the exact
 * ones; min, max, last and the counts are exact. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "json_writer.h"
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

void qp_model_values_json(struct qp_registry *reg, const struct qp_value_row *rows, size_t n,
			  struct qp_json *j)
{
	size_t i;

	qp_json_obj_begin(j);
	qp_json_key(j, "values");
	qp_json_arr_begin(j);
	for (i = 0; i < n; i++) {
		const struct qp_value_row *r = &rows[i];
		struct qp_target *t = qp_registry_find(reg, (int)r->key.tgid);
		const struct qp_site_info *site = t ? qp_target_site(reg, t, r->key.site) : NULL;
		double last;
		char buf[32];

		if (!t)
			continue;
		memcpy(&last, &r->st.last_bits, sizeof(last));
		qp_json_obj_begin(j);
		qp_json_kv_i64(j, "pid", r->key.tgid);
		if (site) {
			qp_json_kv_str(j, "name", site->name);
			qp_json_kv_str(j, "file", site->file);
			qp_json_kv_u64(j, "line", site->line);
		} else {
			snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)r->key.site);
			qp_json_kv_str(j, "name", buf);
			qp_json_kv_null(j, "file");
			qp_json_kv_null(j, "line");
		}
		qp_json_kv_u64(j, "count", r->st.count);
		if (r->st.count) {
			qp_json_kv_double(j, "min", qp_value_from_key(r->st.min_key));
			qp_json_kv_double(j, "max", qp_value_from_key(r->st.max_key));
			qp_json_kv_double(j, "mean", qp_value_mean(r));
			qp_json_kv_double(j, "p50", qp_value_quantile(r, 0.50));
			qp_json_kv_double(j, "p99", qp_value_quantile(r, 0.99));
		} else {
			qp_json_kv_null(j, "min");
			qp_json_kv_null(j, "max");
			qp_json_kv_null(j, "mean");
			qp_json_kv_null(j, "p50");
			qp_json_kv_null(j, "p99");
		}
		qp_json_kv_double(j, "last", last); /* null when NaN or infinite */
		qp_json_kv_u64(j, "nan", r->st.nan);
		qp_json_kv_u64(j, "pos_inf", r->st.pos_inf);
		qp_json_kv_u64(j, "neg_inf", r->st.neg_inf);
		qp_json_obj_end(j);
	}
	qp_json_arr_end(j);
	qp_json_obj_end(j);
}
