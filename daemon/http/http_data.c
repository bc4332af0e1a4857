/* http_data.c - the routes of measured scopes, values and logs:
 * /api/scopes (also windowed) and /api/values (query -> model -> JSON
 * encoder), /api/logs (NDJSON, streamed with follow=1). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collect_scopes.h"
#include "export_json.h"
#include "logs.h"
#include "model_scopes.h"
#include "model_values.h"
#include "qprofd.h"
#include "http_routes.h"
#include "util.h"

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
	static const char *const allowed[] = { "pid", "seconds", NULL };
	struct qp_scope_query q = { .probes = true, .strict = true };
	struct qp_scope_model m;
	struct qp_model_src src;
	struct qp_json j;
	int ret;

	if (!qp_req_keys_ok(req, resp, allowed) || !qp_req_seconds(req, resp, &q.seconds) ||
	    !qp_req_pid(d, req, resp, &q.pid))
		return;
	qprofd_model_src(d, &src);
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
	qprofd_model_src(d, &src);
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
 * them) is reported in the stream as {"lost": N}. */
struct log_stream {
	struct qprofd *d;
	uint64_t since;
	uint64_t kernel_lost;	/* kernel losses already reported */
	int pid;
	bool follow;
	struct qp_buf pending;	/* formatted, not yet handed to MHD */
	size_t off;
	struct qp_log_entry batch[64];
};

static uint64_t kernel_log_losses(struct qprofd *d)
{
	return qp_scopes_counter(d->scopes, QPROF_CNT_LOG_LOST);
}

static void format_logs(struct log_stream *ls, size_t n, uint64_t gap)
{
	struct qprofd *d = ls->d;
	/* the sites' names, copied under the registry lock; the JSON is made
	 * after it is dropped */
	struct {
		char *file, *function;
		uint32_t line;
		bool known;
	} names[QP_ARRAY_SIZE(ls->batch)];
	size_t i;

	if (gap) {
		qp_buf_printf(&ls->pending, "{\"lost\": %llu}\n", (unsigned long long)gap);
	}
	memset(names, 0, sizeof(names));
	pthread_mutex_lock(&d->reg.lock);
	for (i = 0; i < n; i++) {
		const struct qp_log_entry *e = &ls->batch[i];
		struct qp_target *t = qp_registry_find(&d->reg, (int)e->pid);
		const struct qp_site_info *site = t ? qp_target_site(&d->reg, t, e->site) : NULL;

		if (!site)
			continue;
		names[i].file = site->file ? strdup(site->file) : NULL;
		names[i].function = site->function ? strdup(site->function) : NULL;
		names[i].line = site->line;
		names[i].known = (names[i].file || !site->file) && (names[i].function || !site->function);
	}
	pthread_mutex_unlock(&d->reg.lock);
	for (i = 0; i < n; i++) {
		const struct qp_log_entry *e = &ls->batch[i];
		bool site = names[i].known;
		struct qp_json j;
		size_t len;
		char *line;

		qp_json_init(&j);
		qp_json_obj_begin(&j);
		qp_json_kv_u64(&j, "seq", e->seq);
		qp_json_kv_u64(&j, "ts_ns", e->ts_ns);
		qp_json_kv_u64(&j, "pid", e->pid);
		qp_json_kv_u64(&j, "tid", e->tid);
		qp_json_kv_str(&j, "file", site ? names[i].file : NULL);
		if (site)
			qp_json_kv_u64(&j, "line", names[i].line);
		else
			qp_json_kv_null(&j, "line");
		qp_json_kv_str(&j, "function", site ? names[i].function : NULL);
		qp_json_kv_str(&j, "message", e->msg);
		qp_json_kv_bool(&j, "truncated", e->len >= QPROF_LOG_MSG);
		qp_json_obj_end(&j);
		line = qp_json_finish(&j, &len);
		if (line) {
			qp_buf_add(&ls->pending, line, len);
			qp_buf_add(&ls->pending, "\n", 1);
			free(line);
		}
		free(names[i].file);
		free(names[i].function);
	}
}

static ssize_t log_stream_read(void *state, char *buf, size_t max)
{
	struct log_stream *ls = state;
	uint64_t last, kl;
	size_t n;

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
		if (qp_stop_is_set(&ls->d->stop))
			return QP_STREAM_END;
		n = qp_logs_get(ls->d->logs, ls->since, ls->pid, ls->batch, QP_ARRAY_SIZE(ls->batch), &last);
		kl = kernel_log_losses(ls->d);
		if (n || last > ls->since || kl > ls->kernel_lost) {
			uint64_t gap = 0;

			/* sequence numbers skipped: evicted before this reader saw them */
			if (n && ls->batch[0].seq > ls->since + 1 && ls->pid <= 0)
				gap = ls->batch[0].seq - ls->since - 1;
			gap += kl - ls->kernel_lost;
			ls->kernel_lost = kl;
			ls->since = last;
			format_logs(ls, n, gap);
			if (ls->pending.failed)
				return QP_STREAM_ERROR;
			if (ls->pending.len)
				continue;
		}
		if (!ls->follow)
			return QP_STREAM_END;
		if (!qp_logs_wait(ls->d->logs, ls->since, 1000))
			return QP_STREAM_END;
		if (!qp_logs_get(ls->d->logs, ls->since, ls->pid, ls->batch, 0, &last) && last == ls->since &&
		    kernel_log_losses(ls->d) == ls->kernel_lost)
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
	if (!d->logs) {
		qp_reply_error(resp, 503, "log collection is unavailable");
		return;
	}
	ls = calloc(1, sizeof(*ls));
	if (!ls) {
		qp_reply_error(resp, 500, "out of memory");
		return;
	}
	ls->d = d;
	ls->since = sv;
	ls->pid = pid;
	ls->follow = follow && !strcmp(follow, "1");
	/* kernel losses from before this request are history, not news */
	ls->kernel_lost = sv ? kernel_log_losses(d) : 0;
	qp_buf_init(&ls->pending);
	resp->status = 200;
	resp->content_type = "application/x-ndjson";
	resp->read = log_stream_read;
	resp->done = log_stream_done;
	resp->state = ls;
}
