/* http_routes.c - the API of DESIGN.md: a table of routes, one small handler
 * each, JSON out through the one writer, JSON in through jansson with every
 * field checked. Handlers take the registry lock only while they touch it;
 * a windowed request waits without it. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "collect_cpu.h"
#include "collect_scopes.h"
#include "export.h"
#include "export_metrics.h"
#include "model_cpu_build.h"
#include "symbolize.h"
#include "http.h"
#include "http_query.h"
#include "json_writer.h"
#include "logs.h"
#include "model_scopes.h"
#include "model_values.h"
#include "qprofd.h"
#include "report.h"
#include "util.h"

static void reply_json(struct qp_response *resp, int status, struct qp_json *j)
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

static void __printf(3, 4) reply_error(struct qp_response *resp, int status, const char *fmt, ...)
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
	reply_json(resp, status, &j);
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

static bool query_ok(const struct qp_request *req, struct qp_response *resp, const char *const *allowed)
{
	struct key_check kc = { allowed, NULL, "" };

	req->query_keys(req->arg, check_key, &kc);
	if (kc.bad) {
		reply_error(resp, 400, "%s", kc.msg);
		return false;
	}
	return true;
}

/* pid=: absent -> 0; else a positive pid that is a target. */
static bool query_pid(struct qprofd *d, const struct qp_request *req, struct qp_response *resp, int *pid)
{
	char msg[128];
	bool known;
	int v;

	*pid = 0;
	if (qp_query_pid(req->query(req->arg, "pid"), &v, msg, sizeof(msg))) {
		reply_error(resp, 400, "%s", msg);
		return false;
	}
	if (!v)
		return true;
	pthread_mutex_lock(&d->reg.lock);
	known = qp_registry_find(&d->reg, v) != NULL;
	pthread_mutex_unlock(&d->reg.lock);
	if (!known) {
		reply_error(resp, 404, "process %d is not a target", v);
		return false;
	}
	*pid = v;
	return true;
}

/* seconds=: absent -> 0 (everything since attach); else 1..300, clamped. */
static bool query_seconds(const struct qp_request *req, struct qp_response *resp, unsigned int *sec)
{
	char msg[128];

	if (qp_query_seconds(req->query(req->arg, "seconds"), sec, msg, sizeof(msg))) {
		reply_error(resp, 400, "%s", msg);
		return false;
	}
	return true;
}

