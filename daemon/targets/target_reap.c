/* target_reap.c - the links of unloaded libraries. Releasing a uprobe link
 * waits for the kernel's grace periods (tens of ms), so it is never done
 * under the registry lock nor while a target is held: the links are parked
 * here and handed to a thread of their own as soon as the rendezvous that
 * unloaded them is handled. Not later: while they are registered, a file
 * rewritten in place (same inode) and mapped again would get them at the
 * old offsets. A library loaded again before the hand-over, in the same
 * version, takes its links back; a load of an inode whose links are being
 * released waits until the kernel has let them go (no hit is ever counted
 * by an old and a new set at once). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "collect/collect_scopes.h"
#include "common/log.h"
#include "targets_priv.h"
#include "common/util.h"

struct qp_reap_rec {
	int pid;
	uint64_t ino;
	struct qp_file_id id;	/* the version the links were made for */
	struct qp_scope_link **links;
	size_t n;
};

void qp_reap_push(struct qp_registry *r, int pid, uint64_t ino, const struct qp_file_id *id,
		  struct qp_scope_link **links, size_t n)
{
	struct qp_reap_rec *v;

	if (!n) {
		free(links);
		return;
	}
	v = realloc(r->libreap, (r->nlibreap + 1) * sizeof(*v));
	if (!v) {
		qp_scopes_detach_links(links, n);	/* no memory: here, slowly */
		free(links);
		return;
	}
	r->libreap = v;
	v[r->nlibreap++] = (struct qp_reap_rec){ pid, ino, *id, links, n };
}

static void rec_drop(struct qp_registry *r, size_t i)
{
	r->libreap[i] = r->libreap[--r->nlibreap];
}

bool qp_reap_take(struct qp_registry *r, int pid, uint64_t ino, const struct qp_file_id *id,
		  struct qp_scope_link ***links, size_t *n)
{
	size_t i;

	for (i = 0; i < r->nlibreap; i++) {
		struct qp_reap_rec *x = &r->libreap[i];

		if (x->pid == pid && x->ino == ino && qp_file_id_eq(&x->id, id)) {
			*links = x->links;
			*n = x->n;
			rec_drop(r, i);
			return true;
		}
	}
	return false;
}

void qp_reap_flush(struct qp_registry *r, int pid, uint64_t ino)
{
	size_t i;

	for (i = 0; i < r->nlibreap;) {
		struct qp_reap_rec *x = &r->libreap[i];

		if (x->pid != pid || x->ino != ino) {
			i++;
			continue;
		}
		/* rare (a file rewritten in place): slowly, under the lock */
		qp_scopes_close_links(x->links, x->n);
		qp_scopes_detach_links(x->links, x->n);
		free(x->links);
		rec_drop(r, i);
	}
}

struct reap_batch {
	struct qp_registry *r;
	struct qp_reap_rec *v;
	size_t n;
	bool closed;		/* with r->reap_lock: its kernel links are released */
};

static void *reaper(void *arg)
{
	struct reap_batch *b = arg;
	struct qp_registry *r = b->r;
	struct qp_scope_link **all;
	size_t i, n = 0, k;

	/* every link of the batch at once: their grace periods overlap */
	for (i = 0; i < b->n; i++)
		n += b->v[i].n;
	all = malloc((n ? n : 1) * sizeof(*all));
	for (i = 0, k = 0; all && i < b->n; i++, k += b->v[i - 1].n)
		memcpy(all + k, b->v[i].links, b->v[i].n * sizeof(*all));
	if (all)
		qp_scopes_close_links(all, n);
	else
		for (i = 0; i < b->n; i++)
			qp_scopes_close_links(b->v[i].links, b->v[i].n);
	free(all);
	pthread_mutex_lock(&r->reap_lock);
	b->closed = true;
	pthread_cond_broadcast(&r->reap_cond);
	pthread_mutex_unlock(&r->reap_lock);
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < b->n; i++) {
		qp_scopes_detach_links(b->v[i].links, b->v[i].n);	/* spec ids: under the lock */
		free(b->v[i].links);
		/* an exited target whose links these were: let go now */
		for (k = 0; k < r->ntargets; k++)
			if (r->targets[k]->pid == b->v[i].pid && r->targets[k]->state == QP_TARGET_EXITED)
				r->targets[k]->released_ms = qp_realtime_ns() / 1000000;
	}
	for (k = 0; k < r->nclosing; k++) {
		if (r->closing[k] == b) {
			r->closing[k] = r->closing[--r->nclosing];
			break;
		}
	}
	r->reapers--;
	pthread_cond_broadcast(&r->report_done);
	pthread_mutex_unlock(&r->lock);
	free(b->v);
	free(b);
	return NULL;
}

void qp_registry_reap_links(struct qp_registry *r)
{
	struct reap_batch *b = calloc(1, sizeof(*b));
	pthread_attr_t attr;
	pthread_t th;
	bool started = false;
	size_t i;
	void **c;

	pthread_mutex_lock(&r->lock);
	if (b)
		b->v = calloc(r->nlibreap ? r->nlibreap : 1, sizeof(*b->v));
	c = b && b->v ? realloc(r->closing, (r->nclosing + 1) * sizeof(*c)) : NULL;
	if (!c) {
		pthread_mutex_unlock(&r->lock);
		if (b)
			free(b->v);
		free(b);
		return;
	}
	r->closing = c;
	b->r = r;
	for (i = 0; i < r->nlibreap; i++)
		b->v[b->n++] = r->libreap[i];
	r->nlibreap = 0;
	if (b->n) {
		r->reapers++;
		r->closing[r->nclosing++] = b;
	}
	pthread_mutex_unlock(&r->lock);
	if (!b->n) {
		free(b->v);
		free(b);
		return;
	}
	/* a thread of its own: the poll loop goes on answering rendezvous */
	if (!pthread_attr_init(&attr)) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		started = !pthread_create(&th, &attr, reaper, b);
		pthread_attr_destroy(&attr);
	}
	if (!started)
		reaper(b);
}

void qp_registry_wait_reapers(struct qp_registry *r)
{
	pthread_mutex_lock(&r->lock);
	while (r->reapers)
		pthread_cond_wait(&r->report_done, &r->lock);
	pthread_mutex_unlock(&r->lock);
}

void qp_reap_wait_closed(struct qp_registry *r, int pid, uint64_t ino)
{
	size_t k, i;

	for (k = 0; k < r->nclosing; k++) {
		struct reap_batch *b = r->closing[k];
		bool ours = false;

		for (i = 0; i < b->n && !ours; i++)
			ours = b->v[i].pid == pid && b->v[i].ino == ino;
		if (!ours)
			continue;
		/* its thread needs no r->lock to release the kernel links: the
		 * batch stays (it is freed under r->lock, which we hold) */
		pthread_mutex_lock(&r->reap_lock);
		while (!b->closed)
			pthread_cond_wait(&r->reap_cond, &r->reap_lock);
		pthread_mutex_unlock(&r->reap_lock);
	}
}

void qp_reap_free_all(struct qp_registry *r)
{
	size_t i;

	for (i = 0; i < r->nlibreap; i++) {
		qp_scopes_detach_links(r->libreap[i].links, r->libreap[i].n);
		free(r->libreap[i].links);
	}
	free(r->libreap);
	free(r->closing);
	r->libreap = NULL;
	r->closing = NULL;
	r->nlibreap = r->nclosing = 0;
}
