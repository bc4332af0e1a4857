/* export_json.c - see export_json.h: the scope, value and status models as
 * the JSON the API has always answered (the same keys in the same order);
 * the status counters from the tables of counters.h (export_counters.h). */
#include <math.h>
#include "export_counters.h"
#include "export_json.h"
#include "common/util.h"

void qp_export_figures_json(struct qp_json *j, const char *const *keys, const double *vals, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (vals)
			qp_json_kv_double(j, keys[i], vals[i]);
		else
			qp_json_kv_null(j, keys[i]);
	}
}

/* Marks and counted probes: a count, no durations, no parent. */
static void no_durations(struct qp_json *j)
{
	static const char *const keys[] = { "total_ns", "mean_ns", "min_ns", "max_ns", "p50_ns",
					    "p90_ns", "p99_ns", "p999_ns", "parent" };

	qp_export_figures_json(j, keys, NULL, QP_ARRAY_SIZE(keys));
}

static void location(struct qp_json *j, const struct qp_scope_item *it)
{
	if (it->located) {
		qp_json_kv_str(j, "file", it->file);
		qp_json_kv_u64(j, "line", it->line);
		qp_json_kv_str(j, "function", it->function);
	} else {
		qp_json_kv_null(j, "file");
		qp_json_kv_null(j, "line");
		qp_json_kv_null(j, "function");
	}
}

/* Kernel events while the row was its thread's innermost scope; null
 * where they are not traced (ring collector, or no kernel events). */
static void kernel_figures(struct qp_json *j, const struct qp_scope_item *it)
{
	static const char *const keys[] = { "off_cpu_ns", "voluntary_switches", "involuntary_switches",
					    "migrations", "page_faults", "irq_ns" };
	const uint64_t v[] = { it->kernel.off_cpu_ns, it->kernel.voluntary, it->kernel.involuntary,
			       it->kernel.migrations, it->kernel.page_faults, it->kernel.irq_ns };
	size_t i;

	for (i = 0; i < QP_ARRAY_SIZE(keys); i++) {
		if (it->has_kernel)
			qp_json_kv_u64(j, keys[i], v[i]);
		else
			qp_json_kv_null(j, keys[i]);
	}
}

static void scope_item(struct qp_json *j, const struct qp_scope_item *it)
{
	qp_json_obj_begin(j);
	qp_json_kv_i64(j, "pid", it->pid);
	qp_json_kv_str(j, "kind", it->kind);
	qp_json_kv_str(j, "name", it->name);
	if (it->site_kind)
		qp_json_kv_str(j, "site_kind", it->site_kind);
	if (it->begin || it->end) {
		qp_json_kv_str(j, "begin", it->begin);
		qp_json_kv_str(j, "end", it->end);
	}
	location(j, it);
	qp_json_kv_u64(j, "count", it->count);
	if (it->shape == QP_ITEM_TIMED) {
		qp_json_kv_u64(j, "total_ns", it->total_ns);
		qp_json_kv_double(j, "mean_ns", it->mean_ns);
		qp_json_kv_u64(j, "min_ns", it->min_ns);
		qp_json_kv_u64(j, "max_ns", it->max_ns);
		qp_json_kv_double(j, "p50_ns", it->p50_ns);
		qp_json_kv_double(j, "p90_ns", it->p90_ns);
		qp_json_kv_double(j, "p99_ns", it->p99_ns);
		qp_json_kv_double(j, "p999_ns", it->p999_ns);
		qp_json_kv_u64(j, "calibration_ns", it->calibration_ns);
		qp_json_kv_str(j, "parent", it->parent);
		kernel_figures(j, it);
	} else {
		qp_json_kv_double(j, "rate_per_s", it->rate_per_s);
		no_durations(j);
	}
	qp_json_obj_end(j);
}

void qp_export_scopes_json(const struct qp_scope_model *m, struct qp_json *j)
{
	size_t i;

	qp_json_obj_begin(j);
	qp_json_key(j, "scopes");
	qp_json_arr_begin(j);
	for (i = 0; i < m->n; i++)
		scope_item(j, &m->items[i]);
	qp_json_arr_end(j);
	qp_json_obj_end(j);
}

