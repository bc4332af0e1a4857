/* export_logs.h - the NDJSON lines of GET /api/logs from a batch of the log
 * model (model_logs.h): {"lost": N} first when messages were lost, then one
 * object a line (seq, ts_ns, pid, tid, file, line, function, message,
 * truncated). Pure: no lock, no I/O. */
#ifndef QPROF_EXPORT_LOGS_H
#define QPROF_EXPORT_LOGS_H
#include "common/buf.h"
#include "model/model_logs.h"

/* Append B's lines to OUT. 0, or -ENOMEM (OUT->failed, or a line that
 * could not be written). */
int qp_export_log_ndjson(const struct qp_log_batch *b, struct qp_buf *out);
#endif
