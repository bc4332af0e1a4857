/* export_metrics.c - GET /metrics: the Prometheus text exposition (format
 * 0.0.4) of the status, scope and value models, for Prometheus or any
 * scraper. The models are the ones the JSON routes encode, so the two
 * cannot disagree; a figure the JSON would write as null (not finite) is
 * written 0 here, as it always was. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "export_metrics.h"
#include "util.h"

/* Label values: backslash, double quote and newline escaped. */
static void label(struct qp_buf *b, const char *key, const char *v, bool first)
{
	const char *p;

	qp_buf_printf(b, "%s%s=\"", first ? "" : ",", key);
	for (p = v ? v : ""; *p; p++) {
		if (*p == '\\' || *p == '"')
			qp_buf_printf(b, "\\%c", *p);
		else if (*p == '\n')
			qp_buf_puts(b, "\\n");
		else
			qp_buf_add(b, p, 1);
	}
	qp_buf_puts(b, "\"");
}

/* A sample line: NAME{pid,name[,parent][,EXTRA]} V. Rows of /api/scopes
 * carry a parent label (empty at top level), rows of values none. */
static void sample(struct qp_buf *b, const char *metric, int32_t pid, const char *name, bool has_parent,
		   const char *parent, const char *extra_key, const char *extra_val, double v)
{
	char p[24];

	snprintf(p, sizeof(p), "%" PRId32, pid);
	qp_buf_printf(b, "%s{", metric);
	label(b, "pid", p, true);
	label(b, "name", name, false);
	if (has_parent)
		label(b, "parent", parent, false);
	if (extra_key)
		label(b, extra_key, extra_val, false);
	if (isfinite(v))
		qp_buf_printf(b, "} %.17g\n", v);
	else
		qp_buf_puts(b, "} NaN\n");
}

static double finite_or_0(double v)
{
	return isfinite(v) ? v : 0;
}

/* One summary of metric M (qprof_scope_duration_seconds or
 * qprof_span_duration_seconds) for the row IT. */
static void scope_lines(struct qp_buf *out, const char *m, const struct qp_scope_item *it)
{
	static const char *const q[] = { "0.5", "0.9", "0.99", "0.999" };
	const double qv[] = { it->p50_ns, it->p90_ns, it->p99_ns, it->p999_ns };
	bool timed = it->shape == QP_ITEM_TIMED;
	char mm[64];
	size_t k;

	for (k = 0; k < QP_ARRAY_SIZE(q); k++)
		sample(out, m, it->pid, it->name, true, it->parent, "quantile", q[k],
		       timed ? finite_or_0(qv[k]) / 1e9 : 0);
	snprintf(mm, sizeof(mm), "%s_sum", m);
	sample(out, mm, it->pid, it->name, true, it->parent, NULL, NULL,
	       timed ? (double)it->total_ns / 1e9 : 0);
	snprintf(mm, sizeof(mm), "%s_count", m);
	sample(out, mm, it->pid, it->name, true, it->parent, NULL, NULL, (double)it->count);
}

static void value_lines(struct qp_buf *out, const struct qp_value_item *v)
{
	static const char *const stats[] = { "min", "max", "mean", "last", "p50", "p99" };
	const double x[] = { v->min, v->max, v->mean, v->last, v->p50, v->p99 };
	size_t k;

	for (k = 0; k < QP_ARRAY_SIZE(stats); k++) {
		/* what the JSON has as a number: "last" always, the rest with a count */
		if ((v->count || k == 3) && isfinite(x[k]))
			sample(out, "qprof_value", v->pid, v->name, false, NULL, "stat", stats[k], x[k]);
	}
	sample(out, "qprof_value", v->pid, v->name, false, NULL, "stat", "count", (double)v->count);
}

