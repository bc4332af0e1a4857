/* export_threads.h - a process's threads and their stacks as JSON
 * (GET /api/threads) and as text (GET /api/thread/stacks). */
#ifndef QPROF_EXPORT_THREADS_H
#define QPROF_EXPORT_THREADS_H
struct qp_json;
struct qp_buf;
struct qp_thread_model;

void qp_export_threads_json(const struct qp_thread_model *m, struct qp_json *j);
/* "Thread TID (name):" then one frame a line, innermost first. */
void qp_export_threads_text(const struct qp_thread_model *m, struct qp_buf *b);
#endif