static void status_handler(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { NULL };
	struct qp_scope_snapshot snap;
	struct qp_json j;
	uint64_t dropped = 0, events = 0;
	size_t i;
	int c;

	if (!query_ok(req, resp, allowed))
		return;
	if (qp_scopes_read(d->scopes, 0, &snap)) {
		reply_error(resp, 500, "cannot read the BPF maps");
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
	pthread_mutex_unlock(&d->reg.lock);
	qp_json_key(&j, "cpu");
	qp_json_obj_begin(&j);
	{
		uint64_t samples = 0, lost = 0;

		if (d->cpu)
			qp_cpu_counters(d->cpu, &samples, &lost);
		qp_json_kv_bool(&j, "running", d->cpu != NULL);
		qp_json_kv_u64(&j, "frequency_hz", d->frequency_hz);
		qp_json_kv_u64(&j, "samples", samples);
		qp_json_kv_u64(&j, "lost", lost);
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
	qp_json_obj_end(&j);
	qp_scope_snapshot_free(&snap);
	reply_json(resp, 200, &j);
}

static void targets_list(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { NULL };
	struct qp_json j;
	size_t i;

	if (!query_ok(req, resp, allowed))
		return;
	qp_json_init(&j);
	qp_json_obj_begin(&j);
	qp_json_key(&j, "targets");
	qp_json_arr_begin(&j);
	pthread_mutex_lock(&d->reg.lock);
	for (i = 0; i < d->reg.ntargets; i++)
		qp_target_json(d->reg.targets[i], &j);
	pthread_mutex_unlock(&d->reg.lock);
	qp_json_arr_end(&j);
	qp_json_obj_end(&j);
	reply_json(resp, 200, &j);
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
		reply_error(resp, 400, "\"usdt\" must be an array of at most %d \"provider:name\" strings", MAX_EXTRA);
		return false;
	}
	if (spans && (!json_is_array(spans) || json_array_size(spans) > MAX_EXTRA)) {
		reply_error(resp, 400, "\"spans\" must be an array of at most %d objects", MAX_EXTRA);
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
		reply_error(resp, 500, "out of memory");
		return false;
	}
	json_array_foreach(usdt, i, e) {
		if (!probe_string_ok(e) || !strchr(json_string_value(e), ':')) {
			reply_error(resp, 400, "\"usdt\"[%zu] must be a \"provider:name\" string", i);
			return false;
		}
		u[i] = json_string_value(e);
	}
	json_array_foreach(spans, i, e) {
		json_t *n = json_object_get(e, "name"), *b = json_object_get(e, "begin"), *z = json_object_get(e, "end");

		if (!json_is_object(e) || json_object_size(e) != 3 || !probe_string_ok(n) || !probe_string_ok(b) ||
		    !probe_string_ok(z) || !strchr(json_string_value(b), ':') || !strchr(json_string_value(z), ':')) {
			reply_error(resp, 400, "\"spans\"[%zu] must be {\"name\": N, \"begin\": \"prov:name\", \"end\": \"prov:name\"}", i);
			return false;
		}
		sn[i] = json_string_value(n);
		sb[i] = json_string_value(b);
		se[i] = json_string_value(z);
	}
	return true;
}

static void targets_add(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { NULL };
	struct qp_attach_extra extra = { 0 };
	json_error_t jerr;
	json_t *root, *v;
	const char *key;
	char err[512] = "";
	struct qp_json j;
	int status = 500, ret;

	if (!query_ok(req, resp, allowed))
		return;
	if (req->body_too_large) {
		reply_error(resp, 413, "request body larger than %d bytes", QP_HTTP_MAX_BODY);
		return;
	}
	if (!req->body_len) {
		reply_error(resp, 400, "empty body: send {\"pid\": N} or {\"binary\": \"/path\"}");
		return;
	}
	root = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		reply_error(resp, 400, "malformed JSON at line %d column %d: %s", jerr.line, jerr.column, jerr.text);
		return;
	}
	if (!json_is_object(root)) {
		reply_error(resp, 400, "the body must be a JSON object");
		goto out;
	}
	json_object_foreach(root, key, v) {
		if (strcmp(key, "pid") && strcmp(key, "binary") && strcmp(key, "usdt") && strcmp(key, "spans")) {
			char k[64];

			snprintf(k, sizeof(k), "%s", key);
			reply_error(resp, 400, "unknown field '%s'", k);
			goto out;
		}
	}
	if (!!json_object_get(root, "pid") == !!json_object_get(root, "binary")) {
		reply_error(resp, 400, "give exactly one of \"pid\" and \"binary\"");
		goto out;
	}
	if (!parse_extra(root, &extra, resp))
		goto out;
	qp_json_init(&j);
	pthread_mutex_lock(&d->reg.lock);
	if ((v = json_object_get(root, "pid"))) {
		struct qp_target *t;
		json_int_t pid = json_is_integer(v) ? json_integer_value(v) : -1;

		if (pid <= 0 || pid > INT32_MAX) {
			pthread_mutex_unlock(&d->reg.lock);
			qp_json_free(&j);
			reply_error(resp, 400, "\"pid\" must be a positive integer");
			goto out;
		}
		ret = qp_registry_add_pid(&d->reg, (int)pid, &extra, &t, &status, err, sizeof(err));
		if (!ret)
			qp_target_json(t, &j);
	} else {
		struct qp_binary *b;

		v = json_object_get(root, "binary");
		if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 4095 ||
		    strlen(json_string_value(v)) != json_string_length(v)) {
			pthread_mutex_unlock(&d->reg.lock);
			qp_json_free(&j);
			reply_error(resp, 400, "\"binary\" must be a non-empty path string");
			goto out;
		}
		ret = qp_registry_add_binary(&d->reg, json_string_value(v), &extra, &b, &status, err, sizeof(err));
		if (!ret)
			qp_binary_json(&d->reg, b, &j);
	}
	pthread_mutex_unlock(&d->reg.lock);
	if (ret) {
		qp_json_free(&j);
		reply_error(resp, status, "%s", err);
	} else {
		reply_json(resp, 201, &j);
	}
