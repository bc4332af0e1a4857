/* metrics_writer.c - see metrics_writer.h: the text and protobuf encodings
 * of Prometheus metric families. Label values are hostile (scope names come
 * from the target's ELF file): backslash, double quote and newline are
 * escaped in text as the format says, and bytes that are not UTF-8 become
 * U+FFFD in both encodings (Prometheus refuses a whole scrape that holds
 * invalid UTF-8). The protobuf is written by hand, as export_pprof.c
 * writes its profile. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bpf/hist.h"
#include "common/json_writer.h"
#include "metrics_writer.h"
#include "pb_wire.h"

/* Field numbers of io.prometheus.client (metrics.proto). */
enum {
	F_FAM_NAME = 1, F_FAM_HELP = 2, F_FAM_TYPE = 3, F_FAM_METRIC = 4,
	F_MET_LABEL = 1, F_MET_GAUGE = 2, F_MET_COUNTER = 3, F_MET_SUMMARY = 4, F_MET_HISTOGRAM = 7,
	F_LABEL_NAME = 1, F_LABEL_VALUE = 2,
	F_SUM_COUNT = 1, F_SUM_SUM = 2, F_SUM_QUANTILE = 3, F_Q_QUANTILE = 1, F_Q_VALUE = 2,
	F_H_COUNT = 1, F_H_SUM = 2, F_H_BUCKET = 3, F_H_SCHEMA = 5, F_H_ZERO_THRESHOLD = 6,
	F_H_ZERO_COUNT = 7, F_H_POS_SPAN = 12, F_H_POS_DELTA = 13,
	F_B_CUMULATIVE = 1, F_B_UPPER = 2, F_SPAN_OFFSET = 1, F_SPAN_LENGTH = 2,
};

uint64_t qp_metrics_le_edge_ns(size_t i)
{
	size_t k = 6 + i / 4;

	return (uint64_t)(4 + i % 4) << (k - 2);
}

int32_t qp_metrics_native_index(unsigned int kidx)
{
	double mid = (double)qprof_hist_lower(kidx) + (double)(qprof_hist_width(kidx) - 1) / 2;

	return (int32_t)ceil(log2(mid / 1e9) * (1 << QP_METRICS_SCHEMA));
}

const char *qp_metrics_fmt(double v, char buf[32])
{
	int p, x;

	if (isnan(v))
		return "NaN";
	if (isinf(v))
		return v > 0 ? "+Inf" : "-Inf";
	if (v == floor(v) && fabs(v) < 1e15) {	/* a whole number: all its digits */
		snprintf(buf, 32, "%.0f", v);
		return buf;
	}
	/* the fewest significant digits that read back as V, written as Go's
	 * strconv 'g' writes them (client_golang's choice): an exponent below
	 * -4 or from 6 on in e-notation, else fixed */
	for (p = 1; p < 17; p++) {
		snprintf(buf, 32, "%.*e", p - 1, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	snprintf(buf, 32, "%.*e", p - 1, v);
	x = atoi(strchr(buf, 'e') + 1);	/* the exponent as printed (rounding may raise it) */
	if (x >= -4 && x < 6)
		snprintf(buf, 32, "%.*f", p - 1 - x > 0 ? p - 1 - x : 0, v);
	return buf;
}

/* S as valid UTF-8 into B; ESCAPE: the text format's \\, \" and \n too. */
static void put_label_value(struct qp_buf *b, const char *s, bool escape)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)p), i = 0, len;

	while (i < n) {
		if (escape && (p[i] == '\\' || p[i] == '"' || p[i] == '\n')) {
			qp_buf_puts(b, p[i] == '\\' ? "\\\\" : p[i] == '"' ? "\\\"" : "\\n");
			i++;
			continue;
		}
		len = qp_utf8_seq(p + i, n - i);
		if (!len) {
			qp_buf_puts(b, "\xef\xbf\xbd");
			i++;
			continue;
		}
		qp_buf_add(b, p + i, len);
		i += len;
	}
}

void qp_mw_init(struct qp_mwriter *w, struct qp_buf *out, bool protobuf)
{
	size_t i;

	memset(w, 0, sizeof(*w));
	w->out = out;
	w->protobuf = protobuf;
	for (i = 0; i < QP_METRICS_LE_N; i++) {
		uint64_t edge = qp_metrics_le_edge_ns(i);
		const char *t;

		w->le_kidx[i] = qprof_hist_index(edge);
		w->le_s[i] = (double)(edge - 1) / 1e9;
		t = qp_metrics_fmt(w->le_s[i], w->le_text[i]);
		if (t != w->le_text[i])
			snprintf(w->le_text[i], sizeof(w->le_text[i]), "%s", t);
	}
}

void qp_mw_free(struct qp_mwriter *w)
{
	qp_buf_free(&w->fam);
	qp_buf_free(&w->met);
	qp_buf_free(&w->sub);
	qp_buf_free(&w->tmp);
}

