/* http_routes.c - the API of DESIGN.md: a table of routes and the router;
 * the replies and query checks every handler shares; GET /api/status and
 * /metrics. The other handlers are in http_targets.c, http_data.c and
 * http_cpu.c. Handlers take the registry lock only while they touch it; a
 * windowed request waits without it. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "collect_cpu.h"
#include "collect_scopes.h"
#include "export_metrics.h"
#include "http_conn.h"
#include "model_cpu_build.h"
#include "http_query.h"
#include "lifecycle.h"
#include "logs.h"
#include "model_scopes.h"
#include "qprofd.h"
#include "report.h"
#include "http_routes.h"

void qp_reply_json(struct qp_response *resp, int status, struct qp_json *j)
{
	size_t len = 0;
	char *s = qp_json_finish(j, &len);

	if (!s) {
		resp->status = 500;
		resp->body = strdup("{\"error\":\"out of memory while writing JSON\"}\n");
		resp->len = resp->body ? strlen(resp->body) : 0;
		return;
	}
	/* a newline ends every document: friendlier to curl and to NDJSON readers */
	{
		char *t = realloc(s, len + 2);

		if (t) {
			s = t;
			s[len++] = '\n';
			s[len] = '\0';
		}
	}
	resp->status = status;
	resp->body = s;
	resp->len = len;
	resp->content_type = "application/json";
}

void __printf(3, 4) qp_reply_error(struct qp_response *resp, int status, const char *fmt, ...)
{
	struct qp_json j;
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	qp_json_init(&j);
	qp_json_obj_begin(&j);
	qp_json_kv_str(&j, "error", msg);
	qp_json_obj_end(&j);
	qp_reply_json(resp, status, &j);
}

/* Query parameters: only the route's own names are accepted. The parsing
 * itself is in http_query.c; here are the request and the registry. */
struct key_check {
	const char *const *allowed;
	const char *bad;
	char msg[128];
};

static void check_key(void *arg, const char *key)
{
	struct key_check *kc = arg;

	if (kc->bad)
		return;
	kc->bad = qp_query_unknown_key(kc->allowed, &key, 1, kc->msg, sizeof(kc->msg));
}

bool qp_req_keys_ok(const struct qp_request *req, struct qp_response *resp, const char *const *allowed)
{
	struct key_check kc = { allowed, NULL, "" };

	req->query_keys(req->arg, check_key, &kc);
	if (kc.bad) {
		qp_reply_error(resp, 400, "%s", kc.msg);
		return false;
	}
	return true;
}

/* pid=: absent -> 0; else a positive pid that is a target. */
bool qp_req_pid(struct qprofd *d, const struct qp_request *req, struct qp_response *resp, int *pid)
{
	char msg[128];
	bool known;
	int v;

	*pid = 0;
	if (qp_query_pid(req->query(req->arg, "pid"), &v, msg, sizeof(msg))) {
		qp_reply_error(resp, 400, "%s", msg);
		return false;
	}
	if (!v)
		return true;
	pthread_mutex_lock(&d->reg.lock);
	known = qp_registry_find(&d->reg, v) != NULL;
	pthread_mutex_unlock(&d->reg.lock);
	if (!known) {
		qp_reply_error(resp, 404, "process %d is not a target", v);
		return false;
	}
	*pid = v;
	return true;
}

/* seconds=: absent -> 0 (everything since attach); else 1..300, clamped,
 * and the answer's X-Qprof-Seconds says when it was. */
bool qp_req_seconds(const struct qp_request *req, struct qp_response *resp, unsigned int *sec)
{
	char msg[128];
	int64_t asked;

	if (qp_query_seconds_ex(req->query(req->arg, "seconds"), sec, &asked, msg, sizeof(msg))) {
		qp_reply_error(resp, 400, "%s", msg);
		return false;
	}
	if (*sec && asked != (int64_t)*sec)
		snprintf(resp->seconds, sizeof(resp->seconds), "%u (clamped from %lld)", *sec, (long long)asked);
	return true;
}

void qp_reply_buf(struct qp_response *resp, struct qp_buf *b, const char *ctype, int ret)
{
	size_t len;
	char *data;

	if (ret || b->failed) {
		qp_buf_free(b);
		qp_reply_error(resp, 500, "out of memory while exporting");
		return;
	}
	data = qp_buf_steal(b, &len);
	if (!data) {
		qp_reply_error(resp, 500, "out of memory while exporting");
		return;
	}
	resp->status = 200;
	resp->body = data;
	resp->len = len;
	resp->content_type = ctype;
}


