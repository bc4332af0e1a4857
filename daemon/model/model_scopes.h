/* model_scopes.h - turns scope snapshots into the rows of GET /api/scopes:
 * names from the registry, a window as the difference of two snapshots,
 * percentiles from the histograms. Reads only. */
#ifndef QPROF_MODEL_SCOPES_H
#define QPROF_MODEL_SCOPES_H
#include "collect_scopes.h"
#include "targets.h"

struct qp_json;

/* Marks, for the same rows: counts now and at the window's start. */
struct qp_marks_view {
	const struct qp_mark_row *now, *base;	/* base NULL: since attach */
	size_t nnow, nbase;
	double window_s;			/* > 0 with base */
	/* counted USDT probes (kind "probe"), likewise */
	const struct qp_probe_row *pnow, *pbase;
	size_t npnow, npbase;
};

/* Write {"scopes": [...]} for NOW, or for NOW - BASE when BASE is not NULL,
 * limited to PID when pid > 0; then the marks as kind "mark" rows (count,
 * rate_per_s, null durations). Caller holds r->lock. */
void qp_model_scopes_json(struct qp_registry *r, const struct qp_scope_snapshot *now,
			  const struct qp_scope_snapshot *base, const struct qp_marks_view *marks,
			  int pid, struct qp_json *j);

/* Distinct sites in a snapshot. */
size_t qp_model_count_sites(const struct qp_scope_snapshot *s);
#endif
