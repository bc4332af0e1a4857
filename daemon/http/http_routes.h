/* http_routes.h - what the route handlers share (http_routes.c) and the
 * handlers each file defines for the router's table. Internal to the HTTP
 * stage: the server (http.c) and tests call qp_http_route() only. */
#ifndef QPROF_HTTP_ROUTES_H
#define QPROF_HTTP_ROUTES_H
#include <stdbool.h>
#include "common/buf.h"
#include "http.h"
#include "common/json_writer.h"
#include "common/util.h"

struct qprofd;

/* Replies: JSON (status, document), {"error": ...}, a buffer (500 when
 * RET or the buffer failed). */
void qp_reply_json(struct qp_response *resp, int status, struct qp_json *j);
void __printf(3, 4) qp_reply_error(struct qp_response *resp, int status, const char *fmt, ...);
void qp_reply_buf(struct qp_response *resp, struct qp_buf *b, const char *ctype, int ret);

/* Query checks; false when resp holds the 400/404. Only the names in the
 * NULL-terminated ALLOWED list are accepted; pid= must be a target;
 * seconds= is clamped to 1..300 and the answer says so (X-Qprof-Seconds). */
bool qp_req_keys_ok(const struct qp_request *req, struct qp_response *resp, const char *const *allowed);
bool qp_req_pid(struct qprofd *d, const struct qp_request *req, struct qp_response *resp, int *pid);
/* The same, a process that is not a target also known when KNOWN_ALSO(D,
 * pid) says so; the 404's words then end with UNKNOWN_ALSO. */
bool qp_req_pid_or(struct qprofd *d, const struct qp_request *req, struct qp_response *resp, int *pid,
		   bool (*known_also)(struct qprofd *d, int pid), const char *unknown_also);
bool qp_req_seconds(const struct qp_request *req, struct qp_response *resp, unsigned int *sec);
/* A route of pid= and seconds= only: the three checks above. */
bool qp_req_pid_seconds(struct qprofd *d, const struct qp_request *req, struct qp_response *resp,
			unsigned int *sec, int *pid);

typedef void (*qp_route_fn)(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);

/* http_status.c */
void qp_route_status(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
void qp_route_metrics(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
/* http_targets.c */
void qp_route_targets_list(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
void qp_route_targets_add(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
void qp_route_binary_delete(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
void qp_route_target_delete(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
/* http_data.c */
void qp_route_scopes(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
void qp_route_values(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
void qp_route_logs(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
/* http_cpu.c */
void qp_route_cpu_folded(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
void qp_route_cpu_flamegraph(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
void qp_route_pprof_profile(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
void qp_route_offcpu_folded(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
void qp_route_offcpu_flamegraph(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
void qp_route_pprof_offcpu(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
void qp_route_pprof_symbol(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
/* http_heap.c: /pprof/heap, /pprof/growth, /api/heap/flamegraph */
void qp_route_pprof_heap(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
void qp_route_pprof_growth(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
void qp_route_heap_flamegraph(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
/* http_slow.c: GET /api/scopes/slowest?pid=&name=&n=&seconds= */
void qp_route_slowest(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
/* http_trace.c: GET /api/trace?pid=&seconds=N (Chrome Trace Event Format) */
void qp_route_trace(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
/* http_threads.c */
void qp_route_threads(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
void qp_route_thread_stacks(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
/* report_http.c: GET /api/report?pid=N, the summary of N's exit report
 * (text/plain), 404 when N has none (yet); without pid=, the list (JSON) */
void qp_report_http(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);
#endif
