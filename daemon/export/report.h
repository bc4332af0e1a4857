/* report.h - the report qprofd writes when a target exits: scopes by total
 * time, by p99 and by count; the top functions; folded stacks; the flame
 * graph; one directory per target under the report directory. */
#ifndef QPROF_REPORT_H
#define QPROF_REPORT_H

#include "model_src.h"
#include "report_fs.h"

struct qp_target;

#define QPROF_REPORT_DIR "/var/lib/qprof/reports"

/* Write T's report, read from SRC, under REPORT_DIR/PID-COMM-YYYYmmddTHHMMSS/
 * (REPORT_DIR NULL or "": QPROF_REPORT_DIR) through FS, the report
 * directory opened at start, and set t->report_dir. 0 or -errno (logged).
 * The caller holds src->reg->lock. GET /api/report is http/report_http.c. */
int qp_report_write(const struct qp_model_src *src, const struct qp_report_fs *fs, const char *report_dir,
		    struct qp_target *t);
#endif
