/* http_data.c - the routes of measured scopes, values and logs:
 * /api/scopes (also windowed) and /api/values (query -> model -> JSON
 * encoder), /api/logs (NDJSON, streamed with follow=1). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export/export_json.h"
#include "export/export_logs.h"
#include "model/model_logs.h"
#include "model/model_scopes.h"
#include "model/model_values.h"
#include "http_routes.h"
#include "services.h"
#include "common/util.h"

/* The answer to a model builder's error. */
static void model_error(struct qp_response *resp, int ret)
{
	if (ret == -ECANCELED)
		qp_reply_error(resp, 503, "qprofd is shutting down");
	else if (ret == -ENOMEM)
		qp_reply_error(resp, 500, "out of memory");
	else
		qp_reply_error(resp, 500, "cannot read the BPF maps");
}

void qp_route_scopes(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	struct qp_scope_query q = { .probes = true, .strict = true };
	struct qp_scope_model m;
	struct qp_model_src src;
	struct qp_json j;
	int ret;

	if (!qp_req_pid_seconds(d, req, resp, &q.seconds, &q.pid))
		return;
	qprofd_model_src(d, req, &src);
	ret = qp_scope_model_build(&src, &q, &m);
	if (ret) {
		model_error(resp, ret);
		return;
	}
	qp_json_init(&j);
	qp_export_scopes_json(&m, &j);
	qp_scope_model_free(&m);
	qp_reply_json(resp, 200, &j);
}

void qp_route_values(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { "pid", NULL };
	struct qp_value_model m;
	struct qp_model_src src;
	struct qp_json j;
	int pid, ret;

	if (!qp_req_keys_ok(req, resp, allowed) || !qp_req_pid(d, req, resp, &pid))
		return;
	qprofd_model_src(d, req, &src);
	ret = qp_value_model_build(&src, pid, &m);
	if (ret) {
		model_error(resp, ret);
		return;
	}
	qp_json_init(&j);
	qp_export_values_json(&m, &j);
	qp_value_model_free(&m);
	qp_reply_json(resp, 200, &j);
}

/* GET /api/logs: NDJSON, one message per line, oldest first; with
 * follow=1 the answer stays open and streams new messages. A gap in the
 * sequence (messages lost in the kernel or evicted before this reader got
 * them) is reported in the stream as {"lost": N}. The log model reads and
 * names each batch, export_logs.c writes it; this only streams. */
struct log_stream {
	struct qp_model_src src;
	struct qp_log_reader rd;
	bool follow;
	struct qp_buf pending;	/* encoded, not yet handed to MHD */
	size_t off;
	struct qp_log_batch batch;
};

static ssize_t log_stream_read(void *state, char *buf, size_t max)
{
	struct log_stream *ls = state;
	int ret;

	for (;;) {
		if (ls->off < ls->pending.len) {
			size_t k = ls->pending.len - ls->off;

			if (k > max)
				k = max;
			memcpy(buf, ls->pending.data + ls->off, k);
			ls->off += k;
			return (ssize_t)k;
		}
		qp_buf_free(&ls->pending);
		ls->off = 0;
		if (qp_stop_is_set(ls->src.stop))
			return QP_STREAM_END;
		if (qp_log_read(&ls->src, &ls->rd, &ls->batch)) {
			ret = qp_export_log_ndjson(&ls->batch, &ls->pending);
			qp_log_batch_clear(&ls->batch);
			if (ret)
				return QP_STREAM_ERROR;
			if (ls->pending.len)
				continue;
		}
		if (!ls->follow)
			return QP_STREAM_END;
		ret = qp_log_wait(&ls->src, &ls->rd, 1000);
		if (ret < 0)
			return QP_STREAM_END;
		if (!ret)
			return 0; /* nothing new yet; MHD calls again */
	}
}

static void log_stream_done(void *state)
{
	struct log_stream *ls = state;

	qp_buf_free(&ls->pending);
	free(ls);
}

void qp_route_logs(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { "pid", "since", "follow", NULL };
	const char *since = req->query(req->arg, "since");
	const char *follow = req->query(req->arg, "follow");
	struct qp_model_src src;
	struct log_stream *ls;
	uint64_t sv = 0;
	int pid;

	if (!qp_req_keys_ok(req, resp, allowed) || !qp_req_pid(d, req, resp, &pid))
		return;
	if (since && qp_parse_u64(since, UINT64_MAX, &sv)) {
		qp_reply_error(resp, 400, "since must be a sequence number (0 or more)");
		return;
	}
	if (follow && strcmp(follow, "0") && strcmp(follow, "1")) {
		qp_reply_error(resp, 400, "follow must be 0 or 1");
		return;
	}
	qprofd_model_src(d, NULL, &src);	/* read after this returns: no request of its own */
	if (!src.logs) {
		qp_reply_error(resp, 503, "log collection is unavailable");
		return;
	}
	ls = calloc(1, sizeof(*ls));
	if (!ls) {
		qp_reply_error(resp, 500, "out of memory");
		return;
	}
	ls->src = src;
	ls->follow = follow && !strcmp(follow, "1");
	/* kernel losses from before this request are history, not news */
	qp_log_reader_init(&ls->src, &ls->rd, sv, pid);
	qp_buf_init(&ls->pending);
	resp->status = 200;
	resp->content_type = "application/x-ndjson";
	resp->read = log_stream_read;
	resp->done = log_stream_done;
	resp->state = ls;
}
