/* target_heap.c - which targets' heaps are profiled, kept in step with the
 * registry from the poll loop: with --heap every running target (a
 * --binary process within a poll of its adoption); always, a heap target
 * that exited stops being traced (its figures stay) and one that is no
 * target any more is forgotten with its figures. The registry lock is
 * taken for the copies only, never across an attach. */
#include <stdlib.h>
#include "collect/collect_heap.h"
#include "common/log.h"
#include "targets.h"

void qp_registry_heap_sync(struct qp_registry *r, struct qp_heap *h, bool all)
{
	struct qp_heap_status st;
	char err[256];
	int *pids = NULL, *run = NULL;
	size_t nrun = 0, k;
	long n, i;

	if (!h)
		return;
	if (all) {
		pthread_mutex_lock(&r->lock);
		run = malloc((r->ntargets ? r->ntargets : 1) * sizeof(*run));
		for (k = 0; run && k < r->ntargets; k++)
			if (r->targets[k]->state == QP_TARGET_RUNNING)
				run[nrun++] = r->targets[k]->pid;
		pthread_mutex_unlock(&r->lock);
		for (k = 0; k < nrun; k++)
			if (!qp_heap_status_of(h, run[k], &st) && qp_heap_attach(h, run[k], NULL, err, sizeof(err)))
				qp_debug("heap of pid %d: %s", run[k], err);
		free(run);
	}
	n = qp_heap_pids(h, &pids);
	for (i = 0; i < n; i++) {
		struct qp_target *t;
		bool gone, exited;

		pthread_mutex_lock(&r->lock);
		t = qp_registry_find(r, pids[i]);
		gone = !t;
		exited = t && t->state != QP_TARGET_RUNNING;
		pthread_mutex_unlock(&r->lock);
		if (gone)
			qp_heap_forget(h, pids[i]);
		else if (exited)
			qp_heap_stop(h, pids[i]);
	}
	free(pids);
}