void qp_export_values_json(const struct qp_value_model *m, struct qp_json *j)
{
	static const char *const fig_keys[] = { "min", "max", "mean", "p50", "p99" };
	size_t i;

	qp_json_obj_begin(j);
	qp_json_key(j, "values");
	qp_json_arr_begin(j);
	for (i = 0; i < m->n; i++) {
		const struct qp_value_item *v = &m->items[i];

		qp_json_obj_begin(j);
		qp_json_kv_i64(j, "pid", v->pid);
		qp_json_kv_str(j, "name", v->name);
		if (v->located) {
			qp_json_kv_str(j, "file", v->file);
			qp_json_kv_u64(j, "line", v->line);
		} else {
			qp_json_kv_null(j, "file");
			qp_json_kv_null(j, "line");
		}
		const double figs[] = { v->min, v->max, v->mean, v->p50, v->p99 };

		qp_json_kv_u64(j, "count", v->count);
		qp_export_figures_json(j, fig_keys, v->count ? figs : NULL, QP_ARRAY_SIZE(fig_keys));
		qp_json_kv_double(j, "last", v->last); /* null when NaN or infinite */
		qp_json_kv_u64(j, "nan", v->nan);
		qp_json_kv_u64(j, "pos_inf", v->pos_inf);
		qp_json_kv_u64(j, "neg_inf", v->neg_inf);
		qp_json_obj_end(j);
	}
	qp_json_arr_end(j);
	qp_json_obj_end(j);
}

/* ---- the counter groups (export_counters.h) ------------------------------ */

void qp_status_counter_groups(const struct qp_status_model *s, struct qp_counter_group *g)
{
	QP_COUNTER_GROUP(&g[QP_SG_CPU], "cpu", QP_CTR_CPU);
	QP_COUNTER_GROUP(&g[QP_SG_UNWIND], "cpu.unwind", QP_CTR_CPU_UNWIND);
	g[QP_SG_UNWIND].present = s->cpu.running;
	QP_COUNTER_GROUP(&g[QP_SG_OFFCPU], "offcpu", QP_CTR_OFFCPU);
	QP_COUNTER_GROUP(&g[QP_SG_SLOW], "offcpu.slow", QP_CTR_OFFCPU_SLOW);
	QP_COUNTER_GROUP(&g[QP_SG_SCOPES], "scopes", QP_CTR_SCOPES);
	QP_COUNTER_GROUP(&g[QP_SG_DROPS], "scopes.dropped_by_reason", QP_CTR_SCOPE_DROPS);
	QP_COUNTER_GROUP(&g[QP_SG_MINMAX], "scopes", QP_CTR_SCOPES_MINMAX);
	QP_COUNTER_GROUP(&g[QP_SG_POLL], "scopes.poll", QP_CTR_SCOPES_POLL);
	QP_COUNTER_GROUP(&g[QP_SG_SPANS], "scopes", QP_CTR_SCOPES_SPANS);
	QP_COUNTER_GROUP(&g[QP_SG_LOGS], "logs", QP_CTR_LOGS);
	QP_COUNTER_GROUP(&g[QP_SG_VALUES], "values", QP_CTR_VALUES);
	QP_COUNTER_GROUP(&g[QP_SG_MARKS], "marks", QP_CTR_MARKS);
	QP_COUNTER_GROUP(&g[QP_SG_TRACE], "trace", QP_CTR_TRACE);
	QP_COUNTER_GROUP(&g[QP_SG_CALIB], "calibration", QP_CTR_CALIBRATION);
	QP_COUNTER_GROUP(&g[QP_SG_RING], "ring", QP_CTR_RING);
}

void qp_lifecycle_counter_group(const struct qp_lifecycle_figures *lc, struct qp_counter_group *g)
{
	static const struct qp_lifecycle_figures zero;
	const struct qp_lifecycle_figures *s = lc ? lc : &zero;

	QP_COUNTER_GROUP(g, "lifecycle", QP_CTR_LIFECYCLE);
	g->present = lc != NULL;
}

static uint64_t json_div(enum qp_counter_unit u)
{
	return u == QP_CU_NS_US ? 1000 : u == QP_CU_NS_MS ? 1000000 : 1;
}

double qp_counter_json_value(const struct qp_counter_group *g, size_t i)
{
	const struct qp_counter_def *d = &g->defs[i];
	const struct qp_counter_val *v = &g->v[i];

	if (d->kind == QP_CK_REAL)
		return v->d;
	if (d->kind == QP_CK_FLAG)
		return v->u != 0;
	if (d->kind == QP_CK_OPT && !v->u)
		return NAN;
	return (double)(v->u / json_div(d->unit));
}

double qp_counter_metric_value(const struct qp_counter_group *g, size_t i)
{
	const struct qp_counter_def *d = &g->defs[i];
	const struct qp_counter_val *v = &g->v[i];
	double x = d->kind == QP_CK_REAL ? v->d : d->kind == QP_CK_FLAG ? (double)(v->u != 0) : (double)v->u;
	bool ns = d->unit == QP_CU_NS || d->unit == QP_CU_NS_US || d->unit == QP_CU_NS_MS;

	return ns ? x / 1e9 : x;
}

