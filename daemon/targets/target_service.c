/* target_service.c - see target_service.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "target_service.h"

int qp_tsvc_view(const struct qp_target_svc *s, unsigned int what, struct qp_targets_view *out)
{
	return qp_targets_view_take(s->reg, what, out);
}

bool qp_tsvc_heap_default(const struct qp_target_svc *s)
{
	return s->heap_default && s->heap;
}

/* Hold PID's heap before its scopes are attached. 1: PID is a target or
 * being attached already, the registry answers (409) and nothing is
 * touched. */
static int heap_hold(const struct qp_target_svc *s, int pid, struct qp_heap_status *st, int *status, char *err,
		     size_t errlen)
{
	struct qp_heap_status old;
	bool busy;
	int ret;

	pthread_mutex_lock(&s->reg->lock);
	busy = qp_registry_busy(s->reg, pid);
	pthread_mutex_unlock(&s->reg->lock);
	if (busy)
		return 1;
	ret = qp_heap_attach_held(s->heap, pid, st, err, errlen);
	if (ret == -EEXIST && qp_heap_status_of(s->heap, pid, &old) && !old.tracing) {
		/* the figures left from an earlier target of that pid */
		qp_heap_forget(s->heap, pid);
		ret = qp_heap_attach_held(s->heap, pid, st, err, errlen);
	}
	if (!ret)
		return 0;
	if (ret == -EEXIST)
		snprintf(err, errlen, "process %d is being attached by another request", pid);
	*status = ret == -ESRCH ? 404 : ret == -EEXIST ? 409 : ret == -EAGAIN ? 503 : 500;
	return ret;
}

/* A pid that is a target already: its heap profiled from now on, the
 * target left as it is (a failure detaches nothing). 0 with TV filled;
 * -EEXIST (409) when it is not a live target (the registry's words in ERR
 * are kept) or its heap is profiled already. */
static int heap_of_target(const struct qp_target_svc *s, int pid, struct qp_target_view *tv,
			  struct qp_heap_status *st, int *status, char *err, size_t errlen)
{
	struct qp_target *t;
	int ret = -EEXIST;

	pthread_mutex_lock(&s->reg->lock);
	t = qp_registry_find(s->reg, pid);
	if (t && t->state != QP_TARGET_EXITED)
		ret = qp_target_view_copy(t, tv);
	pthread_mutex_unlock(&s->reg->lock);
	if (ret == -ENOMEM) {
		*status = 500;
		snprintf(err, errlen, "out of memory");
	}
	if (ret)
		return ret;
	ret = qp_heap_attach(s->heap, pid, st, err, errlen);
	if (!ret)
		return 0;
	qp_target_view_free(tv);
	memset(tv, 0, sizeof(*tv));
	*status = ret == -EEXIST ? 409 : ret == -ESRCH ? 404 : ret == -EAGAIN ? 503 : 500;
	if (ret == -EEXIST)
		snprintf(err, errlen, "the heap of process %d is profiled already", pid);
	else if (ret == -ESRCH)
		snprintf(err, errlen, "process %d is gone", pid);
	return ret;
}

int qp_tsvc_attach_pid(const struct qp_target_svc *s, int pid, const struct qp_attach_extra *x, bool heap,
		       bool heap_only, struct qp_pid_attached *out, int *status, char *err, size_t errlen)
{
	bool held;
	int ret;

	memset(out, 0, sizeof(*out));
	out->heap = heap;
	ret = heap ? heap_hold(s, pid, &out->hst, status, err, errlen) : 0;
	held = heap && !ret;
	/* takes the lock itself, around the parse and attach only briefly */
	if (ret >= 0)
		ret = qp_registry_add_pid(s->reg, pid, x, &out->tv, status, err, errlen);
	if (held) {
		qp_heap_release(s->heap, pid);
		/* not attached after all (but for an answer that ran out of memory) */
		pthread_mutex_lock(&s->reg->lock);
		if (ret && !qp_registry_find(s->reg, pid))
			qp_heap_forget(s->heap, pid);
		pthread_mutex_unlock(&s->reg->lock);
	} else if (ret == -EEXIST && heap && heap_only &&
		   !(ret = heap_of_target(s, pid, &out->tv, &out->hst, status, err, errlen))) {
		out->existing = true;
	}
	if (ret) {
		qp_target_view_free(&out->tv);
		memset(&out->tv, 0, sizeof(out->tv));
	}
	return ret;
}

int qp_tsvc_attach_binary(const struct qp_target_svc *s, const char *path, const struct qp_attach_extra *x,
			  struct qp_binary_view *out, int *status, char *err, size_t errlen)
{
	/* takes the lock itself, after opening and parsing the file */
	return qp_registry_add_binary(s->reg, path, x, out, status, err, errlen);
}

int qp_tsvc_detach_pid(const struct qp_target_svc *s, int pid)
{
	int ret;

	pthread_mutex_lock(&s->reg->lock);
	ret = qp_registry_remove_pid(s->reg, pid);
	pthread_mutex_unlock(&s->reg->lock);
	qp_registry_reap(s->reg);	/* its links go without the lock */
	if (ret == 0 && s->heap)
		qp_heap_forget(s->heap, pid);
	return ret;
}

int qp_tsvc_detach_binary(const struct qp_target_svc *s, const char *path)
{
	int ret;

	pthread_mutex_lock(&s->reg->lock);
	ret = qp_registry_remove_binary(s->reg, path);
	pthread_mutex_unlock(&s->reg->lock);
	qp_registry_reap(s->reg);
	return ret;
}
