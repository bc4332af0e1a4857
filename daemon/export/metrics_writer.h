/* metrics_writer.h - one writer of Prometheus metric families, two
 * encodings: the text exposition format 0.0.4, and the delimited protobuf
 * stream of io.prometheus.client.MetricFamily that a scraper negotiates
 * for native histograms. export_metrics.c says what to write, this file
 * how; the bucket layouts both encodings share are here too.
 *
 * Scope latency histograms arrive in the kernel's log-linear buckets
 * (bpf/hist.h). The classic buckets are a fixed subset of the kernel's
 * bucket edges, so their counts are exact: le = E - 1 ns for the edges
 * E = m * 2^(k-2) ns, m = 4..7, k = 6..32, and E = 2^33 ns (109 bounds,
 * 63 ns to 8.59 s, then +Inf). Durations are whole nanoseconds, so
 * "<= E - 1 ns" is exactly "below the kernel edge E". The native histogram
 * (protobuf only) has schema 5: 32 buckets per power of two, like the
 * kernel's, but exponential where the kernel's are linear, so their edges
 * differ; each kernel bucket's count goes to the schema-5 bucket holding
 * the kernel bucket's midpoint, at most one schema-5 bucket (2.2 %) from
 * where each of its values belongs. */
#ifndef QPROF_METRICS_WRITER_H
#define QPROF_METRICS_WRITER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/buf.h"
#include "model/percentile.h"

/* io.prometheus.client.MetricType */
enum qp_mtype {
	QP_MT_COUNTER = 0,
	QP_MT_GAUGE = 1,
	QP_MT_SUMMARY = 2,
	QP_MT_HISTOGRAM = 4,
};

#define QP_METRICS_LE_N 109	/* classic bounds, +Inf not counted */
#define QP_METRICS_SCHEMA 5
#define QP_METRICS_ZERO_THRESHOLD 2.938735877055719e-39	/* 2^-128, as client_golang */

/* Kernel edge I (0..QP_METRICS_LE_N-1) of the classic buckets, in ns: the
 * bound is le = edge - 1 ns. */
uint64_t qp_metrics_le_edge_ns(size_t i);
/* The schema-5 index of the midpoint of kernel bucket KIDX (1..), seconds. */
int32_t qp_metrics_native_index(unsigned int kidx);
/* The shortest text of V that reads back as V ("6.3e-08", "12", "NaN",
 * "+Inf"); BUF holds 32 bytes. */
const char *qp_metrics_fmt(double v, char buf[32]);

struct qp_label {
	const char *name, *value;	/* value NULL: "" */
};

/* A latency histogram in kernel buckets, seconds in the exposition. */
struct qp_mhist {
	const struct qp_hist_count *b;	/* non-empty kernel buckets, in order */
	size_t nb;
	uint64_t count;
	double sum_s;
};

struct qp_mwriter {
	struct qp_buf *out;
	bool protobuf;
	const char *name;	/* the family being written, NULL between families */
	const char *help;
	enum qp_mtype type;
	size_t nmetrics;
	struct qp_buf fam, met, sub, tmp;	/* protobuf scratch: family, Metric, its
						 * Histogram or Summary, their parts */
	/* the classic bounds, computed once: text, seconds, kernel bucket of the edge */
	char le_text[QP_METRICS_LE_N][32];
	double le_s[QP_METRICS_LE_N];
	unsigned int le_kidx[QP_METRICS_LE_N];
};

void qp_mw_init(struct qp_mwriter *w, struct qp_buf *out, bool protobuf);
void qp_mw_free(struct qp_mwriter *w);
/* Start family NAME (HELP and TYPE); the previous one ends. A family with
 * no metric writes nothing. */
void qp_mw_family(struct qp_mwriter *w, const char *name, const char *help, enum qp_mtype type);
/* A counter's or gauge's sample. */
void qp_mw_value(struct qp_mwriter *w, const struct qp_label *l, size_t nl, double v);
/* A summary: quantiles Q[i] with values QV[i], then sum and count. */
void qp_mw_summary(struct qp_mwriter *w, const struct qp_label *l, size_t nl, const double *q,
		   const double *qv, size_t nq, uint64_t count, double sum);
/* A histogram: the classic buckets, and in protobuf the native ones too. */
void qp_mw_histogram(struct qp_mwriter *w, const struct qp_label *l, size_t nl, const struct qp_mhist *h);
/* End the last family. 0 or -ENOMEM. */
int qp_mw_finish(struct qp_mwriter *w);
#endif
