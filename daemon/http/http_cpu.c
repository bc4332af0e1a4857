/* http_cpu.c - the CPU and off-CPU profile routes: folded stacks, flame
 * graphs, pprof, and the gperftools symbol protocol. Kernel addresses go only to
 * privileged clients (http_auth.h). */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collect/collect_cpu.h"
#include "model/cpu_window.h"
#include "export/export.h"
#include "render_dot.h"
#include "symbolize/symbolize.h"
#include "qprofd.h"
#include "http_auth.h"
#include "http_query.h"
#include "http_routes.h"
#include "collect/collect_cpu.h"

/* under --all, any process with samples */
static bool has_samples(struct qprofd *d, int pid)
{
	return d->sample_all && d->cpu && qp_cpu_has_pid(d->cpu, (uint32_t)pid);
}

/* pid= of a CPU route: a target, or under --all any process with samples.
 * false when resp holds an error. */
static bool cpu_req_pid(struct qprofd *d, const struct qp_request *req, struct qp_response *resp, int *pid)
{
	return qp_req_pid_or(d, req, resp, pid, has_samples, d->sample_all ? " and has no CPU samples" : "");
}

/* A CPU profile (with OFF the off-CPU one) for pid=, seconds=, scope=
 * (cpu_window.h). false when resp holds an error. */
static bool cpu_profile(struct qprofd *d, const struct qp_request *req, struct qp_response *resp,
			const char *const *allowed, bool off, struct qp_cpu_profile *prof)
{
	struct qp_cpu_window_query q = { 0 };
	const char *scope = req->query(req->arg, "scope");
	struct qp_model_src src;
	int ret;

	if (!qp_req_keys_ok(req, resp, allowed) || !qp_req_seconds(req, resp, &q.seconds) ||
	    !cpu_req_pid(d, req, resp, &q.pid))
		return false;
	if (scope && (!scope[0] || strlen(scope) > 256)) {
		qp_reply_error(resp, 400, "scope must be a scope name of 1..256 bytes");
		return false;
	}
	q.scope = scope;
	q.off = off;
	qprofd_model_src(d, &src);
	ret = qp_cpu_window(&src, &q, prof);
	if (ret == -ENODEV) {
		if (off && d->cpu)
			qp_reply_error(resp, 503, "off-CPU profiles are unavailable: %s", qp_cpu_off_error(d->cpu));
		else
			qp_reply_error(resp, 503, "CPU sampling is unavailable: %s", d->cpu_error);
		return false;
	}
	if (ret == -EIO) {
		qp_reply_error(resp, 500, "cannot read the samples");
		return false;
	}
	if (ret == -ECANCELED) {
		qp_reply_error(resp, 503, "qprofd is shutting down");
		return false;
	}
	if (ret) {
		qp_reply_error(resp, 500, "cannot build the profile: %s", strerror(-ret));
		return false;
	}
	/* KASLR: kernel addresses only for root on the unix socket */
	if (!req->privileged)
		qp_cpu_profile_hide_kernel(prof);
	if (!prof->nsamples)
		snprintf(resp->note, sizeof(resp->note), "no %s%s%.200s%s", off ? "off-CPU intervals" : "samples",
			 scope ? " inside scope '" : "", scope ? scope : "",
			 !scope ? "" : off ? "' (unknown scope, or never off the CPU)" : "' (unknown scope, or never on CPU)");
	return true;
}

/* A CPU profile as one document of TYPE made by EXPORT; DISPOSITION (or
 * NULL) is sent with a 200. */
static void cpu_document(struct qprofd *d, const struct qp_request *req, struct qp_response *resp,
			 bool off, const char *type, int (*export)(const struct qp_cpu_profile *, struct qp_buf *),
			 const char *disposition)
{
	static const char *const allowed[] = { "pid", "seconds", "scope", NULL };
	struct qp_cpu_profile prof;
	struct qp_buf b;

	if (!cpu_profile(d, req, resp, allowed, off, &prof))
		return;
	qp_buf_init(&b);
	qp_reply_buf(resp, &b, type, export(&prof, &b));
	if (disposition && resp->status == 200)
		resp->disposition = disposition;
	qp_cpu_profile_free(&prof);
}

void qp_route_cpu_folded(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	cpu_document(d, req, resp, false, "text/plain; charset=utf-8", qp_export_folded, NULL);
}

