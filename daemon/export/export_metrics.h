/* export_metrics.h - the Prometheus text exposition of GET /metrics, from
 * the JSON of /api/status, /api/scopes and /api/values. */
#ifndef QPROF_EXPORT_METRICS_H
#define QPROF_EXPORT_METRICS_H
#include <jansson.h>
#include "buf.h"

int qp_export_metrics(const json_t *status, const json_t *scopes, const json_t *values, struct qp_buf *out);
#endif
