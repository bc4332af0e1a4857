/* report.h - the report qprofd writes when a target exits: scopes by total
 * time, by p99 and by count; the top functions; folded stacks; the flame
 * graph; one directory per target under the report directory. */
#ifndef QPROF_REPORT_H
#define QPROF_REPORT_H

struct qprofd;
struct qp_target;
struct qp_request;
struct qp_response;

#define QPROF_REPORT_DIR "/var/lib/qprof/reports"

/* Write T's report under d->report_dir/PID-COMM-YYYYmmddTHHMMSS/ and set
 * t->report_dir. 0 or -errno (logged). The caller holds d->reg.lock. */
int qp_report_write(struct qprofd *d, struct qp_target *t);

/* GET /api/report?pid=N: the summary of N's report (text/plain), 404 when N
 * has none (yet); without pid=, the list of reports (JSON). */
void qp_report_http(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
#endif