void qp_route_status(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { NULL };
	struct qp_scope_snapshot snap;
	struct qp_json j;
	uint64_t dropped = 0, events = 0;
	size_t i;
	int c;

	if (!qp_req_keys_ok(req, resp, allowed))
		return;
	if (qp_scopes_read(d->scopes, 0, &snap)) {
		qp_reply_error(resp, 500, "cannot read the BPF maps");
		return;
	}
	for (c = QPROF_CNT_DROP_NO_ENTER; c <= QPROF_CNT_DROP_MAP_FULL; c++)
		dropped += snap.counters[c];
	dropped += snap.counters[QPROF_CNT_DROP_NO_STACK];
	/* events: scopes measured, summed from the aggregates (no per-event counter) */
	for (i = 0; i < snap.n; i++)
		events += snap.rows[i].stats.count;
	qp_json_init(&j);
	qp_json_obj_begin(&j);
	qp_json_kv_str(&j, "version", QPROF_VERSION);
	qp_json_kv_u64(&j, "uptime_ms", (qp_now_ns() - d->start_ns) / 1000000);
	pthread_mutex_lock(&d->reg.lock);
	qp_json_key(&j, "targets");
	qp_json_arr_begin(&j);
	for (i = 0; i < d->reg.ntargets; i++)
		qp_target_json(d->reg.targets[i], &j);
	qp_json_arr_end(&j);
	qp_json_key(&j, "binaries");
	qp_json_arr_begin(&j);
	for (i = 0; i < d->reg.nbinaries; i++)
		qp_binary_json(&d->reg, d->reg.binaries[i], &j);
	qp_json_arr_end(&j);
	qp_json_kv_u64(&j, "exited_targets_forgotten", d->reg.exited_forgotten);
	qp_lifecycle_json(d->reg.lc, &j);
	pthread_mutex_unlock(&d->reg.lock);
	qp_json_key(&j, "cpu");
	qp_json_obj_begin(&j);
	{
		uint64_t samples = 0, lost = 0, aged = 0;
		size_t table_bytes = 0;

		if (d->cpu) {
			qp_cpu_counters(d->cpu, &samples, &lost);
			qp_cpu_memory(d->cpu, &aged, &table_bytes);
		}
		qp_json_kv_bool(&j, "running", d->cpu != NULL);
		qp_json_kv_u64(&j, "frequency_hz", d->frequency_hz);
		qp_json_kv_u64(&j, "samples", samples);
		qp_json_kv_u64(&j, "lost", lost);
		qp_json_kv_u64(&j, "aged", aged);
		qp_json_kv_u64(&j, "table_bytes", table_bytes);
		qp_json_kv_bool(&j, "all", d->sample_all);
		qp_json_kv_u64(&j, "cpus", qp_cpu_ncpus(d->cpu));
		if (!d->cpu)
			qp_json_kv_str(&j, "error", d->cpu_error);
	}
	qp_json_obj_end(&j);
	qp_json_key(&j, "scopes");
	qp_json_obj_begin(&j);
	qp_json_kv_u64(&j, "sites", qp_model_count_sites(&snap));
	qp_json_kv_u64(&j, "events", events);
	qp_json_kv_u64(&j, "dropped", dropped);
	qp_json_key(&j, "dropped_by_reason");
	qp_json_obj_begin(&j);
	qp_json_kv_u64(&j, "exit_without_enter", snap.counters[QPROF_CNT_DROP_NO_ENTER]);
	qp_json_kv_u64(&j, "out_of_order", snap.counters[QPROF_CNT_DROP_OUT_OF_ORDER]);
	qp_json_kv_u64(&j, "too_deep", snap.counters[QPROF_CNT_DROP_TOO_DEEP]);
	qp_json_kv_u64(&j, "thread_exit", snap.counters[QPROF_CNT_DROP_THREAD_EXIT]);
	qp_json_kv_u64(&j, "map_full", snap.counters[QPROF_CNT_DROP_MAP_FULL]);
	qp_json_kv_u64(&j, "stack_unavailable", snap.counters[QPROF_CNT_DROP_NO_STACK]);
	qp_json_obj_end(&j);
	qp_json_obj_end(&j);
	qp_json_key(&j, "logs");
	qp_json_obj_begin(&j);
	{
		uint64_t received = 0, oldest = 0;

		if (d->logs)
			qp_logs_stats(d->logs, &received, &oldest);
		qp_json_kv_bool(&j, "running", d->logs != NULL);
		qp_json_kv_u64(&j, "received", received);
		qp_json_kv_u64(&j, "lost", snap.counters[QPROF_CNT_LOG_LOST]);
		qp_json_kv_u64(&j, "oldest_seq", oldest);
	}
	qp_json_obj_end(&j);
	qp_json_key(&j, "values");
	qp_json_obj_begin(&j);
	qp_json_kv_u64(&j, "lost", snap.counters[QPROF_CNT_VALUE_LOST]);
	qp_json_obj_end(&j);
	qp_json_key(&j, "marks");
	qp_json_obj_begin(&j);
	qp_json_kv_u64(&j, "lost", snap.counters[QPROF_CNT_MARK_LOST]);
	qp_json_obj_end(&j);
	{
		struct qp_conns_stats hs;

		/* the limits of http_conn.h, summed over the socket and --listen */
		qp_conns_totals(&hs);
		qp_json_key(&j, "http");
		qp_json_obj_begin(&j);
		qp_json_kv_u64(&j, "connections", hs.open);
		qp_json_kv_u64(&j, "long_polls", hs.long_polls);
		qp_json_kv_u64(&j, "closed_overdue", hs.closed_overdue);
		qp_json_kv_u64(&j, "refused_long_polls", hs.refused_long);
		qp_json_kv_u64(&j, "refused_connections", hs.refused_full);
		qp_json_obj_end(&j);
	}
	qp_json_obj_end(&j);
	qp_scope_snapshot_free(&snap);
	qp_reply_json(resp, 200, &j);
}

