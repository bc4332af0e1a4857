/* http_targets.c - the routes that attach and detach: GET/POST
 * /api/targets and DELETE /api/targets/PID. The body is JSON, read by
 * jansson with every field checked. The handlers see the targets service
 * (targets/target_service.h) and nothing else of the daemon: the order of
 * heap, attach, reap is the service's. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "export/export_heap.h"
#include "export/export_targets.h"
#include "targets/target_service.h"
#include "http_routes.h"
#include "services.h"

static void targets_list(const struct qp_target_svc *s, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { NULL };
	struct qp_targets_view tv;
	struct qp_json j;

	if (!qp_req_keys_ok(req, resp, allowed))
		return;
	if (qp_tsvc_view(s, 0, &tv)) {
		qp_reply_error(resp, 500, "out of memory");
		return;
	}
	qp_json_init(&j);
	qp_export_targets_json(&tv, &j);
	qp_targets_view_free(&tv);
	qp_reply_json(resp, 200, &j);
}

#define MAX_EXTRA 64

/* "usdt": ["prov:name", ...], "spans": [{"name", "begin", "end"}, ...]: the
 * strings point into ROOT, which outlives the attach. */
static bool probe_string_ok(const json_t *v)
{
	const char *s;
	size_t n, i;

	if (!json_is_string(v))
		return false;
	s = json_string_value(v);
	n = json_string_length(v);
	if (!n || n > 128 || strlen(s) != n)
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == ':' || s[i] == '.' || s[i] == '-'))
			return false;
	return true;
}

static bool parse_extra(json_t *root, struct qp_attach_extra *x, struct qp_response *resp)
{
	json_t *usdt = json_object_get(root, "usdt"), *spans = json_object_get(root, "spans"), *e;
	const char **u = NULL, **sn = NULL, **sb = NULL, **se = NULL;
	size_t i;

	if (usdt && (!json_is_array(usdt) || json_array_size(usdt) > MAX_EXTRA)) {
		qp_reply_error(resp, 400, "\"usdt\" must be an array of at most %d \"provider:name\" strings", MAX_EXTRA);
		return false;
	}
	if (spans && (!json_is_array(spans) || json_array_size(spans) > MAX_EXTRA)) {
		qp_reply_error(resp, 400, "\"spans\" must be an array of at most %d objects", MAX_EXTRA);
		return false;
	}
	x->nusdt = usdt ? json_array_size(usdt) : 0;
	x->nspans = spans ? json_array_size(spans) : 0;
	u = calloc(x->nusdt + 1, sizeof(*u));
	sn = calloc(x->nspans + 1, sizeof(*sn));
	sb = calloc(x->nspans + 1, sizeof(*sb));
	se = calloc(x->nspans + 1, sizeof(*se));
	x->usdt = u;
	x->span_names = sn;
	x->span_begin = sb;
	x->span_end = se;
	if (!u || !sn || !sb || !se) {
		qp_reply_error(resp, 500, "out of memory");
		return false;
	}
	json_array_foreach(usdt, i, e) {
		if (!probe_string_ok(e) || !strchr(json_string_value(e), ':')) {
			qp_reply_error(resp, 400, "\"usdt\"[%zu] must be a \"provider:name\" string", i);
			return false;
		}
		u[i] = json_string_value(e);
	}
	json_array_foreach(spans, i, e) {
		json_t *n = json_object_get(e, "name"), *b = json_object_get(e, "begin"), *z = json_object_get(e, "end");

		if (!json_is_object(e) || json_object_size(e) != 3 || !probe_string_ok(n) || !probe_string_ok(b) ||
		    !probe_string_ok(z) || !strchr(json_string_value(b), ':') || !strchr(json_string_value(z), ':')) {
			qp_reply_error(resp, 400, "\"spans\"[%zu] must be {\"name\": N, \"begin\": \"prov:name\", \"end\": \"prov:name\"}", i);
			return false;
		}
		sn[i] = json_string_value(n);
		sb[i] = json_string_value(b);
		se[i] = json_string_value(z);
	}
	return true;
}

