/* report_http.c - GET /api/report: the list of written reports, or one
 * report's summary.txt / report.json, read through report_fs.c (relative to
 * the report directory fd, no symlink followed, regular files only). Replies
 * and query checks are the router's (http_routes.h). */
#include <errno.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "http.h"
#include "http_query.h"
#include "http_routes.h"
#include "services.h"
#include "common/json_writer.h"
#include "export/report.h"
#include "export/report_fs.h"
#include "common/util.h"

#define REPORT_MAX_FILE (256u << 20)

static void report_list(struct qp_registry *reg, struct qp_response *resp)
{
	struct qp_json j;
	size_t i;

	qp_json_init(&j);
	qp_json_obj_begin(&j);
	qp_json_key(&j, "reports");
	qp_json_arr_begin(&j);
	pthread_mutex_lock(&reg->lock);
	for (i = 0; i < reg->ntargets; i++) {
		const struct qp_target *t = reg->targets[i];

		if (!t->report_dir[0])
			continue;
		qp_json_obj_begin(&j);
		qp_json_kv_i64(&j, "pid", t->pid);
		qp_json_kv_str(&j, "comm", t->comm);
		qp_json_kv_str(&j, "dir", t->report_dir);
		qp_json_kv_u64(&j, "exited_ms", t->exited_ms);
		qp_json_obj_end(&j);
	}
	pthread_mutex_unlock(&reg->lock);
	qp_json_arr_end(&j);
	qp_json_obj_end(&j);
	qp_reply_json(resp, 200, &j);
}

/* The target PID (NULL: none), once no report of it is being or waiting
 * to be written (an exit's, or the old image's after an exec), or after
 * REPORT_WAIT_S: the answer then says it is not there. reg->lock held; it
 * is released while waiting. */
#define REPORT_WAIT_S 10
static struct qp_target *report_wait(struct qp_registry *reg, int pid)
{
	struct timespec until;
	struct qp_target *t;

	clock_gettime(CLOCK_REALTIME, &until);	/* the condition variable's clock */
	until.tv_sec += REPORT_WAIT_S;
	while ((t = qp_registry_find(reg, pid)) && !t->report_dir[0] && (t->reporting || t->report_pending))
		if (pthread_cond_timedwait(&reg->report_done, &reg->lock, &until) == ETIMEDOUT)
			return qp_registry_find(reg, pid);
	return t;
}

void qp_report_http(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { "pid", "format", NULL };
	const char *format = req->query(req->arg, "format");
	char dir[512] = "", msg[128];
	const char *sub, *file;
	bool known = false, exited = false;
	struct qp_target *t;
	bool json;
	size_t len;
	struct qp_model_src src;
	char *data;
	int pid, ret;

	if (!qp_req_keys_ok(req, resp, allowed))
		return;
	qprofd_model_src(d, req, &src);
	if (format && strcmp(format, "text") && strcmp(format, "json"))
		return qp_reply_error(resp, 400, "format must be text or json");
	json = format && !strcmp(format, "json");
	if (qp_query_pid(req->query(req->arg, "pid"), &pid, msg, sizeof(msg)))
		return qp_reply_error(resp, 400, "%s", msg);
	if (!pid)
		return report_list(src.reg, resp);

	pthread_mutex_lock(&src.reg->lock);
	t = report_wait(src.reg, pid);
	if (t) {
		known = true;
		exited = t->state == QP_TARGET_EXITED;
		snprintf(dir, sizeof(dir), "%s", t->report_dir);
	}
	pthread_mutex_unlock(&src.reg->lock);
	if (!dir[0] && !known)
		qp_report_fs_find(qprofd_report_fs(d), pid, dir, sizeof(dir));
	if (!dir[0]) {
		if (known && !exited)
			return qp_reply_error(resp, 404, "no report for process %d: it has not exited yet", pid);
		if (known)
			return qp_reply_error(resp, 404, "no report for process %d (not written, see qprofd's log)",
					   pid);
		return qp_reply_error(resp, 404, "no report for process %d", pid);
	}
	/* the report's own directory name, read relative to the directory fd */
	sub = strrchr(dir, '/');
	sub = sub ? sub + 1 : dir;
	file = json ? "report.json" : "summary.txt";
	ret = qp_report_fs_read(qprofd_report_fs(d), sub, file, REPORT_MAX_FILE, &data, &len);
	if (ret == -ENOENT)
		return qp_reply_error(resp, 404, "the report of process %d is gone from %s", pid, sub);
	if (ret == -ELOOP || ret == -EINVAL || ret == -ENOTDIR)
		return qp_reply_error(resp, 404, "no report for process %d: %s/%s is not a regular file",
				   pid, sub, file);
	if (ret)
		return qp_reply_error(resp, 500, "cannot read %s/%s: %s", sub, file, strerror(-ret));
	resp->status = 200;
	resp->body = data;
	resp->len = len;
	resp->content_type = json ? "application/json" : "text/plain; charset=utf-8";
}