static const char *type_name(enum qp_mtype t)
{
	return t == QP_MT_COUNTER ? "counter" : t == QP_MT_GAUGE ? "gauge" : t == QP_MT_SUMMARY ? "summary" :
										     "histogram";
}

static void end_family(struct qp_mwriter *w)
{
	if (!w->name || !w->protobuf || !w->nmetrics) {
		w->name = NULL;
		return;
	}
	w->tmp.len = 0;
	qp_pb_bytes(&w->tmp, F_FAM_NAME, w->name, strlen(w->name));
	qp_pb_bytes(&w->tmp, F_FAM_HELP, w->help, strlen(w->help));
	qp_pb_uint(&w->tmp, F_FAM_TYPE, (uint64_t)w->type);
	qp_pb_varint(w->out, (uint64_t)w->tmp.len + w->fam.len);
	qp_buf_add(w->out, w->tmp.data, w->tmp.len);
	if (w->fam.len)
		qp_buf_add(w->out, w->fam.data, w->fam.len);
	w->out->failed |= w->tmp.failed || w->fam.failed;
	w->tmp.len = w->fam.len = 0;
	w->name = NULL;
}

void qp_mw_family(struct qp_mwriter *w, const char *name, const char *help, enum qp_mtype type)
{
	end_family(w);
	w->name = name;
	w->help = help;
	w->type = type;
	w->nmetrics = 0;
}

/* Text: the family's header before its first sample, then NAME SUFFIX
 * {labels[,XNAME="XVAL"]} and a blank; the caller writes the value. */
static void text_series(struct qp_mwriter *w, const char *suffix, const struct qp_label *l, size_t nl,
			const char *xname, const char *xval)
{
	struct qp_buf *b = w->out;
	size_t i;

	qp_buf_puts(b, w->name);
	qp_buf_puts(b, suffix);
	if (nl || xname) {
		qp_buf_puts(b, "{");
		for (i = 0; i < nl; i++) {
			qp_buf_printf(b, "%s%s=\"", i ? "," : "", l[i].name);
			put_label_value(b, l[i].value, true);
			qp_buf_puts(b, "\"");
		}
		if (xname)
			qp_buf_printf(b, "%s%s=\"%s\"", nl ? "," : "", xname, xval);
		qp_buf_puts(b, "}");
	}
	qp_buf_puts(b, " ");
}

/* Start a metric: the text header once, or the protobuf labels. */
static void metric_begin(struct qp_mwriter *w, const struct qp_label *l, size_t nl)
{
	size_t i;

	if (!w->protobuf) {
		if (!w->nmetrics)
			qp_buf_printf(w->out, "# HELP %s %s\n# TYPE %s %s\n", w->name, w->help, w->name,
				      type_name(w->type));
		w->nmetrics++;
		return;
	}
	w->nmetrics++;
	w->met.len = 0;
	for (i = 0; i < nl; i++) {
		qp_pb_bytes(&w->tmp, F_LABEL_NAME, l[i].name, strlen(l[i].name));
		w->sub.len = 0;
		put_label_value(&w->sub, l[i].value, false);
		qp_pb_bytes(&w->tmp, F_LABEL_VALUE, w->sub.data, w->sub.len);
		w->sub.len = 0;
		qp_pb_msg(&w->met, F_MET_LABEL, &w->tmp);
	}
}

static void metric_end(struct qp_mwriter *w, int field)
{
	qp_pb_msg(&w->met, field, &w->sub);
	qp_pb_msg(&w->fam, F_FAM_METRIC, &w->met);
}

void qp_mw_value(struct qp_mwriter *w, const struct qp_label *l, size_t nl, double v)
{
	char f[32];

	metric_begin(w, l, nl);
	if (!w->protobuf) {
		text_series(w, "", l, nl, NULL, NULL);
		qp_buf_printf(w->out, "%s\n", qp_metrics_fmt(v, f));
		return;
	}
	qp_pb_double(&w->sub, 1, v);
	metric_end(w, w->type == QP_MT_COUNTER ? F_MET_COUNTER : F_MET_GAUGE);
}

void qp_mw_summary(struct qp_mwriter *w, const struct qp_label *l, size_t nl, const double *q,
		   const double *qv, size_t nq, uint64_t count, double sum)
{
	char f[32], g[32];
	size_t i;

	metric_begin(w, l, nl);
	if (!w->protobuf) {
		for (i = 0; i < nq; i++) {
			text_series(w, "", l, nl, "quantile", qp_metrics_fmt(q[i], g));
			qp_buf_printf(w->out, "%s\n", qp_metrics_fmt(qv[i], f));
		}
		text_series(w, "_sum", l, nl, NULL, NULL);
		qp_buf_printf(w->out, "%s\n", qp_metrics_fmt(sum, f));
		text_series(w, "_count", l, nl, NULL, NULL);
		qp_buf_printf(w->out, "%" PRIu64 "\n", count);
		return;
	}
	qp_pb_uint(&w->sub, F_SUM_COUNT, count);
	qp_pb_double(&w->sub, F_SUM_SUM, sum);
	for (i = 0; i < nq; i++) {
		qp_pb_double(&w->tmp, F_Q_QUANTILE, q[i]);
		qp_pb_double(&w->tmp, F_Q_VALUE, qv[i]);
		qp_pb_msg(&w->sub, F_SUM_QUANTILE, &w->tmp);
	}
	metric_end(w, F_MET_SUMMARY);
}

