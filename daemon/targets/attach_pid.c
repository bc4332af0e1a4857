/* attach_pid.c - attaching a running process (POST /api/targets {"pid"},
 * --pid, the re-attach after an exec) without holding the registry lock
 * across the slow part. Under the lock the pid is checked (not a target,
 * not being attached or detached, not covered by a --binary) and reserved:
 * a *pending* target, listed in r->pending but not in r->targets. Without
 * the lock its mapped files are opened through /proc/PID/map_files, parsed
 * (the module cache is looked up and filled under the lock) and attached to
 * (the scope collector locks itself). Under the lock again it is published,
 * or dropped: its links are detached after the lock is released. While
 * pending, a --binary attached meanwhile excludes it from its links as it
 * would a target (binary_requests.c), and no rescan, fork or exec adopts
 * it, so a process is never counted by two sets of links. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collect/collect_scopes.h"
#include "lifecycle.h"
#include "common/log.h"
#include "symbolize/symbolize.h"
#include "targets_priv.h"

/* r->lock held. 0 when PID may be attached now (its earlier record's links
 * and data are gone); -EEXIST with status 409 and err otherwise. */
static int pid_free(struct qp_registry *r, int pid, int *status, char *err, size_t errlen)
{
	struct qp_target *old;
	size_t i;

	qp_registry_wait_reaped(r, pid);
	old = qp_registry_find(r, pid);
	if (old) {
		*status = 409;
		if (old->state == QP_TARGET_EXITED)
			snprintf(err, errlen, "pid %d is still listed as an exited target; detach it first", pid);
		else
			snprintf(err, errlen, "process %d is already a target", pid);
		return -EEXIST;
	}
	for (i = 0; i < r->npending; i++) {
		if (r->pending[i]->pid == pid) {
			*status = 409;
			snprintf(err, errlen, "process %d is being attached by another request", pid);
			return -EEXIST;
		}
	}
	return 0;
}

