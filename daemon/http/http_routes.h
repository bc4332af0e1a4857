/* http_routes.h - the handlers each file defines for the router's table
 * (http_routes.c), and what they share (http_reply.h). Internal to the
 * HTTP stage: the server (http.c) and tests call qp_http_route() only. */
#ifndef QPROF_HTTP_ROUTES_H
#define QPROF_HTTP_ROUTES_H
#include <stdbool.h>
#include "http.h"
#include "http_reply.h"

struct qprofd;

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
