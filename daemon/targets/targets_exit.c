/* targets_exit.c - the end of a target: exit detection in the poll loop
 * (pidfd, else the start time), the exited state, the exit report written
 * WITHOUT the registry lock (the target is pinned meanwhile: a detach waits
 * for it, trimming skips it), and the trimming of old exited targets. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "collect/collect_cpu.h"
#include "collect/collect_scopes.h"
#include "symbolize/symbolize.h"
#include "lifecycle.h"
#include "common/log.h"
#include "targets_priv.h"
#include "common/util.h"

void qp_registry_trim(struct qp_registry *r, size_t max_exited)
{
	for (;;) {
		size_t i, n = 0, oldest = SIZE_MAX;

		for (i = 0; i < r->ntargets; i++) {
			const struct qp_target *t = r->targets[i];

			if (t->state != QP_TARGET_EXITED || t->report_pending || t->reporting)
				continue;
			n++;
			if (oldest == SIZE_MAX || t->exited_ms < r->targets[oldest]->exited_ms)
				oldest = i;
		}
		if (n <= max_exited || oldest == SIZE_MAX)
			return;
		qp_info("forgetting pid %d: more than %zu exited targets are kept", r->targets[oldest]->pid,
			max_exited);
		qp_registry_remove_at(r, oldest);
		r->exited_forgotten++;
	}
}

void qp_target_exited(struct qp_registry *r, struct qp_target *t)
{
	qp_lifecycle_watch(r->lc, t->pid, false);
	if (r->cpu)
		qp_cpu_remove_pid(r->cpu, (uint32_t)t->pid, false); /* keep its samples */
	t->state = QP_TARGET_EXITED;
	t->exited_ms = qp_realtime_ns() / 1000000;
	t->report_pending = true;
	qp_target_libs_drop_links(t);
	qp_scopes_detach_links(t->links, t->nlinks);
	free(t->links);
	t->links = NULL;
	t->nlinks = 0;
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
	if (t->excludes_binary) {	/* the pid may come back as another process */
		qp_scopes_exclude(r->scopes, (uint32_t)t->pid, false);
		t->excludes_binary = false;
	}
	qp_info("pid %d (%s) exited; its data is kept until it is detached", t->pid, t->comm);
}

/* A running target's mappings, read again without the lock on a rescan
 * (so that a library loaded later resolves). */
struct fresh_maps {
	int pid;
	uint64_t serial;	/* the record read for: an exec handled meanwhile makes another */
	uint64_t starttime;
	uint64_t maps_seq;	/* the target's mappings when this read began */
	struct qp_maps maps;
	bool read;
};

/* PID's record is still SERIAL (no exec handled since its maps were read;
 * one handled from here on sets the symbolizer's maps after these). */
static bool still_record(struct qp_registry *r, int pid, uint64_t serial)
{
	struct qp_target *t;
	bool same;

	pthread_mutex_lock(&r->lock);
	t = qp_registry_find(r, pid);
	same = t && t->serial == serial;
	pthread_mutex_unlock(&r->lock);
	return same;
}

/* T is found dead: it turns "exited" now, and its links go to a thread of
 * their own with every other link being released (the kernel's uprobe
 * unregistration waits for RCU grace periods: one target after the other,
 * 200 targets exiting together took minutes). A dead process runs no
 * probe, and its links name its task, not its pid: a process that reuses
 * the pid is not counted by them meanwhile. r->lock held. */
static void target_dead(struct qp_registry *r, struct qp_target *t)
{
	static const struct qp_file_id none;

	size_t parked = r->nlibreap;

	if (t->nlinks) {
		qp_target_libs_drop_links(t);
		qp_reap_push(r, t->pid, 0, &none, t->links, t->nlinks);	/* ino 0: no library's */
		t->links = NULL;
		t->nlinks = 0;
	}
	qp_target_exited(r, t);
	if (r->nlibreap == parked)	/* no link: else when the kernel lets them go (target_reap.c) */
		t->released_ms = t->exited_ms;
}

