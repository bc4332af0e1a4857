/* lifecycle_exec.c - what the poll loop does when a target exec'd: the old
 * image's figures are closed as a report (names resolved against the old
 * mappings, which the target record still holds), the record and its data
 * go, and the process is attached again as a new target when its new image
 * has qprof probes: state running, the new exe, a fresh attach time, and
 * report_dir pointing at the pre-exec report. A process stopped by the BPF
 * side at its exec is resumed whatever happens here, and as soon as it can:
 * while it waits, only the old image's figures are read (the scopes, the CPU
 * profile, names resolved) and the new image attached; the report's files
 * are written once it runs again. Also: the children of --binary targets
 * are adopted as soon as they are forked. The registry lock is taken here,
 * per exec, and dropped while the figures are read and the files written
 * (the registry's report callbacks, which main.c sets: targets/ includes no
 * exporter). The rendezvous of a target's dynamic linker are handled in
 * lifecycle_dlsync.c, then released here. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collect/collect_scopes.h"
#include "lifecycle.h"
#include "common/log.h"
#include "common/procfs.h"
#include "common/util.h"
#include "symbolize/symbolize.h"
#include "targets_priv.h"

/* (targets.h) the old image's libraries, attached before the new image's
 * loader maps them. */
int qp_target_attach_file(struct qp_registry *r, struct qp_target *t, const char *path, uint64_t ino)
{
	char err[256], fdpath[64];
	struct qp_module *mod;
	struct qp_file_id fid;
	struct stat st;
	size_t first;
	int fd, ret;

	/* the version at PATH now, checked to be the inode the process maps */
	if (qp_open_regular(path, &fd, err, sizeof(err)))
		return 0;
	if (fstat(fd, &st) || (ino && (uint64_t)st.st_ino != ino)) {
		close(fd);
		return 0;
	}
	mod = qp_module_get_fd(r, fd, path, &ret, err, sizeof(err));
	if (mod && qp_target_hold(t, mod)) {
		qp_module_put(r, mod);
		mod = NULL;
	}
	if (!mod || !mod->qprof_notes) {
		close(fd);
		return 0;
	}
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	first = t->nlinks;
	ret = qp_target_attach_scopes(r, t, fdpath, mod, qp_scopes_new_epoch(r->scopes), t->choice.ring,
				      err, sizeof(err));
	close(fd);
	if (ret < 0) {
		qp_warn("pid %d: cannot attach to %s: %s", t->pid, path, err);
		return ret;
	}
	t->probes += (unsigned int)mod->qprof_notes;
	qp_file_id_of(&st, &fid);
	/* not mapped yet: the rescan must not take it for unloaded */
	if (qp_target_lib_record(t, mod, path, &fid, first, QP_LIB_PROBED, true))
		qp_warn("pid %d: %s: out of memory (its links stay until the target goes)", t->pid, path);
	return 1;
}

/* The files the old image mapped executable and the new one does not map
 * (yet): its libraries, which the new image's loader maps only once it
 * runs. Paths copied into OUT, freed with qp_maps_free. */
static void old_files(const struct qp_maps *old, const struct qp_maps *now, struct qp_maps *out)
{
	size_t i, j;

	memset(out, 0, sizeof(*out));
	out->v = calloc(old->n ? old->n : 1, sizeof(*out->v));
	if (!out->v)
		return;
	for (i = 0; i < old->n; i++) {
		const struct qp_map *m = &old->v[i];
		bool seen = false;

		if (m->path[0] != '/' || !strchr(m->perms, 'x') || strstr(m->path, " (deleted)"))
			continue;
		for (j = 0; j < now->n && !seen; j++)
			seen = now->v[j].inode == m->inode && !strcmp(now->v[j].path, m->path);
		for (j = 0; j < out->n && !seen; j++)
			seen = out->v[j].inode == m->inode && !strcmp(out->v[j].path, m->path);
		if (seen)
			continue;
		out->v[out->n] = *m;
		out->v[out->n].path = strdup(m->path);
		if (out->v[out->n].path)
			out->n++;
	}
}

/* The old image's report, read while the process waits and written once it
 * runs again; PIN is the target that stands for the process then. */
