/* targets.c - see targets.h. The registry's targets: making, listing and
 * freeing a target record, detaching one (its links and data dropped
 * without the lock: qp_registry_reap), whether a pid is taken, a --binary
 * generation's links dropped. The files of the registry above it call these
 * and nothing here calls them: the registry's start, end and adoptions:
 * registry_life.c; attaching a pid: attach_pid.c; exits, reports and
 * trimming: targets_exit.c; --binary targets: binaries.c; site names:
 * target_sites.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "collect/collect_cpu.h"
#include "collect/collect_scopes.h"
#include "symbolize/symbolize.h"
#include "lifecycle.h"
#include "common/log.h"
#include "targets_priv.h"
#include "common/util.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

void qp_target_free(struct qp_registry *r, struct qp_target *t)
{
	size_t i;

	if (!t)
		return;
	qp_scopes_detach_links(t->links, t->nlinks);
	free(t->links);
	qp_target_libs_free(t);
	if (t->pidfd >= 0)
		close(t->pidfd);
	qp_maps_free(&t->maps);
	free(t->resolved);
	for (i = 0; i < t->nmods; i++)
		qp_module_put(r, t->mods[i]);
	free(t->mods);
	free(t);
}

struct qp_target *qp_registry_find(struct qp_registry *r, int pid)
{
	size_t i;

	for (i = 0; i < r->ntargets; i++)
		if (r->targets[i]->pid == pid)
			return r->targets[i];
	return NULL;
}

int qp_registry_target_live(struct qp_registry *r, int pid)
{
	struct qp_target *t;
	uint64_t start = 0, now;
	bool running = false;

	pthread_mutex_lock(&r->lock);
	t = qp_registry_find(r, pid);
	if (t) {
		running = t->state == QP_TARGET_RUNNING;
		start = t->starttime;
	}
	pthread_mutex_unlock(&r->lock);
	if (!t)
		return -ENOENT;
	/* a pid is identified by its start time: the same pid with another
	 * is a process that came after the target */
	if (!running || qp_proc_starttime(pid, &now) || now != start || !qp_pid_alive(pid))
		return -ESRCH;
	return 0;
}

/* Alive and not exiting: kill(pid, 0) still succeeds on a zombie and on a
 * process on its way out, which the kernel refuses to probe (ESRCH). */
bool qp_pid_alive(int pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	if (kill(pid, 0) && errno != EPERM)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* comm may hold anything; the state follows the last ')' */
	if (!p || p[1] != ' ')
		return false;
	return p[2] != 'Z' && p[2] != 'X' && p[2] != 'x';
}

uint64_t qp_target_serial(void)
{
	static uint64_t last;

	return __atomic_add_fetch(&last, 1, __ATOMIC_RELAXED);
}

int qp_target_new(int pid, struct qp_target **out)
{
	struct qp_target *t = calloc(1, sizeof(*t));
	int ret;

	if (!t)
		return -ENOMEM;
	t->serial = qp_target_serial();
	t->pid = pid;
	t->pidfd = -1;
	t->binary = -1;
	ret = qp_maps_read(pid, &t->maps);
	if (ret) {
		free(t);
		return ret;
	}
	if (qp_proc_comm(pid, t->comm, sizeof(t->comm)))
		snprintf(t->comm, sizeof(t->comm), "?");
	if (qp_proc_exe(pid, t->exe, sizeof(t->exe)))
		snprintf(t->exe, sizeof(t->exe), "?");
	qp_proc_starttime(pid, &t->starttime);
	t->attached_ms = qp_realtime_ns() / 1000000;
	t->state = QP_TARGET_RUNNING;
	*out = t;
	return 0;
}