/* GET /metrics: Prometheus text, made from the API's own JSON answers. */
static void metrics_handler(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { NULL };
	struct qp_response parts[3];
	json_t *docs[3] = { NULL, NULL, NULL };
	struct qp_buf b;
	int i, ret = -1;

	if (!qp_req_keys_ok(req, resp, allowed))
		return;
	memset(parts, 0, sizeof(parts));
	qp_route_status(d, req, &parts[0]);
	qp_route_scopes(d, req, &parts[1]);
	qp_route_values(d, req, &parts[2]);
	for (i = 0; i < 3; i++)
		if (parts[i].status == 200 && parts[i].body)
			docs[i] = json_loadb(parts[i].body, parts[i].len, 0, NULL);
	qp_buf_init(&b);
	if (docs[0] && docs[1] && docs[2])
		ret = qp_export_metrics(docs[0], docs[1], docs[2], &b);
	for (i = 0; i < 3; i++) {
		free(parts[i].body);
		json_decref(docs[i]);
	}
	if (ret) {
		qp_buf_free(&b);
		qp_reply_error(resp, 500, "cannot build the metrics");
		return;
	}
	qp_reply_buf(resp, &b, "text/plain; version=0.0.4", 0);
}

/* Routes of DESIGN.md that later versions fill in: say so plainly. */
static const char *const not_yet[] = {
	NULL,
};



/* The routes of DESIGN.md: path (a trailing '*' matches one more path
 * segment), the handler of each method, and the Allow header of a 405. */
static const struct route {
	const char *path;
	qp_route_fn get, post, del;
	const char *allow;
} routes[] = {
	{ "/api/status", qp_route_status, NULL, NULL, "GET" },
	{ "/metrics", metrics_handler, NULL, NULL, "GET" },
	{ "/api/targets", qp_route_targets_list, qp_route_targets_add, qp_route_binary_delete, "GET, POST, DELETE" },
	{ "/api/targets/*", NULL, NULL, qp_route_target_delete, "DELETE" },
	{ "/api/scopes", qp_route_scopes, NULL, NULL, "GET" },
	{ "/api/values", qp_route_values, NULL, NULL, "GET" },
	{ "/api/logs", qp_route_logs, NULL, NULL, "GET" },
	{ "/api/report", qp_report_http, NULL, NULL, "GET" },
	{ "/api/cpu/folded", qp_route_cpu_folded, NULL, NULL, "GET" },
	{ "/api/cpu/flamegraph", qp_route_cpu_flamegraph, NULL, NULL, "GET" },
	{ "/pprof/profile", qp_route_pprof_profile, NULL, NULL, "GET" },
	{ "/debug/pprof/profile", qp_route_pprof_profile, NULL, NULL, "GET" },
	{ "/pprof/symbol", qp_route_pprof_symbol, qp_route_pprof_symbol, NULL, "GET, POST" },
	{ "/debug/pprof/symbol", qp_route_pprof_symbol, qp_route_pprof_symbol, NULL, "GET, POST" },
};

static bool path_matches(const char *pattern, const char *url)
{
	size_t n = strlen(pattern);

	if (pattern[n - 1] != '*')
		return !strcmp(pattern, url);
	return !strncmp(pattern, url, n - 1) && url[n - 1] && !strchr(url + n - 1, '/');
}

void qp_http_route(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
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
		fn(d, req, resp);
		return;
	}
	qp_reply_error(resp, 405, "method %.16s not allowed on %.200s (allowed: %s)", m, url, rt->allow);
	resp->allow = rt->allow;
}

