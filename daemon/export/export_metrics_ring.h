/* export_metrics_ring.h - the ring collector's per-target losses as
 * metric families (export_metrics_ring.c), for export_metrics.c. */
#ifndef QPROF_EXPORT_METRICS_RING_H
#define QPROF_EXPORT_METRICS_RING_H
#include "metrics_writer.h"
#include "targets/targets_view.h"

/* qprof_ring_records_read_total, qprof_ring_records_lost_total,
 * qprof_ring_events_lost_total{kind} and qprof_ring_lost_estimated, one
 * series per target on the ring, labelled pid and exe; nothing for NULL. */
void qp_export_metrics_ring(struct qp_mwriter *w, const struct qp_targets_view *tv);
#endif