int qp_registry_push(struct qp_registry *r, struct qp_target *t, bool sym)
{
	struct qp_target **v = realloc(r->targets, (r->ntargets + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	r->targets = v;
	r->targets[r->ntargets++] = t;
	qp_lifecycle_watch(r->lc, t->pid, true);	/* its forks and execs */
	if (r->cpu && qp_cpu_add_pid(r->cpu, (uint32_t)t->pid))
		qp_warn("pid %d: cannot add it to the CPU sampler", t->pid);
	/* its dynamic linker reports each library it loads from now on */
	qp_lifecycle_watch_ldso(r->lc, t->pid, &t->maps);
	/* files not probed yet (a --binary target's libraries, a child's) */
	if (t->state == QP_TARGET_RUNNING)
		qp_target_libs_sync(r, t, &t->maps);
	if (sym && r->sym)	/* the mappings just read: /proc/PID/maps is not read twice */
		qp_sym_process_set_maps(r->sym, t->pid, &t->maps);
	t->pidfd = (int)syscall(SYS_pidfd_open, t->pid, 0);
	if (t->pidfd < 0)
		qp_warn("pidfd_open(%d): %s; exit detection falls back to polling", t->pid,
			strerror(errno));
	return 0;
}

int qp_attach_status(int err)
{
	switch (err) {
	case -ENOMEM:
	case -EPERM:
	case -ENOSYS:
	case -EBADF:
		return 500;	/* qprofd's own: memory, privileges, a broken program fd */
	case -ENOSPC:
		return 503;	/* no room left in qprofd's spec table */
	case -ESRCH:
		return 404;
	default:
		return 422;	/* the file or the process: bad notes, sites the kernel refuses */
	}
}

const struct qp_usdt_def *qp_registry_def(const struct qp_registry *r, uint32_t id)
{
	if (!id || id > r->ndefs)
		return NULL;
	return &r->defs[id - 1];
}

/* "provider:name" split in place into its two parts (both non-empty). */
bool qp_split_probe(const char *spec, char *prov, size_t plen, char *name, size_t nlen)
{
	const char *colon = strchr(spec, ':');

	if (!colon || colon == spec || !colon[1] || strchr(colon + 1, ':') ||
	    (size_t)(colon - spec) >= plen || strlen(colon + 1) >= nlen)
		return false;
	memcpy(prov, spec, (size_t)(colon - spec));
	prov[colon - spec] = '\0';
	snprintf(name, nlen, "%s", colon + 1);
	return true;
}

uint32_t qp_def_new(struct qp_registry *r, bool span, const char *name, const char *begin,
			const char *end)
{
	struct qp_usdt_def *v = realloc(r->defs, (r->ndefs + 1) * sizeof(*v));

	if (!v)
		return 0;
	r->defs = v;
	memset(&v[r->ndefs], 0, sizeof(v[0]));
	v[r->ndefs].id = (uint32_t)(r->ndefs + 1);
	v[r->ndefs].span = span;
	snprintf(v[r->ndefs].name, sizeof(v[0].name), "%s", name);
	snprintf(v[r->ndefs].begin, sizeof(v[0].begin), "%s", begin ? begin : "");
	snprintf(v[r->ndefs].end, sizeof(v[0].end), "%s", end ? end : "");
	return v[r->ndefs++].id;
}

/* T's links and the pid's scope data, to be dropped by qp_registry_reap
 * once the lock is released (the kernel's uprobe unregistration waits for
 * RCU grace periods). Without memory for that, dropped here. */
static void reap_push(struct qp_registry *r, struct qp_target *t)
{
	struct qp_reap *e = calloc(1, sizeof(*e)), **v = NULL;

	if (e)
		v = realloc(r->reap, (r->nreap + 1) * sizeof(*v));
	if (!v) {
		free(e);
		qp_scopes_detach_links(t->links, t->nlinks);
		free(t->links);
		qp_lifecycle_watch(r->lc, t->pid, false);
		qp_scopes_forget(r->scopes, (uint32_t)t->pid);
	} else {
		r->reap = v;
		e->pid = t->pid;
		e->links = t->links;
		e->nlinks = t->nlinks;
		r->reap[r->nreap++] = e;
	}
	t->links = NULL;
	t->nlinks = 0;
}

void qp_registry_reap(struct qp_registry *r)
{
	for (;;) {
		struct qp_reap *e = NULL;
		size_t i;

		pthread_mutex_lock(&r->lock);
		for (i = 0; i < r->nreap && !e; i++)
			if (!r->reap[i]->taken)
				e = r->reap[i];
		if (e)
			e->taken = true;
		pthread_mutex_unlock(&r->lock);
		if (!e)
			return;
		qp_scopes_detach_links(e->links, e->nlinks);
		free(e->links);
		/* after its links: no fork copies an optimized site, nothing
		 * counts the pid again */
		qp_lifecycle_watch(r->lc, e->pid, false);
		qp_scopes_forget(r->scopes, (uint32_t)e->pid);
		pthread_mutex_lock(&r->lock);
		for (i = 0; i < r->nreap; i++) {
			if (r->reap[i] == e) {
				r->reap[i] = r->reap[--r->nreap];
				break;
			}
		}
		pthread_cond_broadcast(&r->reaped);
		pthread_mutex_unlock(&r->lock);
		free(e);
	}
}

void qp_registry_wait_reaped(struct qp_registry *r, int pid)
{
	for (;;) {
		bool found = false, untaken = false;
		size_t i;

		for (i = 0; i < r->nreap; i++) {
			if (r->reap[i]->pid == pid) {
				found = true;
				untaken |= !r->reap[i]->taken;
			}
		}
		if (!found)
			return;
		if (untaken) {
			pthread_mutex_unlock(&r->lock);
			qp_registry_reap(r);
			pthread_mutex_lock(&r->lock);
		} else {
			pthread_cond_wait(&r->reaped, &r->lock);
		}
	}
}

/* Drop target I with its data. A running process of a --binary target is
 * remembered as detached, so that the binary does not adopt it again. */
void qp_registry_remove_at(struct qp_registry *r, size_t i)
{
	struct qp_target *t = r->targets[i];
	int pid = t->pid;

	if (t->binary >= 0 && t->state == QP_TARGET_RUNNING) {
		struct qp_binary *b = r->binaries[t->binary];
		int *v = realloc(b->detached, (b->ndetached + 1) * sizeof(*v));

		if (v) {
			b->detached = v;
			b->detached[b->ndetached++] = pid;
		}
		qp_scopes_exclude(r->scopes, (uint32_t)pid, true);
	} else if (t->excludes_binary) {
		qp_scopes_exclude(r->scopes, (uint32_t)pid, false);
	}
	memmove(&r->targets[i], &r->targets[i + 1], (r->ntargets - i - 1) * sizeof(*r->targets));
	r->ntargets--;
	/* its links, then its fork watch (a fork before the links are gone may
	 * still copy optimized sites) and its scope data: qp_registry_reap */
	reap_push(r, t);
	qp_target_free(r, t);
	if (r->cpu)
		qp_cpu_remove_pid(r->cpu, (uint32_t)pid, true);
	if (r->sym)
		qp_sym_forget(r->sym, pid);
}

bool qp_registry_busy(struct qp_registry *r, int pid)
{
	size_t i;

	if (qp_registry_find(r, pid))
		return true;
	for (i = 0; i < r->npending; i++)
		if (r->pending[i]->pid == pid)
			return true;
	for (i = 0; i < r->nreap; i++)
		if (r->reap[i]->pid == pid)
			return true;
	return false;
}

void qp_binary_gen_unlink(struct qp_binary_gen *g)
{
	qp_scopes_detach_links(g->links, g->nlinks);
	free(g->links);
	g->links = NULL;
	g->nlinks = 0;
}
