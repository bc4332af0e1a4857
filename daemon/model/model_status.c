/* model_status.c - see model_status.h: the daemon's figures, summed from
 * the collectors' counters into named fields. */
#include "model_status.h"
#include "scope_window.h"

void qp_scope_drops_from(const uint64_t *c, struct qp_scope_drops *out)
{
	out->exit_without_enter = c[QPROF_CNT_DROP_NO_ENTER];
	out->out_of_order = c[QPROF_CNT_DROP_OUT_OF_ORDER];
	out->too_deep = c[QPROF_CNT_DROP_TOO_DEEP];
	out->thread_exit = c[QPROF_CNT_DROP_THREAD_EXIT];
	out->map_full = c[QPROF_CNT_DROP_MAP_FULL];
	out->stack_unavailable = c[QPROF_CNT_DROP_NO_STACK];
	out->begin_unended = c[QPROF_CNT_BEGIN_UNENDED];
	out->span_end_without_begin = c[QPROF_CNT_SPAN_END_NO_BEGIN];
	out->span_step_without_begin = c[QPROF_CNT_SPAN_STEP_NO_BEGIN];
	out->span_id_reused = c[QPROF_CNT_SPAN_ID_REUSED];
	out->span_table_full = c[QPROF_CNT_SPAN_TABLE_FULL];
	out->span_abandoned = c[QPROF_CNT_SPAN_ABANDONED];
	out->ring_lost = c[QPROF_CNT_RING_LOST];
}

uint64_t qp_scope_drops_total(const struct qp_scope_drops *d)
{
	return d->exit_without_enter + d->out_of_order + d->too_deep + d->thread_exit + d->map_full +
	       d->stack_unavailable + d->begin_unended + d->span_end_without_begin +
	       d->span_step_without_begin + d->span_id_reused + d->span_table_full + d->span_abandoned +
	       d->ring_lost;
}

void qp_status_from_snapshot(const struct qp_scope_snapshot *snap, struct qp_status_model *out)
{
	qp_scope_drops_from(snap->counters, &out->scopes.drops);
	out->scopes.dropped = qp_scope_drops_total(&out->scopes.drops);
	/* events: scopes measured, summed from the aggregates (no per-event counter) */
	out->scopes.events = qp_scope_count_events(snap);
	out->scopes.sites = qp_scope_count_sites(snap);
	out->scopes.minmax_inexact = snap->counters[QPROF_CNT_MINMAX_LOST];
	out->scopes.poll = snap->poll;
	out->logs.lost = snap->counters[QPROF_CNT_LOG_LOST];
	out->values_lost = snap->counters[QPROF_CNT_VALUE_LOST];
	out->marks_lost = snap->counters[QPROF_CNT_MARK_LOST];
	out->offcpu.slow_lost = snap->counters[QPROF_CNT_SLOW_LOST];
}
