/* export_heap.c - see export_heap.h. */
#include "export_heap.h"

static const char *const counter_names[HEAP_CNT__MAX] = {
	[HEAP_CNT_CALLS] = "calls",
	[HEAP_CNT_SAMPLED] = "sampled",
	[HEAP_CNT_FREES] = "sampled_freed",
	[HEAP_CNT_LIVE_FULL] = "live_full",
	[HEAP_CNT_STACK_FULL] = "stacks_full",
	[HEAP_CNT_MISSED_RETURN] = "missed_returns",
	[HEAP_CNT_NO_THREAD] = "no_thread_state",
	[HEAP_CNT_NESTED] = "nested_calls",
	[HEAP_CNT_GROWTH] = "growth_events",
	[HEAP_CNT_GROWTH_LOST] = "growth_lost",
};

void qp_export_heap_target_json(const struct qp_heap_status *st, struct qp_json *j)
{
	qp_json_obj_begin(j);
	qp_json_kv_i64(j, "pid", st->pid);
	qp_json_kv_bool(j, "tracing", st->tracing);
	qp_json_kv_u64(j, "functions", st->functions);
	qp_json_kv_str(j, "traced", st->traced);
	if (st->note[0])
		qp_json_kv_str(j, "note", st->note);
	else
		qp_json_kv_null(j, "note");
	qp_json_obj_end(j);
}

void qp_export_heap_status_json(const struct qp_heap_status_model *m, struct qp_json *j)
{
	size_t i;

	qp_json_key(j, "heap");
	qp_json_obj_begin(j);
	qp_json_kv_bool(j, "available", m->available);
	if (m->available || !m->error)
		qp_json_kv_null(j, "error");
	else
		qp_json_kv_str(j, "error", m->error);
	qp_json_kv_bool(j, "by_default", m->by_default);
	qp_json_kv_u64(j, "interval_bytes", m->interval);
	qp_json_key(j, "counters");
	qp_json_obj_begin(j);
	for (i = 0; i < m->ncounters && i < HEAP_CNT__MAX; i++)
		qp_json_kv_u64(j, counter_names[i], m->counters[i]);
	qp_json_obj_end(j);
	qp_json_key(j, "targets");
	qp_json_arr_begin(j);
	for (i = 0; i < m->n; i++)
		qp_export_heap_target_json(&m->targets[i], j);
	qp_json_arr_end(j);
	qp_json_obj_end(j);
}
