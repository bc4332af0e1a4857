/* test_metrics_pb.c - GET /metrics in the protobuf format (delimited
 * io.prometheus.client.MetricFamily) from model A (metrics_fixture.h),
 * decoded back here field by field: family types, the classic buckets, the
 * native histogram (schema 5, zero threshold and count, spans and deltas
 * against the schema-5 buckets of the durations), the no-op span of a
 * histogram with only a zero bucket, an odd label carried unescaped. */
#include "metrics_fixture.h"
struct rd {
	const unsigned char *p, *end;
};

static bool rd_varint(struct rd *r, uint64_t *v)
{
	int shift = 0;

	*v = 0;
	while (r->p < r->end && shift < 64) {
		unsigned char c = *r->p++;

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return true;
		shift += 7;
	}
	return false;
}

/* One field: number, wire type, a varint or fixed64 in *V, bytes in *SUB. */
static bool rd_field(struct rd *r, int *field, int *wt, uint64_t *v, struct rd *sub)
{
	uint64_t key, len;

	if (r->p >= r->end || !rd_varint(r, &key))
		return false;
	*field = (int)(key >> 3);
	*wt = (int)(key & 7);
	if (*wt == 0)
		return rd_varint(r, v);
	if (*wt == 1) {
		if (r->end - r->p < 8)
			return false;
		memcpy(v, r->p, 8);	/* little-endian host */
		r->p += 8;
		return true;
	}
	if (*wt != 2 || !rd_varint(r, &len) || len > (uint64_t)(r->end - r->p))
		return false;
	sub->p = r->p;
	sub->end = r->p + len;
	r->p += len;
	return true;
}

static double as_double(uint64_t v)
{
	double d;

	memcpy(&d, &v, sizeof(d));
	return d;
}