out:
	free((void *)extra.usdt);
	free((void *)extra.span_names);
	free((void *)extra.span_begin);
	free((void *)extra.span_end);
	json_decref(root);
}

static void target_delete(struct qprofd *d, const struct qp_request *req, struct qp_response *resp,
			  const char *pidstr)
{
	static const char *const allowed[] = { NULL };
	struct qp_json j;
	int64_t pid;
	int ret;

	if (!query_ok(req, resp, allowed))
		return;
	if (qp_parse_i64(pidstr, 1, INT32_MAX, &pid)) {
		reply_error(resp, 400, "'%.32s' is not a pid", pidstr);
		return;
	}
	pthread_mutex_lock(&d->reg.lock);
	ret = qp_registry_remove_pid(&d->reg, (int)pid);
	pthread_mutex_unlock(&d->reg.lock);
	if (ret) {
		reply_error(resp, 404, "process %lld is not a target", (long long)pid);
		return;
	}
	qp_json_init(&j);
	qp_json_obj_begin(&j);
	qp_json_kv_i64(&j, "pid", pid);
	qp_json_kv_str(&j, "state", "detached");
	qp_json_obj_end(&j);
	reply_json(resp, 200, &j);
}

static void scopes_handler(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { "pid", "seconds", NULL };
	struct qp_scope_snapshot base = { 0 }, now = { 0 };
	struct qp_mark_row *mbase = NULL, *mnow = NULL;
	struct qp_probe_row *pbase = NULL, *pnow = NULL;
	size_t nmbase = 0, nmnow = 0, npbase = 0, npnow = 0;
	struct qp_marks_view mv = { 0 };
	unsigned int seconds;
	struct qp_json j;
	int pid;

	if (!query_ok(req, resp, allowed) || !query_seconds(req, resp, &seconds) ||
	    !query_pid(d, req, resp, &pid))
		return;
	if (seconds) {
		if (qp_scopes_read(d->scopes, pid, &base) || qp_marks_read(d->scopes, pid, &mbase, &nmbase) ||
		    qp_probe_counts_read(d->scopes, pid, &pbase, &npbase)) {
			qp_scope_snapshot_free(&base);
			reply_error(resp, 500, "cannot read the BPF maps");
			return;
		}
		if (!qprofd_wait(d, seconds)) {
			qp_scope_snapshot_free(&base);
			free(mbase);
			free(pbase);
			reply_error(resp, 503, "qprofd is shutting down");
			return;
		}
	}
	if (qp_scopes_read(d->scopes, pid, &now) || qp_marks_read(d->scopes, pid, &mnow, &nmnow) ||
	    qp_probe_counts_read(d->scopes, pid, &pnow, &npnow)) {
		qp_scope_snapshot_free(&base);
		qp_scope_snapshot_free(&now);
		free(mbase);
		free(mnow);
		free(pbase);
		reply_error(resp, 500, "cannot read the BPF maps");
		return;
	}
	mv.now = mnow;
	mv.nnow = nmnow;
	mv.pnow = pnow;
	mv.npnow = npnow;
	if (seconds) {
		mv.base = mbase;
		mv.nbase = nmbase;
		mv.pbase = pbase;
		mv.npbase = npbase;
		mv.window_s = seconds;
	}
	qp_json_init(&j);
	pthread_mutex_lock(&d->reg.lock);
	qp_model_scopes_json(&d->reg, &now, seconds ? &base : NULL, &mv, pid, &j);
	pthread_mutex_unlock(&d->reg.lock);
	qp_scope_snapshot_free(&base);
	qp_scope_snapshot_free(&now);
	free(mbase);
	free(mnow);
	free(pbase);
	free(pnow);
	reply_json(resp, 200, &j);
}

