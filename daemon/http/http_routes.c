/* http_routes.c - the API of docs/reference/http-api.md: a table of routes
 * and the router. The handlers are in http_status.c, http_targets.c,
 * http_data.c, http_cpu.c, http_heap.c, http_slow.c, http_trace.c,
 * http_threads.c and report_http.c: each parses its query, asks the model,
 * and encodes what it gets, with the replies and query checks of
 * http_reply.c, which the router uses too. */
#include <stdint.h>
#include <string.h>
#include "http_query.h"
#include "qprofd.h"
#include "http_routes.h"
#include "common/util.h"

/* Routes of the API (docs/reference/http-api.md) that later versions fill in: say so plainly. */
static const char *const not_yet[] = {
	NULL,
};



/* The routes of docs/reference/http-api.md: path (a trailing '*' matches one more path
 * segment), the handler of each method, and the Allow header of a 405. */
static const struct route {
	const char *path;
	qp_route_fn get, post, del;
	const char *allow;
} routes[] = {
	{ "/api/status", qp_route_status, NULL, NULL, "GET" },
	{ "/metrics", qp_route_metrics, NULL, NULL, "GET" },
	{ "/api/targets", qp_route_targets_list, qp_route_targets_add, qp_route_binary_delete, "GET, POST, DELETE" },
	{ "/api/targets/*", NULL, NULL, qp_route_target_delete, "DELETE" },
	{ "/api/scopes", qp_route_scopes, NULL, NULL, "GET" },
	{ "/api/scopes/slowest", qp_route_slowest, NULL, NULL, "GET" },
	{ "/api/values", qp_route_values, NULL, NULL, "GET" },
	{ "/api/logs", qp_route_logs, NULL, NULL, "GET" },
	{ "/api/report", qp_report_http, NULL, NULL, "GET" },
	{ "/api/trace", qp_route_trace, NULL, NULL, "GET" },
	{ "/api/threads", qp_route_threads, NULL, NULL, "GET" },
	{ "/api/thread/stacks", qp_route_thread_stacks, NULL, NULL, "GET" },
	{ "/api/cpu/folded", qp_route_cpu_folded, NULL, NULL, "GET" },
	{ "/api/cpu/flamegraph", qp_route_cpu_flamegraph, NULL, NULL, "GET" },
	{ "/pprof/profile", qp_route_pprof_profile, NULL, NULL, "GET" },
	{ "/debug/pprof/profile", qp_route_pprof_profile, NULL, NULL, "GET" },
	{ "/pprof/heap", qp_route_pprof_heap, NULL, NULL, "GET" },
	{ "/debug/pprof/heap", qp_route_pprof_heap, NULL, NULL, "GET" },
	{ "/pprof/growth", qp_route_pprof_growth, NULL, NULL, "GET" },
	{ "/debug/pprof/growth", qp_route_pprof_growth, NULL, NULL, "GET" },
	{ "/api/heap/flamegraph", qp_route_heap_flamegraph, NULL, NULL, "GET" },
	{ "/api/offcpu/folded", qp_route_offcpu_folded, NULL, NULL, "GET" },
	{ "/api/offcpu/flamegraph", qp_route_offcpu_flamegraph, NULL, NULL, "GET" },
	{ "/pprof/offcpu", qp_route_pprof_offcpu, NULL, NULL, "GET" },
	{ "/pprof/symbol", qp_route_pprof_symbol, qp_route_pprof_symbol, NULL, "GET, POST" },
	{ "/debug/pprof/symbol", qp_route_pprof_symbol, qp_route_pprof_symbol, NULL, "GET, POST" },
};

_Static_assert(QP_ARRAY_SIZE(routes) <= QP_ROUTE_STATS_MAX, "route_stats.h: room for every route");

static bool path_matches(const char *pattern, const char *url)
{
	size_t n = strlen(pattern);

	if (pattern[n - 1] != '*')
		return !strcmp(pattern, url);
	return !strncmp(pattern, url, n - 1) && url[n - 1] && !strchr(url + n - 1, '/');
}

static void scan_arg(void *arg, const char *key, const char *value, size_t value_len)
{
	qp_query_scan_arg(arg, key, value, value_len);
}

static void route(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);

void qp_http_route(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	uint64_t t0 = qp_now_ns(), w0 = qp_lock_waited_ns();
	size_t i;

	route(d, req, resp);
	for (i = 0; i < QP_ARRAY_SIZE(routes); i++)
		if (path_matches(routes[i].path, req->url))
			break;
	if (i < QP_ARRAY_SIZE(routes))
		qp_route_stats_note(&d->routes, i, routes[i].path, qp_now_ns() - t0, qp_lock_waited_ns() - w0);
}

static void route(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	const char *url = req->url, *m = req->method;
	const struct route *rt = NULL;
	qp_route_fn fn = NULL;
	size_t i;

	memset(resp, 0, sizeof(*resp));
	for (i = 0; i < QP_ARRAY_SIZE(routes) && !rt; i++)
		if (path_matches(routes[i].path, url))
			rt = &routes[i];
	if (!rt) {
		for (i = 0; not_yet[i]; i++) {
			if (!strcmp(url, not_yet[i])) {
				qp_reply_error(resp, 501, "%s is not available yet in this version of qprofd",
					    not_yet[i]);
				return;
			}
		}
		qp_reply_error(resp, 404, "no such route: %.200s", url);
		return;
	}
	if (!strcmp(m, "GET"))
		fn = rt->get;
	else if (!strcmp(m, "POST"))
		fn = rt->post;
	else if (!strcmp(m, "DELETE"))
		fn = rt->del;
	if (fn) {
		struct qp_query_scan scan = { .n = 0 };

		req->query_keys(req->arg, scan_arg, &scan);
		if (scan.bad) {
			qp_reply_error(resp, 400, "%s", scan.err);
			return;
		}
		fn(d, req, resp);
		return;
	}
	qp_reply_error(resp, 405, "method %.16s not allowed on %.200s (allowed: %s)", m, url, rt->allow);
	resp->allow = rt->allow;
}

