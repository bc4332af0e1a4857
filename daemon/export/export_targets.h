/* export_targets.h - the JSON of the targets model (targets_view.h): the
 * target and --binary objects of /api/targets, /api/status and the answer
 * of POST /api/targets, and the status keys about targets and fork/exec
 * tracking. Pure: no lock, no I/O. */
#ifndef QPROF_EXPORT_TARGETS_H
#define QPROF_EXPORT_TARGETS_H
#include "common/json_writer.h"
#include "targets/targets_view.h"

void qp_export_target_json(const struct qp_target_view *t, struct qp_json *j);
/* The same keys, inside an object the caller opened (to add its own). */
void qp_export_target_keys(const struct qp_target_view *t, struct qp_json *j);
void qp_export_binary_json(const struct qp_binary_view *b, struct qp_json *j);
/* {"targets": [...]}: GET /api/targets. */
void qp_export_targets_json(const struct qp_targets_view *v, struct qp_json *j);
/* The keys "targets", "binaries", "exited_targets_forgotten" and
 * "lifecycle" (null without fork/exec tracking) of the status object J is
 * inside of. */
void qp_export_status_targets_json(const struct qp_targets_view *v, struct qp_json *j);
#endif
