/* targets.c - see targets.h. Attaching a pid: read its mappings, open each
 * mapped file through /proc/PID/map_files (the very inode it runs), find the
 * ones that carry qprof notes, attach the scope programs to each for that
 * pid, watch a pidfd for its exit; detach. Exits, reports and trimming:
 * targets_exit.c; --binary targets: binaries.c; site names: target_sites.c. */
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
#include "collect_cpu.h"
#include "collect_scopes.h"
#include "symbolize.h"
#include "json_writer.h"
#include "lifecycle.h"
#include "log.h"
#include "targets_priv.h"
#include "util.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

const char *qp_target_state_name(enum qp_target_state s)
{
	return s == QP_TARGET_RUNNING ? "running" : "exited";
}

void qp_registry_init(struct qp_registry *r, struct qp_scopes *scopes)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->report_done, NULL);
	r->scopes = scopes;
	if (scopes && qp_watch_start(r))
		qp_warn("no fanotify (CAP_SYS_ADMIN): --binary targets attach each process once adopted, "
			"not every process from its start");
}

void qp_target_free(struct qp_registry *r, struct qp_target *t)
{
	size_t i;

	if (!t)
		return;
	qp_scopes_detach_links(t->links, t->nlinks);
	free(t->links);
	if (t->pidfd >= 0)
		close(t->pidfd);
	qp_maps_free(&t->maps);
	free(t->resolved);
	for (i = 0; i < t->nmods; i++)
		qp_module_put(r, t->mods[i]);
	free(t->mods);
	free(t);
}

void qp_registry_destroy(struct qp_registry *r)
{
	size_t i;

	qp_lifecycle_forget_files(r->lc);	/* before the --binary uprobes go */
	qp_watch_stop(r);	/* first: it reads the binaries */
	for (i = 0; i < r->ntargets; i++)
		qp_target_free(r, r->targets[i]);
	for (i = 0; i < r->nbinaries; i++)
		qp_binary_free(r, r->binaries[i]);
	for (i = 0; i < r->nmodules; i++) {	/* none left unless a reference leaked */
		qp_elf_probes_free(r->modules[i]->elf);
		free(r->modules[i]->path);
		free(r->modules[i]);
	}
	free(r->targets);
	free(r->binaries);
	free(r->modules);
	free(r->defs);
	pthread_cond_destroy(&r->report_done);
	pthread_mutex_destroy(&r->lock);
	memset(r, 0, sizeof(*r));
}

struct qp_target *qp_registry_find(struct qp_registry *r, int pid)
{
	size_t i;

