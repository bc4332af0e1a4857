/* binaries.c - --binary targets: attach to every process, present and
 * future, that maps one file (cookie QPROF_COOKIE_BINARY), adopt those
 * processes, and follow the file through deploys. Each version of the file
 * (inode and content) has its own links: a rename-style deploy (new inode)
 * gets new links while processes still running the old inode keep theirs;
 * a rewrite in place (same inode) loses its links before anyone opens the
 * new content (watch.c) and gets links at the new offsets on the next poll.
 * Without the watch, each adopted process gets links of its own instead.
 * Attach and detach requests: binary_requests.c. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collect/collect_scopes.h"
#include "lifecycle.h"
#include "common/log.h"
#include "targets_priv.h"
#include "common/util.h"

/* PATH without a trailing " (deleted)" equals P. */
static bool same_path(const char *path, const char *p)
{
	size_t n = strlen(p);

	return !strncmp(path, p, n) && (!path[n] || !strcmp(path + n, " (deleted)"));
}

bool qp_maps_hold(const struct qp_maps *maps, const struct qp_binary *b)
{
	size_t i, k;

	for (i = 0; i < maps->n; i++) {
		const struct qp_map *m = &maps->v[i];

		if (!same_path(m->path, b->path))
			continue;
		if (m->inode == b->cur.ino)
			return true;
		for (k = 0; k < b->nold; k++)
			if (m->inode == b->old[k].ino)
				return true;
	}
	return false;
}

bool qp_binary_detached(const struct qp_binary *b, int pid)
{
	size_t i;

	for (i = 0; i < b->ndetached; i++)
		if (b->detached[i] == pid)
			return true;
	return false;
}

int qp_binary_covering(const struct qp_registry *r, int pid, const struct qp_maps *maps)
{
	size_t bi;

	for (bi = 0; bi < r->nbinaries; bi++)
		if (!qp_binary_detached(r->binaries[bi], pid) && qp_maps_hold(maps, r->binaries[bi]))
			return (int)bi;
	return -1;
}

void qp_binary_give_collector(struct qp_registry *r, const struct qp_binary *b, struct qp_target *t,
			      int parent, uint64_t fork_ns)
{
	t->choice = b->choice;
	memcpy(t->collector_note, b->collector_note, sizeof(t->collector_note));
	if (b->ring && !(parent > 0 ? qp_ring_watch_child(r->ring, t->pid, parent, fork_ns)
				    : qp_ring_watch_since(r->ring, t->pid, &b->ring_since)))
		t->ring = r->ring;
}

/* Make PID a target of binary BI if it maps it and is not known yet. */
void qp_binary_adopt(struct qp_registry *r, size_t bi, int pid, const struct qp_maps *known)
{
	struct qp_binary *b = r->binaries[bi];
	struct qp_target *t;

	if (qp_registry_busy(r, pid) || qp_binary_detached(b, pid))
		return;
	if (qp_target_new(pid, &t))
		return;
	if (known == NULL && !qp_maps_hold(&t->maps, b)) {
		qp_target_free(r, t);
		return;
	}
	t->binary = (int)bi;
	t->probes = b->probes;
	/* a ring target from its start (its rings may have been announced
	 * before this adoption): the records it wrote since the attach count */
	qp_binary_give_collector(r, b, t, 0, 0);
	if (b->per_process)
		qp_binary_attach_process(r, b, t);
	if (qp_registry_push(r, t, true)) {
		qp_target_free(r, t);
		return;
	}
	qp_info("pid %d (%s) runs %s: now a target", pid, t->comm, b->path);
}

static bool pid_in(const int *v, size_t n, int pid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i] == pid)
			return true;
	return false;
}

/* PID runs a version of B's file qprofd has not seen (replaced before B was
 * attached: "(deleted)" in its maps). That version is opened through
 * /proc/PID/map_files, the very inode, and kept as an old version with its
 * own links; when it cannot be, PID is counted in processes_refused, once,
 * and never probed. true when PID may now be adopted. */
