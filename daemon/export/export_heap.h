/* export_heap.h - the JSON of heap profiling's state (heap_window.h): the
 * "heap" object of /api/status and of a POST /api/targets answer. Pure: no
 * lock, no I/O. */
#ifndef QPROF_EXPORT_HEAP_H
#define QPROF_EXPORT_HEAP_H
#include "collect/collect_heap.h"
#include "model/heap_window.h"
#include "common/json_writer.h"

/* {"pid", "tracing", "functions", "traced", "note"} */
void qp_export_heap_target_json(const struct qp_heap_status *st, struct qp_json *j);
/* The key "heap" of the status object J is inside of: available, error,
 * by_default, interval_bytes, counters {...}, targets [...]. */
void qp_export_heap_status_json(const struct qp_heap_status_model *m, struct qp_json *j);
#endif