	for (i = 0; i < r->ntargets; i++)
		if (r->targets[i]->pid == pid)
			return r->targets[i];
	return NULL;
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

int qp_target_new(int pid, struct qp_target **out)
{
	struct qp_target *t = calloc(1, sizeof(*t));
	int ret;

	if (!t)
		return -ENOMEM;
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

int qp_registry_push(struct qp_registry *r, struct qp_target *t)
{
	struct qp_target **v = realloc(r->targets, (r->ntargets + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	r->targets = v;
	r->targets[r->ntargets++] = t;
	qp_lifecycle_watch(r->lc, t->pid, true);	/* its forks and execs */
	if (r->cpu && qp_cpu_add_pid(r->cpu, (uint32_t)t->pid))
		qp_warn("pid %d: cannot add it to the CPU sampler", t->pid);
	if (r->sym)	/* the mappings just read: /proc/PID/maps is not read twice */
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

int qp_registry_add_pid(struct qp_registry *r, int pid, const struct qp_attach_extra *extra,
			struct qp_target **out, int *status, char *err, size_t errlen)
{
	struct qp_target *t = NULL;
	char path[PATH_MAX + 32], merr[256];
	char (*paths)[PATH_MAX + 32] = NULL;
	struct qp_module **mods = NULL;
	size_t i, j, files = 0, nmods = 0, extras = 0;
	uint64_t epoch = qp_scopes_new_epoch(r->scopes);
	int ret, bi;

	*out = NULL;
	if (pid <= 0) {
		*status = 400;
		snprintf(err, errlen, "pid must be a positive integer");
		return -EINVAL;
	}
	if (qp_registry_find(r, pid)) {
		struct qp_target *old = qp_registry_find(r, pid);

		*status = 409;
		if (old->state == QP_TARGET_EXITED)
			snprintf(err, errlen, "pid %d is still listed as an exited target; detach it first", pid);
		else
			snprintf(err, errlen, "process %d is already a target", pid);
		return -EEXIST;
	}
	if (!qp_pid_alive(pid)) {
		*status = 404;
		snprintf(err, errlen, kill(pid, 0) == 0 || errno == EPERM ?
			 "process %d has exited (a zombie not yet reaped)" : "no such process: %d", pid);
		return -ESRCH;
	}
	ret = qp_target_new(pid, &t);
	if (ret) {
		*status = ret == -ENOENT || ret == -ESRCH ? 404 : ret == -EACCES || ret == -EPERM ? 403 :
			  ret == -ENOMEM ? 500 : 422;
		snprintf(err, errlen, ret == -ENOENT || ret == -ESRCH ? "no such process: %d"
			 : "cannot read /proc/%d/maps: %s", pid, strerror(-ret));
		return ret;
	}
	bi = qp_binary_covering(r, pid, &t->maps);
	if (bi >= 0) {
		/* its binary's links count it already: a second set would count twice */
		*status = 409;
		snprintf(err, errlen, "process %d runs %s, already a target through --binary", pid,
			 r->binaries[bi]->path);
		qp_target_free(r, t);
		qp_binary_adopt(r, (size_t)bi, pid, NULL);
		return -EEXIST;
	}
	for (i = 0; i < t->maps.n; i++) {
		const struct qp_map *m = &t->maps.v[i];
		struct qp_module *mod;
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
		ret = qp_map_open(pid, m, path, sizeof(path), &fd, merr, sizeof(merr));
		if (ret) {
			/* never a path that may name another version: counted, not probed */
			t->files_unopened++;
			qp_info("pid %d: %s not probed: %s", pid, m->path, merr);
			continue;
		}
		mod = qp_module_get_fd(r, fd, m->path, &ret, merr, sizeof(merr));
		close(fd);
		if (!mod) {
			qp_debug("pid %d: skipping %s: %s", pid, m->path, merr);
			continue;
		}
		if (qp_target_hold(t, mod)) {
			qp_module_put(r, mod);
			*status = 500;
			snprintf(err, errlen, "out of memory");
			ret = -ENOMEM;
			goto fail;
		}
		t->sites_refused += (unsigned int)mod->elf->nbad_notes;
		if (extra && (extra->nusdt || extra->nspans) && mod->elf->nnotes) {
			/* kept for the other probes asked for, attached below */
			void *np = realloc(paths, (nmods + 1) * sizeof(*paths));
			void *nm = np ? realloc(mods, (nmods + 1) * sizeof(*mods)) : NULL;

			if (np)
				paths = np;
			if (nm)
				mods = nm;
			if (!np || !nm) {
				*status = 500;
				snprintf(err, errlen, "out of memory");
				ret = -ENOMEM;
				goto fail;
			}
			snprintf(paths[nmods], sizeof(paths[0]), "%s", path);
			mods[nmods++] = mod;
		}
		if (!mod->qprof_notes)
			continue;
		ret = qp_scopes_attach(r->scopes, pid, path, mod->elf, epoch, &t->links, &t->nlinks,
				       merr, sizeof(merr));
		if (ret < 0) {
			if (ret == -ESRCH || !qp_pid_alive(pid)) {
				*status = 404;
				snprintf(err, errlen, "process %d exited while being attached", pid);
			} else {
				*status = qp_attach_status(ret);
				snprintf(err, errlen, "%s", merr);
			}
			goto fail;
		}
		t->probes += (unsigned int)mod->qprof_notes;
		files++;
	}
	for (i = 0; extra && i < extra->nusdt + extra->nspans; i++) {
		bool span = i >= extra->nusdt;
		size_t k = span ? i - extra->nusdt : i;
		uint32_t id = span ? qp_def_new(r, true, extra->span_names[k], extra->span_begin[k], extra->span_end[k])
				   : qp_def_new(r, false, extra->usdt[k], NULL, NULL);

		if (!id) {
			ret = -ENOMEM;
			*status = 500;
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		if (span) {
			/* end first, as for scopes: a lone end is counted, a lone begin would stay */
			ret = attach_extra_one(r, t, mods, paths, nmods, epoch, id, QP_USDT_SPAN_END,
					       extra->span_end[k], err, errlen);
			if (ret >= 0)
				ret = attach_extra_one(r, t, mods, paths, nmods, epoch, id, QP_USDT_SPAN_BEGIN,
						       extra->span_begin[k], err, errlen);
		} else {
			ret = attach_extra_one(r, t, mods, paths, nmods, epoch, id, QP_USDT_COUNT,
					       extra->usdt[k], err, errlen);
		}
		if (ret < 0) {
			*status = ret == -EINVAL || ret == -ENOENT ? 400 :
				  (!qp_pid_alive(pid) ? 404 : qp_attach_status(ret));
			goto fail;
		}
		extras++;
	}
	if (!files && !extras && t->files_unopened && !qp_pid_alive(pid)) {
		/* its map_files went with it: gone, not unopenable */
		*status = 404;
		snprintf(err, errlen, "process %d exited while being attached", pid);
		ret = -ESRCH;
		goto fail;
	}
	if (!files && !extras && t->files_unopened) {
		*status = 422;
		snprintf(err, errlen, "process %d (%s): no qprof probes attached; %u mapped file(s) could not "
			 "be opened as the inode mapped (deleted, and /proc/PID/map_files needs "
			 "CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE)", pid, t->comm, t->files_unopened);
		ret = -ENOENT;
		goto fail;
	}
	if (!files && !extras) {
		*status = 400;
		snprintf(err, errlen, "process %d (%s) has no qprof probes in its executable or libraries",
			 pid, t->comm);
		ret = -ENOENT;
		goto fail;
	}
	if (!qp_pid_alive(pid)) {
		*status = 404;
		snprintf(err, errlen, "process %d exited while being attached", pid);
		ret = -ESRCH;
		goto fail;
	}
	ret = qp_registry_push(r, t);
	if (ret) {
		*status = 500;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	qp_info("attached to pid %d (%s): %u probe sites in %zu file(s), %zu other probe(s)/span(s)", pid,
		t->comm, t->probes, files, extras);
	free(paths);
	free(mods);
	*out = t;
	return 0;
fail:
	free(paths);
	free(mods);
	qp_target_free(r, t);
	return ret;
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
	qp_lifecycle_watch(r->lc, pid, false);
	qp_target_free(r, t);
	qp_scopes_forget(r->scopes, (uint32_t)pid);
	if (r->cpu)
		qp_cpu_remove_pid(r->cpu, (uint32_t)pid, true);
	if (r->sym)
		qp_sym_forget(r->sym, pid);
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

int qp_target_attach_file(struct qp_registry *r, struct qp_target *t, const char *path, uint64_t ino)
{
	char err[256], fdpath[64];
	struct qp_module *mod;
	struct stat st;
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
	ret = qp_scopes_attach(r->scopes, t->pid, fdpath, mod->elf, qp_scopes_new_epoch(r->scopes), &t->links,
			       &t->nlinks, err, sizeof(err));
	close(fd);
	if (ret < 0) {
		qp_warn("pid %d: cannot attach to %s: %s", t->pid, path, err);
		return ret;
	}
	t->probes += (unsigned int)mod->qprof_notes;
	return 1;
}

void qp_registry_adopt_child(struct qp_registry *r, int pid, int parent)
{
	struct qp_target *p = qp_registry_find(r, parent), *t;

	if (!p || p->binary < 0 || qp_registry_find(r, pid) ||
	    qp_binary_detached(r->binaries[p->binary], pid))
		return;
	t = calloc(1, sizeof(*t));
	if (!t)
		return;
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
	if (r->binaries[t->binary]->per_process)	/* no links for every process to cover it */
		qp_binary_attach_process(r, r->binaries[t->binary], t);
	if (qp_registry_push(r, t)) {
		qp_target_free(r, t);
		return;
	}
	qp_info("pid %d, forked by %d, runs %s: now a target", pid, parent, r->binaries[t->binary]->path);
}

void qp_registry_adopt(struct qp_registry *r, int pid)
{
	size_t bi;

	if (qp_registry_find(r, pid))
		return;
	for (bi = 0; bi < r->nbinaries; bi++) {
		qp_binary_adopt(r, bi, pid, NULL);
		if (qp_registry_find(r, pid))
			return;
	}
}

void qp_target_json(const struct qp_target *t, struct qp_json *j)
{
	qp_json_obj_begin(j);
	qp_json_kv_i64(j, "pid", t->pid);
	qp_json_kv_str(j, "comm", t->comm);
	qp_json_kv_str(j, "exe", t->exe);
	qp_json_kv_str(j, "state", qp_target_state_name(t->state));
	qp_json_kv_u64(j, "attached_ms", t->attached_ms);
	qp_json_kv_u64(j, "probes", t->probes);
	if (t->state == QP_TARGET_EXITED)
		qp_json_kv_u64(j, "exited_ms", t->exited_ms);
	else
		qp_json_kv_null(j, "exited_ms");
	qp_json_kv_str(j, "attached_by", t->binary >= 0 ? "binary" : "pid");
	qp_json_kv_u64(j, "sites_refused", t->sites_refused);
	qp_json_kv_u64(j, "files_unopened", t->files_unopened);
	qp_json_obj_end(j);
}
