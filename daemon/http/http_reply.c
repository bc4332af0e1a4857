/* http_reply.c - what every route handler shares (http_reply.h): the
 * replies and the query checks (the views of the daemon a handler gets are
 * in services.c). Below the router
 * (http_routes.c) and the handlers, which both call it; it calls neither. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "http_query.h"
#include "qprofd.h"
#include "http_reply.h"
#include "common/util.h"

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

static void check_key(void *arg, const char *key, const char *value, size_t value_len)
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

bool qp_req_pid(struct qprofd *d, const struct qp_request *req, struct qp_response *resp, int *pid)
{
	return qp_req_pid_or(d, req, resp, pid, NULL, "");
}

bool qp_req_pid_or(struct qprofd *d, const struct qp_request *req, struct qp_response *resp, int *pid,
		   bool (*known_also)(struct qprofd *d, int pid), const char *unknown_also)
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
	if (!known && known_also)
		known = known_also(d, v);
	if (!known) {
		qp_reply_error(resp, 404, "process %d is not a target%s", v, unknown_also);
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

bool qp_req_pid_seconds(struct qprofd *d, const struct qp_request *req, struct qp_response *resp,
			unsigned int *sec, int *pid)
{
	static const char *const allowed[] = { "pid", "seconds", NULL };

	return qp_req_keys_ok(req, resp, allowed) && qp_req_seconds(req, resp, sec) &&
	       qp_req_pid(d, req, resp, pid);
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
