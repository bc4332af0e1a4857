/* export_metrics.h - GET /metrics: the status, scope and value models (the
 * figures /api/status, /api/scopes and /api/values answer) as Prometheus
 * metric families, in the text exposition format or, when the scraper
 * negotiates it, the protobuf one with native histograms
 * (metrics_writer.h). Labels that survive restarts and aggregate across
 * hosts: exe (basename), scope, parent, kind; pid only when asked for
 * (--metrics-pid-label). Rows with the same label set (two processes of one
 * executable, or one name at two sites) are merged: histograms and counts
 * add up. */
#ifndef QPROF_EXPORT_METRICS_H
#define QPROF_EXPORT_METRICS_H
#include <stdbool.h>
#include "common/buf.h"
#include "model/model_scopes.h"
#include "model/model_status.h"
#include "model/model_values.h"
#include "targets/targets_view.h"

/* Label sets per per-site family (scope histograms, events, values) by
 * default; past the cap a family keeps the first ones in label order and
 * counts the rest in qprof_metrics_label_sets_omitted{family}. */
#define QP_METRICS_MAX_SETS_DEFAULT 1000u
#define QP_METRICS_MAX_SETS_LIMIT 1000000u

struct qp_metrics_opts {
	bool pid_label;			/* --metrics-pid-label */
	unsigned int max_sets;		/* --metrics-max-sets; 0: the default */
};

/* The counters of STATUS and LIFECYCLE (NULL: fork/exec not tracked) are
 * those of the tables of counters.h, each its family. TARGETS (NULL: none)
 * gives the ring collector's losses per target (export_metrics_ring.h).
 * 0 or -ENOMEM. */
struct qp_targets_view;
int qp_export_metrics(const struct qp_status_model *status, const struct qp_lifecycle_figures *lifecycle,
		      const struct qp_scope_model *scopes, const struct qp_value_model *values,
		      const struct qp_targets_view *targets,
		      const struct qp_metrics_opts *opts, bool protobuf, struct qp_buf *out);
#endif