void qp_registry_poll(struct qp_registry *r, bool rescan)
{
	struct fresh_maps *fresh = NULL;
	size_t i, nfresh = 0, ndead = 0;

	pthread_mutex_lock(&r->lock);
	if (rescan && r->ntargets)
		fresh = calloc(r->ntargets, sizeof(*fresh));
	for (i = 0; i < r->ntargets; i++) {
		struct qp_target *t = r->targets[i];
		bool gone;

		if (t->state != QP_TARGET_RUNNING)
			continue;
		if (t->pidfd >= 0) {
			struct pollfd p = { .fd = t->pidfd, .events = POLLIN };

			gone = poll(&p, 1, 0) > 0;
		} else {
			uint64_t st = 0;

			gone = qp_proc_starttime(t->pid, &st) || st != t->starttime;
		}
		if (gone) {
			target_dead(r, t);
			ndead++;
		} else if (fresh) {
			fresh[nfresh].pid = t->pid;
			fresh[nfresh].serial = t->serial;
			fresh[nfresh].maps_seq = t->maps_seq;
			fresh[nfresh++].starttime = t->starttime;
		}
	}
	qp_binaries_refresh(r, rescan);
	pthread_mutex_unlock(&r->lock);
	if (ndead)	/* their links, all at once, on a thread of their own */
		qp_registry_reap_links(r);
	for (i = 0; i < nfresh; i++)
		fresh[i].read = !qp_maps_read(fresh[i].pid, &fresh[i].maps);
	if (nfresh) {
		pthread_mutex_lock(&r->lock);
		for (i = 0; i < nfresh; i++) {
			struct qp_target *t = qp_registry_find(r, fresh[i].pid);
			struct qp_maps keep, sym;

			/* the same record of the same process, still running,
			 * takes a copy; after an exec (handled on its own
			 * thread meanwhile) the maps may be the old image's, and
			 * a rendezvous handled since this read began has newer
			 * mappings: the stale ones would unload what it loaded */
			if (!fresh[i].read || !t || t->state != QP_TARGET_RUNNING || t->serial != fresh[i].serial ||
			    t->starttime != fresh[i].starttime || t->maps_seq != fresh[i].maps_seq) {
				fresh[i].read = false;
				continue;
			}
			if (qp_maps_copy(&fresh[i].maps, &keep))
				continue;
			t->maps_seq++;
			/* the safety net of the dynamic linker's rendezvous: a
			 * library loaded or unloaded and not reported */
			qp_target_libs_sync(r, t, &keep);
			qp_maps_free(&t->maps);
			t->maps = keep;
			/* the symbolizer's copy keeps unloaded libraries' old ranges */
			if (!qp_target_sym_maps(t, &keep, &sym)) {
				qp_maps_free(&fresh[i].maps);
				fresh[i].maps = sym;
			}
		}
		pthread_mutex_unlock(&r->lock);
	}
	qp_registry_reap_links(r);
	/* the symbolizer reads the mappings and any new file (ELF, debug
	 * files) under its own lock only: nobody waits for the registry */
	for (i = 0; i < nfresh; i++) {
		if (fresh[i].read && r->sym && still_record(r, fresh[i].pid, fresh[i].serial))
			qp_sym_process_set_maps(r->sym, fresh[i].pid, &fresh[i].maps);
		qp_maps_free(&fresh[i].maps);
	}
	free(fresh);
	/* the processes of --binary files: /proc is read without the lock */
	if (rescan)
		qp_binary_scan(r, NULL, NULL);
}

void qp_registry_set_reporter(struct qp_registry *r, qp_report_collect_fn collect, qp_report_emit_fn emit,
			      qp_report_commit_fn commit, void *arg)
{
	pthread_mutex_lock(&r->lock);
	r->report_collect = collect;
	r->report_emit = emit;
	r->report_commit = commit;
	r->report_arg = arg;
	pthread_mutex_unlock(&r->lock);
}

void qp_target_report_begin(struct qp_registry *r, struct qp_target *t)
{
	t->reporting = true;
	r->reporting++;
}

/* Unpin T; DIR ("" or NULL: none) becomes its report_dir unless KEEP_DIR and
 * it has one. */
static void unpin(struct qp_registry *r, struct qp_target *t, const char *dir, bool keep_dir)
{
	t->reporting = false;
	if (dir && dir[0] && !(keep_dir && t->report_dir[0]))
		snprintf(t->report_dir, sizeof(t->report_dir), "%s", dir);
	r->reporting--;
	pthread_cond_broadcast(&r->report_done);
}

void qp_target_report_end(struct qp_registry *r, struct qp_target *t, const char *dir)
{
	t->report_pending = false;
	t->reported_ms = qp_realtime_ns() / 1000000;
	unpin(r, t, dir, false);
}

void qp_registry_wait_reports(struct qp_registry *r)
{
	while (r->reporting)
		pthread_cond_wait(&r->report_done, &r->lock);
}

/* Collect and emit with the lock NOT held: the report written, to be
 * committed; NULL when none. */
static void *write_one(qp_report_collect_fn collect, qp_report_emit_fn emit, void *arg, const struct qp_target *t)
{
	void *figs = collect ? collect(arg, t) : NULL;

	return figs ? emit(arg, figs) : NULL;
}

void *qp_target_collect_report(struct qp_registry *r, struct qp_target *t)
{
	qp_report_collect_fn collect = r->report_collect;
	void *arg = r->report_arg, *figs;

	qp_target_report_begin(r, t);
	pthread_mutex_unlock(&r->lock);
	figs = collect ? collect(arg, t) : NULL;
	pthread_mutex_lock(&r->lock);
	t->report_pending = false;
	unpin(r, t, NULL, false);
	return figs;
}

void qp_target_pin_report(struct qp_registry *r, struct qp_target *t)
{
	qp_target_report_begin(r, t);
}