struct exec_report {
	void *figs;
	struct qp_target *pin;
};

/* r->lock held (dropped and taken again while the figures are read and
 * while the new image is attached). */
static void handle_one(struct qp_registry *r, const struct qp_lc_exec *e, struct exec_report *out)
{
	struct qp_target *t = qp_registry_find(r, e->pid), *nt = NULL;
	char err[512], old_exe[sizeof(t->exe)];
	struct qp_maps now = { 0 }, libs = { 0 };
	uint64_t td, t0, t1, t2;
	/* the new image is a target if it has probes (a CPU-only target
	 * before the exec stays one) */
	struct qp_attach_extra again = { .probes_required = !t || !t->cpu_only };
	size_t i;
	int status;
	bool by_binary;

	/* the new image asks for the collector the old one asked for (the ring
	 * unless BPF was asked: it was the default or asked) */
	if (t && t->choice.asked)
		again.collector = t->choice.ring ? QP_COLLECTOR_RING : QP_COLLECTOR_BPF;
	if (e->parent) {
		qp_registry_adopt_child(r, e->pid, e->parent, e->ts_ns);
		return;
	}
	if (e->adopt || !t) {
		/* a new process of a --binary file: adopted now, unless the /proc
		 * rescan was first; it is no exec of a target's image */
		if (e->adopt && !t)
			qp_registry_adopt(r, e->pid);
		return;
	}
	if (t->state != QP_TARGET_RUNNING)
		return;
	by_binary = t->binary >= 0;
	snprintf(old_exe, sizeof(old_exe), "%s", t->exe);
	if (!by_binary && !qp_maps_read(e->pid, &now))
		old_files(&t->maps, &now, &libs);
	qp_maps_free(&now);
	td = qp_now_ns();
	qp_target_exited(r, t);	/* its links detached: the old image counts no more */
	t0 = qp_now_ns();
	out->figs = qp_target_collect_report(r, t);	/* pinned meanwhile: t stays */
	t1 = qp_now_ns();
	qp_registry_remove_pid(r, e->pid);
	/* the old image's links and data go, then the new image is parsed and
	 * attached, without the lock (the process stays stopped meanwhile) */
	pthread_mutex_unlock(&r->lock);
	qp_registry_reap(r);
	if (!by_binary && qp_registry_add_pid(r, e->pid, &again, NULL, &status, err, sizeof(err)))
		qp_info("pid %d exec'd: not attached again: %s", e->pid, err);
	pthread_mutex_lock(&r->lock);
	if (by_binary) {
		/* the old image's ring data forgotten before the new one's is watched */
		qp_registry_wait_reaped(r, e->pid);
		qp_registry_adopt(r, e->pid);
	}
	nt = qp_registry_find(r, e->pid);
	/* the old image's libraries with probes, if the new one maps them again
	 * (an exec of the same program): probed from the moment they are mapped */
	for (i = 0; nt && !by_binary && i < libs.n; i++)
		qp_target_attach_file(r, nt, libs.v[i].path, libs.v[i].inode);
	qp_maps_free(&libs);
	if (nt && out->figs) {
		/* its report_dir: the old image's report, once written */
		qp_target_pin_report(r, nt);
		out->pin = nt;
	}
	t2 = qp_now_ns();
	if (nt)
		qp_info("pid %d exec'd %s (was %s): attached again (seen after %.1f ms, old image detached in %.1f ms, figures read in %.1f ms, new image in %.1f ms)",
			e->pid, nt->exe, old_exe, e->ts_ns ? (td - e->ts_ns) / 1e6 : 0, (t0 - td) / 1e6,
			(t1 - t0) / 1e6, (t2 - t1) / 1e6);
	else
		qp_info("pid %d exec'd (was %s): the new image is no target (seen after %.1f ms, old image detached in %.1f ms, figures read in %.1f ms)",
			e->pid, old_exe, e->ts_ns ? (td - e->ts_ns) / 1e6 : 0, (t0 - td) / 1e6, (t1 - t0) / 1e6);
}

/* PID's loader ran on before the LOADED libraries it reported were probed
 * (not held, or held past the bound): their first calls may be missing
 * from its figures, and its status says so. */