/* The native buckets of H into w->sub: zero bucket, spans, packed deltas. */
static void native_buckets(struct qp_mwriter *w, const struct qp_mhist *h)
{
	struct qp_buf deltas;
	int32_t cur = 0, span_start = 0;
	uint64_t zero = 0, n = 0, prev = 0;
	uint32_t span_len = 0;
	bool have = false;
	size_t i;

	qp_buf_init(&deltas);
	qp_pb_uint(&w->sub, F_H_SCHEMA, qp_pb_zigzag(QP_METRICS_SCHEMA));
	qp_pb_double(&w->sub, F_H_ZERO_THRESHOLD, QP_METRICS_ZERO_THRESHOLD);
	for (i = 0; i <= h->nb; i++) {
		int32_t idx = 0;

		if (i < h->nb) {
			if (h->b[i].idx == 0) {
				zero += h->b[i].n;
				continue;
			}
			idx = qp_metrics_native_index(h->b[i].idx);
			if (have && idx == cur) {
				n += h->b[i].n;
				continue;
			}
		}
		if (have) {	/* close bucket CUR */
			qp_pb_varint(&deltas, qp_pb_zigzag((int64_t)(n - prev)));
			prev = n;
		}
		if (i == h->nb)
			break;
		if (!have || idx != cur + 1) {	/* a new span */
			if (span_len) {
				qp_pb_uint(&w->tmp, F_SPAN_OFFSET, qp_pb_zigzag(span_start));
				qp_pb_uint(&w->tmp, F_SPAN_LENGTH, span_len);
				qp_pb_msg(&w->sub, F_H_POS_SPAN, &w->tmp);
			}
			span_start = have ? idx - cur - 1 : idx;
			span_len = 0;
		}
		span_len++;
		cur = idx;
		n = h->b[i].n;
		have = true;
	}
	/* the last span; a histogram without buckets gets the no-op span that
	 * tells it from a classic one */
	qp_pb_uint(&w->tmp, F_SPAN_OFFSET, qp_pb_zigzag(span_start));
	qp_pb_uint(&w->tmp, F_SPAN_LENGTH, span_len);
	qp_pb_msg(&w->sub, F_H_POS_SPAN, &w->tmp);
	if (deltas.len)
		qp_pb_bytes(&w->sub, F_H_POS_DELTA, deltas.data, deltas.len);
	w->sub.failed |= deltas.failed;
	qp_buf_free(&deltas);
	qp_pb_uint(&w->sub, F_H_ZERO_COUNT, zero);
}

void qp_mw_histogram(struct qp_mwriter *w, const struct qp_label *l, size_t nl, const struct qp_mhist *h)
{
	uint64_t cum = 0;
	char f[32];
	size_t i, j = 0;

	metric_begin(w, l, nl);
	if (w->protobuf) {
		qp_pb_uint(&w->sub, F_H_COUNT, h->count);
		qp_pb_double(&w->sub, F_H_SUM, h->sum_s);
	}
	for (i = 0; i < QP_METRICS_LE_N; i++) {
		while (j < h->nb && h->b[j].idx < w->le_kidx[i])
			cum += h->b[j++].n;
		if (cum > h->count)
			cum = h->count;	/* never above +Inf */
		if (w->protobuf) {
			qp_pb_uint(&w->tmp, F_B_CUMULATIVE, cum);
			qp_pb_double(&w->tmp, F_B_UPPER, w->le_s[i]);
			qp_pb_msg(&w->sub, F_H_BUCKET, &w->tmp);
			continue;
		}
		text_series(w, "_bucket", l, nl, "le", w->le_text[i]);
		qp_buf_printf(w->out, "%" PRIu64 "\n", cum);
	}
	if (w->protobuf) {
		native_buckets(w, h);
		metric_end(w, F_MET_HISTOGRAM);
		return;
	}
	text_series(w, "_bucket", l, nl, "le", "+Inf");
	qp_buf_printf(w->out, "%" PRIu64 "\n", h->count);
	text_series(w, "_sum", l, nl, NULL, NULL);
	qp_buf_printf(w->out, "%s\n", qp_metrics_fmt(h->sum_s, f));
	text_series(w, "_count", l, nl, NULL, NULL);
	qp_buf_printf(w->out, "%" PRIu64 "\n", h->count);
}

int qp_mw_finish(struct qp_mwriter *w)
{
	end_family(w);
	return w->out->failed ? -ENOMEM : 0;
}
