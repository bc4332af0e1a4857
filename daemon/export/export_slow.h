/* export_slow.h - the slowest instances of a scope (model_slow.h) as the
 * JSON of GET /api/scopes/slowest. Pure: no lock, no I/O. */
#ifndef QPROF_EXPORT_SLOW_H
#define QPROF_EXPORT_SLOW_H
#include "common/json_writer.h"
#include "model/model_slow.h"

/* {"pid", "name", "kept", "complete", "instances": [{"tid", "thread",
 * "parent", "start_ns", "dur_ns", "on_cpu_ns", "off_cpu_ns", "runnable_ns",
 * "blocked_ns", "irq_ns", "migrations", "page_faults", "partial",
 * "off_cpu": [{"at_ns", "ns", "runnable_ns", "reason", "stack": [leaf
 * first]}], "off_cpu_more", "sample_count", "samples": [{"stack", "count"}]}]} */
void qp_export_slow_json(const struct qp_slow_model *m, struct qp_json *j);
#endif
