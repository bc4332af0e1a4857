/* model_values.c - see model_values.h: the JSON of GET /api/values. The
 * arithmetic on order keys and buckets is in value_math.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "json_writer.h"
#include "model_values.h"

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
