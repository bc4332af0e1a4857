/* lifecycle_dlsync.c - what the poll loop does at the rendezvous of a
 * target's dynamic linker (lifecycle_dl.c: a library was loaded or
 * unloaded): the target's mappings are read and the files new to it parsed
 * without the registry lock (a large library's notes take milliseconds to
 * read, and every route waits for that lock), then its files are followed
 * under the lock (target_libs.c: probes attached or detached, which finds
 * those parses in the module cache) while the BPF side holds it. The
 * uprobe attach itself stays under the lock (docs/internals/locks.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <unistd.h>
#include "lifecycle.h"
#include "common/log.h"
#include "common/procfs.h"
#include "targets_priv.h"
#include "common/util.h"

/* The files a target follows (live entries), copied under the lock. */
struct known_file {
	uint64_t ino;
	char *path;
};

struct dl_prep {
	struct known_file *known;
	size_t nknown;
	struct qp_module **mods;	/* references taken on the new files' parses */
	size_t nmods;
	const struct qp_target *rec;	/* the target record then, */
	uint64_t maps_seq;		/* and its mappings when the read began */
};

static void prep_free(struct qp_registry *r, struct dl_prep *p)
{
	size_t i;

	for (i = 0; i < p->nknown; i++)
		free(p->known[i].path);
	free(p->known);
	for (i = 0; i < p->nmods; i++)	/* r->lock held: a module without other holder goes */
		qp_module_put(r, p->mods[i]);
	free(p->mods);
	memset(p, 0, sizeof(*p));
}

/* r->lock held. */
static int known_copy(const struct qp_target *t, struct dl_prep *p)
{
	size_t i;

	p->known = calloc(t->nlibs ? t->nlibs : 1, sizeof(*p->known));
	if (!p->known)
		return -1;
	for (i = 0; i < t->nlibs; i++) {
		if (!t->libs[i].live)
			continue;
		p->known[p->nknown].ino = t->libs[i].ino;
		p->known[p->nknown].path = strdup(t->libs[i].path);
		if (!p->known[p->nknown].path)
			return -1;
		p->nknown++;
	}
	p->rec = t;
	p->maps_seq = t->maps_seq;
	return 0;
}

static bool is_known(const struct dl_prep *p, const struct qp_maps *now, size_t i)
{
	const struct qp_map *m = &now->v[i];
	size_t j;

	for (j = 0; j < p->nknown; j++)
		if (p->known[j].ino == m->inode && !strcmp(p->known[j].path, m->path))
			return true;
	for (j = 0; j < i; j++)	/* another segment of a file seen above */
		if (now->v[j].inode == m->inode && strchr(now->v[j].perms, 'x') &&
		    !strcmp(now->v[j].path, m->path))
			return true;
	return false;
}

/* r->lock NOT held: parse the executable files of NOW new to the target
 * into the module cache (a reference each in P, so that they stay until
 * the sync under the lock has taken its own). Best effort: what fails here
 * fails again under the lock and is recorded there. */
static void prep_parse(struct qp_registry *r, int pid, const struct qp_maps *now, struct dl_prep *p)
{
	char path[PATH_MAX + 32], err[256];
	size_t i;

	p->mods = calloc(now->n ? now->n : 1, sizeof(*p->mods));
	for (i = 0; p->mods && i < now->n; i++) {
		const struct qp_map *m = &now->v[i];
		struct qp_module *mod;
		int fd, ret;

		if (m->path[0] != '/' || !strchr(m->perms, 'x') || is_known(p, now, i))
			continue;
		if (qp_map_open(pid, m, path, sizeof(path), &fd, err, sizeof(err)))
			continue;
		mod = qp_module_get_fd_unlocked(r, fd, m->path, &ret, err, sizeof(err));
		close(fd);
		if (mod)
			p->mods[p->nmods++] = mod;
	}
}

unsigned int qp_lifecycle_handle_dl(struct qp_registry *r, const struct qp_lc_exec *e, struct qp_maps *sym)
{
	unsigned int loaded = 0;
	struct dl_prep prep = { 0 };
	struct qp_maps now = { 0 };
	struct qp_target *t;
	uint64_t t0 = qp_now_ns(), t1;
	int changes;
	bool ok;

	pthread_mutex_lock(&r->lock);
	t = qp_registry_find(r, e->pid);
	if (!t) {
		/* a --binary process whose adoption was not handled yet; one
		 * that is no target (detached by the user) is not held again */
		qp_registry_adopt(r, e->pid);
		if (!qp_registry_find(r, e->pid))
			qp_lifecycle_watch(r->lc, e->pid, false);
		pthread_mutex_unlock(&r->lock);
		return 0;
	}
	ok = t->state == QP_TARGET_RUNNING && !known_copy(t, &prep);
	pthread_mutex_unlock(&r->lock);
	ok = ok && !qp_maps_read(e->pid, &now);
	if (ok)
		prep_parse(r, e->pid, &now, &prep);
	t1 = qp_now_ns();
	pthread_mutex_lock(&r->lock);
	t = qp_registry_find(r, e->pid);
	if (!ok || !t || t->state != QP_TARGET_RUNNING)
		goto out;
	if (t != prep.rec || t->maps_seq != prep.maps_seq) {
		/* the rescan put newer mappings meanwhile (or the target was
		 * attached again): read again, under the lock (the parses made
		 * stay in the cache all the same) */
		qp_maps_free(&now);
		if (qp_maps_read(e->pid, &now))
			goto out;
	}
	loaded = t->libs_loaded;
	changes = qp_target_libs_sync(r, t, &now);
	loaded = t->libs_loaded - loaded;
	qp_maps_free(&t->maps);
	t->maps = now;
	memset(&now, 0, sizeof(now));
	t->maps_seq++;
	qp_debug("pid %d: rendezvous (%s): %d file(s) came or went; handled %llu us after it, "
		 "%llu us parsing unlocked, %llu us under the lock", e->pid, e->stopped ? "held" : "not held",
		 changes, (unsigned long long)((t0 - e->ts_ns) / 1000),
		 (unsigned long long)((t1 - t0) / 1000), (unsigned long long)((qp_now_ns() - t1) / 1000));
	if (r->sym && qp_target_sym_maps(t, &t->maps, sym))
		memset(sym, 0, sizeof(*sym));
out:
	prep_free(r, &prep);
	pthread_mutex_unlock(&r->lock);
	qp_maps_free(&now);
	return loaded;
}