int qp_export_metrics(const struct qp_status_model *status, const struct qp_scope_model *scopes,
		      const struct qp_value_model *values, struct qp_buf *out)
{
	const struct qp_scope_drops *d = &status->scopes.drops;
	const struct {
		const char *reason;
		uint64_t n;
	} drops[] = {
		{ "exit_without_enter", d->exit_without_enter }, { "out_of_order", d->out_of_order },
		{ "too_deep", d->too_deep }, { "thread_exit", d->thread_exit }, { "map_full", d->map_full },
		{ "stack_unavailable", d->stack_unavailable }, { "begin_unended", d->begin_unended },
		{ "span_end_without_begin", d->span_end_without_begin },
		{ "span_step_without_begin", d->span_step_without_begin },
		{ "span_id_reused", d->span_id_reused }, { "span_table_full", d->span_table_full },
		{ "span_abandoned", d->span_abandoned },
	};
	size_t i;

	qp_buf_puts(out, "# HELP qprof_up 1 while qprofd answers.\n# TYPE qprof_up gauge\nqprof_up 1\n");
	qp_buf_puts(out, "# HELP qprof_scope_duration_seconds Latency of qprof scopes and spans since attach.\n"
			 "# TYPE qprof_scope_duration_seconds summary\n");
	for (i = 0; i < scopes->n; i++) {
		const char *kind = scopes->items[i].kind;

		if (!strcmp(kind, "scope") || !strcmp(kind, "span"))
			scope_lines(out, "qprof_scope_duration_seconds", &scopes->items[i]);
	}
	/* a metric of their own: a span and a scope may share a name */
	qp_buf_puts(out, "# HELP qprof_span_duration_seconds Latency of spans across threads (QPROF_SPAN_BEGIN to END; "
			 "steps: since the begin, parent = the span) since attach.\n"
			 "# TYPE qprof_span_duration_seconds summary\n");
	for (i = 0; i < scopes->n; i++)
		if (!strcmp(scopes->items[i].kind, "async_span"))
			scope_lines(out, "qprof_span_duration_seconds", &scopes->items[i]);
	qp_buf_puts(out, "# HELP qprof_events_total Hits of QPROF_MARK sites and of counted USDT probes.\n"
			 "# TYPE qprof_events_total counter\n");
	for (i = 0; i < scopes->n; i++) {
		const struct qp_scope_item *it = &scopes->items[i];

		if (!strcmp(it->kind, "mark") || !strcmp(it->kind, "probe"))
			sample(out, "qprof_events_total", it->pid, it->name, true, it->parent, "kind", it->kind,
			       (double)it->count);
	}
	qp_buf_puts(out, "# HELP qprof_value QPROF_VALUE statistics since attach.\n# TYPE qprof_value gauge\n");
	for (i = 0; i < values->n; i++)
		value_lines(out, &values->items[i]);
	/* daemon counters */
	qp_buf_printf(out, "# TYPE qprof_cpu_samples_total counter\nqprof_cpu_samples_total %.0f\n",
		      (double)status->cpu.samples);
	qp_buf_printf(out, "# TYPE qprof_cpu_samples_lost_total counter\nqprof_cpu_samples_lost_total %.0f\n",
		      (double)status->cpu.lost);
	qp_buf_printf(out, "# TYPE qprof_logs_received_total counter\nqprof_logs_received_total %.0f\n",
		      (double)status->logs.received);
	qp_buf_printf(out, "# TYPE qprof_logs_lost_total counter\nqprof_logs_lost_total %.0f\n",
		      (double)status->logs.lost);
	qp_buf_puts(out, "# HELP qprof_scopes_dropped_total Scope events that could not be measured.\n"
			 "# TYPE qprof_scopes_dropped_total counter\n");
	for (i = 0; i < QP_ARRAY_SIZE(drops); i++) {
		qp_buf_puts(out, "qprof_scopes_dropped_total{");
		label(out, "reason", drops[i].reason, true);
		qp_buf_printf(out, "} %.0f\n", (double)drops[i].n);
	}
	qp_buf_puts(out, "# TYPE qprof_targets gauge\n");
	qp_buf_printf(out, "qprof_targets{state=\"running\"} %u\nqprof_targets{state=\"exited\"} %u\n",
		      status->targets_running, status->targets_exited);
	return out->failed ? -ENOMEM : 0;
}