static bool earlier_version(struct qp_registry *r, struct qp_binary *b, int pid,
			    const struct qp_maps *maps)
{
	struct qp_binary_gen g = { .fd = -1 }, *v;
	char path[PATH_MAX + 32], err[512] = "";
	const struct qp_map *m = NULL;
	struct stat st;
	size_t i;
	int ret, status, *rv;

	for (i = 0; i < maps->n && !m; i++)
		if (strchr(maps->v[i].perms, 'x') && same_path(maps->v[i].path, b->path))
			m = &maps->v[i];
	if (!m || qp_binary_detached(b, pid) || pid_in(b->refused, b->nrefused, pid))
		return false;
	/* what the path names now is the next version: the refresh's (no second set) */
	if (!stat(b->path, &st) && (uint64_t)st.st_ino == m->inode)
		return false;
	if (qp_map_open(pid, m, path, sizeof(path), &g.fd, err, sizeof(err)) || fstat(g.fd, &st) ||
	    !(g.mod = qp_module_get_fd(r, g.fd, b->path, &ret, err, sizeof(err))))
		goto refused;
	g.dev = (uint64_t)st.st_dev;
	g.ino = (uint64_t)st.st_ino;
	v = realloc(b->old, (b->nold + 1) * sizeof(*v));
	if (!v)
		goto refused;
	b->old = v;
	qp_watch_lock(r);
	/* every-process links only on a watched inode, as for any version */
	if (b->per_process || !qp_watch_add(r, g.fd)) {
		if (qp_binary_gen_attach(r, b, &g, &status, err, sizeof(err)))
			qp_warn("%s: an earlier version run by pid %d cannot be probed: %s", b->path, pid, err);
	}
	b->old[b->nold++] = g;
	qp_watch_unlock(r);
	qp_info("%s: pid %d runs an earlier version (inode %llu): attached through map_files", b->path, pid,
		(unsigned long long)g.ino);
	return true;
refused:
	if (g.mod)
		qp_module_put(r, g.mod);
	if (g.fd >= 0)
		close(g.fd);
	rv = realloc(b->refused, (b->nrefused + 1) * sizeof(*rv));
	if (rv) {
		b->refused = rv;
		b->refused[b->nrefused++] = pid;
	}
	qp_warn("pid %d runs an earlier version of %s that cannot be opened as mapped: not probed (%s)", pid,
		b->path, err);
	return false;
}

/* A process the rescan read without the lock: it maps a file with the path
 * of some binary. */
struct scan_hit {
	int pid;
	struct qp_maps maps;
};

static bool maps_name_any(const struct qp_maps *maps, char **paths, size_t n)
{
	size_t i, k;

	for (i = 0; i < maps->n; i++)
		for (k = 0; k < n; k++)
			if (same_path(maps->v[i].path, paths[k]))
				return true;
	return false;
}

/* Every process's mappings, read WITHOUT r->lock: those that map a file
 * with one of PATHS (what qp_maps_hold and earlier_version both need) go
 * to *HITS. */
static size_t scan_proc(char **paths, size_t npaths, struct scan_hit **hits)
{
	struct scan_hit *v;
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	*hits = NULL;
	d = opendir("/proc");
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		struct qp_maps maps;
		int64_t pid;

		if (qp_parse_i64(de->d_name, 1, INT32_MAX, &pid) || pid == getpid() ||
		    qp_maps_read((int)pid, &maps))
			continue;
		if (!maps_name_any(&maps, paths, npaths) ||
		    !(v = realloc(*hits, (n + 1) * sizeof(*v)))) {
			qp_maps_free(&maps);
			continue;
		}
		*hits = v;
		v[n].pid = (int)pid;
		v[n++].maps = maps;
	}
	closedir(d);
	return n;
}

