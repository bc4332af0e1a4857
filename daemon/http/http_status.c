/* http_status.c - the routes of the daemon's own state: GET /api/status
 * (the targets model's copy of the targets, binaries and fork/exec
 * figures, then the status model's figures, then the HTTP limits) and
 * GET /metrics (the status, scope and value models and the fork/exec
 * figures as Prometheus text, or
 * protobuf when the scraper's Accept asks for it). */
#include <errno.h>
#include <string.h>
#include "symbolize/debuginfod.h"
#include "export/export_heap.h"
#include "export/export_json.h"
#include "export/export_metrics.h"
#include "export/export_targets.h"
#include "model/heap_window.h"
#include "targets/lifecycle.h"
#include "http_conn.h"
#include "http_query.h"
#include "model/model_scopes.h"
#include "model/model_status.h"
#include "model/model_values.h"
#include "otlp_push.h"
#include "route_stats.h"
#include "http_routes.h"
#include "services.h"

void qp_route_status(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { NULL };
	struct qp_status_model m;
	struct qp_model_src src;
	struct qp_conns_stats hs;
	struct qp_heap_status_model hm;
	struct qp_targets_view tv;
	struct qp_status_svc ss;
	struct qp_json j;

	if (!qp_req_keys_ok(req, resp, allowed))
		return;
	qprofd_model_src(d, req, &src);
	qprofd_status_svc(d, &ss);
	if (qp_heap_status_build(&src, &hm)) {
		qp_reply_error(resp, 500, "out of memory");
		return;
	}
	if (qp_status_model_build(&src, &m)) {
		qp_heap_status_free(&hm);
		qp_reply_error(resp, 500, "cannot read the BPF maps");
		return;
	}
	/* copied under the registry lock, written without it */
	if (qp_targets_view_take(src.reg, QP_VIEW_BINARIES | QP_VIEW_LIFECYCLE, &tv)) {
		qp_heap_status_free(&hm);
		qp_reply_error(resp, 500, "out of memory");
		return;
	}
	qp_json_init(&j);
	qp_json_obj_begin(&j);
	qp_json_kv_str(&j, "version", QPROF_VERSION);
	qp_json_kv_u64(&j, "uptime_ms", m.uptime_ms);
	qp_export_status_targets_json(&tv, &j);
	qp_targets_view_free(&tv);
	qp_export_status_figures_json(&m, &j);
	qp_export_heap_status_json(&hm, &j);
	qp_heap_status_free(&hm);
	qp_otlp_status_json(ss.otlp, &j);
	qp_dbgf_status_json(ss.dbgf, &j);
	/* the limits of http_conn.h, summed over the socket and --listen */
	qp_conns_totals(&hs);
	qp_json_key(&j, "http");
	qp_json_obj_begin(&j);
	qp_json_kv_u64(&j, "connections", hs.open);
	qp_json_kv_u64(&j, "long_polls", hs.long_polls);
	qp_json_kv_u64(&j, "closed_overdue", hs.closed_overdue);
	qp_json_kv_u64(&j, "refused_long_polls", hs.refused_long);
	qp_json_kv_u64(&j, "refused_connections", hs.refused_full);
	qp_route_stats_json(ss.routes, &j);
	qp_json_obj_end(&j);
	qp_json_obj_end(&j);
	qp_reply_json(resp, 200, &j);
}

#define QP_PROTOBUF_CTYPE "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"

/* GET /metrics: everything since attach, for every target. */
void qp_route_metrics(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { NULL };
	const struct qp_scope_query q = { .probes = true, .strict = true };
	struct qp_scope_model scopes = { 0 };
	struct qp_value_model values = { 0 };
	struct qp_status_model status;
	struct qp_lifecycle_figures lc;
	struct qp_targets_view tv;
	struct qp_model_src src;
	struct qp_status_svc ss;
	const char *accept = req->header ? req->header(req->arg, "Accept") : NULL;
	bool protobuf = qp_accept_protobuf(accept);
	struct qp_buf b;
	int ret;

	if (!qp_req_keys_ok(req, resp, allowed))
		return;
	qprofd_model_src(d, req, &src);
	qprofd_status_svc(d, &ss);
	qp_buf_init(&b);
	ret = qp_status_model_build(&src, &status);
	if (!ret)
		ret = qp_scope_model_build(&src, &q, &scopes);
	if (!ret)
		ret = qp_value_model_build(&src, 0, &values);
	/* the fork/exec figures, read under the lifecycle's own lock (the
	 * lifecycle is set before the server starts, closed after it stops) */
	if (src.reg->lc)
		qp_lifecycle_figures(src.reg->lc, &lc);
	/* the targets copied under the registry lock, written without it */
	if (!ret && qp_targets_view_take(src.reg, 0, &tv))
		ret = -ENOMEM;
	else if (!ret) {
		ret = qp_export_metrics(&status, src.reg->lc ? &lc : NULL, &scopes, &values, &tv, ss.metrics,
					protobuf, &b);
		qp_targets_view_free(&tv);
	}
	qp_scope_model_free(&scopes);
	qp_value_model_free(&values);
	if (ret) {
		qp_buf_free(&b);
		qp_reply_error(resp, 500, "cannot build the metrics");
		return;
	}
	qp_reply_buf(resp, &b, protobuf ? QP_PROTOBUF_CTYPE : "text/plain; version=0.0.4; charset=utf-8", 0);
}
