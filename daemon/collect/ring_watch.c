/* ring_watch.c - which processes the ring collector drains (ring_collect.h):
 * a target watched from its attach, a --binary process from its binary's
 * attach with the rings it announced before it was adopted, a forked child
 * with its copies of its parent's rings. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "ring_internal.h"
#include "ring_collect.h"

int qp_ring_watch_since(struct qp_ring *g, int pid, const struct qp_ring_stamp *since)
{
	struct ring_announce *got = NULL;
	struct qp_ring_stamp now;
	size_t i, n = 0, first;
	struct ring_pid *p;
	int ret = 0;

	qp_ring_stamp_now(&now);
	pthread_mutex_lock(&g->lock);
	if (qp_ring_pid_locked(g, (uint32_t)pid))
		goto out;
	if (g->npids >= MAX_PIDS) {
		ret = -ENOSPC;
		goto out;
	}
	p = realloc(g->pids, (g->npids + 1) * sizeof(*p));
	if (!p) {
		ret = -ENOMEM;
		goto out;
	}
	g->pids = p;
	p = &g->pids[g->npids++];
	memset(p, 0, sizeof(*p));
	p->pid = (uint32_t)pid;
	p->fl.max = g->o.flight;
	qp_htab_init(&p->names, sizeof(struct ring_tnames));
	p->watch_ts = now.tsc;
	p->watch_ns = now.ns;
	p->from_ts = since && since->tsc < now.tsc ? since->tsc : now.tsc;
	p->from_ns = since && since->ns < now.ns ? since->ns : now.ns;
	if (!since)
		goto out;
	/* its rings announced before it was a target */
	first = g->npend > RING_PENDING ? g->npend - RING_PENDING : 0;
	for (i = first; i < g->npend; i++) {
		const struct ring_announce *a = &g->pend[i % RING_PENDING];
		struct ring_announce *v;

		if (a->pid != (uint32_t)pid)
			continue;
		v = realloc(got, (n + 1) * sizeof(*v));
		if (!v)
			break;
		got = v;
		got[n++] = *a;
	}
	for (i = 0; i < n; i++)
		qp_ring_take_locked(g, &got[i]);
out:
	pthread_mutex_unlock(&g->lock);
	free(got);
	return ret;
}

int qp_ring_watch(struct qp_ring *g, int pid)
{
	return qp_ring_watch_since(g, pid, NULL);
}

int qp_ring_watch_child(struct qp_ring *g, int pid, int parent, uint64_t fork_ns)
{
	struct ring_announce *got = NULL, *v;
	struct ring_pid *p;
	size_t i, n = 0;
	int ret;

	ret = qp_ring_watch_since(g, pid, NULL);
	if (ret)
		return ret;
	pthread_mutex_lock(&g->lock);
	p = qp_ring_pid_locked(g, (uint32_t)pid);
	if (p && fork_ns && fork_ns < p->watch_ns && g->glob.ns_per_tick > 0) {
		/* its records count from the fork (the child may have run since):
		 * the fork's time on the TSC, back from the watch's by the slope */
		uint64_t back = (uint64_t)((double)(p->watch_ns - fork_ns) / g->glob.ns_per_tick);

		if (back < p->watch_ts) {
			p->watch_ts = p->from_ts = p->watch_ts - back;
			p->watch_ns = p->from_ns = fork_ns;
		}
	}
	/* the parent's rings announced from now on are the child's too (the
	 * parent's announcement may still be on its way) ... */
	if (p)
		p->parent = (uint32_t)parent;
	/* ... and those known already, at the same addresses in the child */
	for (i = 0; i < g->nents; i++) {
		if (g->ents[i].pid != (uint32_t)parent)
			continue;
		v = realloc(got, (n + 1) * sizeof(*v));
		if (!v)
			break;
		got = v;
		got[n++] = (struct ring_announce){ .addr = g->ents[i].addr, .size = g->ents[i].size };
	}
	for (i = 0; i < n; i++)
		qp_ring_take_copy_locked(g, (uint32_t)pid, got[i].addr, got[i].size);
	pthread_mutex_unlock(&g->lock);
	free(got);
	return 0;
}