static int pending_add(struct qp_registry *r, struct qp_target *t)
{
	struct qp_target **v = realloc(r->pending, (r->npending + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	r->pending = v;
	r->pending[r->npending++] = t;
	return 0;
}

static void pending_remove(struct qp_registry *r, struct qp_target *t)
{
	size_t i;

	for (i = 0; i < r->npending; i++) {
		if (r->pending[i] == t) {
			r->pending[i] = r->pending[--r->npending];
			return;
		}
	}
}

/* A pending target that will not be published, r->lock NOT held: its links
 * go first, with what they counted, then (under the lock) its fork watch and
 * its modules, and a --binary that skipped it meanwhile counts it from now
 * on. */
static void pending_drop(struct qp_registry *r, struct qp_target *t, bool sym_set)
{
	int bi;

	qp_scopes_detach_links(t->links, t->nlinks);
	free(t->links);
	t->links = NULL;
	t->nlinks = 0;
	/* what its links counted meanwhile: no target holds it (the pid was
	 * reserved, and a --binary that covers it skipped it) */
	qp_scopes_forget(r->scopes, (uint32_t)t->pid);
	if (sym_set && r->sym)
		qp_sym_forget(r->sym, t->pid);
	pthread_mutex_lock(&r->lock);
	pending_remove(r, t);
	qp_lifecycle_watch(r->lc, t->pid, false);	/* its links are gone */
	if (t->excludes_binary) {
		qp_scopes_exclude(r->scopes, (uint32_t)t->pid, false);
		bi = qp_binary_covering(r, t->pid, &t->maps);
		if (bi >= 0)
			qp_binary_adopt(r, (size_t)bi, t->pid, NULL);
	}
	qp_target_free(r, t);
	pthread_mutex_unlock(&r->lock);
}

static void module_put_unlocked(struct qp_registry *r, struct qp_module *m)
{
	pthread_mutex_lock(&r->lock);
	qp_module_put(r, m);
	pthread_mutex_unlock(&r->lock);
}

/* Attach one other-USDT request in every module of T that has the probe.
 * Returns the number of files it was attached in, or -errno. */
static int attach_extra_one(struct qp_registry *r, struct qp_target *t, struct qp_module **mods,
			    char (*paths)[PATH_MAX + 32], size_t nmods, uint64_t epoch, uint32_t id,
			    enum qp_usdt_role role, const char *spec, char *err, size_t errlen)
{
	char prov[64], name[72];
	struct qp_usdt_req req = { .id = id, .role = role, .provider = prov, .name = name };
	size_t i;
	int ret, files = 0;

	if (!qp_split_probe(spec, prov, sizeof(prov), name, sizeof(name))) {
		snprintf(err, errlen, "'%.80s' is not a USDT probe (want provider:name)", spec);
		return -EINVAL;
	}
	for (i = 0; i < nmods; i++) {
		ret = qp_scopes_attach_usdt(r->scopes, t->pid, paths[i], mods[i]->elf, epoch, &req,
					    &t->links, &t->nlinks, err, errlen);
		if (ret < 0)
			return ret;
		files += ret;
	}
	if (!files) {
		snprintf(err, errlen, "probe %s:%s is not in the executable or libraries of process %d (%s)",
			 prov, name, t->pid, t->comm);
		return -ENOENT;
	}
	return files;
}

/* What the attach of pending target T found. */
struct attach_state {
	char (*paths)[PATH_MAX + 32];	/* files kept for the other probes asked for */
	struct qp_module **mods;
	size_t nmods, files, extras;
	uint32_t *ids;			/* the other probes' and spans' definitions */
	uint64_t epoch;
};

/* The qprof probes of every file T maps, r->lock NOT held. */
static int attach_files(struct qp_registry *r, struct qp_target *t, struct attach_state *a, bool keep,
			int *status, char *err, size_t errlen)
{
	char path[PATH_MAX + 32], merr[256];
	size_t i, j;
	int ret;

	for (i = 0; i < t->maps.n; i++) {
		const struct qp_map *m = &t->maps.v[i];
		struct qp_file_id fid = { .ino = m->inode };
		struct qp_module *mod;
		struct stat fst;
		size_t first;
		bool seen = false;
		int fd;

		if (m->path[0] != '/' || !strchr(m->perms, 'x'))
			continue;
		for (j = 0; j < i && !seen; j++)
			seen = t->maps.v[j].inode == m->inode && t->maps.v[j].dev == m->dev &&
			       strchr(t->maps.v[j].perms, 'x');
		if (seen)
			continue;
		/* the mapped inode itself, even deleted or replaced on disk */
		ret = qp_map_open(t->pid, m, path, sizeof(path), &fd, merr, sizeof(merr));
		if (ret) {
			/* never a path that may name another version: counted, not probed */
			t->files_unopened++;
			qp_info("pid %d: %s not probed: %s", t->pid, m->path, merr);
			/* an entry per file seen: the rescan takes none of them for new */
			if (qp_target_lib_record(t, NULL, m->path, &fid, 0, QP_LIB_UNOPENED, false))
				goto nomem;
			continue;
		}
		if (!fstat(fd, &fst))
			qp_file_id_of(&fst, &fid);
		mod = qp_module_get_fd_unlocked(r, fd, m->path, &ret, merr, sizeof(merr));
		close(fd);
		if (!mod) {
			qp_debug("pid %d: skipping %s: %s", t->pid, m->path, merr);
			if (qp_target_lib_record(t, NULL, m->path, &fid, 0, QP_LIB_REFUSED, false))
				goto nomem;
			continue;
		}
		if (qp_target_hold(t, mod)) {
			module_put_unlocked(r, mod);
			goto nomem;
		}
		t->sites_refused += (unsigned int)mod->elf->nbad_notes;
		if (keep && mod->elf->nnotes) {
			void *np = realloc(a->paths, (a->nmods + 1) * sizeof(*a->paths));
			void *nm = np ? realloc(a->mods, (a->nmods + 1) * sizeof(*a->mods)) : NULL;

			if (np)
				a->paths = np;
			if (nm)
				a->mods = nm;
			if (!np || !nm)
				goto nomem;
			snprintf(a->paths[a->nmods], sizeof(a->paths[0]), "%s", path);
			a->mods[a->nmods++] = mod;
		}
		if (!mod->qprof_notes) {
			if (qp_target_lib_record(t, mod, m->path, &fid, 0, QP_LIB_NO_MARKERS, false))
				goto nomem;
			continue;
		}
		first = t->nlinks;
		ret = qp_target_attach_scopes(r, t, path, mod, a->epoch, t->choice.ring, merr, sizeof(merr));
		if (ret < 0) {
			if (ret == -ESRCH || !qp_pid_alive(t->pid)) {
				*status = 404;
				snprintf(err, errlen, "process %d exited while being attached", t->pid);
			} else {
				*status = qp_attach_status(ret);
				snprintf(err, errlen, "%s", merr);
			}
			return ret;
		}
		t->probes += (unsigned int)mod->qprof_notes;
		a->files++;
		if (qp_target_lib_record(t, mod, m->path, &fid, first, QP_LIB_PROBED, false))
			goto nomem;
	}
	return 0;
nomem:
	*status = 500;
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

/* The other probes and spans asked for, r->lock NOT held. */
static int attach_extras(struct qp_registry *r, struct qp_target *t, const struct qp_attach_extra *x,
			 struct attach_state *a, int *status, char *err, size_t errlen)
{
	size_t i;
	int ret;

	for (i = 0; x && i < x->nusdt + x->nspans; i++) {
		bool span = i >= x->nusdt;
		size_t k = span ? i - x->nusdt : i;

		if (span) {
			/* end first, as for scopes: a lone end is counted, a lone begin would stay */
			ret = attach_extra_one(r, t, a->mods, a->paths, a->nmods, a->epoch, a->ids[i],
					       QP_USDT_SPAN_END, x->span_end[k], err, errlen);
			if (ret >= 0)
				ret = attach_extra_one(r, t, a->mods, a->paths, a->nmods, a->epoch, a->ids[i],
						       QP_USDT_SPAN_BEGIN, x->span_begin[k], err, errlen);
		} else {
			ret = attach_extra_one(r, t, a->mods, a->paths, a->nmods, a->epoch, a->ids[i],
					       QP_USDT_COUNT, x->usdt[k], err, errlen);
		}
		if (ret < 0) {
			*status = ret == -EINVAL || ret == -ENOENT ? 400 :
				  (!qp_pid_alive(t->pid) ? 404 : qp_attach_status(ret));
			return ret;
		}
		a->extras++;
	}
	return 0;
}

/* Whether PID still has an address space: an exiting process drops its
 * mappings (and its map_files with them) before it becomes a zombie. */
static bool has_mappings(int pid)
{
	char path[64], c;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, &c, 1);
	close(fd);
	return n == 1;
}

/* Whether what was attached makes a target (0) or an error. */
static int attach_verdict(struct qp_target *t, const struct attach_state *a, bool probes_required,
			  int *status, char *err, size_t errlen)
{
	if (!qp_pid_alive(t->pid)) {
		*status = 404;
		snprintf(err, errlen, "process %d exited while being attached", t->pid);
		return -ESRCH;
	}
	/* files it maps that could not be opened may hold markers: say so
	 * rather than attach it for CPU samples and lose them silently */
	if (!a->files && !a->extras && t->files_unopened) {
		if (!has_mappings(t->pid) || !qp_pid_alive(t->pid)) {
			/* its files went with its mappings: it is exiting */
			*status = 404;
			snprintf(err, errlen, "process %d exited while being attached", t->pid);
			return -ESRCH;
		}
		*status = 422;
		snprintf(err, errlen, "process %d (%s): no qprof probes attached; %u mapped file(s) could not "
			 "be opened as the inode mapped (deleted, and /proc/PID/map_files needs "
			 "CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE)", t->pid, t->comm, t->files_unopened);
		return -ENOENT;
	}
	if (!a->files && !a->extras && probes_required) {
		*status = 400;
		snprintf(err, errlen, "process %d (%s) has no qprof probes in its executable or libraries",
			 t->pid, t->comm);
		return -ENOENT;
	}
	/* no probe: a target all the same, for its CPU samples (any process) */
	t->cpu_only = !a->files && !a->extras;
	if (t->cpu_only)
		qp_info("pid %d (%s) has no qprof probes: CPU samples only", t->pid, t->comm);
	return 0;
}

/* Under r->lock: PID checked again and T listed as pending, with the
 * definitions of the other probes. 1: a --binary covers PID (409, adopted). */
static int reserve(struct qp_registry *r, struct qp_target *t, const struct qp_attach_extra *x,
		   struct attach_state *a, int *status, char *err, size_t errlen)
{
	size_t i, n = x ? x->nusdt + x->nspans : 0;
	int ret, bi;

	ret = pid_free(r, t->pid, status, err, errlen);
	if (ret)
		return ret;
	bi = qp_binary_covering(r, t->pid, &t->maps);
	if (bi >= 0) {
		/* its binary's links count it already: a second set would count twice */
		*status = 409;
		snprintf(err, errlen, "process %d runs %s, already a target through --binary", t->pid,
			 r->binaries[bi]->path);
		qp_binary_adopt(r, (size_t)bi, t->pid, NULL);
		return -EEXIST;
	}
	a->ids = n ? calloc(n, sizeof(*a->ids)) : NULL;
	for (i = 0; i < n && a->ids; i++) {
		bool span = i >= x->nusdt;
		size_t k = span ? i - x->nusdt : i;

		a->ids[i] = span ? qp_def_new(r, true, x->span_names[k], x->span_begin[k], x->span_end[k])
				 : qp_def_new(r, false, x->usdt[k], NULL, NULL);
		if (!a->ids[i])
			break;
	}
	if ((n && (!a->ids || i < n)) || pending_add(r, t)) {
		*status = 500;
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* its forks from now on: a child must not inherit a site optimized by
	 * links made before the target is published */
	qp_lifecycle_watch(r->lc, t->pid, true);
	return 0;
}

int qp_registry_add_pid(struct qp_registry *r, int pid, const struct qp_attach_extra *extra,
			struct qp_target_view *out, int *status, char *err, size_t errlen)
{
	struct attach_state a = { 0 };
	struct qp_target *t = NULL;
	bool sym_set = false;
	int ret;

	if (pid <= 0) {
		*status = 400;
		snprintf(err, errlen, "pid must be a positive integer");
		return -EINVAL;
	}
	if (pid == getpid()) {
		*status = 403;
		snprintf(err, errlen, "process %d is qprofd itself: qprofd never profiles itself", pid);
		return -EPERM;
	}
	pthread_mutex_lock(&r->lock);
	ret = pid_free(r, pid, status, err, errlen);
	pthread_mutex_unlock(&r->lock);
	if (ret)
		return ret;
	if (!qp_pid_alive(pid)) {
		*status = 404;
		snprintf(err, errlen, kill(pid, 0) == 0 || errno == EPERM ?
			 "process %d has exited (a zombie not yet reaped)" : "no such process: %d", pid);
		return -ESRCH;
	}
	ret = qp_target_new(pid, &t);	/* /proc/PID/maps, comm, exe */
	if (ret) {
		*status = ret == -ENOENT || ret == -ESRCH ? 404 : ret == -EACCES || ret == -EPERM ? 403 :
			  ret == -ENOMEM ? 500 : 422;
		snprintf(err, errlen, ret == -ENOENT || ret == -ESRCH ? "no such process: %d"
			 : "cannot read /proc/%d/maps: %s", pid, strerror(-ret));
		return ret;
	}
	pthread_mutex_lock(&r->lock);
	ret = reserve(r, t, extra, &a, status, err, errlen);
	if (ret) {
		pending_remove(r, t);
		qp_target_free(r, t);
		pthread_mutex_unlock(&r->lock);
		free(a.ids);
		return ret;
	}
	pthread_mutex_unlock(&r->lock);

	/* the slow part, without the registry lock: T is ours alone */
	a.epoch = qp_scopes_new_epoch(r->scopes);
	t->choice = qp_target_choice(r, extra);
	ret = attach_files(r, t, &a, extra && (extra->nusdt || extra->nspans), status, err, errlen);
	if (!ret)
		ret = attach_extras(r, t, extra, &a, status, err, errlen);
	if (!ret)
		ret = attach_verdict(t, &a, extra && extra->probes_required, status, err, errlen);
	/* the symbolizer reads the mappings (and new files) under its own lock */
	if (!ret && r->sym) {
		qp_sym_process_set_maps(r->sym, pid, &t->maps);
		sym_set = true;
	}
	if (ret)
		goto fail;

	pthread_mutex_lock(&r->lock);
	pending_remove(r, t);
	/* a --binary attached meanwhile excluded T from its links (it is a
	 * pending target): T's own links count it, as for a --pid target that
	 * was there first */
	ret = qp_registry_push(r, t, false);
	if (ret) {
		pending_add(r, t);	/* room: it was just removed */
		pthread_mutex_unlock(&r->lock);
		*status = 500;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	ret = out ? qp_target_view_copy(t, out) : 0;
	if (ret) {
		/* attached all the same: say so, and that the answer is missing */
		*status = 500;
		snprintf(err, errlen, "process %d is attached, but there was no memory left to describe it",
			 pid);
	}
	/* T is the registry's now: a DELETE may free it once the lock is dropped */
	qp_info("attached to pid %d (%s): %u probe sites in %zu file(s), %zu other probe(s)/span(s)", pid,
		t->comm, t->probes, a.files, a.extras);
	pthread_mutex_unlock(&r->lock);
	free(a.paths);
	free(a.mods);
	free(a.ids);
	return ret;
fail:
	free(a.paths);
	free(a.mods);
	free(a.ids);
	pending_drop(r, t, sym_set);
	return ret;
}