int qp_binary_scan(struct qp_registry *r, const struct qp_binary *jb, struct qp_binary_view *out)
{
	struct scan_hit *hits = NULL;
	size_t bi, i, npaths = 0, nhits = 0;
	char **paths = NULL;
	int ret = out ? -ENOENT : 0;

	pthread_mutex_lock(&r->lock);
	if (r->nbinaries)
		paths = calloc(r->nbinaries, sizeof(*paths));
	for (bi = 0; paths && bi < r->nbinaries; bi++)
		if ((paths[npaths] = strdup(r->binaries[bi]->path)))
			npaths++;
	pthread_mutex_unlock(&r->lock);
	/* the slow part (every process's maps) holds up nobody */
	if (npaths)
		nhits = scan_proc(paths, npaths, &hits);
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < nhits; i++) {
		int pid = hits[i].pid;

		if (qp_registry_busy(r, pid))
			continue;
		for (bi = 0; bi < r->nbinaries; bi++) {
			if (qp_maps_hold(&hits[i].maps, r->binaries[bi]) ||
			    earlier_version(r, r->binaries[bi], pid, &hits[i].maps)) {
				qp_binary_adopt(r, bi, pid, &hits[i].maps);
				break;
			}
		}
	}
	for (bi = 0; out && bi < r->nbinaries; bi++)
		if (r->binaries[bi] == jb)
			ret = qp_binary_view_copy(r, jb, out);
	pthread_mutex_unlock(&r->lock);
	for (i = 0; i < nhits; i++)
		qp_maps_free(&hits[i].maps);
	free(hits);
	for (i = 0; i < npaths; i++)
		free(paths[i]);
	free(paths);
	return ret;
}

static void gen_free(struct qp_registry *r, struct qp_binary_gen *g)
{
	if (g->nlinks)	/* forks of it no longer keep int3 sites: no uprobe would take them */
		qp_lifecycle_watch_file(r->lc, (dev_t)g->dev, (ino_t)g->ino, false);
	qp_binary_gen_unlink(g);
	qp_module_put(r, g->mod);
	g->mod = NULL;
	if (g->fd >= 0) {
		qp_watch_remove(r, g->fd);
		close(g->fd);
	}
	g->fd = -1;
}

void qp_binary_free(struct qp_registry *r, struct qp_binary *b)
{
	size_t k;

	gen_free(r, &b->cur);
	for (k = 0; k < b->nold; k++)
		gen_free(r, &b->old[k]);
	free(b->old);
	free(b->extra_ids);
	free(b->refused);
	free(b->detached);
	free(b->path);
	free(b);
}

static bool has_probe(const struct qp_elf_probes *elf, const char *prov, const char *name)
{
	size_t k;

	for (k = 0; k < elf->nnotes; k++)
		if (!strcmp(elf->notes[k].provider, prov) && !strcmp(elf->notes[k].name, name))
			return true;
	return false;
}

/* Attach B's probes (qprof's, its other probes and spans) in ELF at PATH for
 * PID (-1: every process), appending to *LINKS. LINKS NULL: only check that
 * the other probes are there. */
static int attach_file(struct qp_registry *r, const struct qp_binary *b, int pid, const char *path,
		       const struct qp_elf_probes *elf, struct qp_scope_link ***links, size_t *nlinks,
		       int *status, char *err, size_t errlen)
{
	uint64_t epoch = qp_scopes_new_epoch(r->scopes);
	size_t i, first = links ? *nlinks : 0;
	int j, ret = 0;

	*status = 422;
	if (links && b->ring && qp_ring_capable(elf)) {
		/* the ring_register uprobe raises the semaphore in every process
		 * of the file; the log probe only raises the log semaphore. Spans
		 * across threads stay on BPF only where the markers do not write
		 * them into the ring (else each would be counted twice) */
		ret = qp_ring_attach(r->ring, r->scopes, pid, path, elf, links, nlinks, err, errlen);
		if (ret >= 0)
			ret = qp_scopes_attach_some(r->scopes, pid, path, elf, epoch,
						    QP_PROBES_LOGS | (qp_ring_spans_capable(elf) ? 0 : QP_PROBES_ASYNC),
						    links, nlinks, err, errlen);
	} else if (links) {
		ret = qp_scopes_attach(r->scopes, pid, path, elf, epoch, links, nlinks, err, errlen);
	}
	for (i = 0; ret >= 0 && i < b->nextra; i++) {
		const struct qp_usdt_def *def = qp_registry_def(r, b->extra_ids[i]);
		const char *specs[2] = { def->span ? def->end : def->name, def->span ? def->begin : NULL };
		enum qp_usdt_role roles[2] = { def->span ? QP_USDT_SPAN_END : QP_USDT_COUNT, QP_USDT_SPAN_BEGIN };

		for (j = 0; ret >= 0 && j < 2 && specs[j]; j++) {
			char prov[64], name[72];
			struct qp_usdt_req req = { .id = def->id, .role = roles[j], .provider = prov, .name = name };

			if (!qp_split_probe(specs[j], prov, sizeof(prov), name, sizeof(name))) {
				*status = 400;
				snprintf(err, errlen, "'%.80s' is not a USDT probe (want provider:name)", specs[j]);
				ret = -EINVAL;
				break;
			}
			ret = !links ? has_probe(elf, prov, name) :
			      qp_scopes_attach_usdt(r->scopes, pid, path, elf, epoch, &req, links, nlinks, err,
						    errlen);
			if (ret == 0) {
				*status = 400;
				snprintf(err, errlen, "probe %s:%s is not in %s", prov, name, b->path);
				ret = -ENOENT;
			}
		}
	}
	if (ret < 0) {
		if (*status == 422)
			*status = qp_attach_status(ret);
		if (links) {
			qp_scopes_detach_links(*links + first, *nlinks - first);
			*nlinks = first;
		}
		return ret;
	}
	return 0;
}

