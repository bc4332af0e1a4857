/* export_targets.c - see export_targets.h: the targets model as the JSON
 * the API has always answered (the same keys in the same order; the
 * counters from the tables of counters.h). */
#include "export_counters.h"
#include "export_targets.h"

static const char *target_state(enum qp_target_state s)
{
	return s == QP_TARGET_RUNNING ? "running" : "exited";
}

static const char *binary_state(enum qp_binary_state s)
{
	return s == QP_BINARY_CHANGED ? "changed" : s == QP_BINARY_ATTACHED ? "attached" : "unprobed";
}

/* "modules": the files a target probed, with when (target_libs.c). */
static void modules(const struct qp_target_view *t, struct qp_json *j)
{
	size_t i;

	qp_json_key(j, "modules");
	qp_json_arr_begin(j);
	for (i = 0; i < t->nmodules; i++) {
		const struct qp_module_view *m = &t->modules[i];

		qp_json_obj_begin(j);
		qp_json_kv_str(j, "path", m->path);
		qp_json_kv_str(j, "state", m->state);
		qp_json_kv_u64(j, "probes", m->probes);
		if (m->attached_ms)
			qp_json_kv_u64(j, "attached_ms", m->attached_ms);
		else
			qp_json_kv_null(j, "attached_ms");
		if (m->detached_ms)
			qp_json_kv_u64(j, "detached_ms", m->detached_ms);
		else
			qp_json_kv_null(j, "detached_ms");
		qp_json_kv_u64(j, "loads", m->loads);
		if (m->error)
			qp_json_kv_str(j, "error", m->error);
		qp_json_obj_end(j);
	}
	qp_json_arr_end(j);
}

/* The rings one by one. */
static void ring_list(const struct qp_ring_status *st, struct qp_json *j)
{
	size_t i;

	qp_json_key(j, "list");
	qp_json_arr_begin(j);
	for (i = 0; i < st->nlist; i++) {
		const struct qp_ring_one *r = &st->list[i];

		qp_json_obj_begin(j);
		qp_json_kv_u64(j, "tid", r->tid);
		qp_json_kv_u64(j, "records", r->nrec);
		qp_json_kv_u64(j, "bytes", r->bytes);
		qp_json_kv_u64(j, "head", r->head);
		qp_json_kv_u64(j, "base", r->base);
		qp_json_kv_u64(j, "read", r->read);
		qp_json_kv_u64(j, "lost", r->lost);
		qp_json_kv_bool(j, "unreadable", r->unreadable);
		qp_json_kv_bool(j, "start_unknown", r->start_unknown);
		qp_json_obj_end(j);
	}
	qp_json_arr_end(j);
}

/* "ring": the counters of counters.h's QP_CTR_TARGET_RING, then the rings. */
static void ring_json(const struct qp_target_view *s, struct qp_json *j)
{
	struct qp_counter_group g;

	qp_json_key(j, "ring");
	qp_json_obj_begin(j);
	QP_COUNTER_GROUP(&g, "ring", QP_CTR_TARGET_RING);
	qp_counters_json(j, &g, 0, g.n);
	QP_COUNTER_GROUP(&g, "ring", QP_CTR_TARGET_RING_ACCOUNTING);
	qp_counters_json(j, &g, 0, g.n);
	qp_json_kv_bool(j, "lost_estimated", s->ring_status.est.estimated || s->ring_status.c.start_unknown);
	ring_list(&s->ring_status, j);
	qp_json_obj_end(j);
}

void qp_export_target_json(const struct qp_target_view *t, struct qp_json *j)
{
	qp_json_obj_begin(j);
	qp_export_target_keys(t, j);
	qp_json_obj_end(j);
}

