/* http_trace.c - GET /api/trace?pid=&seconds=N&format=&max_mb=: records N
 * seconds of both collectors' per-instance events and answers them as
 * Chrome Trace Event Format JSON (format=chrome, the default) or in
 * speedscope's own file format (format=speedscope), within max_mb=
 * megabytes (10^6 bytes, 1..4096) when given (model_trace.c,
 * export_trace.c, export_speedscope.c). Without seconds= the answer is the
 * ring collector's flight recorder; the BPF collector keeps no history of
 * instances, so for its targets that is a 400 saying seconds= is needed.
 * format= and max_mb= are checked before anything is recorded. At most
 * QP_TRACE_BUILDS flight-recorder traces are built at once (a seconds=
 * trace is a long poll, bounded with them, one per target): each holds up to
 * --trace-max-events events (hundreds of MB at the default), and clients
 * that ask again before their last answer came (a poll timing out under
 * load) would otherwise add one such model each; the next gets 503 and
 * Retry-After. */
#include <errno.h>
#include <string.h>
#include "export/export_trace.h"
#include "model/model_trace.h"
#include "http_routes.h"
#include "services.h"

#define QP_TRACE_BUILDS 2

static unsigned int building;	/* traces being built now (atomic) */

void qp_route_trace(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	struct qp_trace_query q = { .max_events = qprofd_trace_max_events(d) };
	struct qp_trace_model m;
	struct qp_model_src src;
	static const char *const allowed[] = { "pid", "seconds", "format", "max_mb", NULL };
	const char *format = req->query(req->arg, "format"), *mb = req->query(req->arg, "max_mb");
	uint64_t max_bytes = 0;
	bool speedscope = false, counted;
	struct qp_json j;
	int64_t v;
	int ret;

	if (!qp_req_keys_ok(req, resp, allowed))
		return;
	if (format && !strcmp(format, "speedscope")) {
		speedscope = true;
	} else if (format && strcmp(format, "chrome")) {
		qp_reply_error(resp, 400, "format must be chrome (Chrome Trace Event Format JSON) or "
			       "speedscope (speedscope's own file format)");
		return;
	}
	if (mb) {
		if (qp_parse_i64(mb, 1, QP_TRACE_MAX_MB, &v)) {
			qp_reply_error(resp, 400, "max_mb must be an integer in 1..%d (megabytes of 10^6 bytes)",
				       QP_TRACE_MAX_MB);
			return;
		}
		max_bytes = (uint64_t)v * 1000000;
	}
	if (!qp_req_seconds(req, resp, &q.seconds) || !qp_req_pid(d, req, resp, &q.pid))
		return;
	counted = !q.seconds;
	if (counted && __atomic_add_fetch(&building, 1, __ATOMIC_ACQ_REL) > QP_TRACE_BUILDS) {
		__atomic_sub_fetch(&building, 1, __ATOMIC_ACQ_REL);
		qp_reply_error(resp, 503, "%d traces are being built already: ask again when one is answered",
			       QP_TRACE_BUILDS);
		return;
	}
	qprofd_model_src(d, req, &src);
	ret = qp_trace_model_build(&src, &q, &m);
	if (ret && counted)
		__atomic_sub_fetch(&building, 1, __ATOMIC_ACQ_REL);
	switch (ret) {
	case 0:
		break;
	case -ENOENT:
		qp_reply_error(resp, 400,
			       "seconds= is needed: %s timed by the BPF collector, which records "
			       "instances only while a trace is asked for (1..300 s); the flight "
			       "recorder (no seconds=) is the ring collector's",
			       q.pid ? "this target is" : "no target is the ring collector's: targets are");
		return;
	case -EBUSY:
		qp_reply_error(resp, 409, "a trace of %s is being recorded already: one at a time per "
			       "target (a trace of every target excludes any other)",
			       q.pid ? "this process" : "a target");
		return;
	case -ENOSPC:
		qp_reply_error(resp, 503, "too many traces are being recorded at once");
		return;
	case -ENOTSUP:
		qp_reply_error(resp, 503, "traces are unavailable: the trace recorder could not start");
		return;
	case -ECANCELED:
		qp_reply_error(resp, 503, "qprofd is shutting down");
		return;
	case -ENOMEM:
		qp_reply_error(resp, 500, "out of memory");
		return;
	default:
		qp_reply_error(resp, 500, "cannot record the trace");
		return;
	}
	qp_json_init(&j);
	ret = speedscope ? qp_export_speedscope(&m.doc, max_bytes, &j) : qp_export_trace(&m.doc, max_bytes, &j);
	qp_trace_model_free(&m);
	if (counted)
		__atomic_sub_fetch(&building, 1, __ATOMIC_ACQ_REL);
	if (ret) {
		qp_json_free(&j);
		qp_reply_error(resp, 500, "out of memory while writing the trace");
		return;
	}
	qp_reply_json(resp, 200, &j);
}
