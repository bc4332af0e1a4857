/* export_slow.c - see export_slow.h. Every list of the answer (frames,
 * waits, folded samples, instances) goes through one keyed-array writer. */
#include "export_slow.h"

typedef void (*elem_json_fn)(struct qp_json *j, const void *elem);

/* "KEY": [F(elem) for each of the N elements of SIZE bytes at V] */
static void list_json(struct qp_json *j, const char *key, const void *v, size_t n, size_t size, elem_json_fn f)
{
	size_t i;

	qp_json_key(j, key);
	qp_json_arr_begin(j);
	for (i = 0; i < n; i++)
		f(j, (const char *)v + i * size);
	qp_json_arr_end(j);
}

static void frame_json(struct qp_json *j, const void *elem)
{
	qp_json_str(j, *(const char *const *)elem);
}

static void wait_json(struct qp_json *j, const void *elem)
{
	const struct qp_slow_wait *w = elem;

	qp_json_obj_begin(j);
	qp_json_kv_u64(j, "at_ns", w->at_ns);
	qp_json_kv_u64(j, "ns", w->ns);
	qp_json_kv_u64(j, "runnable_ns", w->runq_ns);
	qp_json_kv_str(j, "reason", w->reason);
	list_json(j, "stack", w->frames, w->nframes, sizeof(*w->frames), frame_json);
	qp_json_obj_end(j);
}

static void folded_json(struct qp_json *j, const void *elem)
{
	const struct qp_slow_folded *f = elem;

	qp_json_obj_begin(j);
	qp_json_kv_str(j, "stack", f->stack);
	qp_json_kv_u64(j, "count", f->count);
	qp_json_obj_end(j);
}

static void item_json(struct qp_json *j, const void *elem)
{
	const struct qp_slow_item *it = elem;

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
	} else {	/* a ring instance without the kernel event history (none could be kept) */
		qp_json_kv_null(j, "irq_ns");
		qp_json_kv_null(j, "migrations");
		qp_json_kv_null(j, "page_faults");
	}
	qp_json_kv_bool(j, "partial", it->partial);
	list_json(j, "off_cpu", it->waits, it->nwaits, sizeof(*it->waits), wait_json);
	qp_json_kv_u64(j, "off_cpu_more", it->waits_more);
	qp_json_kv_u64(j, "sample_count", it->samples);
	list_json(j, "samples", it->folded, it->nfolded, sizeof(*it->folded), folded_json);
	qp_json_obj_end(j);
}

void qp_export_slow_json(const struct qp_slow_model *m, struct qp_json *j)
{
	qp_json_obj_begin(j);
	qp_json_kv_i64(j, "pid", m->pid);
	qp_json_kv_str(j, "name", m->name);
	qp_json_kv_u64(j, "kept", m->kept);
	qp_json_kv_bool(j, "complete", m->window_complete);
	list_json(j, "instances", m->items, m->n, sizeof(*m->items), item_json);
	qp_json_obj_end(j);
}
