/* targets.c - see targets.h. Attaching a pid: read its mappings, find the
 * files that carry qprof notes, attach the scope programs to each for that
 * pid, watch a pidfd for its exit. Attaching a binary: attach for every
 * process (cookie QPROF_COOKIE_BINARY) and adopt the processes that map it. */
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
#include "targets.h"
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
	r->scopes = scopes;
}

static void target_free(struct qp_target *t)
{
	if (!t)
		return;
	qp_scopes_detach_links(t->links, t->nlinks);
	free(t->links);
	if (t->pidfd >= 0)
		close(t->pidfd);
	qp_maps_free(&t->maps);
	free(t->resolved);
	free(t);
}

void qp_registry_destroy(struct qp_registry *r)
{
	size_t i;

	qp_lifecycle_forget_files(r->lc);	/* before the --binary uprobes go */
	for (i = 0; i < r->ntargets; i++)
		target_free(r->targets[i]);
	for (i = 0; i < r->nbinaries; i++) {
		struct qp_binary *b = r->binaries[i];

		qp_scopes_detach_links(b->links, b->nlinks);
		free(b->links);
		free(b->detached);
		free(b->path);
		free(b);
	}
	for (i = 0; i < r->nmodules; i++) {
		qp_elf_probes_free(r->modules[i]->elf);
		free(r->modules[i]->path);
		free(r->modules[i]);
	}
	free(r->targets);
	free(r->binaries);
	free(r->modules);
	free(r->defs);
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

/* The parsed ELF file at PATH with inode INO (0: any), parsed on first use. */
static struct qp_module *module_get(struct qp_registry *r, const char *path, ino_t want_ino,
				    char *err, size_t errlen)
{
	struct qp_module *m, **v;
	struct stat st;
	size_t i;
	int ret;

	if (stat(path, &st)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (want_ino && st.st_ino != want_ino) {
		snprintf(err, errlen, "%s was replaced on disk", path);
		return NULL;
	}
	for (i = 0; i < r->nmodules; i++) {
		m = r->modules[i];
		if (m->dev == st.st_dev && m->ino == st.st_ino && !strcmp(m->path, path))
			return m;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	ret = qp_elf_probes_open(path, &m->elf, err, errlen);
	if (ret) {
		free(m);
		return NULL;
	}
	m->path = strdup(path);
	m->dev = st.st_dev;
	m->ino = st.st_ino;
	m->qprof_notes = qp_elf_count_notes(m->elf, "qprof");
	v = realloc(r->modules, (r->nmodules + 1) * sizeof(*v));
	if (v)
		r->modules = v;
	if (!m->path || !v) {
		qp_elf_probes_free(m->elf);
		free(m->path);
		free(m);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->modules[r->nmodules++] = m;
	return m;
}

/* Path of a mapping as the daemon can open it: as written, or through the
 * process's root when it lives in another mount namespace. */
static void map_open_path(int pid, const struct qp_map *m, char *buf, size_t len)
{
	struct stat st;

	if (!stat(m->path, &st) && st.st_ino == m->inode) {
		snprintf(buf, len, "%s", m->path);
		return;
	}
	snprintf(buf, len, "/proc/%d/root%s", pid, m->path);
}

/* Alive and not exiting: kill(pid, 0) still succeeds on a zombie and on a
 * process on its way out, which the kernel refuses to probe (ESRCH). */
static bool pid_alive(int pid)
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

static int target_new(int pid, struct qp_target **out)
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

static int registry_push(struct qp_registry *r, struct qp_target *t)
{
	struct qp_target **v = realloc(r->targets, (r->ntargets + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	r->targets = v;
	r->targets[r->ntargets++] = t;
	qp_lifecycle_watch(r->lc, t->pid, true);	/* its forks and execs */
	if (r->cpu && qp_cpu_add_pid(r->cpu, (uint32_t)t->pid))
		qp_warn("pid %d: cannot add it to the CPU sampler", t->pid);
	if (r->sym)
		qp_sym_process_refresh(r->sym, t->pid);
	t->pidfd = (int)syscall(SYS_pidfd_open, t->pid, 0);
	if (t->pidfd < 0)
		qp_warn("pidfd_open(%d): %s; exit detection falls back to polling", t->pid,
			strerror(errno));
	return 0;
}

const struct qp_usdt_def *qp_registry_def(const struct qp_registry *r, uint32_t id)
{
	if (!id || id > r->ndefs)
		return NULL;
	return &r->defs[id - 1];
}

/* "provider:name" split in place into its two parts (both non-empty). */
static bool split_probe(const char *spec, char *prov, size_t plen, char *name, size_t nlen)
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

static uint32_t def_new(struct qp_registry *r, bool span, const char *name, const char *begin,
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

	if (!split_probe(spec, prov, sizeof(prov), name, sizeof(name))) {
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
	int ret;

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
	if (!pid_alive(pid)) {
		*status = 404;
		snprintf(err, errlen, kill(pid, 0) == 0 || errno == EPERM ?
			 "process %d has exited (a zombie not yet reaped)" : "no such process: %d", pid);
		return -ESRCH;
	}
	ret = target_new(pid, &t);
	if (ret) {
		*status = ret == -ENOENT || ret == -ESRCH ? 404 : 500;
		snprintf(err, errlen, ret == -ENOENT || ret == -ESRCH ? "no such process: %d"
			 : "cannot read /proc/%d/maps: %s", pid, strerror(-ret));
		return ret;
	}
	for (i = 0; i < t->maps.n; i++) {
		const struct qp_map *m = &t->maps.v[i];
		struct qp_module *mod;
		bool seen = false;

		if (m->path[0] != '/' || !strchr(m->perms, 'x') || strstr(m->path, " (deleted)"))
			continue;
		for (j = 0; j < i && !seen; j++)
			seen = !strcmp(t->maps.v[j].path, m->path) && strchr(t->maps.v[j].perms, 'x');
		if (seen)
			continue;
		map_open_path(pid, m, path, sizeof(path));
		mod = module_get(r, path, (ino_t)m->inode, merr, sizeof(merr));
		if (!mod) {
			qp_debug("pid %d: skipping %s: %s", pid, m->path, merr);
			continue;
		}
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
			if (ret == -ESRCH || !pid_alive(pid)) {
				*status = 404;
				snprintf(err, errlen, "process %d exited while being attached", pid);
			} else {
				*status = 500;
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
		uint32_t id = span ? def_new(r, true, extra->span_names[k], extra->span_begin[k], extra->span_end[k])
				   : def_new(r, false, extra->usdt[k], NULL, NULL);

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
			*status = ret == -EINVAL || ret == -ENOENT ? 400 : (!pid_alive(pid) ? 404 : 500);
			goto fail;
		}
		extras++;
	}
	if (!files && !extras) {
		*status = 400;
		snprintf(err, errlen, "process %d (%s) has no qprof probes in its executable or libraries",
			 pid, t->comm);
		ret = -ENOENT;
		goto fail;
	}
	if (!pid_alive(pid)) {
		*status = 404;
		snprintf(err, errlen, "process %d exited while being attached", pid);
		ret = -ESRCH;
		goto fail;
	}
	ret = registry_push(r, t);
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
	target_free(t);
	return ret;
}

static bool maps_hold(const struct qp_maps *maps, const struct qp_binary *b)
{
	size_t i;

	for (i = 0; i < maps->n; i++)
		if (maps->v[i].inode == (uint64_t)b->ino && !strcmp(maps->v[i].path, b->path))
			return true;
	return false;
}

static bool binary_detached(const struct qp_binary *b, int pid)
{
	size_t i;

	for (i = 0; i < b->ndetached; i++)
		if (b->detached[i] == pid)
			return true;
	return false;
}

/* Make PID a target of binary B if it maps it and is not known yet. */
static void binary_adopt(struct qp_registry *r, size_t bi, int pid, const struct qp_maps *known)
{
	struct qp_binary *b = r->binaries[bi];
	struct qp_target *t;

	if (qp_registry_find(r, pid) || binary_detached(b, pid))
		return;
	if (target_new(pid, &t))
		return;
	if (known == NULL && !maps_hold(&t->maps, b)) {
		target_free(t);
		return;
	}
	t->binary = (int)bi;
	t->probes = b->probes;
	if (registry_push(r, t)) {
		target_free(t);
		return;
	}
	qp_info("pid %d (%s) runs %s: now a target", pid, t->comm, b->path);
}

static void binary_scan(struct qp_registry *r)
{
	DIR *d;
	struct dirent *de;
	struct qp_maps maps;
	size_t bi;

	if (!r->nbinaries)
		return;
	d = opendir("/proc");
	if (!d)
		return;
	while ((de = readdir(d))) {
		int64_t pid;

		if (qp_parse_i64(de->d_name, 1, INT32_MAX, &pid))
			continue;
		if (qp_registry_find(r, (int)pid) || pid == getpid())
			continue;
		if (qp_maps_read((int)pid, &maps))
			continue;
		for (bi = 0; bi < r->nbinaries; bi++) {
			if (maps_hold(&maps, r->binaries[bi])) {
				binary_adopt(r, bi, (int)pid, &maps);
				break;
			}
		}
		qp_maps_free(&maps);
	}
	closedir(d);
}

/* The other probes of a --binary target: all in that one file. */
static int attach_binary_extra(struct qp_registry *r, struct qp_binary *b, struct qp_module *mod,
			       uint64_t epoch, const struct qp_attach_extra *x, int *status, char *err,
			       size_t errlen)
{
	size_t i;

	for (i = 0; x && i < x->nusdt + x->nspans; i++) {
		bool span = i >= x->nusdt;
		size_t k = span ? i - x->nusdt : i;
		const char *specs[2] = { span ? x->span_end[k] : x->usdt[k], span ? x->span_begin[k] : NULL };
		enum qp_usdt_role roles[2] = { span ? QP_USDT_SPAN_END : QP_USDT_COUNT, QP_USDT_SPAN_BEGIN };
		uint32_t id = span ? def_new(r, true, x->span_names[k], x->span_begin[k], x->span_end[k])
				   : def_new(r, false, x->usdt[k], NULL, NULL);
		int j, ret;

		if (!id) {
			*status = 500;
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		for (j = 0; j < 2 && specs[j]; j++) {
			char prov[64], name[72];
			struct qp_usdt_req req = { .id = id, .role = roles[j], .provider = prov, .name = name };

			if (!split_probe(specs[j], prov, sizeof(prov), name, sizeof(name))) {
				*status = 400;
				snprintf(err, errlen, "'%.80s' is not a USDT probe (want provider:name)", specs[j]);
				return -EINVAL;
			}
			ret = qp_scopes_attach_usdt(r->scopes, -1, b->path, mod->elf, epoch, &req, &b->links,
						    &b->nlinks, err, errlen);
			if (ret == 0) {
				*status = 400;
				snprintf(err, errlen, "probe %s:%s is not in %s", prov, name, b->path);
				return -ENOENT;
			}
			if (ret < 0) {
				*status = 500;
				return ret;
			}
		}
	}
	return 0;
}

int qp_registry_add_binary(struct qp_registry *r, const char *path, const struct qp_attach_extra *extra,
			   struct qp_binary **out, int *status, char *err, size_t errlen)
{
	struct qp_binary *b, **v;
	struct qp_module *mod;
	char real[PATH_MAX];
	uint64_t epoch;
	size_t i;
	int ret;

	*out = NULL;
	if (!path[0] || path[0] != '/') {
		*status = 400;
		snprintf(err, errlen, "binary must be an absolute path");
		return -EINVAL;
	}
	if (!realpath(path, real)) {
		*status = 400;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	for (i = 0; i < r->nbinaries; i++) {
		if (!strcmp(r->binaries[i]->path, real)) {
			*status = 409;
			snprintf(err, errlen, "%s is already a target", real);
			return -EEXIST;
		}
	}
	mod = module_get(r, real, 0, err, errlen);
	if (!mod) {
		*status = 400;
		return -ENOEXEC;
	}
	if (!mod->qprof_notes && !(extra && (extra->nusdt || extra->nspans))) {
		*status = 400;
		snprintf(err, errlen, "%s has no qprof probes", real);
		return -ENOENT;
	}
	b = calloc(1, sizeof(*b));
	v = realloc(r->binaries, (r->nbinaries + 1) * sizeof(*v));
	if (!b || !v) {
		free(b);
		if (v)
			r->binaries = v;
		*status = 500;
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r->binaries = v;
	b->path = strdup(real);
	b->dev = mod->dev;
	b->ino = mod->ino;
	b->probes = (unsigned int)mod->qprof_notes;
	b->attached_ms = qp_realtime_ns() / 1000000;
	epoch = qp_scopes_new_epoch(r->scopes);
	*status = 500;
	ret = b->path ? qp_scopes_attach(r->scopes, -1, real, mod->elf, epoch, &b->links, &b->nlinks,
					 err, errlen) : -ENOMEM;
	if (ret >= 0)
		ret = attach_binary_extra(r, b, mod, epoch, extra, status, err, errlen);
	if (ret < 0) {
		qp_scopes_detach_links(b->links, b->nlinks);
		free(b->path);
		free(b->links);
		free(b);
		return ret;
	}
	r->binaries[r->nbinaries++] = b;
	qp_lifecycle_watch_file(r->lc, b->dev, b->ino, true);
	qp_info("attached to every process running %s (%u probe sites)", real, b->probes);
	binary_scan(r);
	*out = b;
	return 0;
}

/* Drop target I with its data. A running process of a --binary target is
 * remembered as detached, so that the binary does not adopt it again. */
static void remove_at(struct qp_registry *r, size_t i)
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
	}
	memmove(&r->targets[i], &r->targets[i + 1], (r->ntargets - i - 1) * sizeof(*r->targets));
	r->ntargets--;
	qp_lifecycle_watch(r->lc, pid, false);
	target_free(t);
	qp_scopes_forget(r->scopes, (uint32_t)pid);
	if (r->cpu)
		qp_cpu_remove_pid(r->cpu, (uint32_t)pid, true);
	if (r->sym)
		qp_sym_forget(r->sym, pid);
}

int qp_registry_remove_pid(struct qp_registry *r, int pid)
{
	size_t i;

	for (i = 0; i < r->ntargets; i++) {
		if (r->targets[i]->pid != pid)
			continue;
		remove_at(r, i);
		qp_info("detached from pid %d", pid);
		return 0;
	}
	return -ENOENT;
}

void qp_registry_trim(struct qp_registry *r, size_t max_exited)
{
	for (;;) {
		size_t i, n = 0, oldest = SIZE_MAX;

		for (i = 0; i < r->ntargets; i++) {
			const struct qp_target *t = r->targets[i];

			if (t->state != QP_TARGET_EXITED || t->report_pending)
				continue;
			n++;
			if (oldest == SIZE_MAX || t->exited_ms < r->targets[oldest]->exited_ms)
				oldest = i;
		}
		if (n <= max_exited || oldest == SIZE_MAX)
			return;
		qp_info("forgetting pid %d: more than %zu exited targets are kept", r->targets[oldest]->pid,
			max_exited);
		remove_at(r, oldest);
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
	qp_scopes_detach_links(t->links, t->nlinks);
	free(t->links);
	t->links = NULL;
	t->nlinks = 0;
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
	qp_info("pid %d (%s) exited; its data is kept until it is detached", t->pid, t->comm);
}

void qp_registry_poll(struct qp_registry *r, bool rescan)
{
	size_t i;

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
			qp_target_exited(r, t);
		} else if (rescan) {
			struct qp_maps m;

			/* fresh mappings so that a library loaded later resolves */
			if (!qp_maps_read(t->pid, &m)) {
				qp_maps_free(&t->maps);
				t->maps = m;
			}
			if (r->sym)
				qp_sym_process_refresh(r->sym, t->pid);
		}
	}
	if (rescan)
		binary_scan(r);
}

int qp_target_attach_file(struct qp_registry *r, struct qp_target *t, const char *path, uint64_t ino)
{
	struct qp_module *mod;
	char err[256];
	int ret;

	mod = module_get(r, path, (ino_t)ino, err, sizeof(err));
	if (!mod || !mod->qprof_notes)
		return 0;
	ret = qp_scopes_attach(r->scopes, t->pid, path, mod->elf, qp_scopes_new_epoch(r->scopes), &t->links,
			       &t->nlinks, err, sizeof(err));
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
	    binary_detached(r->binaries[p->binary], pid))
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
	if (registry_push(r, t)) {
		target_free(t);
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
		binary_adopt(r, bi, pid, NULL);
		if (qp_registry_find(r, pid))
			return;
	}
}

static const struct qp_site_info *resolve(struct qp_registry *r, struct qp_target *t, uint64_t addr)
{
	const struct qp_map *m = qp_maps_find(&t->maps, addr);
	const struct qp_site_info *site;
	struct qp_module *mod;
	char path[PATH_MAX + 32], err[256];
	uint64_t vaddr;

	if (!m && t->state == QP_TARGET_RUNNING) {
		struct qp_maps fresh;

		if (!qp_maps_read(t->pid, &fresh)) {
			qp_maps_free(&t->maps);
			t->maps = fresh;
			m = qp_maps_find(&t->maps, addr);
		}
	}
	if (!m || m->path[0] != '/') {
		qp_debug("pid %d: site 0x%llx is in no file mapping", t->pid, (unsigned long long)addr);
		return NULL;
	}
	map_open_path(t->pid, m, path, sizeof(path));
	mod = module_get(r, path, 0, err, sizeof(err));
	if (!mod) {
		qp_debug("pid %d: site 0x%llx: %s", t->pid, (unsigned long long)addr, err);
		return NULL;
	}
	if (qp_elf_offset_to_vaddr(mod->elf, addr - m->start + m->offset, &vaddr)) {
		qp_debug("pid %d: site 0x%llx: offset 0x%llx of %s is in no segment", t->pid,
			 (unsigned long long)addr, (unsigned long long)(addr - m->start + m->offset), path);
		return NULL;
	}
	site = qp_elf_site_at(mod->elf, vaddr);
	if (!site)
		qp_debug("pid %d: no qprof site at 0x%llx of %s", t->pid, (unsigned long long)vaddr, path);
	return site;
}

const struct qp_site_info *qp_target_site(struct qp_registry *r, struct qp_target *t, uint64_t addr)
{
	const struct qp_site_info *site;
	struct qp_resolved *v;
	size_t i;

	for (i = 0; i < t->nresolved; i++)
		if (t->resolved[i].addr == addr)
			return t->resolved[i].site;
	site = resolve(r, t, addr);
	if (!site && t->state == QP_TARGET_RUNNING)
		return NULL; /* may resolve later (library not mapped yet) */
	v = realloc(t->resolved, (t->nresolved + 1) * sizeof(*v));
	if (v) {
		t->resolved = v;
		t->resolved[t->nresolved].addr = addr;
		t->resolved[t->nresolved].site = site;
		t->nresolved++;
	}
	return site;
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
	qp_json_obj_end(j);
}

void qp_binary_json(const struct qp_registry *r, const struct qp_binary *b, struct qp_json *j)
{
	size_t i;

	qp_json_obj_begin(j);
	qp_json_kv_str(j, "binary", b->path);
	qp_json_kv_u64(j, "probes", b->probes);
	qp_json_kv_u64(j, "attached_ms", b->attached_ms);
	qp_json_key(j, "pids");
	qp_json_arr_begin(j);
	for (i = 0; i < r->ntargets; i++)
		if (r->targets[i]->binary >= 0 && r->binaries[r->targets[i]->binary] == b)
			qp_json_i64(j, r->targets[i]->pid);
	qp_json_arr_end(j);
	qp_json_obj_end(j);
}
