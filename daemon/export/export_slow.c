/* export_slow.c - see export_slow.h. */
#include "export_slow.h"

static void wait_json(struct qp_json *j, const struct qp_slow_wait *w)
{
	size_t i;

	qp_json_obj_begin(j);
	qp_json_kv_u64(j, "at_ns", w->at_ns);
	qp_json_kv_u64(j, "ns", w->ns);
	qp_json_kv_u64(j, "runnable_ns", w->runq_ns);
	qp_json_kv_str(j, "reason", w->reason);
	qp_json_key(j, "stack");
	qp_json_arr_begin(j);
	for (i = 0; i < w->nframes; i++)
		qp_json_str(j, w->frames[i]);
	qp_json_arr_end(j);
	qp_json_obj_end(j);
}

static void item_json(struct qp_json *j, const struct qp_slow_item *it)
{
	size_t i;

	qp_json_obj_begin(j);
	qp_json_kv_u64(j, "tid", it->tid);
	qp_json_kv_str(j, "thread", it->thread);
	qp_json_kv_str(j, "parent", it->parent);
	qp_json_kv_u64(j, "start_ns", it->start_ns);
	qp_json_kv_u64(j, "dur_ns", it->dur_ns);
	qp_json_kv_u64(j, "on_cpu_ns", it->on_cpu_ns);
	qp_json_kv_u64(j, "off_cpu_ns", it->off_cpu_ns);
	qp_json_kv_u64(j, "runnable_ns", it->runq_ns);
	qp_json_kv_u64(j, "blocked_ns", it->blocked_ns);
	if (it->kernel_known) {
		qp_json_kv_u64(j, "irq_ns", it->irq_ns);
		qp_json_kv_u64(j, "migrations", it->migrations);
		qp_json_kv_u64(j, "page_faults", it->page_faults);
	} else {	/* the ring collector's instances */
		qp_json_kv_null(j, "irq_ns");
		qp_json_kv_null(j, "migrations");
		qp_json_kv_null(j, "page_faults");
	}
	qp_json_kv_bool(j, "partial", it->partial);
	qp_json_key(j, "off_cpu");
	qp_json_arr_begin(j);
	for (i = 0; i < it->nwaits; i++)
		wait_json(j, &it->waits[i]);
	qp_json_arr_end(j);
	qp_json_kv_u64(j, "off_cpu_more", it->waits_more);
	qp_json_kv_u64(j, "sample_count", it->samples);
	qp_json_key(j, "samples");
	qp_json_arr_begin(j);
	for (i = 0; i < it->nfolded; i++) {
		qp_json_obj_begin(j);
		qp_json_kv_str(j, "stack", it->folded[i].stack);
		qp_json_kv_u64(j, "count", it->folded[i].count);
		qp_json_obj_end(j);
	}
	qp_json_arr_end(j);
	qp_json_obj_end(j);
}

void qp_export_slow_json(const struct qp_slow_model *m, struct qp_json *j)
{
	size_t i;

	qp_json_obj_begin(j);
	qp_json_kv_i64(j, "pid", m->pid);
	qp_json_kv_str(j, "name", m->name);
	qp_json_kv_u64(j, "kept", m->kept);
	qp_json_kv_bool(j, "complete", m->window_complete);
	qp_json_key(j, "instances");
	qp_json_arr_begin(j);
	for (i = 0; i < m->n; i++)
		item_json(j, &m->items[i]);
	qp_json_arr_end(j);
	qp_json_obj_end(j);
}