void qp_registry_emit_report(struct qp_registry *r, void *figs, struct qp_target *pin)
{
	char dir[1][QP_REPORT_DIR_MAX] = { "" };
	qp_report_commit_fn commit;
	qp_report_emit_fn emit;
	void *arg, *staged;

	pthread_mutex_lock(&r->lock);
	emit = r->report_emit;
	commit = r->report_commit;
	arg = r->report_arg;
	pthread_mutex_unlock(&r->lock);
	if (figs && emit) {
		staged = emit(arg, figs);
		commit(arg, &staged, 1, dir);
	}
	if (!pin)
		return;
	pthread_mutex_lock(&r->lock);
	unpin(r, pin, dir[0], true);
	pthread_mutex_unlock(&r->lock);
}

void qp_registry_set_report_stop(struct qp_registry *r, bool (*stop)(void))
{
	pthread_mutex_lock(&r->lock);
	r->report_stop = stop;
	pthread_mutex_unlock(&r->lock);
}

/* The pinned targets of one qp_registry_write_reports, written by a few
 * threads taking the next one. */
struct report_pool {
	struct qp_registry *r;
	qp_report_collect_fn collect;
	qp_report_emit_fn emit;
	bool (*stop)(void);
	void *arg;
	struct qp_target **v;
	void **staged;		/* v[i]'s report, written, for commit */
	bool *done;		/* v[i] was written (or tried): not left for a later poll */
	size_t n;
	size_t next;		/* atomic */
	size_t skipped;		/* atomic: left unwritten, a shutdown was asked */
};

static void *report_worker(void *arg)
{
	struct report_pool *p = arg;
	size_t i;

	while ((i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED)) < p->n) {
		struct qp_target *t = p->v[i];

		if (p->stop && p->stop()) {
			__atomic_fetch_add(&p->skipped, 1, __ATOMIC_RELAXED);
			pthread_mutex_lock(&p->r->lock);
			unpin(p->r, t, NULL, false);	/* still pending: the next poll would write it */
			pthread_mutex_unlock(&p->r->lock);
			continue;
		}
		p->staged[i] = write_one(p->collect, p->emit, p->arg, t);
		p->done[i] = true;	/* ended below, once committed */
	}
	return NULL;
}

#define REPORT_WRITERS 8

size_t qp_registry_write_reports(struct qp_registry *r)
{
	struct report_pool p = { .r = r };
	pthread_t th[REPORT_WRITERS];
	struct qp_target **v = NULL;
	char (*dirs)[QP_REPORT_DIR_MAX] = NULL;
	qp_report_collect_fn collect;
	qp_report_commit_fn commit;
	qp_report_emit_fn emit;
	void *arg;
	size_t n = 0, i, started = 0;
	uint64_t t0, t1;

	pthread_mutex_lock(&r->lock);
	collect = r->report_collect;
	emit = r->report_emit;
	commit = r->report_commit;
	arg = r->report_arg;
	p.stop = r->report_stop;
	for (i = 0; i < r->ntargets; i++)
		n += r->targets[i]->report_pending && !r->targets[i]->reporting;
	if (n) {
		v = malloc(n * sizeof(*v));
		p.staged = calloc(n, sizeof(*p.staged));
		p.done = calloc(n, sizeof(*p.done));
		dirs = calloc(n, sizeof(*dirs));
		if (!p.staged || !p.done || !dirs) {
			free(v);
			v = NULL;
		}
	}
	for (i = 0, n = 0; v && i < r->ntargets; i++) {
		struct qp_target *t = r->targets[i];

		if (t->report_pending && !t->reporting) {
			qp_target_report_begin(r, t);
			v[n++] = t;
		}
	}
	pthread_mutex_unlock(&r->lock);
	/* the slow part (the scopes, the CPU profile, five files and an SVG):
	 * the HTTP threads and the exits of other targets go on meanwhile;
	 * many targets exiting together are written by several threads (200
	 * reports one after the other took 5 to 15 s), and synced to disk all
	 * together (with an fsync a file, 200 reports took 3 to 6 s more) */
	p.collect = collect;
	p.emit = emit;
	p.arg = arg;
	p.v = v;
	p.n = n;
	t0 = qp_now_ns();
	for (i = 0; n > 1 && i + 1 < REPORT_WRITERS && i + 1 < n; i++) {
		if (pthread_create(&th[started], NULL, report_worker, &p))
			break;
		started++;
	}
	report_worker(&p);
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	t1 = qp_now_ns();
	if (n && commit)
		commit(arg, p.staged, n, dirs);
	if (n > 1)
		qp_info("%zu exit reports written in %.1f ms, made durable in %.1f ms more", n - p.skipped,
			(double)(t1 - t0) / 1e6, (double)(qp_now_ns() - t1) / 1e6);
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < n; i++)
		if (p.done[i])
			qp_target_report_end(r, v[i], dirs[i]);
	pthread_mutex_unlock(&r->lock);
	if (p.skipped)
		qp_warn("%zu exit report(s) not written: qprofd is stopping", p.skipped);
	free(v);
	free(p.staged);
	free(p.done);
	free(dirs);
	return n - p.skipped;
}