static void values_handler(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { "pid", NULL };
	struct qp_value_row *rows = NULL;
	struct qp_json j;
	size_t n = 0;
	int pid;

	if (!query_ok(req, resp, allowed) || !query_pid(d, req, resp, &pid))
		return;
	if (qp_values_read(d->scopes, pid, &rows, &n)) {
		reply_error(resp, 500, "cannot read the BPF maps");
		return;
	}
	qp_json_init(&j);
	pthread_mutex_lock(&d->reg.lock);
	qp_model_values_json(&d->reg, rows, n, &j);
	pthread_mutex_unlock(&d->reg.lock);
	qp_values_free(rows, n);
	reply_json(resp, 200, &j);
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
	size_t i;

	if (gap) {
		qp_buf_printf(&ls->pending, "{\"lost\": %llu}\n", (unsigned long long)gap);
	}
	pthread_mutex_lock(&d->reg.lock);
	for (i = 0; i < n; i++) {
		const struct qp_log_entry *e = &ls->batch[i];
		struct qp_target *t = qp_registry_find(&d->reg, (int)e->pid);
		const struct qp_site_info *site = t ? qp_target_site(&d->reg, t, e->site) : NULL;
		struct qp_json j;
		size_t len;
		char *line;

		qp_json_init(&j);
		qp_json_obj_begin(&j);
		qp_json_kv_u64(&j, "seq", e->seq);
		qp_json_kv_u64(&j, "ts_ns", e->ts_ns);
		qp_json_kv_u64(&j, "pid", e->pid);
		qp_json_kv_u64(&j, "tid", e->tid);
		qp_json_kv_str(&j, "file", site ? site->file : NULL);
		if (site)
			qp_json_kv_u64(&j, "line", site->line);
		else
			qp_json_kv_null(&j, "line");
		qp_json_kv_str(&j, "function", site ? site->function : NULL);
		qp_json_kv_str(&j, "message", e->msg);
		qp_json_kv_bool(&j, "truncated", e->len >= QPROF_LOG_MSG);
		qp_json_obj_end(&j);
		line = qp_json_finish(&j, &len);
		if (line) {
			qp_buf_add(&ls->pending, line, len);
			qp_buf_add(&ls->pending, "\n", 1);
			free(line);
		}
	}
	pthread_mutex_unlock(&d->reg.lock);
}