/* Attach B's probes to version G, whose file is open at G->fd: through
 * /proc/self/fd, so the kernel places them on that very inode whatever the
 * path names by now. Without the fanotify watch there are no links for
 * every process (an in-place rewrite could not be caught before an exec):
 * each adopted process gets its own (qp_binary_attach_process). */
int qp_binary_gen_attach(struct qp_registry *r, struct qp_binary *b, struct qp_binary_gen *g,
		      int *status, char *err, size_t errlen)
{
	char path[64];

	int ret;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", g->fd);
	ret = attach_file(r, b, -1, path, g->mod->elf, b->per_process ? NULL : &g->links, &g->nlinks, status,
			  err, errlen);
	if (!ret && g->nlinks)	/* its forked children keep their sites probed (lifecycle.c) */
		qp_lifecycle_watch_file(r->lc, (dev_t)g->dev, (ino_t)g->ino, true);
	return ret;
}

/* Per-process mode (no fanotify): links for T alone on the version of B's
 * file that T maps, opened through T's own mapping. */
void qp_binary_attach_process(struct qp_registry *r, struct qp_binary *b, struct qp_target *t)
{
	char path[PATH_MAX + 32], err[512] = "it maps no executable version of the file";
	struct qp_module *mod;
	size_t i;
	int fd, ret, status;

	for (i = 0; i < t->maps.n; i++) {
		const struct qp_map *m = &t->maps.v[i];

		if (!strchr(m->perms, 'x') || !same_path(m->path, b->path))
			continue;
		if (qp_map_open(t->pid, m, path, sizeof(path), &fd, err, sizeof(err))) {
			t->files_unopened++;	/* never attached by a path that may name another version */
			break;
		}
		mod = qp_module_get_fd(r, fd, b->path, &ret, err, sizeof(err));
		close(fd);
		if (!mod)
			break;
		if (qp_target_hold(t, mod)) {
			qp_module_put(r, mod);
			break;
		}
		t->probes = (unsigned int)mod->qprof_notes;
		t->sites_refused = (unsigned int)mod->elf->nbad_notes;
		if (attach_file(r, b, t->pid, path, mod->elf, &t->links, &t->nlinks, &status, err,
				sizeof(err)) == 0)
			return;
		break;
	}
	t->probes = 0;
	qp_warn("pid %d runs %s but cannot be probed: %s", t->pid, b->path, err);
}

/* The file at B's path is a new version (another inode, or the same one
 * rewritten): give it links. FD is open on it; taken over. */