static int64_t unzig(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* The Metric in M with label KEY=VAL, or false. */
static bool metric_has_label(struct rd m, const char *key, const char *val)
{
	struct rd sub, lp;
	uint64_t v;
	int f, wt;

	while (rd_field(&m, &f, &wt, &v, &sub)) {
		char k[64] = "", s[128] = "";

		if (f != 1 || wt != 2)
			continue;
		while (rd_field(&sub, &f, &wt, &v, &lp)) {
			if (wt == 2 && (size_t)(lp.end - lp.p) < 64 && f == 1)
				memcpy(k, lp.p, (size_t)(lp.end - lp.p));
			if (wt == 2 && (size_t)(lp.end - lp.p) < 128 && f == 2)
				memcpy(s, lp.p, (size_t)(lp.end - lp.p));
		}
		if (!strcmp(k, key) && !strcmp(s, val))
			return true;
	}
	return false;
}

/* Family NAME of the stream: its type and the Metric with label KEY=VAL
 * (and exe=EXE unless NULL). */
static bool find_metric(const struct qp_buf *b, const char *name, int *type, const char *exe, const char *key,
			const char *val, struct rd *out)
{
	struct rd s = { (const unsigned char *)b->data, (const unsigned char *)b->data + b->len };
	uint64_t len;

	while (s.p < s.end && rd_varint(&s, &len) && len <= (uint64_t)(s.end - s.p)) {
		struct rd fam = { s.p, s.p + len }, sub;
		bool match = false, found = false;
		uint64_t v;
		int f, wt;

		s.p += len;
		*type = -1;
		while (rd_field(&fam, &f, &wt, &v, &sub)) {
			if (f == 1)
				match = (size_t)(sub.end - sub.p) == strlen(name) && !memcmp(sub.p, name, strlen(name));
			if (f == 3)
				*type = (int)v;
			if (f == 4 && !found && (!exe || metric_has_label(sub, "exe", exe)) &&
			    metric_has_label(sub, key, val)) {
				*out = sub;
				found = true;
			}
		}
		if (match)
			return found;
	}
	return false;
}

static void check_protobuf(void)
{
	static const uint64_t durs[] = { 1023, 1024, 1024, 5000, 1023, 70000 };
	struct qp_scope_model sm;
	struct qp_value_model vm;
	struct qp_status_model st;
	struct qp_metrics_opts o = { 0 };
	int32_t want_idx[8], got_idx[8];
	uint64_t want_n[8], got_n[8], count = 0, zero = ~0ull, cum_1023 = ~0ull;
	size_t nwant = 0, ngot = 0, nbuckets = 0, i, nspans = 0;
	int64_t schema = -1, span_off[8];
	uint64_t span_len[8];
	double sum = 0, zt = 0;
	struct rd m, sub, h;
	struct qp_buf b;
	uint64_t v;
	int type, f, wt;

	model_a(&sm, &vm, &st);
	qp_buf_init(&b);
	CHECK_INT(qp_export_metrics(&st, NULL, &sm, &vm, NULL, &o, true, &b), 0);
	/* the merged calc histogram: expected native buckets from the durations */
	for (i = 0; i < QP_ARRAY_SIZE(durs); i++) {
		int32_t n = qp_metrics_native_index(qprof_hist_index(durs[i]));
		size_t k;

		for (k = 0; k < nwant && want_idx[k] != n; k++)
			;
		if (k == nwant) {
			want_idx[nwant] = n;
			want_n[nwant++] = 0;
		}
		want_n[k]++;
	}
	CHECK(find_metric(&b, "qprof_scope_duration_seconds", &type, "strat", "scope", "calc", &m));
	CHECK_INT(type, QP_MT_HISTOGRAM);
	while (rd_field(&m, &f, &wt, &v, &sub)) {
		if (f != 7)
			continue;
		while (rd_field(&sub, &f, &wt, &v, &h)) {
			struct rd x = h, y;
			uint64_t cum = 0, up = 0, off = 0, len = 0;
			int g, wg;

			switch (f) {
			case 1: count = v; break;
			case 2: sum = as_double(v); break;
			case 3:
				nbuckets++;
				while (rd_field(&x, &g, &wg, &v, &y))
					*(g == 1 ? &cum : &up) = v;
				if (as_double(up) == 1023 / 1e9)
					cum_1023 = cum;
				break;
			case 5: schema = unzig(v); break;
			case 6: zt = as_double(v); break;
			case 7: zero = v; break;
			case 12:
				while (rd_field(&x, &g, &wg, &v, &y))
					*(g == 1 ? &off : &len) = v;
				if (nspans < 8) {
					span_off[nspans] = unzig(off);
					span_len[nspans++] = len;
				}
				break;
			case 13: {
				int64_t c = 0;

				while (x.p < x.end && rd_varint(&x, &v) && ngot < 8) {
					c += unzig(v);
					got_n[ngot++] = (uint64_t)c;
				}
				break;
			}
			}
		}
	}
	CHECK_INT(count, 6);
	CHECK(sum == 79094 / 1e9);
	CHECK_INT(nbuckets, QP_METRICS_LE_N);
	CHECK_INT(cum_1023, 2);
	CHECK_INT(schema, 5);
	CHECK(zt == QP_METRICS_ZERO_THRESHOLD);
	CHECK_INT(zero, 0);
	/* spans to absolute indexes */
	{
		int32_t idx = 0;
		size_t s, k = 0;

		for (s = 0; s < nspans; s++) {
			uint64_t j;

			idx += (int32_t)span_off[s];
			for (j = 0; j < span_len[s] && k < 8; j++)
				got_idx[k++] = idx++;
		}
		CHECK_INT(k, nwant);
		CHECK_INT(ngot, nwant);
		for (i = 0; i < nwant && i < k && i < ngot; i++) {
			CHECK_INT(got_idx[i], want_idx[i]);
			CHECK_INT(got_n[i], want_n[i]);
		}
	}
	/* a row of 0 ns only: the zero bucket and the no-op span */
	CHECK(find_metric(&b, "qprof_scope_duration_seconds", &type, "strat", "scope", "zero", &m));
	nspans = 0;
	zero = ~0ull;
	ngot = 0;
	while (rd_field(&m, &f, &wt, &v, &sub)) {
		if (f != 7)
			continue;
		while (rd_field(&sub, &f, &wt, &v, &h)) {
			if (f == 7)
				zero = v;
			if (f == 12) {
				CHECK(h.end - h.p == 4);	/* offset 0, length 0: both written */
				nspans++;
			}
			if (f == 13)
				ngot++;
		}
	}
	CHECK_INT(zero, 1);
	CHECK_INT(nspans, 1);
	CHECK_INT(ngot, 0);
	/* labels carry the odd name unescaped, invalid UTF-8 replaced */
	CHECK(find_metric(&b, "qprof_scope_duration_seconds", &type, "strat", "scope", ODD_PB, &m));
	CHECK(find_metric(&b, "qprof_events_total", &type, "strat", "name", "tick", &m));
	CHECK_INT(type, QP_MT_COUNTER);
	while (rd_field(&m, &f, &wt, &v, &sub))
		if (f == 3 && rd_field(&sub, &f, &wt, &v, &h))
			CHECK(as_double(v) == 57);
	CHECK(find_metric(&b, "qprof_value", &type, "strat", "name", "price", &m));
	CHECK_INT(type, QP_MT_SUMMARY);
	CHECK(find_metric(&b, "qprof_targets", &type, NULL, "state", "running", &m));
	CHECK_INT(type, QP_MT_GAUGE);
	qp_buf_free(&b);
	free_items(A_items, QP_ARRAY_SIZE(A_items));
	for (i = 0; i < QP_ARRAY_SIZE(A_values); i++)
		free((void *)A_values[i].buckets);
}

/* The hostile model as text, for promtool. */
int main(void)
{
	check_protobuf();
	return test_done("test_metrics_pb");
}
