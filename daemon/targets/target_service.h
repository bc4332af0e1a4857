/* target_service.h - the targets service: what a client may ask of the
 * registry and the heap profiler together (list, attach a pid or a
 * --binary file, detach them), with their ordering kept in one place: a
 * pid's heap is held before its scopes are attached and released after, a
 * detach's links are reaped without the registry lock and the heap's
 * figures forgotten after. The HTTP handlers of /api/targets get this and
 * nothing else of the daemon. */
#ifndef QPROF_TARGET_SERVICE_H
#define QPROF_TARGET_SERVICE_H
#include <stdbool.h>
#include <stddef.h>
#include "collect/collect_heap.h"
#include "targets.h"
#include "targets_view.h"

struct qp_target_svc {
	struct qp_registry *reg;
	struct qp_heap *heap;		/* NULL: heap profiling could not start */
	const char *heap_error;		/* why, then */
	bool heap_default;		/* qprofd --heap: every pid target's heap too */
};

/* What an attach of a pid answers. */
struct qp_pid_attached {
	struct qp_target_view tv;	/* the target (qp_target_view_free) */
	bool heap;			/* its heap is profiled: hst says how */
	struct qp_heap_status hst;
	bool existing;			/* a target already, whose heap is profiled from now */
};

/* The targets model: plain copies taken under the registry lock
 * (qp_targets_view_take's WHAT; qp_targets_view_free). 0 or -ENOMEM. */
int qp_tsvc_view(const struct qp_target_svc *s, unsigned int what, struct qp_targets_view *out);
/* The heap of a pid attach when the client did not say: qprofd --heap's. */
bool qp_tsvc_heap_default(const struct qp_target_svc *s);
/* Attach PID with X, its heap profiled when HEAP (profiled first: a heap
 * that cannot be profiled leaves the process as it was). With HEAP_ONLY
 * (the request asked for nothing but the pid and its heap), a pid that is
 * a live target already gets its heap profiled instead of a 409. 0 with
 * *OUT filled, else -errno with *STATUS (an HTTP status) and ERR set. */
int qp_tsvc_attach_pid(const struct qp_target_svc *s, int pid, const struct qp_attach_extra *x, bool heap,
		       bool heap_only, struct qp_pid_attached *out, int *status, char *err, size_t errlen);
/* Attach the --binary file PATH with X: 0 with *OUT filled
 * (qp_binary_view_free), else -errno with *STATUS and ERR set. */
int qp_tsvc_attach_binary(const struct qp_target_svc *s, const char *path, const struct qp_attach_extra *x,
			  struct qp_binary_view *out, int *status, char *err, size_t errlen);
/* Detach PID: 0 detached, 1 kept by the --binary target that covers it,
 * -ENOENT when it is no target. Its links go before this returns. */
int qp_tsvc_detach_pid(const struct qp_target_svc *s, int pid);
/* Detach the --binary file PATH and its processes: 0, or -ENOENT. */
int qp_tsvc_detach_binary(const struct qp_target_svc *s, const char *path);
#endif
