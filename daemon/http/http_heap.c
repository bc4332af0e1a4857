/* http_heap.c - the heap routes: GET /pprof/heap and /pprof/growth
 * (gzipped pprof) and GET /api/heap/flamegraph (the heap chart: SVG flame
 * graph or call graph, or folded text with renderer=folded), for one
 * target whose heap is profiled. The profile comes from heap_window.h;
 * this file parses the query and encodes. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "export/export.h"
#include "render_dot.h"
#include "model/heap_window.h"
#include "http_routes.h"
#include "services.h"

/* The profile for pid= (required), seconds=, and KIND; false when resp
 * holds the error. */
static bool heap_profile(struct qprofd *d, const struct qp_request *req, struct qp_response *resp,
			 const char *const *allowed, enum qp_heap_kind kind, bool pprof,
			 struct qp_cpu_profile *prof)
{
	struct qp_heap_query q = { .kind = kind, .pprof = pprof };
	struct qp_model_src src;
	char msg[768];
	int ret, status;

	if (!qp_req_keys_ok(req, resp, allowed) || !qp_req_seconds(req, resp, &q.seconds) ||
	    !qp_req_pid(d, req, resp, &q.pid))
		return false;
	if (!q.pid) {
		qp_reply_error(resp, 400, "give the process: pid=N (a target whose heap is profiled)");
		return false;
	}
	qprofd_model_src(d, req, &src);
	ret = qp_heap_window(&src, &q, prof, resp->note, sizeof(resp->note), msg, sizeof(msg));
	if (!ret)
		return true;
	status = ret == -ENODEV || ret == -ECANCELED ? 503 : ret == -ENOENT || ret == -ENODATA ? 404 :
		 ret == -ENOEXEC ? 422 : 500;
	qp_reply_error(resp, status, "%s", msg);
	return false;
}

static void heap_pprof(struct qprofd *d, const struct qp_request *req, struct qp_response *resp,
		       enum qp_heap_kind kind, const char *disposition)
{
	static const char *const allowed[] = { "pid", "seconds", NULL };
	struct qp_cpu_profile prof;
	struct qp_buf b;

	if (!heap_profile(d, req, resp, allowed, kind, true, &prof))
		return;
	qp_buf_init(&b);
	qp_reply_buf(resp, &b, "application/octet-stream", qp_export_pprof(&prof, &b));
	if (resp->status == 200)
		resp->disposition = disposition;
	qp_cpu_profile_free(&prof);
}

void qp_route_pprof_heap(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	heap_pprof(d, req, resp, QP_HEAP_INUSE, "attachment; filename=\"heap.pb.gz\"");
}

void qp_route_pprof_growth(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	heap_pprof(d, req, resp, QP_HEAP_GROWTH, "attachment; filename=\"growth.pb.gz\"");
}

void qp_route_heap_flamegraph(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { "pid", "seconds", "kind", "renderer", "download", NULL };
	const char *kind = req->query(req->arg, "kind");
	const char *renderer = req->query(req->arg, "renderer");
	const char *download = req->query(req->arg, "download");
	enum qp_heap_kind k = QP_HEAP_INUSE;
	struct qp_cpu_profile prof;
	struct qp_buf b, dot;
	char err[256] = "";
	int ret;

	if (kind && !strcmp(kind, "alloc"))
		k = QP_HEAP_ALLOC;
	else if (kind && !strcmp(kind, "growth"))
		k = QP_HEAP_GROWTH;
	else if (kind && strcmp(kind, "inuse")) {
		qp_reply_error(resp, 400, "kind must be inuse, alloc or growth");
		return;
	}
	if (renderer && strcmp(renderer, "flamegraph") && strcmp(renderer, "callgraph") &&
	    strcmp(renderer, "folded")) {
		qp_reply_error(resp, 400, "renderer must be flamegraph, callgraph or folded");
		return;
	}
	if (download && strcmp(download, "0") && strcmp(download, "1")) {
		qp_reply_error(resp, 400, "download must be 0 or 1");
		return;
	}
	if (!heap_profile(d, req, resp, allowed, k, false, &prof))
		return;
	qp_buf_init(&b);
	if (renderer && !strcmp(renderer, "folded")) {
		qp_reply_buf(resp, &b, "text/plain; charset=utf-8", qp_export_folded(&prof, &b));
		qp_cpu_profile_free(&prof);
		return;
	}
	if (!renderer || !strcmp(renderer, "flamegraph")) {
		struct qp_flame_opts o = { .title = prof.title, .color_by_module = true };

		ret = qp_export_flamegraph(&prof, &o, &b);
	} else {
		qp_buf_init(&dot);
		ret = qp_export_callgraph_dot(&prof, &dot);
		if (!ret && !dot.failed)
			ret = qp_render_dot_svg(dot.data, dot.len, &b, err, sizeof(err));
		qp_buf_free(&dot);
		if (ret && ret != -ENOMEM) {
			qp_buf_free(&b);
			qp_cpu_profile_free(&prof);
			if (ret == -ENOENT)
				qp_reply_error(resp, 501, "renderer=callgraph needs graphviz's dot, which is not installed");
			else
				qp_reply_error(resp, 500, "dot failed: %s", err[0] ? err : strerror(-ret));
			return;
		}
	}
	qp_reply_buf(resp, &b, "image/svg+xml", ret);
	if (download && !strcmp(download, "1") && resp->status == 200)
		resp->disposition = "attachment; filename=\"heap.svg\"";
	qp_cpu_profile_free(&prof);
}
