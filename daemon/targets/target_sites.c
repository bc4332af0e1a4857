/* target_sites.c - from a runtime site address (the descriptor address a
 * probe passes) to its name: the mapping of the target that holds the
 * address, the version of the file mapped there (a module the target holds,
 * or the mapped inode opened through /proc/PID/map_files), the link-time
 * address, the descriptor parsed from the file. Results are cached per
 * target, so an exited target still resolves its sites. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/log.h"
#include "targets_priv.h"

/* The module of mapping M of T, for names only (attaching never comes
 * here): one T holds for that inode; else the mapped file itself, through
 * map_files while T runs; else (T gone before anything was read, e.g. a
 * short-lived process of a --binary) a version of that inode another holder
 * keeps, newest first, or the file at the mapped path if it still is that
 * inode. The module found is held by T. */
static struct qp_module *target_module(struct qp_registry *r, struct qp_target *t,
				       const struct qp_map *m, char *err, size_t errlen)
{
	char path[PATH_MAX + 32];
	struct qp_module *mod = NULL;
	struct stat st;
	size_t i;
	int fd, ret;

	for (i = t->nmods; i-- > 0;)	/* the newest version of that inode first */
		if (t->mods[i]->elf->id.ino == m->inode)
			return t->mods[i];
	if (t->state == QP_TARGET_RUNNING && !qp_map_open(t->pid, m, path, sizeof(path), &fd, err, errlen)) {
		mod = qp_module_get_fd(r, fd, m->path, &ret, err, errlen);
		close(fd);
	}
	for (i = r->nmodules; !mod && i-- > 0;) {
		if (r->modules[i]->elf->id.ino == m->inode) {
			mod = r->modules[i];
			mod->refs++;
		}
	}
	if (!mod && !strstr(m->path, " (deleted)") && !qp_open_regular(m->path, &fd, err, errlen)) {
		if (!fstat(fd, &st) && (uint64_t)st.st_ino == m->inode)
			mod = qp_module_get_fd(r, fd, m->path, &ret, err, errlen);
		else
			snprintf(err, errlen, "%s is another file now", m->path);
		close(fd);
	}
	if (mod && qp_target_hold(t, mod)) {
		qp_module_put(r, mod);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	return mod;
}

static const struct qp_site_info *resolve(struct qp_registry *r, struct qp_target *t, uint64_t addr)
{
	const struct qp_map *m = qp_maps_find(&t->maps, addr);
	const struct qp_site_info *site;
	struct qp_module *mod;
	char err[PATH_MAX + 64];
	uint64_t vaddr;

	if (!m && t->state == QP_TARGET_RUNNING) {
		struct qp_maps fresh;

		if (!qp_maps_read(t->pid, &fresh)) {
			qp_target_libs_sync(r, t, &fresh);
			qp_maps_free(&t->maps);
			t->maps = fresh;
			/* a rendezvous or rescan read begun before this one is
			 * stale now: it must not unload by its older mappings */
			t->maps_seq++;
			m = qp_maps_find(&t->maps, addr);
		}
	}
	if (!m)	/* a library unloaded since: its last mappings */
		m = qp_target_gone_find(t, addr);
	if (!m || m->path[0] != '/') {
		qp_debug("pid %d: site 0x%llx is in no file mapping", t->pid, (unsigned long long)addr);
		return NULL;
	}
	mod = target_module(r, t, m, err, sizeof(err));
	if (!mod) {
		qp_debug("pid %d: site 0x%llx: %s", t->pid, (unsigned long long)addr, err);
		return NULL;
	}
	if (qp_elf_offset_to_vaddr(mod->elf, addr - m->start + m->offset, &vaddr)) {
		qp_debug("pid %d: site 0x%llx: offset 0x%llx of %s is in no segment", t->pid,
			 (unsigned long long)addr, (unsigned long long)(addr - m->start + m->offset), m->path);
		return NULL;
	}
	site = qp_elf_site_at(mod->elf, vaddr);
	if (!site)
		qp_debug("pid %d: no qprof site at 0x%llx of %s", t->pid, (unsigned long long)vaddr, m->path);
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

bool qp_registry_site_named(struct qp_registry *r, int pid, const uint64_t *addrs, size_t n,
			    const char *name)
{
	struct qp_target *t;
	bool hit = false;
	size_t i;

	pthread_mutex_lock(&r->lock);
	t = qp_registry_find(r, pid);
	for (i = 0; t && i < n && addrs[i] && !hit; i++) {
		const struct qp_site_info *s = qp_target_site(r, t, addrs[i]);

		hit = s && !strcmp(s->name, name);
	}
	pthread_mutex_unlock(&r->lock);
	return hit;
}

size_t qp_registry_site_names(struct qp_registry *r, int pid, const uint64_t *addrs, size_t n,
			      void (*fn)(void *arg, const char *name), void *arg)
{
	struct qp_target *t;
	size_t i, got = 0;

	pthread_mutex_lock(&r->lock);
	t = qp_registry_find(r, pid);
	for (i = 0; t && i < n && addrs[i]; i++) {
		const struct qp_site_info *s = qp_target_site(r, t, addrs[i]);

		if (s && s->name) {
			fn(arg, s->name);
			got++;
		}
	}
	pthread_mutex_unlock(&r->lock);
	return got;
}
