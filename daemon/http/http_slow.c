/* http_slow.c - GET /api/scopes/slowest?pid=&name=&n=&seconds=: the N
 * slowest instances of scope NAME in process PID (model_slow.h), slowest
 * first, with what happened inside each. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "collect/collect_cpu.h"
#include "export/export_slow.h"
#include "model/model_slow.h"
#include "http_routes.h"
#include "services.h"
#include "collect/slow_store.h"
#include "common/util.h"

void qp_route_slowest(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { "pid", "name", "n", "seconds", NULL };
	const char *name = req->query(req->arg, "name"), *ns = req->query(req->arg, "n");
	struct qp_slow_query q = { .n = 10 };
	struct qp_slow_model m;
	struct qp_model_src src;
	struct qp_json j;
	int64_t n;
	int ret;

	if (!qp_req_keys_ok(req, resp, allowed) || !qp_req_seconds(req, resp, &q.seconds) ||
	    !qp_req_pid(d, req, resp, &q.pid))
		return;
	if (!q.pid) {
		qp_reply_error(resp, 400, "pid= is required: the process whose scope to look at");
		return;
	}
	if (!name || !name[0] || strlen(name) > 256) {
		qp_reply_error(resp, 400, "name= must be a scope name of 1..256 bytes");
		return;
	}
	if (ns) {
		if (qp_parse_i64(ns, 1, QP_SLOW_KEEP, &n)) {
			qp_reply_error(resp, 400, "n must be an integer in 1..%d (the instances kept per scope)",
				       QP_SLOW_KEEP);
			return;
		}
		q.n = (unsigned int)n;
	}
	q.name = name;
	q.gone = req->gone;
	q.gone_arg = req->arg;
	qprofd_model_src(d, req, &src);
	ret = qp_slow_model_build(&src, &q, &m);
	if (ret == -ENODEV) {
		qp_reply_error(resp, 503, "slow instances are not collected: %s",
			       !src.cpu ? src.cpu_error : qp_cpu_off_error(src.cpu) ? qp_cpu_off_error(src.cpu)
										: "no room for them");
		return;
	}
	if (ret == -ENOENT) {
		qp_reply_error(resp, 404, "no instance of scope '%.256s' in process %d%s (unknown scope, or "
			       "none ended yet)", name, q.pid, q.seconds ? " in the window" : "");
		return;
	}
	if (ret == -EBUSY) {
		qp_reply_error(resp, 503, "%d windows of slowest instances (seconds=) are open, the most "
			       "qprofd keeps at once: retry later", QP_SLOW_WINDOWS);
		return;
	}
	if (ret == -ECONNRESET) {
		qp_reply_error(resp, 400, "the client closed its connection: the window ended early");
		return;
	}
	if (ret == -ECANCELED) {
		qp_reply_error(resp, 503, "qprofd is shutting down");
		return;
	}
	if (ret) {
		qp_reply_error(resp, 500, "cannot build the answer: %s", strerror(-ret));
		return;
	}
	qp_json_init(&j);
	qp_export_slow_json(&m, &j);
	qp_slow_model_free(&m);
	qp_reply_json(resp, 200, &j);
}
