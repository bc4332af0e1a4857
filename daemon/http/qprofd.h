/* qprofd.h - the daemon's state that main.c builds and hands to the HTTP
 * handlers: the registry of targets, the collectors, the clock it started
 * at, and the stop flag that windowed requests wait on (stop.h: woken at
 * shutdown). It lives in http/ because the handlers are its top reader;
 * nothing below http/ may include it (scripts/check_deps.py). */
#ifndef QPROF_QPROFD_H
#define QPROF_QPROFD_H
#include "route_stats.h"
#include "services.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "collect/collect_calibrate.h"
#include "export/export_metrics.h"
#include "model/model_src.h"
#include "export/report_fs.h"
#include "common/stop.h"
#include "targets/targets.h"

struct qp_threads;
struct qp_otlp;
struct qp_dbgf;

struct qprofd {
	struct qp_registry reg;
	struct qp_scopes *scopes;
	/* the CPU sampler, loaded while qprofd serves (side_load.h): read
	 * through qprofd_cpu(), NULL until cpu_settled and when it could not
	 * start */
	struct qp_cpu *cpu;
	bool cpu_settled;		/* cpu and cpu_error are final (atomic) */
	pthread_mutex_t slow_lock;	/* the slowest instances turned on or off */
	struct qp_logs *logs;		/* NULL when the log ring buffer could not start */
	struct qp_tracer *tracer;	/* NULL when traces could not start */
	size_t trace_max_events;	/* --trace-max-events */
	char cpu_error[256];		/* why cpu is NULL, once settled */
	struct qp_threads *threads;	/* thread stacks; NULL when the iterator could not load */
	char threads_error[256];	/* why, then */
	struct qp_heap *heap;		/* NULL when heap profiling could not start */
	char heap_error[256];		/* why, then */
	bool heap_default;		/* --heap: every target's heap is profiled */
	bool sample_all;
	uint64_t start_ns;
	unsigned int frequency_hz;
	const char *report_dir;		/* exit reports go here (--report-dir) */
	struct qp_report_fs report_fs;	/* that directory, opened at start */
	struct qp_stop stop;		/* set at shutdown: windows and streams end */
	struct qp_metrics_opts metrics;	/* --metrics-pid-label, --metrics-max-sets */
	struct qp_otlp *otlp;		/* --otlp-endpoint: the push (otlp_push.h), NULL: none */
	struct qp_dbgf *dbgf;		/* debuginfod (symbolize/debuginfod.h), NULL: none */
	struct qp_route_stats routes;	/* each route's handling time and lock waits */
};

/* The views of the daemon the handlers get: services.h */
#endif