static void binary_new_version(struct qp_registry *r, struct qp_binary *b, int fd, bool same_inode)
{
	struct qp_binary_gen g = { .fd = fd };
	char err[512];
	struct stat st;
	int ret, status;

	if (fstat(fd, &st)) {
		close(fd);
		return;
	}
	g.dev = (uint64_t)st.st_dev;
	g.ino = (uint64_t)st.st_ino;
	g.mod = qp_module_get_fd(r, fd, b->path, &ret, err, sizeof(err));
	if (!g.mod) {
		/* half written, or no ELF: try again on the next poll */
		qp_debug("%s: new version not readable yet: %s", b->path, err);
		close(fd);
		b->stale = true;
		return;
	}
	qp_watch_lock(r);
	if (same_inode || !b->cur.mod) {
		gen_free(r, &b->cur);
	} else {
		struct qp_binary_gen *v = realloc(b->old, (b->nold + 1) * sizeof(*v));

		if (!v) {
			qp_watch_unlock(r);
			gen_free(r, &g);
			return;
		}
		b->old = v;
		b->old[b->nold++] = b->cur;	/* its processes still run it */
	}
	memset(&b->cur, 0, sizeof(b->cur));
	b->cur.fd = -1;
	/* the mark before the links: links no open is checked against must not be */
	if (!b->per_process && qp_watch_add(r, fd)) {
		qp_warn("%s: no fanotify mark on the new version: its processes are attached one by one",
			b->path);
		b->per_process = true;
	}
	if (qp_binary_gen_attach(r, b, &g, &status, err, sizeof(err)))	/* kept unprobed, watched */
		qp_warn("%s: the new version cannot be probed: %s", b->path, err);
	b->cur = g;
	b->dev = st.st_dev;
	b->ino = st.st_ino;
	b->probes = (unsigned int)g.mod->qprof_notes;
	b->sites_refused = (unsigned int)g.mod->elf->nbad_notes;
	b->replaced++;
	b->stale = false;
	qp_watch_unlock(r);
	qp_info("%s: new version (%s): %u probe sites attached", b->path,
		same_inode ? "rewritten in place" : "new inode", g.nlinks ? b->probes : 0);
}

/* Does any running target of B map inode INO? */
static bool gen_in_use(const struct qp_registry *r, const struct qp_binary *b, uint64_t ino)
{
	size_t i, k;

	for (i = 0; i < r->ntargets; i++) {
		const struct qp_target *t = r->targets[i];

		if (t->state != QP_TARGET_RUNNING || t->binary < 0 || r->binaries[t->binary] != b)
			continue;
		for (k = 0; k < t->maps.n; k++)
			if (t->maps.v[k].inode == ino && same_path(t->maps.v[k].path, b->path))
				return true;
	}
	return false;
}

void qp_binaries_refresh(struct qp_registry *r, bool rescan)
{
	size_t bi, k;

	for (bi = 0; bi < r->nbinaries; bi++) {
		struct qp_binary *b = r->binaries[bi];
		char err[256];
		struct stat st;
		int fd;

		if (!b->stale && !rescan)
			continue;
		if (qp_open_regular(b->path, &fd, err, sizeof(err)))
			continue;	/* between the steps of a deploy: look again later */
		if (fstat(fd, &st)) {
			close(fd);
			continue;
		}
		if ((uint64_t)st.st_ino == b->cur.ino && (uint64_t)st.st_dev == b->cur.dev && !b->stale &&
		    (!b->cur.mod || qp_elf_same_file(b->cur.mod->elf, fd) == 1)) {
			close(fd);
		} else {
			bool same = (uint64_t)st.st_ino == b->cur.ino && (uint64_t)st.st_dev == b->cur.dev;

			if (same && b->cur.nlinks) {
				/* rewritten in place: no link may outlive its content */
				qp_watch_lock(r);
				qp_binary_gen_unlink(&b->cur);
				b->stale = true;
				qp_watch_unlock(r);
			}
			binary_new_version(r, b, fd, same);
		}
		qp_watch_lock(r);
		for (k = 0; rescan && k < b->nold; k++) {
			if (gen_in_use(r, b, b->old[k].ino))
				continue;
			gen_free(r, &b->old[k]);
			b->old[k--] = b->old[--b->nold];
		}
		qp_watch_unlock(r);
	}
}
