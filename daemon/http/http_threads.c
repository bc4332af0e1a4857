/* http_threads.c - GET /api/threads?pid= (JSON) and GET
 * /api/thread/stacks?pid= (text): every thread of a target with its name,
 * state, CPU time and stacks, read without stopping it. pid= may be left
 * out when there is exactly one target. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "common/buf.h"
#include "export/export_threads.h"
#include "http_routes.h"
#include "services.h"
#include "common/json_writer.h"
#include "model/model_threads.h"

/* the one target when pid= is absent; 0 and a 400 when there is not one */
static int only_target(struct qp_registry *reg, struct qp_response *resp)
{
	int pid = 0;
	size_t i, n = 0;

	pthread_mutex_lock(&reg->lock);
	for (i = 0; i < reg->ntargets; i++) {
		if (reg->targets[i]->state != QP_TARGET_RUNNING)
			continue;
		pid = reg->targets[i]->pid;
		n++;
	}
	pthread_mutex_unlock(&reg->lock);
	if (n != 1) {
		if (n)
			qp_reply_error(resp, 400, "pid= is required: %zu targets are running", n);
		else
			qp_reply_error(resp, 404, "no target is running: attach one, or give pid=");
		return 0;
	}
	return pid;
}

static bool build(struct qprofd *d, const struct qp_request *req, struct qp_response *resp,
		  struct qp_thread_model *m)
{
	static const char *const allowed[] = { "pid", NULL };
	struct qp_model_src src;
	char err[256] = "";
	size_t i, k;
	int pid, ret;

	if (!qp_req_keys_ok(req, resp, allowed) || !qp_req_pid(d, req, resp, &pid))
		return false;
	qprofd_model_src(d, req, &src);
	if (!pid && !(pid = only_target(src.reg, resp)))
		return false;
	/* the threads are read live, and only of the target itself: once it
	 * exited its pid may be another process's, never shown for it */
	if (qp_registry_target_live(src.reg, pid)) {
		qp_reply_error(resp, 404, "process %d has exited: its threads are not kept", pid);
		return false;
	}
	ret = qp_thread_model_build(&src, pid, m, err, sizeof(err));
	if (!ret && qp_registry_target_live(src.reg, pid)) {
		qp_thread_model_free(m);
		ret = -ESRCH;
	}
	if (ret == -ESRCH) {
		qp_reply_error(resp, 404, "process %d has exited: its threads are not kept", pid);
		return false;
	}
	if (ret == -ENOTSUP) {
		qp_reply_error(resp, 503, "%s", err);
		return false;
	}
	if (ret) {
		qp_reply_error(resp, 500, "cannot read the threads of process %d: %s", pid,
			       err[0] ? err : strerror(-ret));
		return false;
	}
	/* KASLR: kernel addresses only for root on the unix socket */
	for (i = 0; !req->privileged && i < m->n; i++)
		for (k = 0; k < m->rows[i].nframes; k++)
			if (m->rows[i].frames[k].kernel)
				m->rows[i].frames[k].addr = 0;
	return true;
}

void qp_route_threads(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	struct qp_thread_model m;
	struct qp_json j;

	if (!build(d, req, resp, &m))
		return;
	qp_json_init(&j);
	qp_export_threads_json(&m, &j);
	qp_thread_model_free(&m);
	qp_reply_json(resp, 200, &j);
}

void qp_route_thread_stacks(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	struct qp_thread_model m;
	struct qp_buf b;

	if (!build(d, req, resp, &m))
		return;
	qp_buf_init(&b);
	qp_export_threads_text(&m, &b);
	qp_thread_model_free(&m);
	qp_reply_buf(resp, &b, "text/plain; charset=utf-8", 0);
}