static void targets_add(const struct qp_target_svc *s, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { NULL };
	struct qp_attach_extra extra = { 0 };
	json_error_t jerr;
	json_t *root, *v;
	const char *key;
	char err[512] = "";
	struct qp_pid_attached pa;
	struct qp_binary_view bv = { 0 };
	struct qp_json j;
	int status = 500, ret;
	bool heap, existing = false;

	if (!qp_req_keys_ok(req, resp, allowed))
		return;
	if (req->body_too_large) {
		qp_reply_error(resp, 413, "request body larger than %d bytes", QP_HTTP_MAX_BODY);
		return;
	}
	if (!req->body_len) {
		qp_reply_error(resp, 400, "empty body: send {\"pid\": N} or {\"binary\": \"/path\"}");
		return;
	}
	root = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		qp_reply_error(resp, 400, "malformed JSON at line %d column %d: %s", jerr.line, jerr.column, jerr.text);
		return;
	}
	if (!json_is_object(root)) {
		qp_reply_error(resp, 400, "the body must be a JSON object");
		goto out;
	}
	json_object_foreach(root, key, v) {
		if (strcmp(key, "pid") && strcmp(key, "binary") && strcmp(key, "usdt") && strcmp(key, "spans") &&
		    strcmp(key, "collector") && strcmp(key, "heap")) {
			char k[64];

			snprintf(k, sizeof(k), "%s", key);
			qp_reply_error(resp, 400, "unknown field '%s'", k);
			goto out;
		}
	}
	if (!!json_object_get(root, "pid") == !!json_object_get(root, "binary")) {
		qp_reply_error(resp, 400, "give exactly one of \"pid\" and \"binary\"");
		goto out;
	}
	if (!parse_extra(root, &extra, resp))
		goto out;
	extra.privileged = req->privileged;
	extra.client_pid = req->peer_pid;
	if ((v = json_object_get(root, "collector"))) {
		if (!json_is_string(v) || qp_collector_parse(json_string_value(v), &extra.collector)) {
			qp_reply_error(resp, 400, "\"collector\" must be \"ring\" or \"bpf\"");
			goto out;
		}
	}
	if ((v = json_object_get(root, "heap"))) {
		if (!json_is_boolean(v)) {
			qp_reply_error(resp, 400, "\"heap\" must be true or false");
			goto out;
		}
		heap = json_is_true(v);
		if (heap && json_object_get(root, "binary")) {
			qp_reply_error(resp, 400, "\"heap\" takes pid targets (qprofd --heap profiles the "
				       "heap of every target, --binary ones included)");
			goto out;
		}
		if (heap && !s->heap) {
			qp_reply_error(resp, 503, "heap profiling is unavailable: %s", s->heap_error);
			goto out;
		}
	} else {
		heap = qp_tsvc_heap_default(s);
	}
	qp_json_init(&j);
	if ((v = json_object_get(root, "pid"))) {
		json_int_t pid = json_is_integer(v) ? json_integer_value(v) : -1;

		if (pid <= 0 || pid > INT32_MAX) {
			qp_json_free(&j);
			qp_reply_error(resp, 400, "\"pid\" must be a positive integer");
			goto out;
		}
		ret = qp_tsvc_attach_pid(s, (int)pid, &extra, heap, json_object_size(root) == 2, &pa, &status, err,
					 sizeof(err));
		if (!ret) {
			existing = pa.existing;
			qp_json_obj_begin(&j);
			qp_export_target_keys(&pa.tv, &j);
			if (heap) {
				qp_json_key(&j, "heap");
				qp_export_heap_target_json(&pa.hst, &j);
			}
			qp_json_obj_end(&j);
			qp_target_view_free(&pa.tv);
		}
	} else {
		v = json_object_get(root, "binary");
		if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 4095 ||
		    strlen(json_string_value(v)) != json_string_length(v)) {
			qp_json_free(&j);
			qp_reply_error(resp, 400, "\"binary\" must be a path string of 1..4095 bytes");
			goto out;
		}
		ret = qp_tsvc_attach_binary(s, json_string_value(v), &extra, &bv, &status, err, sizeof(err));
		if (!ret)
			qp_export_binary_json(&bv, &j);
		qp_binary_view_free(&bv);
	}
	if (ret) {
		qp_json_free(&j);
		qp_reply_error(resp, status, "%s", err);
	} else {
		qp_reply_json(resp, existing ? 200 : 201, &j);
	}
out:
	free((void *)extra.usdt);
	free((void *)extra.span_names);
	free((void *)extra.span_begin);
	free((void *)extra.span_end);
	json_decref(root);
}

static void target_delete(const struct qp_target_svc *s, const struct qp_request *req, struct qp_response *resp,
			  const char *pidstr)
{
	static const char *const allowed[] = { NULL };
	struct qp_json j;
	int64_t pid;
	int ret;

	if (!qp_req_keys_ok(req, resp, allowed))
		return;
	if (qp_parse_i64(pidstr, 1, INT32_MAX, &pid)) {
		qp_reply_error(resp, 400, "'%.32s' is not a pid", pidstr);
		return;
	}
	ret = qp_tsvc_detach_pid(s, (int)pid);
	if (ret < 0) {
		qp_reply_error(resp, 404, "process %lld is not a target", (long long)pid);
		return;
	}
	qp_json_init(&j);
	qp_json_obj_begin(&j);
	qp_json_kv_i64(&j, "pid", pid);
	/* 1: a --binary target covers it and keeps it (see qp_registry_remove_pid) */
	qp_json_kv_str(&j, "state", ret == 1 ? "kept_by_binary" : "detached");
	qp_json_obj_end(&j);
	qp_reply_json(resp, 200, &j);
}

/* DELETE /api/targets?binary=PATH: detach a --binary file and its processes. */
static void binary_delete(const struct qp_target_svc *s, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { "binary", NULL };
	const char *path = req->query(req->arg, "binary");
	struct qp_json j;
	int ret;

	if (!qp_req_keys_ok(req, resp, allowed))
		return;
	if (!path || !path[0]) {
		qp_reply_error(resp, 400, "give the binary to detach: DELETE /api/targets?binary=/path");
		return;
	}
	ret = qp_tsvc_detach_binary(s, path);
	if (ret) {
		qp_reply_error(resp, 404, "%.3000s is not a --binary target", path);
		return;
	}
	qp_json_init(&j);
	qp_json_obj_begin(&j);
	qp_json_kv_str(&j, "binary", path);
	qp_json_kv_str(&j, "state", "detached");
	qp_json_obj_end(&j);
	qp_reply_json(resp, 200, &j);
}

/* The router's entries: each takes the targets service out of D. */
void qp_route_targets_list(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	struct qp_target_svc s;

	qprofd_target_svc(d, &s);
	targets_list(&s, req, resp);
}

void qp_route_targets_add(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	struct qp_target_svc s;

	qprofd_target_svc(d, &s);
	targets_add(&s, req, resp);
}

void qp_route_binary_delete(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	struct qp_target_svc s;

	qprofd_target_svc(d, &s);
	binary_delete(&s, req, resp);
}

void qp_route_target_delete(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	struct qp_target_svc s;

	qprofd_target_svc(d, &s);
	target_delete(&s, req, resp, req->url + strlen("/api/targets/"));
}