void qp_export_target_keys(const struct qp_target_view *t, struct qp_json *j)
{
	qp_json_kv_i64(j, "pid", t->pid);
	qp_json_kv_str(j, "comm", t->comm);
	qp_json_kv_str(j, "exe", t->exe);
	qp_json_kv_str(j, "state", target_state(t->state));
	qp_json_kv_u64(j, "attached_ms", t->attached_ms);
	qp_json_kv_u64(j, "probes", t->probes);
	qp_json_kv_bool(j, "cpu_only", t->cpu_only);
	if (t->state == QP_TARGET_EXITED)
		qp_json_kv_u64(j, "exited_ms", t->exited_ms);
	else
		qp_json_kv_null(j, "exited_ms");
	if (t->state == QP_TARGET_EXITED && t->reported_ms)
		qp_json_kv_u64(j, "reported_ms", t->reported_ms);
	else
		qp_json_kv_null(j, "reported_ms");
	if (t->state == QP_TARGET_EXITED && t->released_ms)
		qp_json_kv_u64(j, "released_ms", t->released_ms);
	else
		qp_json_kv_null(j, "released_ms");
	qp_json_kv_str(j, "attached_by", t->by_binary ? "binary" : "pid");
	qp_json_kv_u64(j, "sites_refused", t->sites_refused);
	qp_json_kv_u64(j, "files_unopened", t->files_unopened);
	qp_json_kv_str(j, "collector", t->ring ? "ring" : "bpf");
	qp_json_kv_str(j, "collector_reason", t->collector_reason);
	if (t->collector_note[0])
		qp_json_kv_str(j, "collector_note", t->collector_note);
	else
		qp_json_kv_null(j, "collector_note");
	if (t->has_ring_status)
		ring_json(t, j);
	modules(t, j);
	qp_json_kv_u64(j, "libs_loaded", t->libs_loaded);
	qp_json_kv_u64(j, "libs_unloaded", t->libs_unloaded);
	qp_json_kv_u64(j, "libs_without_markers", t->libs_without_markers);
	qp_json_kv_u64(j, "libs_refused", t->libs_refused);
	qp_json_kv_u64(j, "libs_probed_late", t->libs_probed_late);
	qp_json_kv_u64(j, "sites_reused", t->sites_reused);
}

void qp_export_binary_json(const struct qp_binary_view *b, struct qp_json *j)
{
	size_t i;

	qp_json_obj_begin(j);
	qp_json_kv_str(j, "binary", b->path);
	qp_json_kv_u64(j, "probes", b->probes);
	qp_json_kv_u64(j, "attached_ms", b->attached_ms);
	qp_json_kv_str(j, "state", binary_state(b->state));
	/* every_process: one set of links catches each process from its start;
	 * per_process (no fanotify): each process gets links once adopted */
	qp_json_kv_str(j, "mode", b->per_process ? "per_process" : "every_process");
	qp_json_kv_str(j, "collector", b->ring ? "ring" : "bpf");
	qp_json_kv_str(j, "collector_reason", b->collector_reason);
	if (b->collector_note[0])
		qp_json_kv_str(j, "collector_note", b->collector_note);
	else
		qp_json_kv_null(j, "collector_note");
	qp_json_kv_u64(j, "versions_replaced", b->versions_replaced);
	qp_json_kv_u64(j, "old_versions_running", b->old_versions_running);
	qp_json_kv_u64(j, "sites_refused", b->sites_refused);
	qp_json_kv_u64(j, "processes_refused", b->processes_refused);
	qp_json_key(j, "pids");
	qp_json_arr_begin(j);
	for (i = 0; i < b->npids; i++)
		qp_json_i64(j, b->pids[i]);
	qp_json_arr_end(j);
	qp_json_obj_end(j);
}

static void target_list(const struct qp_targets_view *v, struct qp_json *j)
{
	size_t i;

	qp_json_key(j, "targets");
	qp_json_arr_begin(j);
	for (i = 0; i < v->ntargets; i++)
		qp_export_target_json(&v->targets[i], j);
	qp_json_arr_end(j);
}

void qp_export_targets_json(const struct qp_targets_view *v, struct qp_json *j)
{
	qp_json_obj_begin(j);
	target_list(v, j);
	qp_json_obj_end(j);
}

static void lifecycle(const struct qp_targets_view *v, struct qp_json *j)
{
	struct qp_counter_group g;

	qp_json_key(j, "lifecycle");
	if (!v->has_lifecycle) {
		qp_json_null(j);
		return;
	}
	qp_lifecycle_counter_group(&v->lifecycle, &g);
	qp_json_obj_begin(j);
	qp_counters_json(j, &g, 0, g.n);
	qp_json_obj_end(j);
}

void qp_export_status_targets_json(const struct qp_targets_view *v, struct qp_json *j)
{
	size_t i;

	target_list(v, j);
	qp_json_key(j, "binaries");
	qp_json_arr_begin(j);
	for (i = 0; i < v->nbinaries; i++)
		qp_export_binary_json(&v->binaries[i], j);
	qp_json_arr_end(j);
	qp_json_kv_u64(j, "exited_targets_forgotten", v->exited_forgotten);
	lifecycle(v, j);
}
