/* export_metrics.h - the Prometheus text exposition of GET /metrics, read
 * from the status, scope and value models (the figures /api/status,
 * /api/scopes and /api/values answer). */
#ifndef QPROF_EXPORT_METRICS_H
#define QPROF_EXPORT_METRICS_H
#include "buf.h"
#include "model_scopes.h"
#include "model_status.h"
#include "model_values.h"

/* 0 or -ENOMEM. */
int qp_export_metrics(const struct qp_status_model *status, const struct qp_scope_model *scopes,
		      const struct qp_value_model *values, struct qp_buf *out);
#endif
