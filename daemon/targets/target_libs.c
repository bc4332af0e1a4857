/* target_libs.c - the files a running target maps executable, followed
 * after attach: each library it loads later (dlopen, or its loader at
 * start) is probed for it alone, each one it unloads (dlclose) loses its
 * links at once and keeps its last mappings so that its data stays named,
 * and a file loaded again is probed as the version mapped then (a file
 * replaced or rewritten between two loads is parsed again, never probed at
 * the old offsets). Called with r->lock held, at each rendezvous of the
 * target's dynamic linker (lifecycle_dl.c) and at the 1 s rescan. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collect/collect_scopes.h"
#include "lib_ranges.h"
#include "targets_view.h"
#include "common/log.h"
#include "targets_priv.h"
#include "common/util.h"

/* Entries of files that were never probed and are unmapped are dropped;
 * past this many unloaded entries the oldest go (names come from the
 * target's resolved cache by then). */
#define LIBS_KEEP_UNLOADED 256

static uint64_t now_ms(void)
{
	return qp_realtime_ns() / 1000000;
}

static void lib_clear(struct qp_target_lib *e)
{
	free(e->path);
	free(e->links);
	qp_maps_free(&e->gone);
	qp_maps_free(&e->whole);
	memset(e, 0, sizeof(*e));
}

void qp_target_libs_free(struct qp_target *t)
{
	size_t i;

	for (i = 0; i < t->nlibs; i++)
		lib_clear(&t->libs[i]);
	free(t->libs);
	t->libs = NULL;
	t->nlibs = 0;
}

static struct qp_target_lib *lib_new(struct qp_target *t, const char *path, uint64_t ino)
{
	struct qp_target_lib *v = realloc(t->libs, (t->nlibs + 1) * sizeof(*v)), *e;

	if (!v)
		return NULL;
	t->libs = v;
	e = &v[t->nlibs];
	memset(e, 0, sizeof(*e));
	e->path = strdup(path);
	if (!e->path)
		return NULL;
	e->ino = ino;
	t->nlibs++;
	return e;
}

int qp_target_lib_record(struct qp_target *t, struct qp_module *mod, const char *path,
			 const struct qp_file_id *id, size_t first_link, enum qp_lib_state state,
			 bool premapped)
{
	struct qp_target_lib *e = lib_new(t, path, id->ino);

	if (!e)
		return -ENOMEM;
	e->mod = mod;
	e->id = *id;
	e->state = state;
	e->live = true;
	e->premapped = premapped;
	if (state == QP_LIB_PROBED) {
		e->nlinks = t->nlinks - first_link;
		e->links = malloc((e->nlinks ? e->nlinks : 1) * sizeof(*e->links));
		if (!e->links) {
			e->nlinks = 0;
			return -ENOMEM;
		}
		memcpy(e->links, t->links + first_link, e->nlinks * sizeof(*e->links));
		e->probes = (unsigned int)mod->qprof_notes;
		e->attached_ms = now_ms();
		e->loads = 1;
	}
	return 0;
}

/* Drop E's links: out of T's list (which owns them) into the registry's
 * reap list (target_reap.c), released later without the lock. */
static void lib_unlink(struct qp_registry *r, struct qp_target *t, struct qp_target_lib *e)
{
	size_t i, j;

	for (i = 0; i < e->nlinks; i++) {
		for (j = 0; j < t->nlinks; j++) {
			if (t->links[j] == e->links[i]) {
				t->links[j] = t->links[--t->nlinks];
				break;
			}
		}
	}
	qp_reap_push(r, t->pid, e->ino, &e->id, e->links, e->nlinks);
	e->links = NULL;
	e->nlinks = 0;
}

