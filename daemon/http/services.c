/* services.c - see services.h. */
#include "http.h"
#include "qprofd.h"
#include "services.h"

struct qp_cpu *qprofd_cpu(struct qprofd *d)
{
	return __atomic_load_n(&d->cpu_settled, __ATOMIC_ACQUIRE) ? d->cpu : NULL;
}

const char *qprofd_cpu_error(struct qprofd *d)
{
	return __atomic_load_n(&d->cpu_settled, __ATOMIC_ACQUIRE) ? d->cpu_error : QPROFD_CPU_STARTING;
}

void qprofd_model_src(struct qprofd *d, const struct qp_request *req, struct qp_model_src *out)
{
	out->reg = &d->reg;
	out->scopes = d->scopes;
	out->cpu = qprofd_cpu(d);
	out->logs = d->logs;
	out->tracer = d->tracer;
	out->cpu_error = qprofd_cpu_error(d);
	out->cpu_starting = !__atomic_load_n(&d->cpu_settled, __ATOMIC_ACQUIRE);
	out->threads = d->threads;
	out->threads_error = d->threads_error;
	out->heap = d->heap;
	out->heap_error = d->heap_error;
	out->heap_default = d->heap_default;
	out->frequency_hz = d->frequency_hz;
	out->sample_all = d->sample_all;
	out->start_ns = d->start_ns;
	/* a window ends at shutdown, and when its client hung up (its
	 * long-poll slot held): its handler then gives the slot back */
	out->stop = &d->stop;
	out->gave_up = req ? req->gone : NULL;
	out->gave_up_arg = req ? req->arg : NULL;
}

size_t qprofd_trace_max_events(struct qprofd *d)
{
	return d->trace_max_events;
}

void qprofd_target_svc(struct qprofd *d, struct qp_target_svc *out)
{
	out->reg = &d->reg;
	out->heap = d->heap;
	out->heap_error = d->heap_error;
	out->heap_default = d->heap_default;
}

void qprofd_status_svc(struct qprofd *d, struct qp_status_svc *out)
{
	out->otlp = d->otlp;
	out->dbgf = d->dbgf;
	out->routes = &d->routes;
	out->metrics = &d->metrics;
}

const struct qp_report_fs *qprofd_report_fs(struct qprofd *d)
{
	return &d->report_fs;
}