static void probed_late(struct qp_registry *r, const struct qp_lc_exec *e, unsigned int loaded)
{
	int pid = e->pid;
	struct qp_target *t;

	pthread_mutex_lock(&r->lock);
	t = qp_registry_find(r, pid);
	if (t) {
		t->libs_probed_late += loaded;
		qp_warn("pid %d: %u librar%s probed after its loader ran on (%s): their first calls may be missing",
			pid, loaded, loaded == 1 ? "y" : "ies",
			e->stopped ? "its hold ended at the --dl-hold-ms bound first" :
				     "not held: qprofd was silent, or may not signal it");
	}
	pthread_mutex_unlock(&r->lock);
}

void qp_lifecycle_handle_execs(struct qp_registry *r)
{
	struct qp_lc_exec v[64];
	size_t n, i;

	qp_lifecycle_alive(r->lc);
	while ((n = qp_lifecycle_take_execs(r->lc, v, 64))) {
		for (i = 0; i < n; i++) {
			struct exec_report rep = { 0 };
			struct qp_maps sym = { 0 };
			unsigned int loaded = 0;

			if (v[i].dl) {
				loaded = qp_lifecycle_handle_dl(r, &v[i], &sym);
			} else {
				pthread_mutex_lock(&r->lock);
				handle_one(r, &v[i], &rep);
				pthread_mutex_unlock(&r->lock);
			}
			/* alive again before the process runs on: an exec handled
			 * slowly (its old image's links detached under load) must not
			 * make the new image's loader find qprofd silent and go on
			 * unheld, its libraries' first scopes unseen */
			qp_lifecycle_alive(r->lc);
			if (qp_lifecycle_exec_done(r->lc, &v[i]) && loaded)	/* runs again */
				probed_late(r, &v[i], loaded);
			if (rep.figs || rep.pin)
				qp_registry_emit_report(r, rep.figs, rep.pin);
			if (sym.v) {
				qp_sym_process_set_maps(r->sym, v[i].pid, &sym);
				qp_maps_free(&sym);
			}
		}
	}
	qp_registry_reap_links(r);	/* unloaded libraries' links, in the background */
}

static void *exec_loop(void *arg)
{
	struct qp_exec_thread *x = arg;
	sigset_t w;

	/* until the starter has set r->lc (the mutex orders that write) */
	pthread_mutex_lock(&x->go);
	pthread_mutex_unlock(&x->go);
	sigemptyset(&w);
	sigaddset(&w, x->sig);
	while (!__atomic_load_n(&x->stop, __ATOMIC_ACQUIRE)) {
		/* woken by the lifecycle thread; the timeout is a safety net */
		struct timespec ts = { 0, 200 * 1000000L };

		sigtimedwait(&w, NULL, &ts);
		qp_lifecycle_handle_execs(x->r);
	}
	return NULL;
}

int qp_exec_thread_start(struct qp_exec_thread *x, struct qp_registry *r, int sig)
{
	int ret;

	memset(x, 0, sizeof(*x));
	x->r = r;
	x->sig = sig;
	pthread_mutex_init(&x->go, NULL);
	pthread_mutex_lock(&x->go);
	x->held = true;
	/* SIG is blocked in every thread (main blocks it before any): this
	 * thread takes it with sigtimedwait */
	ret = pthread_create(&x->tid, NULL, exec_loop, x);
	if (ret) {
		pthread_mutex_unlock(&x->go);
		x->held = false;
		return -ret;
	}
	x->started = true;
	return 0;
}

void qp_exec_thread_go(struct qp_exec_thread *x)
{
	if (x->held) {
		x->held = false;
		pthread_mutex_unlock(&x->go);
	}
}

void qp_exec_thread_stop(struct qp_exec_thread *x)
{
	if (!x->started)
		return;
	qp_exec_thread_go(x);
	__atomic_store_n(&x->stop, 1, __ATOMIC_RELEASE);
	pthread_kill(x->tid, x->sig);
	pthread_join(x->tid, NULL);
	x->started = false;
	pthread_mutex_destroy(&x->go);
}