/* Give T's list (which owns links) L back. */
static int push_link(struct qp_target *t, struct qp_scope_link *l)
{
	struct qp_scope_link **v = realloc(t->links, (t->nlinks + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	t->links = v;
	t->links[t->nlinks++] = l;
	return 0;
}

/* Is INO (dev DEV, from fstat) a version of some --binary file? Its links
 * (or its per-process ones) cover it: never a second set. */
static bool binary_file(const struct qp_registry *r, uint64_t dev, uint64_t ino)
{
	size_t i, k;

	for (i = 0; i < r->nbinaries; i++) {
		const struct qp_binary *b = r->binaries[i];

		if (b->cur.ino == ino && b->cur.dev == dev)
			return true;
		for (k = 0; k < b->nold; k++)
			if (b->old[k].ino == ino && b->old[k].dev == dev)
				return true;
	}
	return false;
}

static bool maps_have(const struct qp_maps *m, uint64_t ino, const char *path)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (m->v[i].inode == ino && strchr(m->v[i].perms, 'x') && !strcmp(m->v[i].path, path))
			return true;
	return false;
}

/* E's file is no longer mapped: links gone, its old mappings kept. */
static void lib_unload(struct qp_registry *r, struct qp_target *t, struct qp_target_lib *e,
		       const struct qp_maps *old)
{
	if (e->state == QP_LIB_PROBED && e->nlinks) {
		lib_unlink(r, t, e);
		t->probes -= e->probes < t->probes ? e->probes : t->probes;
		e->detached_ms = now_ms();
		t->libs_unloaded++;
		qp_info("pid %d: %s unloaded: its %u probe site(s) detached, its data kept", t->pid,
			e->path, e->probes);
	}
	e->live = false;
	/* OLD may have been read during its dlclose (an unload is not held):
	 * then its mappings when last seen whole (lib_ranges.h) */
	qp_lib_gone(e->mod ? e->mod->elf : NULL, old, e->ino, e->path, &e->whole, &e->gone);
}

/* Keep the list bounded: never-probed unmapped entries go, and the oldest
 * unloaded ones past LIBS_KEEP_UNLOADED. */
static void libs_trim(struct qp_target *t)
{
	size_t i, unloaded = 0;

	for (i = 0; i < t->nlibs;) {
		struct qp_target_lib *e = &t->libs[i];

		if (!e->live && e->state != QP_LIB_PROBED) {
			lib_clear(e);
			memmove(e, e + 1, (t->nlibs - i - 1) * sizeof(*e));
			t->nlibs--;
			continue;
		}
		unloaded += !e->live;
		i++;
	}
	for (i = 0; unloaded > LIBS_KEEP_UNLOADED && i < t->nlibs;) {
		struct qp_target_lib *e = &t->libs[i];

		if (e->live) {
			i++;
			continue;
		}
		lib_clear(e);
		memmove(e, e + 1, (t->nlibs - i - 1) * sizeof(*e));
		t->nlibs--;
		unloaded--;
	}
}

/* Load bias of ELF mapped as the mappings of inode INO in MAPS, or false. */
static bool bias_of(const struct qp_elf_probes *elf, const struct qp_maps *maps, uint64_t ino,
		    uint64_t *bias)
{
	size_t i;

	for (i = 0; i < maps->n; i++) {
		uint64_t vaddr;

		if (maps->v[i].inode != ino || qp_elf_offset_to_vaddr(elf, maps->v[i].offset, &vaddr))
			continue;
		*bias = maps->v[i].start - vaddr;
		return true;
	}
	return false;
}

/* Site identity is (process, runtime address of its descriptor): a
 * different version loaded where an unloaded one was can put a site at an
 * address the old one used. Both versions' figures then share that row:
 * counted in sites_reused (and logged), and the address is named after the
 * version loaded last (its cached name goes). */
static void check_reuse(struct qp_target *t, const struct qp_target_lib *e, const struct qp_maps *now)
{
	uint64_t nb, ob;
	size_t i, k, s, hits = 0;

	if (!e->mod || !bias_of(e->mod->elf, now, e->ino, &nb))
		return;
	for (i = 0; i < t->nlibs; i++) {
		const struct qp_target_lib *u = &t->libs[i];

		if (u == e || u->live || !u->mod || u->mod == e->mod ||
		    !bias_of(u->mod->elf, &u->gone, u->ino, &ob))
			continue;
		for (s = 0; s < e->mod->elf->nsites; s++) {
			uint64_t a = e->mod->elf->sites[s].vaddr + nb;

			if (!qp_elf_site_at(u->mod->elf, a - ob))
				continue;
			hits++;
			for (k = 0; k < t->nresolved; k++) {
				if (t->resolved[k].addr == a) {
					t->resolved[k] = t->resolved[--t->nresolved];
					break;
				}
			}
		}
	}
	if (!hits)
		return;
	t->sites_reused += (unsigned int)hits;
	qp_warn("pid %d: %s: %zu site address(es) of this version were another version's, unloaded: "
		"their rows hold both versions' figures (sites_reused)", t->pid, e->path, hits);
}

/* A newly mapped file M of T: probed, or noted (no markers, refused). */
static void lib_load(struct qp_registry *r, struct qp_target *t, const struct qp_map *m,
		     const struct qp_maps *now, uint64_t epoch)
{
	char path[PATH_MAX + 32], err[256];
	struct qp_target_lib *e = NULL;
	struct qp_module *mod = NULL;
	struct qp_file_id id;
	struct stat st;
	size_t i, first;
	int fd, ret;

	if (qp_map_open(t->pid, m, path, sizeof(path), &fd, err, sizeof(err))) {
		if (!(e = lib_new(t, m->path, m->inode)))
			return;
		e->state = QP_LIB_UNOPENED;
		e->live = true;
		t->files_unopened++;
		qp_info("pid %d: %s loaded, not probed: %s", t->pid, m->path, err);
		return;
	}
	if (fstat(fd, &st)) {
		close(fd);
		return;
	}
	qp_file_id_of(&st, &id);
	if (binary_file(r, id.dev, id.ino)) {
		close(fd);
		if ((e = lib_new(t, m->path, m->inode))) {
			e->state = QP_LIB_BINARY;
			e->live = true;
			e->id = id;
		}
		return;
	}
	/* the same version loaded again: its entry comes back */
	for (i = 0; i < t->nlibs && !e; i++)
		if (!t->libs[i].live && t->libs[i].state == QP_LIB_PROBED &&
		    qp_file_id_eq(&t->libs[i].id, &id) && !strcmp(t->libs[i].path, m->path) &&
		    qp_elf_same_file(t->libs[i].mod->elf, fd) == 1)
			e = &t->libs[i];
	if (e) {
		mod = e->mod;
	} else {
		mod = qp_module_get_fd(r, fd, m->path, &ret, err, sizeof(err));
		if (mod && mod->qprof_notes && qp_target_hold(t, mod)) {
			qp_module_put(r, mod);
			mod = NULL;
			snprintf(err, sizeof(err), "out of memory");
		}
	}
	if (!mod || !mod->qprof_notes) {
		unsigned int bad = mod ? (unsigned int)mod->elf->nbad_notes : 0;
		size_t broken = mod ? mod->elf->nbroken_notes : 0;
		bool refused = !mod || broken;

		if (broken)	/* nothing readable of what it promised: refused, and why */
			snprintf(err, sizeof(err), "%zu unreadable .note.stapsdt note(s) (corrupt notes): "
				 "not probed", broken);

		/* nothing of it is named: not held (a reload parses it again) */
		qp_module_put(r, mod);
		mod = NULL;
		close(fd);
		if (!(e = lib_new(t, m->path, m->inode)))
			return;
		e->live = true;
		e->id = id;
		e->late = true;
		if (refused) {
			e->state = QP_LIB_REFUSED;
			snprintf(e->error, sizeof(e->error), "%s", err);
			t->libs_refused++;
			qp_warn("pid %d: %s loaded, not probed: %s", t->pid, m->path, err);
		} else {
			e->state = QP_LIB_NO_MARKERS;
			t->libs_without_markers++;
			t->sites_refused += bad;
			qp_debug("pid %d: %s loaded: no qprof markers", t->pid, m->path);
		}
		return;
	}
	if (mod->elf->nbroken_notes)
		qp_warn("pid %d: %s: %zu unreadable .note.stapsdt note(s): the sites before them are probed",
			t->pid, m->path, mod->elf->nbroken_notes);
	if (e && qp_reap_take(r, t->pid, e->ino, &e->id, &e->links, &e->nlinks)) {
		/* the same version back before its links were released: they
		 * are put back, nothing is attached twice */
		close(fd);
		for (i = 0; i < e->nlinks; i++)
			if (push_link(t, e->links[i]))
				break;
		goto reloaded;
	}
	/* links still parked on this inode were made for another version;
	 * links being released must be gone first */
	qp_reap_flush(r, t->pid, m->inode);
	qp_reap_wait_closed(r, t->pid, m->inode);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	first = t->nlinks;
	ret = qp_target_attach_scopes(r, t, path, mod, epoch, t->choice.ring, err, sizeof(err));
	close(fd);
	if (ret < 0) {
		/* links made before the failure stay with the target (freed with it) */
		qp_warn("pid %d: %s loaded, not probed: %s", t->pid, m->path, err);
		if (!(e = lib_new(t, m->path, m->inode)))
			return;
		e->live = true;
		e->id = id;
		e->late = true;
		e->state = QP_LIB_REFUSED;
		snprintf(e->error, sizeof(e->error), "%s", err);
		t->libs_refused++;
		return;
	}
	if (e) {	/* a reload of a version it had */
		e->links = malloc((t->nlinks - first ? t->nlinks - first : 1) * sizeof(*e->links));
		if (e->links) {
			e->nlinks = t->nlinks - first;
			memcpy(e->links, t->links + first, e->nlinks * sizeof(*e->links));
		}
reloaded:
		e->live = true;
		e->loads++;
		e->attached_ms = now_ms();
		e->detached_ms = 0;
	} else {
		if (qp_target_lib_record(t, mod, m->path, &id, first, QP_LIB_PROBED, false))
			return;
		e = &t->libs[t->nlibs - 1];
		e->late = true;
		t->sites_refused += (unsigned int)mod->elf->nbad_notes;
		check_reuse(t, e, now);
	}
	t->probes += e->probes;
	t->libs_loaded++;
	qp_info("pid %d: %s loaded: %u probe site(s) attached", t->pid, m->path, e->probes);
}

void qp_target_libs_drop_links(struct qp_target *t)
{
	size_t i;

	for (i = 0; i < t->nlibs; i++) {
		free(t->libs[i].links);
		t->libs[i].links = NULL;
		t->libs[i].nlinks = 0;
	}
}

int qp_target_libs_sync(struct qp_registry *r, struct qp_target *t, const struct qp_maps *now)
{
	uint64_t epoch = 0;
	size_t i, j;
	int changes = 0;

	if (t->state != QP_TARGET_RUNNING)
		return 0;
	/* unloaded (or replaced under the same inode) first: no stale link
	 * may stay on a file mapped again */
	for (i = 0; i < t->nlibs; i++) {
		struct qp_target_lib *e = &t->libs[i];

		if (!e->live)
			continue;
		if (!maps_have(now, e->ino, e->path)) {
			if (e->premapped)
				continue;	/* attached ahead of its mapping: not seen yet */
			lib_unload(r, t, e, &t->maps);
			changes++;
			continue;
		}
		e->premapped = false;
		if (e->state == QP_LIB_PROBED || e->state == QP_LIB_NO_MARKERS) {
			struct qp_file_id id;
			struct stat st;
			char p[96];
			size_t k;

			for (k = 0; k < now->n && !(now->v[k].inode == e->ino &&
						   strchr(now->v[k].perms, 'x')); k++)
				;
			snprintf(p, sizeof(p), "/proc/%d/map_files/%llx-%llx", t->pid,
				 (unsigned long long)now->v[k].start, (unsigned long long)now->v[k].end);
			if (stat(p, &st))
				continue;	/* no map_files: the inode check of the maps line stands */
			qp_file_id_of(&st, &id);
			if (qp_file_id_eq(&id, &e->id))
				continue;
			/* rewritten in place since it was probed */
			qp_warn("pid %d: %s changed on disk while mapped: its probes go", t->pid, e->path);
			lib_unload(r, t, e, &t->maps);
			changes++;
		}
	}
	for (i = 0; i < now->n; i++) {
		const struct qp_map *m = &now->v[i];
		bool known = false;

		if (m->path[0] != '/' || !strchr(m->perms, 'x'))
			continue;
		for (j = 0; j < t->nlibs && !known; j++)
			known = t->libs[j].live && t->libs[j].ino == m->inode &&
				!strcmp(t->libs[j].path, m->path);
		for (j = 0; j < i && !known; j++)
			known = now->v[j].inode == m->inode && strchr(now->v[j].perms, 'x') &&
				!strcmp(now->v[j].path, m->path);
		if (known)
			continue;
		if (!epoch)
			epoch = qp_scopes_new_epoch(r->scopes);
		lib_load(r, t, m, now, epoch);
		changes++;
	}
	/* what an unload keeps comes from a snapshot that held the library */
	for (i = 0; i < t->nlibs; i++)
		if (t->libs[i].live && t->libs[i].mod)
			qp_lib_note_whole(t->libs[i].mod->elf, now, t->libs[i].ino, t->libs[i].path,
					  &t->libs[i].whole);
	if (changes)
		libs_trim(t);
	return changes;
}

const struct qp_map *qp_target_gone_find(const struct qp_target *t, uint64_t addr)
{
	size_t i;

	for (i = t->nlibs; i-- > 0;) {
		const struct qp_map *m = qp_maps_find(&t->libs[i].gone, addr);

		if (m && !t->libs[i].live)
			return m;
	}
	return NULL;
}

static int map_cmp(const void *a, const void *b)
{
	const struct qp_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int qp_target_sym_maps(const struct qp_target *t, const struct qp_maps *now, struct qp_maps *out)
{
	size_t i, k, j, n = now->n;

	for (i = 0; i < t->nlibs; i++)
		n += t->libs[i].live ? 0 : t->libs[i].gone.n;
	if (qp_maps_copy(now, out))
		return -ENOMEM;
	if (n == now->n)
		return 0;
	{
		struct qp_map *v = realloc(out->v, n * sizeof(*v));

		if (!v)
			return 0;	/* the current ones at least */
		out->v = v;
	}
	/* an unloaded library's old range, where nothing is mapped now */
	for (i = 0; i < t->nlibs; i++) {
		const struct qp_target_lib *e = &t->libs[i];

		for (k = 0; !e->live && k < e->gone.n; k++) {
			const struct qp_map *g = &e->gone.v[k];
			bool overlap = false;

			for (j = 0; j < out->n && !overlap; j++)
				overlap = g->start < out->v[j].end && out->v[j].start < g->end;
			if (overlap)
				continue;
			out->v[out->n] = *g;
			out->v[out->n].path = strdup(g->path);
			if (out->v[out->n].path)
				out->n++;
		}
	}
	qsort(out->v, out->n, sizeof(*out->v), map_cmp);
	return 0;
}

static const char *lib_state_name(const struct qp_target_lib *e)
{
	switch (e->state) {
	case QP_LIB_PROBED:
		return e->live ? "probed" : "unloaded";
	case QP_LIB_NO_MARKERS:
		return "no_markers";
	case QP_LIB_REFUSED:
		return "refused";
	default:
		return "unopened";
	}
}

int qp_target_libs_view(const struct qp_target *t, struct qp_module_view **out, size_t *n)
{
	struct qp_module_view *v;
	size_t i;

	*out = NULL;
	*n = 0;
	v = calloc(t->nlibs ? t->nlibs : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	*out = v;
	for (i = 0; i < t->nlibs; i++) {
		const struct qp_target_lib *e = &t->libs[i];
		struct qp_module_view *m = &v[*n];

		/* probed ones, and those loaded after attach that could not be */
		if (e->state != QP_LIB_PROBED && !(e->late && e->live))
			continue;
		m->path = strdup(e->path);
		m->error = e->state == QP_LIB_REFUSED ? strdup(e->error) : NULL;
		if (!m->path || (e->state == QP_LIB_REFUSED && !m->error)) {
			free(m->path);
			free(m->error);
			return -ENOMEM;	/* the caller frees the *n made */
		}
		m->state = lib_state_name(e);
		m->probes = e->state == QP_LIB_PROBED ? e->probes : 0;
		m->loads = e->loads;
		m->attached_ms = e->attached_ms;
		m->detached_ms = !e->live ? e->detached_ms : 0;
		(*n)++;
	}
	return 0;
}