void qp_route_offcpu_folded(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	cpu_document(d, req, resp, true, "text/plain; charset=utf-8", qp_export_folded, NULL);
}

static void flamegraph(struct qprofd *d, const struct qp_request *req, struct qp_response *resp, bool off)
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
		qp_reply_error(resp, 400, "renderer must be flamegraph or callgraph");
		return;
	}
	if (download && strcmp(download, "0") && strcmp(download, "1")) {
		qp_reply_error(resp, 400, "download must be 0 or 1");
		return;
	}
	if (color && strcmp(color, "kind") && strcmp(color, "module")) {
		qp_reply_error(resp, 400, "color must be kind (kernel/user) or module");
		return;
	}
	callgraph = renderer && !strcmp(renderer, "callgraph");
	if (!cpu_profile(d, req, resp, allowed, off, &prof))
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
			qp_reply_error(resp, 501, "renderer=callgraph needs graphviz's dot, which is not installed");
			return;
		}
		if (ret && ret != -ENOMEM) {
			qp_buf_free(&b);
			qp_cpu_profile_free(&prof);
			qp_reply_error(resp, 500, "dot failed: %s", err[0] ? err : strerror(-ret));
			return;
		}
	}
	qp_reply_buf(resp, &b, "image/svg+xml", ret);
	if (download && !strcmp(download, "1") && resp->status == 200)
		resp->disposition = callgraph ? "attachment; filename=\"callgraph.svg\""
				    : off ? "attachment; filename=\"offcpu.svg\""
					  : "attachment; filename=\"cpu.svg\"";
	qp_cpu_profile_free(&prof);
}

void qp_route_cpu_flamegraph(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	flamegraph(d, req, resp, false);
}

void qp_route_offcpu_flamegraph(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	flamegraph(d, req, resp, true);
}

void qp_route_pprof_profile(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	cpu_document(d, req, resp, false, "application/octet-stream", qp_export_pprof,
		     "attachment; filename=\"profile.pb.gz\"");
}

void qp_route_pprof_offcpu(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	cpu_document(d, req, resp, true, "application/octet-stream", qp_export_pprof,
		     "attachment; filename=\"offcpu.pb.gz\"");
}

/* The gperftools symbol protocol: GET says symbols are available; POST
 * "0xADDR+0xADDR..." answers "0xADDR\tname" per line ("??" when unknown,
 * and for a kernel address asked by an unprivileged client). */
void qp_route_pprof_symbol(struct qprofd *d, const struct qp_request *req, struct qp_response *resp)
{
	static const char *const allowed[] = { NULL };
	const char *p, *end;
	struct qp_buf b;
	size_t count = 0;

	if (!qp_req_keys_ok(req, resp, allowed))
		return;
	qp_buf_init(&b);
	if (!strcmp(req->method, "GET")) {
		qp_buf_puts(&b, "num_symbols: 1\n");
		qp_reply_buf(resp, &b, "text/plain", 0);
		return;
	}
	if (req->body_too_large) {
		qp_reply_error(resp, 413, "symbol request larger than %d bytes", QP_HTTP_MAX_BODY);
		return;
	}
	p = req->body ? req->body : "";
	end = p + req->body_len;
	/* the symbolizer locks itself */
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
				qp_buf_free(&b);
				qp_reply_error(resp, 400, "malformed address in the symbol request");
				return;
			}
			memcpy(tok, p, n);
			tok[n] = '\0';
			errno = 0;
			addr = strtoull(tok, &e, 16);
			if (errno || *e || tok[0] == '-' || tok[0] == '+' || e == tok) {
				qp_buf_free(&b);
				qp_reply_error(resp, 400, "malformed address '%s' in the symbol request", tok);
				return;
			}
			/* a kernel address is not looked up for an unprivileged
			 * client: its answer would tell where the kernel is */
			name = d->reg.sym && (req->privileged || !qp_addr_is_kernel(addr))
				       ? qp_sym_any(d->reg.sym, addr) : NULL;
			qp_buf_printf(&b, "0x%016llx\t%s\n", (unsigned long long)addr, name ? name : "??");
			count++;
		}
		p = q + 1;
	}
	if (!count) {
		qp_buf_free(&b);
		qp_reply_error(resp, 400, "send addresses as 0xADDR+0xADDR...");
		return;
	}
	qp_reply_buf(resp, &b, "text/plain", 0);
}

