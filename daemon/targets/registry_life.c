/* registry_life.c - the registry from its start to its end (the fanotify
 * watch of --binary files started and stopped with it), a pid detached (it
 * may stay a target through a --binary target), and the children and new
 * processes a --binary target adopts. Above the other files of the registry
 * (targets.c, binaries.c, attach_pid.c, targets_exit.c, watch.c): it calls
 * them, they do not call it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collect/collect_cpu.h"
#include "collect/collect_scopes.h"
#include "symbolize/symbolize.h"
#include "lifecycle.h"
#include "common/log.h"
#include "targets_priv.h"
#include "common/util.h"

void qp_registry_init(struct qp_registry *r, struct qp_scopes *scopes)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->report_done, NULL);
	pthread_cond_init(&r->reaped, NULL);
	pthread_mutex_init(&r->reap_lock, NULL);
	pthread_cond_init(&r->reap_cond, NULL);
	r->scopes = scopes;
	if (scopes && qp_watch_start(r))
		qp_warn("no fanotify (CAP_SYS_ADMIN): --binary targets attach each process once adopted, "
			"not every process from its start");
}

/* The kernel side of every target's links, all at once (one target after
 * the other, each waiting for its grace periods, took seconds to stop a
 * qprofd with many targets); qp_target_free frees the rest. */
static void close_all_links(struct qp_registry *r)
{
	struct qp_scope_link **all;
	size_t i, n = 0;

	for (i = 0; i < r->ntargets; i++)
		n += r->targets[i]->nlinks;
	if (n < 2 || !(all = malloc(n * sizeof(*all))))
		return;	/* without memory, target by target */
	for (i = 0, n = 0; i < r->ntargets; i++) {
		memcpy(all + n, r->targets[i]->links, r->targets[i]->nlinks * sizeof(*all));
		n += r->targets[i]->nlinks;
	}
	qp_scopes_close_links(all, n);
	free(all);
}

void qp_registry_destroy(struct qp_registry *r)
{
	size_t i;

	qp_registry_reap(r);	/* no thread is left to do it */
	qp_registry_wait_reapers(r);	/* they free links under the lock */
	qp_lifecycle_forget_files(r->lc);	/* before the --binary uprobes go */
	qp_watch_stop(r);	/* first: it reads the binaries */
	close_all_links(r);
	for (i = 0; i < r->ntargets; i++)
		qp_target_free(r, r->targets[i]);
	for (i = 0; i < r->nbinaries; i++)
		qp_binary_free(r, r->binaries[i]);
	qp_reap_free_all(r);
	for (i = 0; i < r->nmodules; i++) {	/* none left unless a reference leaked */
		qp_elf_probes_free(r->modules[i]->elf);
		free(r->modules[i]->path);
		free(r->modules[i]);
	}
	free(r->targets);
	free(r->binaries);
	free(r->modules);
	free(r->defs);
	free(r->pending);	/* empty: no attach runs any more */
	free(r->reap);
	pthread_cond_destroy(&r->reaped);
	pthread_cond_destroy(&r->report_done);
	pthread_cond_destroy(&r->reap_cond);
	pthread_mutex_destroy(&r->reap_lock);
	pthread_mutex_destroy(&r->lock);
	memset(r, 0, sizeof(*r));
}

int qp_registry_remove_pid(struct qp_registry *r, int pid)
{
	size_t i;

	/* a report being written reads the target and its data: after it */
	qp_registry_wait_reports(r);
	for (i = 0; i < r->ntargets; i++) {
		struct qp_target *t = r->targets[i];
		int bi;

		if (t->pid != pid)
			continue;
		bi = t->binary < 0 && t->state == QP_TARGET_RUNNING ?
			     qp_binary_covering(r, pid, &t->maps) : -1;
		if (bi >= 0) {
			/* its links stay and go on counting; the binary's still skip it:
			 * no gap, no double count */
			t->binary = bi;
			t->excludes_binary = true;
			qp_scopes_exclude(r->scopes, (uint32_t)pid, true);
			qp_info("pid %d: detached as --pid; still a target through --binary %s", pid,
				r->binaries[bi]->path);
			return 1;
		}
		qp_registry_remove_at(r, i);
		qp_info("detached from pid %d", pid);
		return 0;
	}
	return -ENOENT;
}

void qp_registry_adopt_child(struct qp_registry *r, int pid, int parent, uint64_t fork_ns)
{
	struct qp_target *p = qp_registry_find(r, parent), *t;

	t = qp_registry_find(r, pid);
	if (p && t && t->ring && p->ring && t->binary == p->binary && t->binary >= 0) {
		/* adopted first by a scan, which knew no parent: its copies of
		 * the parent's rings now, counting from the fork */
		qp_ring_watch_child(r->ring, pid, parent, fork_ns);
		return;
	}
	if (!p || p->binary < 0 || qp_registry_busy(r, pid) ||
	    qp_binary_detached(r->binaries[p->binary], pid))
		return;
	t = calloc(1, sizeof(*t));
	if (!t)
		return;
	t->serial = qp_target_serial();
	t->pid = pid;
	t->pidfd = -1;
	t->binary = p->binary;
	t->probes = p->probes;
	/* an exited child has no mappings left to read: fork gave it the parent's */
	if (qp_maps_read(pid, &t->maps) || !t->maps.n) {
		qp_maps_free(&t->maps);
		if (qp_maps_copy(&p->maps, &t->maps)) {
			free(t);
			return;
		}
	}
	if (qp_proc_comm(pid, t->comm, sizeof(t->comm)))
		snprintf(t->comm, sizeof(t->comm), "%s", p->comm);
	snprintf(t->exe, sizeof(t->exe), "%s", p->exe);
	qp_proc_starttime(pid, &t->starttime);
	t->attached_ms = qp_realtime_ns() / 1000000;
	t->state = QP_TARGET_RUNNING;
	/* on its binary's collector, as its parent (a ring child's records count
	 * from its adoption) */
	qp_binary_give_collector(r, r->binaries[t->binary], t, parent, fork_ns);
	if (r->binaries[t->binary]->per_process)	/* no links for every process to cover it */
		qp_binary_attach_process(r, r->binaries[t->binary], t);
	if (qp_registry_push(r, t, true)) {
		qp_target_free(r, t);
		return;
	}
	qp_info("pid %d, forked by %d, runs %s: now a target", pid, parent, r->binaries[t->binary]->path);
}

void qp_registry_adopt(struct qp_registry *r, int pid)
{
	size_t bi;

	if (qp_registry_busy(r, pid))
		return;
	for (bi = 0; bi < r->nbinaries; bi++) {
		qp_binary_adopt(r, bi, pid, NULL);
		if (qp_registry_find(r, pid))
			return;
	}
}
