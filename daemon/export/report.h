/* report.h - the report qprofd writes when a target exits: scopes by total
 * time, by p99 and by count; the top functions; folded stacks; the flame
 * graph; one directory per target under the report directory. */
#ifndef QPROF_REPORT_H
#define QPROF_REPORT_H
#include <stddef.h>

#include "model/model_src.h"
#include "report_fs.h"

struct qp_target;

#define QPROF_REPORT_DIR "/var/lib/qprof/reports"

/* Write T's report, read from SRC, under REPORT_DIR/PID-COMM-YYYYmmddTHHMMSS/
 * (REPORT_DIR NULL or "": QPROF_REPORT_DIR) through FS, the report
 * directory opened at start, and put that directory in DIR_OUT (untouched
 * when no report was made). 0 or -errno (logged). The caller does NOT hold
 * src->reg->lock (the model builder takes it while the scopes are named);
 * T is exited and pinned (targets.h). GET /api/report is
 * http/report_http.c. */
int qp_report_write(const struct qp_model_src *src, const struct qp_report_fs *fs, const char *report_dir,
		    const struct qp_target *t, char *dir_out, size_t dirlen);

/* The same in two steps, for an exec, where the process waits stopped while
 * its old image's figures are read, and not while the files are written:
 * qp_report_collect reads T's figures (scopes, CPU profile: names resolved
 * now, against T's mappings) and copies what the files say of T, so T may
 * go before qp_report_stage writes them. Collect returns NULL when out of
 * memory (logged); free accepts NULL. */
struct qp_report;
struct qp_report *qp_report_collect(const struct qp_model_src *src, const struct qp_target *t);
void qp_report_free(struct qp_report *r);

/* Written in two steps, for many reports at once: qp_report_stage writes
 * R's files (none synced; summary.txt, which makes the report visible,
 * under a temporary name), frees R and returns the report written, NULL
 * when it could not be made (logged; R may be NULL);
 * qp_report_commit makes the N staged ones durable and visible with two
 * syncs of the report filesystem in all (the files, then the summaries'
 * names), puts each one's directory in DIRS[i] ("" when it was not written,
 * logged; V[i] may be NULL) and frees them. */
struct qp_report_staged;
struct qp_report_staged *qp_report_stage(struct qp_report *r, const struct qp_report_fs *fs, const char *report_dir);
void qp_report_commit(const struct qp_report_fs *fs, struct qp_report_staged **v, size_t n, char (*dirs)[512]);
#endif
