/* targets_view.c - see targets_view.h: copies of the registry's targets and
 * --binary files, and of the lifecycle figures, taken under their locks. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lifecycle.h"
#include "targets.h"
#include "targets_view.h"
#include "common/util.h"

void qp_collector_reason(const struct qp_collector_choice *ch, bool ring, bool cpu_only, char *buf,
			 size_t len)
{
	const char *how = ch->asked ? "asked" : "default";

	if (ring)	/* files of ABI 1 beside it stay on BPF */
		snprintf(buf, len, "ring (%s)%s", how,
			 ch->miss == QP_RING_MISS_ABI1 ? "; files with markers of ABI 1: bpf" : "");
	else if (!ch->ring)
		snprintf(buf, len, "bpf (asked)");
	else if (ch->miss == QP_RING_MISS_DOWN)
		snprintf(buf, len, "bpf: the ring collector could not start");
	else if (ch->miss == QP_RING_MISS_ABI1)
		snprintf(buf, len, "bpf: markers of ABI 1");
	else if (cpu_only)
		snprintf(buf, len, "none: no probes (CPU samples only)");
	else
		snprintf(buf, len, "bpf: no qprof markers (other USDT probes only)");
}

int qp_target_view_copy(const struct qp_target *t, struct qp_target_view *out)
{
	memset(out, 0, sizeof(*out));
	out->exe = strdup(t->exe);
	if (!out->exe)
		return -ENOMEM;
	out->pid = t->pid;
	memcpy(out->comm, t->comm, sizeof(out->comm));
	out->comm[sizeof(out->comm) - 1] = '\0';
	out->state = t->state;
	out->attached_ms = t->attached_ms;
	out->exited_ms = t->exited_ms;
	out->reported_ms = t->reported_ms;
	out->released_ms = t->released_ms;
	out->probes = t->probes;
	out->cpu_only = t->cpu_only;
	out->by_binary = t->binary >= 0;
	out->sites_refused = t->sites_refused;
	out->files_unopened = t->files_unopened;
	out->ring = t->ring != NULL;
	qp_collector_reason(&t->choice, out->ring, t->cpu_only, out->collector_reason,
			    sizeof(out->collector_reason));
	memcpy(out->collector_note, t->collector_note, sizeof(out->collector_note));
	out->has_ring_status = t->ring && qp_ring_pid_status(t->ring, t->pid, &out->ring_status);
	out->libs_loaded = t->libs_loaded;
	out->libs_unloaded = t->libs_unloaded;
	out->libs_without_markers = t->libs_without_markers;
	out->libs_refused = t->libs_refused;
	out->libs_probed_late = t->libs_probed_late;
	out->sites_reused = t->sites_reused;
	if (qp_target_libs_view(t, &out->modules, &out->nmodules)) {
		qp_target_view_free(out);
		return -ENOMEM;
	}
	return 0;
}

void qp_target_view_free(struct qp_target_view *v)
{
	size_t i;

	if (!v)
		return;
	free(v->exe);
	v->exe = NULL;
	for (i = 0; i < v->nmodules; i++) {
		free(v->modules[i].path);
		free(v->modules[i].error);
	}
	free(v->modules);
	v->modules = NULL;
	v->nmodules = 0;
}

static enum qp_binary_state binary_state(const struct qp_binary *b)
{
	if (b->stale)
		return QP_BINARY_CHANGED;
	if (b->cur.nlinks || (b->per_process && b->cur.mod && b->cur.mod->qprof_notes))
		return QP_BINARY_ATTACHED;
	return QP_BINARY_UNPROBED;
}

static bool is_of(const struct qp_registry *r, const struct qp_target *t, const struct qp_binary *b)
{
	return t->binary >= 0 && (size_t)t->binary < r->nbinaries && r->binaries[t->binary] == b;
}

int qp_binary_view_copy(const struct qp_registry *r, const struct qp_binary *b, struct qp_binary_view *out)
{
	size_t i, n = 0;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < r->ntargets; i++)
		n += is_of(r, r->targets[i], b);
	out->path = strdup(b->path);
	out->pids = n ? calloc(n, sizeof(*out->pids)) : NULL;
	if (!out->path || (n && !out->pids)) {
		qp_binary_view_free(out);
		return -ENOMEM;
	}
	for (i = 0; i < r->ntargets; i++)
		if (is_of(r, r->targets[i], b))
			out->pids[out->npids++] = r->targets[i]->pid;
	out->probes = b->probes;
	out->attached_ms = b->attached_ms;
	out->state = binary_state(b);
	out->per_process = b->per_process;
	out->ring = b->ring;
	qp_collector_reason(&b->choice, b->ring, false, out->collector_reason, sizeof(out->collector_reason));
	memcpy(out->collector_note, b->collector_note, sizeof(out->collector_note));
	out->versions_replaced = b->replaced;
	out->old_versions_running = b->nold;
	out->sites_refused = b->sites_refused;
	out->processes_refused = b->nrefused;
	return 0;
}

void qp_binary_view_free(struct qp_binary_view *v)
{
	if (!v)
		return;
	free(v->path);
	free(v->pids);
	v->path = NULL;
	v->pids = NULL;
	v->npids = 0;
}

/* r->lock held. */
static int copy_locked(struct qp_registry *r, unsigned int what, struct qp_targets_view *out)
{
	size_t i;
	int ret;

	if (r->ntargets && !(out->targets = calloc(r->ntargets, sizeof(*out->targets))))
		return -ENOMEM;
	for (i = 0; i < r->ntargets; i++) {
		ret = qp_target_view_copy(r->targets[i], &out->targets[i]);
		if (ret)
			return ret;
		out->ntargets++;
	}
	out->exited_forgotten = r->exited_forgotten;
	if (!(what & QP_VIEW_BINARIES) || !r->nbinaries)
		return 0;
	out->binaries = calloc(r->nbinaries, sizeof(*out->binaries));
	if (!out->binaries)
		return -ENOMEM;
	for (i = 0; i < r->nbinaries; i++) {
		ret = qp_binary_view_copy(r, r->binaries[i], &out->binaries[i]);
		if (ret)
			return ret;
		out->nbinaries++;
	}
	return 0;
}

int qp_targets_view_take(struct qp_registry *r, unsigned int what, struct qp_targets_view *out)
{
	struct qp_lifecycle *lc;
	int ret;

	memset(out, 0, sizeof(*out));
	qp_lock(&r->lock);
	ret = copy_locked(r, what, out);
	/* set once at start, closed after the HTTP server stops */
	lc = r->lc;
	pthread_mutex_unlock(&r->lock);
	if (ret) {
		qp_targets_view_free(out);
		return ret;
	}
	if ((what & QP_VIEW_LIFECYCLE) && lc) {
		/* BPF map reads: not under the registry lock */
		qp_lifecycle_figures(lc, &out->lifecycle);
		out->has_lifecycle = true;
	}
	return 0;
}

void qp_targets_view_free(struct qp_targets_view *v)
{
	size_t i;

	for (i = 0; i < v->ntargets; i++)
		qp_target_view_free(&v->targets[i]);
	for (i = 0; i < v->nbinaries; i++)
		qp_binary_view_free(&v->binaries[i]);
	free(v->targets);
	free(v->binaries);
	memset(v, 0, sizeof(*v));
}
