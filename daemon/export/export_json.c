/* export_json.c - see export_json.h: the scope, value and status models as
 * the JSON the API has always answered (the same keys in the same order). */
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

void qp_export_status_figures_json(const struct qp_status_model *m, struct qp_json *j)
{
	const struct qp_scope_drops *d = &m->scopes.drops;

	qp_json_key(j, "cpu");
	qp_json_obj_begin(j);
	qp_json_kv_bool(j, "running", m->cpu.running);
	qp_json_kv_u64(j, "frequency_hz", m->cpu.frequency_hz);
	qp_json_kv_u64(j, "samples", m->cpu.samples);
	qp_json_kv_u64(j, "lost", m->cpu.lost);
	qp_json_kv_u64(j, "aged", m->cpu.aged);
	qp_json_kv_u64(j, "table_bytes", m->cpu.table_bytes);
	qp_json_kv_bool(j, "all", m->cpu.all);
	qp_json_kv_u64(j, "cpus", m->cpu.cpus);
	if (!m->cpu.running) {
		qp_json_kv_str(j, "error", m->cpu.error);
	} else {
		const struct qp_cpu_unwind_figures *u = &m->cpu.unwind;

		qp_json_key(j, "unwind");
		qp_json_obj_begin(j);
		qp_json_kv_str(j, "mode", u->mode ? u->mode : "");
		qp_json_kv_u64(j, "copied", u->copied);
		qp_json_kv_u64(j, "copy_fail", u->copy_fail);
		qp_json_kv_u64(j, "copy_short", u->copy_short);
		qp_json_kv_u64(j, "dwarf", u->dwarf);
		qp_json_kv_u64(j, "fp", u->fp);
		qp_json_kv_u64(j, "complete", u->complete);
		qp_json_kv_u64(j, "partial", u->partial);
		qp_json_kv_u64(j, "truncated", u->truncated);
		qp_json_kv_u64(j, "loops", u->loops);
		qp_json_kv_u64(j, "no_module", u->no_module);
		qp_json_kv_u64(j, "refreshes", u->refreshes);
		qp_json_kv_u64(j, "errors", u->errors);
		qp_json_kv_u64(j, "deferred", u->deferred);
		qp_json_kv_u64(j, "fast", u->fast);
		qp_json_kv_u64(j, "slow", u->slow);
		qp_json_kv_u64(j, "cache_resets", u->cache_resets);
		qp_json_obj_end(j);
	}
	qp_json_obj_end(j);
	qp_json_key(j, "offcpu");
	qp_json_obj_begin(j);
	qp_json_kv_bool(j, "running", m->offcpu.running);
	qp_json_kv_u64(j, "intervals", m->offcpu.intervals);
	qp_json_kv_u64(j, "lost", m->offcpu.lost);
	qp_json_kv_u64(j, "no_state", m->offcpu.no_state);
	qp_json_kv_u64(j, "kstats_full", m->offcpu.kstats_full);
	qp_json_key(j, "slow");
	qp_json_obj_begin(j);
	qp_json_kv_u64(j, "records", m->offcpu.slow.records);
	qp_json_kv_u64(j, "lost", m->offcpu.slow_lost);
	qp_json_kv_u64(j, "pending_lost", m->offcpu.slow.pending_lost);
	qp_json_kv_u64(j, "refused", m->offcpu.slow.refused);
	qp_json_kv_u64(j, "partial", m->offcpu.slow.partial);
	qp_json_kv_u64(j, "ring_missed", m->offcpu.slow.ring_missed);
	qp_json_kv_u64(j, "kevents", m->offcpu.slow.kevents);
	qp_json_kv_u64(j, "kevents_lost", m->offcpu.slow.kevents_lost);
	qp_json_kv_u64(j, "received", m->offcpu.slow.received);
	qp_json_kv_u64(j, "windows_open", m->offcpu.slow.windows_open);
	qp_json_kv_u64(j, "window_records", m->offcpu.slow.window_records);
	qp_json_kv_u64(j, "windows_refused", m->offcpu.slow.windows_refused);
	qp_json_obj_end(j);
	if (!m->offcpu.running)
		qp_json_kv_str(j, "error", m->offcpu.error);
	qp_json_obj_end(j);
	qp_json_key(j, "scopes");
	qp_json_obj_begin(j);
	qp_json_kv_u64(j, "sites", m->scopes.sites);
	qp_json_kv_u64(j, "events", m->scopes.events);
	qp_json_kv_u64(j, "dropped", m->scopes.dropped);
	qp_json_key(j, "dropped_by_reason");
	qp_json_obj_begin(j);
	qp_json_kv_u64(j, "exit_without_enter", d->exit_without_enter);
	qp_json_kv_u64(j, "out_of_order", d->out_of_order);
	qp_json_kv_u64(j, "too_deep", d->too_deep);
	qp_json_kv_u64(j, "thread_exit", d->thread_exit);
	qp_json_kv_u64(j, "map_full", d->map_full);
	qp_json_kv_u64(j, "stack_unavailable", d->stack_unavailable);
	qp_json_kv_u64(j, "begin_unended", d->begin_unended);
	qp_json_kv_u64(j, "span_end_without_begin", d->span_end_without_begin);
	qp_json_kv_u64(j, "span_step_without_begin", d->span_step_without_begin);
	qp_json_kv_u64(j, "span_id_reused", d->span_id_reused);
	qp_json_kv_u64(j, "span_table_full", d->span_table_full);
	qp_json_kv_u64(j, "span_abandoned", d->span_abandoned);
	qp_json_kv_u64(j, "ring_lost", d->ring_lost);
	qp_json_obj_end(j);
	qp_json_kv_u64(j, "minmax_inexact", m->scopes.minmax_inexact);
	qp_json_key(j, "poll");
	qp_json_obj_begin(j);
	qp_json_kv_u64(j, "polls", m->scopes.poll.polls);
	qp_json_kv_u64(j, "chunks_read", m->scopes.poll.chunks_read);
	qp_json_kv_u64(j, "full_scans", m->scopes.poll.full_scans);
	qp_json_kv_u64(j, "cpu_us", m->scopes.poll.cpu_ns / 1000);
	qp_json_kv_u64(j, "chunks", m->scopes.poll.chunks);
	qp_json_obj_end(j);
	qp_json_kv_u64(j, "spans_pending", m->scopes.spans_pending);
	qp_json_kv_u64(j, "span_table", m->scopes.span_table);
	qp_json_obj_end(j);
	qp_json_key(j, "logs");
	qp_json_obj_begin(j);
	qp_json_kv_bool(j, "running", m->logs.running);
	qp_json_kv_u64(j, "received", m->logs.received);
	qp_json_kv_u64(j, "lost", m->logs.lost);
	qp_json_kv_u64(j, "oldest_seq", m->logs.oldest_seq);
	qp_json_obj_end(j);
	qp_json_key(j, "values");
	qp_json_obj_begin(j);
	qp_json_kv_u64(j, "lost", m->values_lost);
	qp_json_obj_end(j);
	qp_json_key(j, "marks");
	qp_json_obj_begin(j);
	qp_json_kv_u64(j, "lost", m->marks_lost);
	qp_json_obj_end(j);
	qp_json_key(j, "trace");
	qp_json_obj_begin(j);
	qp_json_kv_bool(j, "running", m->trace.running);
	qp_json_kv_u64(j, "active", m->trace.st.active);
	qp_json_kv_u64(j, "sessions", m->trace.st.sessions);
	qp_json_kv_u64(j, "records", m->trace.st.records);
	qp_json_kv_u64(j, "dropped", m->trace.st.dropped);
	qp_json_kv_u64(j, "lost", m->trace.st.lost);
	qp_json_obj_end(j);
	qp_json_key(j, "calibration");
	qp_json_obj_begin(j);
	qp_json_kv_bool(j, "done", m->calib.done);
	qp_json_kv_u64(j, "correction_ns", m->calib.correction_ns);
	qp_json_kv_u64(j, "samples", m->calib.samples);
	qp_json_kv_u64(j, "p10_ns", m->calib.p10_ns);
	qp_json_kv_u64(j, "p50_ns", m->calib.p50_ns);
	qp_json_kv_u64(j, "p90_ns", m->calib.p90_ns);
	qp_json_kv_u64(j, "mean_ns", m->calib.mean_ns);
	if (!m->calib.done)
		qp_json_kv_str(j, "error", m->calib.error);
	qp_json_obj_end(j);
	/* the ring collector's own counters (per target ones are the targets') */
	qp_json_key(j, "ring");
	qp_json_obj_begin(j);
	qp_json_kv_bool(j, "running", m->ring.running);
	qp_json_kv_bool(j, "default", m->ring.is_default);
	qp_json_kv_u64(j, "announcements", m->ring.announces);
	qp_json_kv_u64(j, "not_target", m->ring.not_target);
	qp_json_kv_u64(j, "bad", m->ring.bad);
	qp_json_kv_u64(j, "refused", m->ring.refused);
	qp_json_kv_u64(j, "lost", m->ring.lost);
	qp_json_kv_u64(j, "dropped_rings", m->ring.dropped_rings);
	qp_json_kv_u64(j, "thread_exits", m->ring.exits);
	qp_json_kv_u64(j, "thread_exits_lost", m->ring.exits_lost);
	qp_json_kv_u64(j, "thread_exit_heads_unread", m->ring.exit_heads_unread);
	qp_json_kv_bool(j, "exit_hook", m->ring.exit_hook);
	if (m->ring.ring_records)
		qp_json_kv_u64(j, "ring_records", m->ring.ring_records);
	else
		qp_json_kv_null(j, "ring_records");
	qp_json_kv_double(j, "tsc_ns_per_tick", m->ring.ns_per_tick);
	qp_json_obj_end(j);
}
