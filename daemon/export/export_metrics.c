/* export_metrics.c - GET /metrics: the Prometheus text exposition (format
 * 0.0.4) of what /api/scopes, /api/values and /api/status say, for
 * Prometheus or any scraper. Built from the same JSON documents the API
 * serves, so the two cannot disagree. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>
#include "buf.h"
#include "export_metrics.h"

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

static double num(const json_t *o, const char *key, bool *ok)
{
	const json_t *v = json_object_get(o, key);

	*ok = json_is_number(v);
	return *ok ? json_number_value(v) : 0;
}

static void value_line(struct qp_buf *b, const char *name, const json_t *row, const char *extra_key,
		       const char *extra_val, double v)
{
	char pid[24];
	bool ok;

	snprintf(pid, sizeof(pid), "%.0f", num(row, "pid", &ok));
	qp_buf_printf(b, "%s{", name);
	label(b, "pid", pid, true);
	label(b, "name", json_string_value(json_object_get(row, "name")), false);
	if (json_object_get(row, "parent"))
		label(b, "parent", json_string_value(json_object_get(row, "parent")), false);
	if (extra_key)
		label(b, extra_key, extra_val, false);
	if (isfinite(v))
		qp_buf_printf(b, "} %.17g\n", v);
	else
		qp_buf_puts(b, "} NaN\n");
}

int qp_export_metrics(const json_t *status, const json_t *scopes, const json_t *values, struct qp_buf *out)
{
	static const struct { const char *key, *q; } quantiles[] = {
		{ "p50_ns", "0.5" }, { "p90_ns", "0.9" }, { "p99_ns", "0.99" }, { "p999_ns", "0.999" },
	};
	const json_t *arr, *row, *o, *v;
	const char *key;
	size_t i, k;
	bool ok;

	qp_buf_puts(out, "# HELP qprof_up 1 while qprofd answers.\n# TYPE qprof_up gauge\nqprof_up 1\n");
	qp_buf_puts(out, "# HELP qprof_scope_duration_seconds Latency of qprof scopes and spans since attach.\n"
			 "# TYPE qprof_scope_duration_seconds summary\n");
	arr = json_object_get(scopes, "scopes");
	json_array_foreach(arr, i, row) {
		const char *kind = json_string_value(json_object_get(row, "kind"));

		if (!kind || (strcmp(kind, "scope") && strcmp(kind, "span")))
			continue;
		for (k = 0; k < sizeof(quantiles) / sizeof(quantiles[0]); k++)
			value_line(out, "qprof_scope_duration_seconds", row, "quantile", quantiles[k].q,
				   num(row, quantiles[k].key, &ok) / 1e9);
		value_line(out, "qprof_scope_duration_seconds_sum", row, NULL, NULL,
			   num(row, "total_ns", &ok) / 1e9);
		value_line(out, "qprof_scope_duration_seconds_count", row, NULL, NULL, num(row, "count", &ok));
	}
	qp_buf_puts(out, "# HELP qprof_events_total Hits of QPROF_MARK sites and of counted USDT probes.\n"
			 "# TYPE qprof_events_total counter\n");
	json_array_foreach(arr, i, row) {
		const char *kind = json_string_value(json_object_get(row, "kind"));

		if (kind && (!strcmp(kind, "mark") || !strcmp(kind, "probe")))
			value_line(out, "qprof_events_total", row, "kind", kind, num(row, "count", &ok));
	}
	qp_buf_puts(out, "# HELP qprof_value QPROF_VALUE statistics since attach.\n# TYPE qprof_value gauge\n");
	arr = json_object_get(values, "values");
	json_array_foreach(arr, i, row) {
		static const char *const stats[] = { "min", "max", "mean", "last", "p50", "p99" };

		for (k = 0; k < sizeof(stats) / sizeof(stats[0]); k++) {
			double x = num(row, stats[k], &ok);

			if (ok)
				value_line(out, "qprof_value", row, "stat", stats[k], x);
		}
		value_line(out, "qprof_value", row, "stat", "count", num(row, "count", &ok));
	}
	/* daemon counters */
	o = json_object_get(status, "cpu");
	qp_buf_printf(out, "# TYPE qprof_cpu_samples_total counter\nqprof_cpu_samples_total %.0f\n",
		      num(o, "samples", &ok));
	qp_buf_printf(out, "# TYPE qprof_cpu_samples_lost_total counter\nqprof_cpu_samples_lost_total %.0f\n",
		      num(o, "lost", &ok));
	o = json_object_get(status, "logs");
	qp_buf_printf(out, "# TYPE qprof_logs_received_total counter\nqprof_logs_received_total %.0f\n",
		      num(o, "received", &ok));
	qp_buf_printf(out, "# TYPE qprof_logs_lost_total counter\nqprof_logs_lost_total %.0f\n",
		      num(o, "lost", &ok));
	o = json_object_get(json_object_get(status, "scopes"), "dropped_by_reason");
	qp_buf_puts(out, "# HELP qprof_scopes_dropped_total Scope events that could not be measured.\n"
			 "# TYPE qprof_scopes_dropped_total counter\n");
	json_object_foreach((json_t *)o, key, v) {
		qp_buf_puts(out, "qprof_scopes_dropped_total{");
		label(out, "reason", key, true);
		qp_buf_printf(out, "} %.0f\n", json_is_number(v) ? json_number_value(v) : 0);
	}
	qp_buf_puts(out, "# TYPE qprof_targets gauge\n");
	{
		unsigned int running = 0, exited = 0;

		json_array_foreach(json_object_get(status, "targets"), i, row) {
			const char *st = json_string_value(json_object_get(row, "state"));

			if (st && !strcmp(st, "running"))
				running++;
			else
				exited++;
		}
		qp_buf_printf(out, "qprof_targets{state=\"running\"} %u\nqprof_targets{state=\"exited\"} %u\n",
			      running, exited);
	}
	return out->failed ? -12 : 0;
}
