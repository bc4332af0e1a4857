/* model_status.c - see model_status.h: the daemon's figures, summed from
 * the collectors' counters into named fields. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "collect_cpu.h"
#include "logs.h"
#include "model_status.h"
#include "scope_window.h"
#include "targets.h"
#include "util.h"

void qp_scope_drops_from(const uint64_t *c, struct qp_scope_drops *out)
{
	out->exit_without_enter = c[QPROF_CNT_DROP_NO_ENTER];
	out->out_of_order = c[QPROF_CNT_DROP_OUT_OF_ORDER];
	out->too_deep = c[QPROF_CNT_DROP_TOO_DEEP];
	out->thread_exit = c[QPROF_CNT_DROP_THREAD_EXIT];
	out->map_full = c[QPROF_CNT_DROP_MAP_FULL];
	out->stack_unavailable = c[QPROF_CNT_DROP_NO_STACK];
}

uint64_t qp_scope_drops_total(const struct qp_scope_drops *d)
{
	return d->exit_without_enter + d->out_of_order + d->too_deep + d->thread_exit + d->map_full +
	       d->stack_unavailable;
}

void qp_status_from_snapshot(const struct qp_scope_snapshot *snap, struct qp_status_model *out)
{
	qp_scope_drops_from(snap->counters, &out->scopes.drops);
	out->scopes.dropped = qp_scope_drops_total(&out->scopes.drops);
	/* events: scopes measured, summed from the aggregates (no per-event counter) */
	out->scopes.events = qp_scope_count_events(snap);
	out->scopes.sites = qp_scope_count_sites(snap);
	out->logs.lost = snap->counters[QPROF_CNT_LOG_LOST];
	out->values_lost = snap->counters[QPROF_CNT_VALUE_LOST];
	out->marks_lost = snap->counters[QPROF_CNT_MARK_LOST];
}

int qp_status_model_build(const struct qp_model_src *src, struct qp_status_model *out)
{
	struct qp_scope_snapshot snap;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (qp_scopes_read(src->scopes, 0, &snap))
		return -EIO;
	qp_status_from_snapshot(&snap, out);
	qp_scope_snapshot_free(&snap);
	out->uptime_ms = (qp_now_ns() - src->start_ns) / 1000000;
	pthread_mutex_lock(&src->reg->lock);
	for (i = 0; i < src->reg->ntargets; i++) {
		if (src->reg->targets[i]->state == QP_TARGET_RUNNING)
			out->targets_running++;
		else
			out->targets_exited++;
	}
	pthread_mutex_unlock(&src->reg->lock);
	out->cpu.running = src->cpu != NULL;
	if (src->cpu)
		qp_cpu_counters(src->cpu, &out->cpu.samples, &out->cpu.lost);
	else
		snprintf(out->cpu.error, sizeof(out->cpu.error), "%s", src->cpu_error ? src->cpu_error : "");
	out->cpu.frequency_hz = src->frequency_hz;
	out->cpu.all = src->sample_all;
	out->cpu.cpus = qp_cpu_ncpus(src->cpu);
	out->logs.running = src->logs != NULL;
	if (src->logs)
		qp_logs_stats(src->logs, &out->logs.received, &out->logs.oldest_seq);
	return 0;
}
