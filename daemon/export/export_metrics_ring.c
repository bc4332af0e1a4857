/* export_metrics_ring.c - the ring collector's losses in GET /metrics, one
 * series per ring target, labelled by pid (always: a target's losses are
 * its own) and exe. The figures are the targets view's, the ones
 * /api/status gives as targets[].ring (lost, lost_scopes, ...), so the two
 * cannot disagree. */
#include <inttypes.h>
#include <stdio.h>
#include "export_metrics_ring.h"
#include "model/model_scopes.h"
#include "common/util.h"

static size_t labels(const struct qp_target_view *t, char pidbuf[16], struct qp_label *l)
{
	snprintf(pidbuf, 16, "%d", t->pid);
	l[0] = (struct qp_label){ "pid", pidbuf };
	l[1] = (struct qp_label){ "exe", qp_exe_basename(t->exe ? t->exe : "") };
	return 2;
}

void qp_export_metrics_ring(struct qp_mwriter *w, const struct qp_targets_view *tv)
{
	static const char *const kinds[] = { "scope", "scope_partial", "mark", "value", "other_record" };
	struct qp_label l[3];
	char pidbuf[16];
	size_t i, x, n;

	if (!tv)
		return;
	qp_mw_family(w, "qprof_ring_records_read_total",
		     "Records the ring collector read from a target's rings (targets[].ring.read).", QP_MT_COUNTER);
	for (i = 0; i < tv->ntargets; i++) {
		const struct qp_target_view *t = &tv->targets[i];

		if (!t->has_ring_status)
			continue;
		n = labels(t, pidbuf, l);
		qp_mw_value(w, l, n, (double)t->ring_status.read);
	}
	qp_mw_family(w, "qprof_ring_records_lost_total",
		     "Records of a target's rings overwritten or ended before the ring collector read them "
		     "(targets[].ring.lost).", QP_MT_COUNTER);
	for (i = 0; i < tv->ntargets; i++) {
		const struct qp_target_view *t = &tv->targets[i];

		if (!t->has_ring_status)
			continue;
		n = labels(t, pidbuf, l);
		qp_mw_value(w, l, n, (double)t->ring_status.c.lost);
	}
	qp_mw_family(w, "qprof_ring_events_lost_total",
		     "Events in the records a target's rings lost, by kind (targets[].ring.lost_scopes, "
		     "lost_scopes_partial, lost_marks, lost_values, lost_other_records).", QP_MT_COUNTER);
	for (i = 0; i < tv->ntargets; i++) {
		const struct qp_target_view *t = &tv->targets[i];
		const struct qp_ring_lost_est *e = &t->ring_status.est;
		const uint64_t v[] = { e->scopes, e->scopes_partial, e->marks, e->values, e->other };

		if (!t->has_ring_status)
			continue;
		n = labels(t, pidbuf, l);
		for (x = 0; x < QP_ARRAY_SIZE(kinds); x++) {
			l[n] = (struct qp_label){ "kind", kinds[x] };
			qp_mw_value(w, l, n + 1, (double)v[x]);
		}
	}
	qp_mw_family(w, "qprof_ring_lost_estimated",
		     "1 when a target's lost events are an estimate (targets[].ring.lost_estimated).", QP_MT_GAUGE);
	for (i = 0; i < tv->ntargets; i++) {
		const struct qp_target_view *t = &tv->targets[i];

		if (!t->has_ring_status)
			continue;
		n = labels(t, pidbuf, l);
		qp_mw_value(w, l, n, t->ring_status.est.estimated || t->ring_status.c.start_unknown ? 1 : 0);
	}
}