void qp_counter_json(struct qp_json *j, const struct qp_counter_group *g, size_t i)
{
	const struct qp_counter_def *d = &g->defs[i];
	const struct qp_counter_val *v = &g->v[i];

	switch (d->kind) {
	case QP_CK_FLAG:
		qp_json_kv_bool(j, d->key, v->u != 0);
		break;
	case QP_CK_REAL:
		qp_json_kv_double(j, d->key, v->d);
		break;
	case QP_CK_OPT:
		if (!v->u) {
			qp_json_kv_null(j, d->key);
			break;
		}
		/* fall through */
	default:
		qp_json_kv_u64(j, d->key, v->u / json_div(d->unit));
	}
}

void qp_counters_json(struct qp_json *j, const struct qp_counter_group *g, size_t from, size_t to)
{
	size_t i;

	for (i = from; i < to && i < g->n; i++)
		qp_counter_json(j, g, i);
}

/* ---- the status figures ---------------------------------------------------- */

/* KEY: {every row of G}. */
static void group_object(struct qp_json *j, const char *key, const struct qp_counter_group *g)
{
	qp_json_key(j, key);
	qp_json_obj_begin(j);
	qp_counters_json(j, g, 0, g->n);
	qp_json_obj_end(j);
}

static void cpu_json(const struct qp_status_model *m, const struct qp_counter_group *g, struct qp_json *j)
{
	qp_json_key(j, "cpu");
	qp_json_obj_begin(j);
	qp_counters_json(j, &g[QP_SG_CPU], 0, g[QP_SG_CPU].n);
	if (!m->cpu.running) {
		qp_json_kv_bool(j, "starting", m->cpu.starting);
		qp_json_kv_str(j, "error", m->cpu.error);
	} else {
		qp_json_key(j, "unwind");
		qp_json_obj_begin(j);
		qp_json_kv_str(j, "mode", m->cpu.unwind.mode ? m->cpu.unwind.mode : "");
		qp_counters_json(j, &g[QP_SG_UNWIND], 0, g[QP_SG_UNWIND].n);
		qp_export_cfi_kernel(j, &m->cpu.unwind);
		qp_json_obj_end(j);
	}
	qp_json_obj_end(j);
}

static void offcpu_json(const struct qp_status_model *m, const struct qp_counter_group *g, struct qp_json *j)
{
	qp_json_key(j, "offcpu");
	qp_json_obj_begin(j);
	qp_counters_json(j, &g[QP_SG_OFFCPU], 0, g[QP_SG_OFFCPU].n);
	group_object(j, "slow", &g[QP_SG_SLOW]);
	if (!m->offcpu.running)
		qp_json_kv_str(j, "error", m->offcpu.error);
	qp_json_obj_end(j);
}

static void scopes_json(const struct qp_counter_group *g, struct qp_json *j)
{
	qp_json_key(j, "scopes");
	qp_json_obj_begin(j);
	qp_counters_json(j, &g[QP_SG_SCOPES], 0, g[QP_SG_SCOPES].n);
	group_object(j, "dropped_by_reason", &g[QP_SG_DROPS]);
	qp_counters_json(j, &g[QP_SG_MINMAX], 0, g[QP_SG_MINMAX].n);
	group_object(j, "poll", &g[QP_SG_POLL]);
	qp_counters_json(j, &g[QP_SG_SPANS], 0, g[QP_SG_SPANS].n);
	qp_json_obj_end(j);
}

void qp_export_status_figures_json(const struct qp_status_model *m, struct qp_json *j)
{
	struct qp_counter_group g[QP_SG__N];

	qp_status_counter_groups(m, g);
	cpu_json(m, g, j);
	offcpu_json(m, g, j);
	scopes_json(g, j);
	group_object(j, "logs", &g[QP_SG_LOGS]);
	group_object(j, "values", &g[QP_SG_VALUES]);
	group_object(j, "marks", &g[QP_SG_MARKS]);
	group_object(j, "trace", &g[QP_SG_TRACE]);
	qp_json_key(j, "calibration");
	qp_json_obj_begin(j);
	qp_counters_json(j, &g[QP_SG_CALIB], 0, g[QP_SG_CALIB].n);
	if (!m->calib.done)
		qp_json_kv_str(j, "error", m->calib.error);
	qp_json_obj_end(j);
	/* the ring collector's own counters (per target ones are the targets') */
	group_object(j, "ring", &g[QP_SG_RING]);
}