static bool daemon_stopping(struct qprofd *d)
{
	bool s;

	pthread_mutex_lock(&d->wait_lock);
	s = d->stopping;
	pthread_mutex_unlock(&d->wait_lock);
	return s;
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
		if (daemon_stopping(ls->d))
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

static void logs_handler(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { "pid", "since", "follow", NULL };
	const char *since = req->query(req->arg, "since");
	const char *follow = req->query(req->arg, "follow");
	struct log_stream *ls;
	uint64_t sv = 0;
	int pid;

	if (!query_ok(req, resp, allowed) || !query_pid(d, req, resp, &pid))
		return;
	if (since && qp_parse_u64(since, UINT64_MAX, &sv)) {
		reply_error(resp, 400, "since must be a sequence number (0 or more)");
		return;
	}
	if (follow && strcmp(follow, "0") && strcmp(follow, "1")) {
		reply_error(resp, 400, "follow must be 0 or 1");
		return;
	}
	if (!d->logs) {
		reply_error(resp, 503, "log collection is unavailable");
		return;
	}
	ls = calloc(1, sizeof(*ls));
	if (!ls) {
		reply_error(resp, 500, "out of memory");
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

/* A CPU profile for pid=, seconds=, scope=: the difference of two
 * snapshots for a window (several requests share the one sample stream),
 * everything since attach without seconds. false when resp holds an error. */
static bool cpu_profile(struct qprofd *d, const struct qp_request *req, struct qp_response *resp,
			const char *const *allowed, struct qp_cpu_profile *prof)
{
	struct qp_cpu_snapshot base = { 0 }, now = { 0 };
	struct qp_cpu_query q = { 0 };
	const char *scope = req->query(req->arg, "scope");
	unsigned int seconds;
	int pid, ret;

	if (!query_ok(req, resp, allowed) || !query_seconds(req, resp, &seconds) ||
	    !query_pid(d, req, resp, &pid))
		return false;
	if (scope && (!scope[0] || strlen(scope) > 256)) {
		reply_error(resp, 400, "scope must be a scope name of 1..256 bytes");
		return false;
	}
	if (!d->cpu) {
		reply_error(resp, 503, "CPU sampling is unavailable: %s", d->cpu_error);
		return false;
	}
	if (seconds && qp_cpu_read(d->cpu, &base)) {
		reply_error(resp, 500, "cannot read the samples");
		return false;
	}
	q.time_ns = qp_realtime_ns();
	if (seconds && !qprofd_wait(d, seconds)) {
		qp_cpu_snapshot_free(&base);
		reply_error(resp, 503, "qprofd is shutting down");
		return false;
	}
	if (qp_cpu_read(d->cpu, &now)) {
		qp_cpu_snapshot_free(&base);
		reply_error(resp, 500, "cannot read the samples");
		return false;
	}
	q.pid = pid;
	q.scope = scope;
	q.period_ns = 1000000000ull / (d->frequency_hz ? d->frequency_hz : 99);
	q.duration_ns = seconds ? (uint64_t)seconds * 1000000000ull : qp_now_ns() - d->start_ns;
	if (!seconds)
		q.time_ns = qp_realtime_ns() - q.duration_ns;
	pthread_mutex_lock(&d->reg.lock);
	ret = qp_cpu_build(d->cpu, d->reg.sym, &d->reg, &now, seconds ? &base : NULL, &q, prof);
	pthread_mutex_unlock(&d->reg.lock);
	qp_cpu_snapshot_free(&base);
	qp_cpu_snapshot_free(&now);
	if (ret) {
		reply_error(resp, 500, "cannot build the profile: %s", strerror(-ret));
		return false;
	}
	if (!prof->nsamples)
		snprintf(resp->note, sizeof(resp->note), "no samples%s%.200s%s", scope ? " inside scope '" : "",
			 scope ? scope : "", scope ? "' (unknown scope, or never on CPU)" : "");
	return true;
}

static void reply_buf(struct qp_response *resp, struct qp_buf *b, const char *ctype, int ret)
{
	size_t len;
	char *data;

	if (ret || b->failed) {
		qp_buf_free(b);
		reply_error(resp, 500, "out of memory while exporting");
		return;
	}
	data = qp_buf_steal(b, &len);
	if (!data) {
		reply_error(resp, 500, "out of memory while exporting");
		return;
	}
	resp->status = 200;
	resp->body = data;
	resp->len = len;
	resp->content_type = ctype;
}

static void cpu_folded(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { "pid", "seconds", "scope", NULL };
	struct qp_cpu_profile prof;
	struct qp_buf b;

	if (!cpu_profile(d, req, resp, allowed, &prof))
		return;
	qp_buf_init(&b);
	reply_buf(resp, &b, "text/plain; charset=utf-8", qp_export_folded(&prof, &b));
	qp_cpu_profile_free(&prof);
}

static void cpu_flamegraph(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { "pid", "seconds", "scope", "renderer", "download", "color",
					       NULL };
	const char *renderer = req->query(req->arg, "renderer");
	const char *color = req->query(req->arg, "color");
	const char *download = req->query(req->arg, "download");
	bool callgraph = false;
	struct qp_cpu_profile prof;
	struct qp_buf b, dot;
	char err[256] = "";
	int ret;

	if (renderer && strcmp(renderer, "flamegraph") && strcmp(renderer, "callgraph")) {
		reply_error(resp, 400, "renderer must be flamegraph or callgraph");
		return;
	}
	if (download && strcmp(download, "0") && strcmp(download, "1")) {
		reply_error(resp, 400, "download must be 0 or 1");
		return;
	}
	if (color && strcmp(color, "kind") && strcmp(color, "module")) {
		reply_error(resp, 400, "color must be kind (kernel/user) or module");
		return;
	}
	callgraph = renderer && !strcmp(renderer, "callgraph");
	if (!cpu_profile(d, req, resp, allowed, &prof))
		return;
	qp_buf_init(&b);
	if (!callgraph) {
		struct qp_flame_opts o = { .title = prof.title,
					   .color_by_module = color && !strcmp(color, "module") };

		ret = qp_export_flamegraph(&prof, &o, &b);
	} else {
		qp_buf_init(&dot);
		ret = qp_export_callgraph_dot(&prof, &dot);
		if (!ret && !dot.failed)
			ret = qp_render_dot_svg(dot.data, dot.len, &b, err, sizeof(err));
		qp_buf_free(&dot);
		if (ret == -ENOENT) {
			qp_buf_free(&b);
			qp_cpu_profile_free(&prof);
			reply_error(resp, 501, "renderer=callgraph needs graphviz's dot, which is not installed");
			return;
		}
		if (ret && ret != -ENOMEM) {
			qp_buf_free(&b);
			qp_cpu_profile_free(&prof);
			reply_error(resp, 500, "dot failed: %s", err[0] ? err : strerror(-ret));
			return;
		}
	}
	reply_buf(resp, &b, "image/svg+xml", ret);
	if (download && !strcmp(download, "1") && resp->status == 200)
		resp->disposition = callgraph ? "attachment; filename=\"callgraph.svg\""
					      : "attachment; filename=\"cpu.svg\"";
	qp_cpu_profile_free(&prof);
}

static void pprof_profile(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { "pid", "seconds", "scope", NULL };
	struct qp_cpu_profile prof;
	struct qp_buf b;

	if (!cpu_profile(d, req, resp, allowed, &prof))
		return;
	qp_buf_init(&b);
	reply_buf(resp, &b, "application/octet-stream", qp_export_pprof(&prof, &b));
	if (resp->status == 200)
		resp->disposition = "attachment; filename=\"profile.pb.gz\"";
	qp_cpu_profile_free(&prof);
}

/* The gperftools symbol protocol: GET says symbols are available; POST
 * "0xADDR+0xADDR..." answers "0xADDR\tname" per line. */
static void pprof_symbol(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { NULL };
	const char *p, *end;
	struct qp_buf b;
	size_t count = 0;

	if (!query_ok(req, resp, allowed))
		return;
	qp_buf_init(&b);
	if (!strcmp(req->method, "GET")) {
		qp_buf_puts(&b, "num_symbols: 1\n");
		reply_buf(resp, &b, "text/plain", 0);
		return;
	}
	if (req->body_too_large) {
		reply_error(resp, 413, "symbol request larger than %d bytes", QP_HTTP_MAX_BODY);
		return;
	}
	p = req->body ? req->body : "";
	end = p + req->body_len;
	pthread_mutex_lock(&d->reg.lock);
	while (p < end) {
		const char *q = p;
		char tok[24];
		uint64_t addr;
		const char *name;
		size_t n;

		while (q < end && *q != '+' && *q != '\n' && *q != '\r')
			q++;
		n = (size_t)(q - p);
		if (n) {
			char *e;

			if (n >= sizeof(tok)) {
				pthread_mutex_unlock(&d->reg.lock);
				qp_buf_free(&b);
				reply_error(resp, 400, "malformed address in the symbol request");
				return;
			}
			memcpy(tok, p, n);
			tok[n] = '\0';
			errno = 0;
			addr = strtoull(tok, &e, 16);
			if (errno || *e || tok[0] == '-' || tok[0] == '+' || e == tok) {
				pthread_mutex_unlock(&d->reg.lock);
				qp_buf_free(&b);
				reply_error(resp, 400, "malformed address '%s' in the symbol request", tok);
				return;
			}
			name = d->reg.sym ? qp_sym_any(d->reg.sym, addr) : NULL;
			qp_buf_printf(&b, "0x%016llx\t%s\n", (unsigned long long)addr, name ? name : "??");
			count++;
		}
		p = q + 1;
	}
	pthread_mutex_unlock(&d->reg.lock);
	if (!count) {
		qp_buf_free(&b);
		reply_error(resp, 400, "send addresses as 0xADDR+0xADDR...");
		return;
	}
	reply_buf(resp, &b, "text/plain", 0);
}

/* GET /metrics: Prometheus text, made from the API's own JSON answers. */
static void metrics_handler(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { NULL };
	struct qp_response parts[3];
	json_t *docs[3] = { NULL, NULL, NULL };
	struct qp_buf b;
	int i, ret = -1;

	if (!query_ok(req, resp, allowed))
		return;
	memset(parts, 0, sizeof(parts));
	status_handler(d, req, &parts[0]);
	scopes_handler(d, req, &parts[1]);
	values_handler(d, req, &parts[2]);
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
		reply_error(resp, 500, "cannot build the metrics");
		return;
	}
	reply_buf(resp, &b, "text/plain; version=0.0.4", 0);
}

/* Routes of DESIGN.md that later versions fill in: say so plainly. */
static const char *const not_yet[] = {
	NULL,
};

typedef void (*route_fn)(struct qprofd *d, const struct qp_request *req, struct qp_response *resp);

static void target_delete_route(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	target_delete(d, req, resp, req->url + strlen("/api/targets/"));
}

/* The routes of DESIGN.md: path (a trailing '*' matches one more path
 * segment), the handler of each method, and the Allow header of a 405. */
static const struct route {
	const char *path;
	route_fn get, post, del;
	const char *allow;
} routes[] = {
	{ "/api/status", status_handler, NULL, NULL, "GET" },
	{ "/metrics", metrics_handler, NULL, NULL, "GET" },
	{ "/api/targets", targets_list, targets_add, NULL, "GET, POST" },
	{ "/api/targets/*", NULL, NULL, target_delete_route, "DELETE" },
	{ "/api/scopes", scopes_handler, NULL, NULL, "GET" },
	{ "/api/values", values_handler, NULL, NULL, "GET" },
	{ "/api/logs", logs_handler, NULL, NULL, "GET" },
	{ "/api/report", qp_report_http, NULL, NULL, "GET" },
	{ "/api/cpu/folded", cpu_folded, NULL, NULL, "GET" },
	{ "/api/cpu/flamegraph", cpu_flamegraph, NULL, NULL, "GET" },
	{ "/pprof/profile", pprof_profile, NULL, NULL, "GET" },
	{ "/debug/pprof/profile", pprof_profile, NULL, NULL, "GET" },
	{ "/pprof/symbol", pprof_symbol, pprof_symbol, NULL, "GET, POST" },
	{ "/debug/pprof/symbol", pprof_symbol, pprof_symbol, NULL, "GET, POST" },
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
	route_fn fn = NULL;
	size_t i;

	memset(resp, 0, sizeof(*resp));
	for (i = 0; i < QP_ARRAY_SIZE(routes) && !rt; i++)
		if (path_matches(routes[i].path, url))
			rt = &routes[i];
	if (!rt) {
		for (i = 0; not_yet[i]; i++) {
			if (!strcmp(url, not_yet[i])) {
				reply_error(resp, 501, "%s is not available yet in this version of qprofd",
					    not_yet[i]);
				return;
			}
		}
		reply_error(resp, 404, "no such route: %.200s", url);
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
	reply_error(resp, 405, "method %.16s not allowed on %.200s (allowed: %s)", m, url, rt->allow);
	resp->allow = rt->allow;
}
