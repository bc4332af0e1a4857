/* services.h - the narrow views of the daemon that the handlers get, each
 * the few interfaces one resource needs, taken out of the daemon's state
 * here so that a handler file need not see struct qprofd at all (it stays
 * incomplete there: http_routes.h only names it). services.c. */
#ifndef QPROF_SERVICES_H
#define QPROF_SERVICES_H
#include <stddef.h>
#include "model/model_src.h"
#include "targets/target_service.h"

#define QPROF_VERSION "0.1.0"	/* qprofd's, in /api/status, --version and the OTLP resource */

struct qprofd;
struct qp_request;
struct qp_otlp;
struct qp_dbgf;
struct qp_route_stats;
struct qp_metrics_opts;
struct qp_report_fs;

/* The profiles and models (/api/scopes, /api/values, /api/logs, CPU and
 * heap profiles, traces, threads, the slowest instances): the model's view
 * of D for one build (model/model_src.h: the registry, the collectors,
 * the settings), whose window's wait ends at D's stop and when REQ's
 * client is gone (REQ NULL: a build of the daemon's own, or one read
 * after the handler returned, which waits for the stop only). */
void qprofd_model_src(struct qprofd *d, const struct qp_request *req, struct qp_model_src *out);
/* The CPU sampler once it is loaded and published (NULL before, and when
 * it could not start), and why it is NULL ("starting: ..." before). */
struct qp_cpu *qprofd_cpu(struct qprofd *d);
const char *qprofd_cpu_error(struct qprofd *d);
#define QPROFD_CPU_STARTING                                                                               \
	"not yet: the CPU sampler is still loading (its BPF programs are verified in the second or so after " \
	"qprofd starts)"
/* qprofd --trace-max-events: the events a trace keeps at most. */
size_t qprofd_trace_max_events(struct qprofd *d);

/* /api/targets: the registry and the heap profiler, their ordering the
 * service's (targets/target_service.h). */
void qprofd_target_svc(struct qprofd *d, struct qp_target_svc *out);
/* /api/status and /metrics: what they show besides the models (the OTLP
 * push's and debuginfod's figures, the routes' times, the metrics' options). */
struct qp_status_svc {
	struct qp_otlp *otlp;			/* NULL: no push */
	struct qp_dbgf *dbgf;			/* NULL: no debuginfod */
	struct qp_route_stats *routes;
	const struct qp_metrics_opts *metrics;
};
void qprofd_status_svc(struct qprofd *d, struct qp_status_svc *out);

/* /api/report: the exit reports' directory, opened at start. */
const struct qp_report_fs *qprofd_report_fs(struct qprofd *d);
#endif
