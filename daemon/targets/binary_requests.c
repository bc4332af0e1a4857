/* binary_requests.c - what a client asks of --binary targets: attach to a
 * file (opened through O_PATH and parsed before the registry lock is taken;
 * an unprivileged client may name only a file some process maps) and
 * detach from one. A process attached by --pid is never also counted by a
 * binary's links. The versions and processes of a binary: binaries.c. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "collect/collect_scopes.h"
#include "common/log.h"
#include "targets_priv.h"
#include "common/util.h"

/* Does any process but qprofd map the file (DEV, INO)? What an
 * unprivileged client may name. */
static bool mapped_by_any_process(uint64_t dev, uint64_t ino)
{
	struct qp_maps maps;
	struct dirent *de;
	bool found = false;
	size_t i;
	DIR *d = opendir("/proc");

	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		int64_t pid;

		if (qp_parse_i64(de->d_name, 1, INT32_MAX, &pid) || pid == getpid() ||
		    qp_maps_read((int)pid, &maps))
			continue;
		for (i = 0; i < maps.n && !found; i++)
			found = maps.v[i].inode == ino && maps.v[i].dev == dev && maps.v[i].path[0] == '/';
		qp_maps_free(&maps);
	}
	closedir(d);
	return found;
}

static bool path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	while (path[0] == '/' && path[1] == '/')
		path++;
	return !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/');
}

/* PATH as the client sees it: looked up in its root (/proc/CLIENT/root;
 * qprofd's own for a TCP client), through no magic link (/proc/self/exe,
 * /proc/PID/fd/N: what they name depends on who reads them, and qprofd
 * would read its own), and never a file of /proc or /sys. 0 with the
 * file's stat in *OUT; 1: openat2 is missing (kernel before 5.6); -errno
 * with *status and err when refused outright, -ENOENT when not found
 * (the caller's one answer for missing files). */
static int client_view(int client_pid, const char *path, struct stat *out, int *status, char *err,
		       size_t errlen)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	char root[64];
	struct statfs sf;
	int rfd, fd, e;

	if (path_under(path, "/proc/self") || path_under(path, "/proc/thread-self")) {
		*status = 403;
		snprintf(err, errlen, "%.3000s names a file of whoever reads it (qprofd itself): name the "
			 "file by its own path", path);
		return -EPERM;
	}
	if (client_pid > 0)
		snprintf(root, sizeof(root), "/proc/%d/root", client_pid);
	else
		snprintf(root, sizeof(root), "/");
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0) {
		e = errno;
		*status = 403;
		snprintf(err, errlen, "cannot see the files as the client (pid %d) does: %s", client_pid,
			 strerror(e));
		return -e;
	}
	fd = (int)syscall(SYS_openat2, rfd, path, &how, sizeof(how));
	e = errno;
	close(rfd);
	if (fd < 0 && e == ENOSYS)
		return 1;
	if (fd < 0 && e == ELOOP) {
		*status = 403;
		snprintf(err, errlen, "%.3000s goes through a /proc link that names a file of whoever reads "
			 "it (/proc/PID/exe, /proc/PID/fd/N, /proc/PID/root): name the file by its own path",
			 path);
		return -ELOOP;
	}
	if (fd < 0)
		return -ENOENT;
	if (fstat(fd, out) || fstatfs(fd, &sf)) {
		e = errno;
		close(fd);
		return -e;
	}
	close(fd);
	if (sf.f_type == PROC_SUPER_MAGIC || sf.f_type == SYSFS_MAGIC || sf.f_type == DEBUGFS_MAGIC ||
	    sf.f_type == TRACEFS_MAGIC) {
		*status = 403;
		snprintf(err, errlen, "%.3000s is a file of /proc, /sys or tracefs, never an executable", path);
		return -EPERM;
	}
	if (!S_ISREG(out->st_mode)) {
		*status = 400;
		snprintf(err, errlen, "%.3000s is not a regular file", path);
		return -EINVAL;
	}
	return 0;
}

/* Is ST qprofd's own executable? It is never a target: every qprofd on
 * the host would probe itself. */
static bool own_executable(const struct stat *st)
{
	struct stat self;

	return !stat("/proc/self/exe", &self) && self.st_dev == st->st_dev && self.st_ino == st->st_ino;
}

/* Exclude from B's links every --pid target that maps B, and every process
 * being attached by pid (attach_pid.c): their own links count them.
 * Returns how many. */
static size_t exclude_pid_targets(struct qp_registry *r, const struct qp_binary *b, bool on)
{
	size_t i, n = 0;

	for (i = 0; i < r->ntargets + r->npending; i++) {
		struct qp_target *t = i < r->ntargets ? r->targets[i] : r->pending[i - r->ntargets];

		if (t->binary >= 0 || t->state != QP_TARGET_RUNNING || !qp_maps_hold(&t->maps, b))
			continue;
		if (on == t->excludes_binary)
			continue;
		if (!on && qp_binary_covering(r, t->pid, &t->maps) >= 0)
			continue;	/* another binary still covers it */
		qp_scopes_exclude(r->scopes, (uint32_t)t->pid, on);
		t->excludes_binary = on;
		n++;
	}
	return n;
}

static int add_locked(struct qp_registry *r, const char *real, int fd, struct qp_elf_probes *elf,
		      const struct qp_attach_extra *x, struct qp_binary **out, int *status, char *err,
		      size_t errlen)
{
	struct qp_binary *b, **v;
	struct qp_module *mod;
	size_t i;
	int ret;

	for (i = 0; i < r->nbinaries; i++) {
		if (!strcmp(r->binaries[i]->path, real)) {
			qp_elf_probes_free(elf);
			close(fd);
			*status = 409;
			snprintf(err, errlen, "%s is already a target", real);
			return -EEXIST;
		}
	}
	mod = qp_module_insert(r, elf, real);
	b = mod ? calloc(1, sizeof(*b)) : NULL;
	qp_watch_lock(r);	/* the array may move */
	v = b ? realloc(r->binaries, (r->nbinaries + 1) * sizeof(*v)) : NULL;
	if (v)
		r->binaries = v;
	qp_watch_unlock(r);
	if (!v || !(b->path = strdup(real))) {
		free(b);
		qp_module_put(r, mod);
		close(fd);
		*status = 500;
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	b->cur.fd = fd;
	b->cur.mod = mod;
	b->cur.dev = mod->elf->id.dev;
	b->cur.ino = mod->elf->id.ino;
	b->dev = (dev_t)b->cur.dev;
	b->ino = (ino_t)b->cur.ino;
	b->probes = (unsigned int)mod->qprof_notes;
	b->sites_refused = (unsigned int)mod->elf->nbad_notes;
	b->attached_ms = qp_realtime_ns() / 1000000;
	b->choice = qp_target_choice(r, x);
	b->ring = b->choice.ring && r->ring && qp_ring_capable(mod->elf);
	if (b->ring)
		qp_ring_stamp_now(&b->ring_since);
	else if (b->choice.ring && mod->qprof_notes)
		qp_choice_missed(&b->choice, r->ring ? QP_RING_MISS_ABI1 : QP_RING_MISS_DOWN, real,
				 b->collector_note, sizeof(b->collector_note));
	if (!mod->qprof_notes && !(x && (x->nusdt || x->nspans))) {
		*status = mod->elf->nbad_notes ? 422 : 400;
		snprintf(err, errlen, mod->elf->nbad_notes ?
			 "%s: every qprof probe site was refused: its bytes are not the nop its note promises" :
			 "%s has no qprof probes", real);
		qp_binary_free(r, b);
		return -ENOENT;
	}
	for (i = 0; x && i < x->nusdt + x->nspans; i++) {
		bool span = i >= x->nusdt;
		size_t k = span ? i - x->nusdt : i;
		uint32_t id = span ? qp_def_new(r, true, x->span_names[k], x->span_begin[k], x->span_end[k])
				   : qp_def_new(r, false, x->usdt[k], NULL, NULL);
		uint32_t *ids = id ? realloc(b->extra_ids, (b->nextra + 1) * sizeof(*ids)) : NULL;

		if (!ids) {
			qp_binary_free(r, b);
			*status = 500;
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		b->extra_ids = ids;
		b->extra_ids[b->nextra++] = id;
	}
	b->per_process = qp_watch_add(r, fd) != 0;	/* no mark, no links for every process */
	if (b->per_process && r->watch)
		qp_warn("%s: no fanotify mark (%s): its processes are attached one by one", real,
			"the file system does not support it");
	/* before any link exists: a --pid target is counted by its own links only */
	exclude_pid_targets(r, b, true);
	/* listed before its links exist, so that an open of a file changed since
	 * the parse finds it and drops them */
	qp_watch_lock(r);
	r->binaries[r->nbinaries++] = b;
	ret = qp_binary_gen_attach(r, b, &b->cur, status, err, errlen);
	if (ret)
		r->nbinaries--;
	qp_watch_unlock(r);
	if (ret) {
		exclude_pid_targets(r, b, false);
		qp_binary_free(r, b);
		return ret;
	}
	qp_info("attached to every process running %s (%u probe sites)", real, b->probes);
	*out = b;
	return 0;
}

int qp_registry_add_binary(struct qp_registry *r, const char *path, const struct qp_attach_extra *extra,
			   struct qp_binary_view *out, int *status, char *err, size_t errlen)
{
	bool priv = extra && extra->privileged;
	struct qp_elf_probes *elf = NULL;
	struct qp_binary *b = NULL;
	/* a request's, not the command line's (which has no client pid and is root's) */
	bool client = extra && (extra->client_pid > 0 || !extra->privileged);
	char real[PATH_MAX], oerr[256];
	struct stat st, cst;
	int fd = -1, ret = 0, cv = 1;

	if (path[0] != '/') {
		*status = 400;
		snprintf(err, errlen, "binary must be an absolute path");
		return -EINVAL;
	}
	/* a client's path is the file it sees (flags of the command line are
	 * qprofd's own: no client) */
	if (client && (cv = client_view(extra->client_pid, path, &cst, status, err, errlen)) < 0) {
		ret = cv;
		if (ret == -ENOENT && !priv)
			goto hidden;
		if (ret == -ENOENT) {
			*status = 404;
			snprintf(err, errlen, "%.3000s: no such file", path);
		}
		return ret;
	}
	if (!realpath(path, real)) {
		ret = -errno;
		if (!priv)
			goto hidden;
		*status = ret == -ENOENT || ret == -ENOTDIR ? 404 : ret == -EACCES ? 403 : 400;
		snprintf(err, errlen, "%.3000s: %s", path, strerror(-ret));
		return ret;
	}
	/* O_PATH first: a FIFO or a device is refused without being opened */
	ret = qp_open_regular(real, &fd, oerr, sizeof(oerr));
	if (ret) {
		if (!priv)
			goto hidden;
		*status = ret == -ENOENT ? 404 : ret == -EACCES || ret == -EPERM ? 403 :
			  ret == -EFBIG ? 413 : 400;
		snprintf(err, errlen, "%.3000s: %s", real, oerr);
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		*status = 500;
		snprintf(err, errlen, "%.3000s: cannot stat: %s", real, strerror(-ret));
		return ret;
	}
	if (client && cv == 0 && (cst.st_dev != st.st_dev || cst.st_ino != st.st_ino)) {
		close(fd);
		*status = 404;
		snprintf(err, errlen, "%.3000s is another file for qprofd than for the client (another mount "
			 "namespace or root): attach its processes by pid", path);
		return -ENOENT;
	}
	if (own_executable(&st)) {
		close(fd);
		*status = 403;
		snprintf(err, errlen, "%.3000s is qprofd's own executable: qprofd never profiles itself", path);
		return -EPERM;
	}
	if (!priv && !mapped_by_any_process((uint64_t)st.st_dev, (uint64_t)st.st_ino)) {
		close(fd);
		ret = -ENOENT;
		goto hidden;
	}
	/* parsed before the lock: a slow or large file holds up nobody else */
	ret = qp_elf_probes_fdopen(fd, real, &elf, oerr, sizeof(oerr));
	if (ret) {
		close(fd);
		*status = ret == -ENOMEM ? 500 : 422;
		snprintf(err, errlen, "%.3000s: %s", real, oerr);
		return ret;
	}
	pthread_mutex_lock(&r->lock);
	ret = add_locked(r, real, fd, elf, extra, &b, status, err, errlen);
	pthread_mutex_unlock(&r->lock);
	if (ret)
		return ret;
	/* its running processes: /proc is read without the lock */
	ret = qp_binary_scan(r, b, out);
	if (ret == -ENOMEM) {
		/* attached all the same: say so, and that the answer is missing */
		*status = 500;
		snprintf(err, errlen, "%.300s is attached, but there was no memory left to describe it", real);
	} else if (ret) {
		*status = 409;
		snprintf(err, errlen, "%.3000s was detached while being attached", real);
	}
	return ret;
hidden:
	/* the same answer whether the file is missing, unreadable or unmapped */
	*status = 404;
	snprintf(err, errlen, "%.3000s is not the executable or a library of a running process "
		 "(only a root client may name other files)", path);
	return ret;
}

int qp_registry_remove_binary(struct qp_registry *r, const char *path)
{
	char real[PATH_MAX];
	struct qp_binary *b = NULL;
	size_t bi, i, k;

	qp_registry_wait_reports(r);	/* its processes' reports read them */
	for (bi = 0; bi < r->nbinaries && !b; bi++)
		if (!strcmp(r->binaries[bi]->path, path) ||
		    (realpath(path, real) && !strcmp(r->binaries[bi]->path, real)))
			b = r->binaries[bi];
	if (!b)
		return -ENOENT;
	bi--;
	for (i = 0; i < r->ntargets;) {
		struct qp_target *t = r->targets[i];

		if (t->binary == (int)bi) {
			t->binary = -1;	/* gone with its binary, not "detached from it" */
			qp_registry_remove_at(r, i);
			continue;
		}
		if (t->binary > (int)bi)
			t->binary--;
		i++;
	}
	qp_watch_lock(r);
	memmove(&r->binaries[bi], &r->binaries[bi + 1], (r->nbinaries - bi - 1) * sizeof(*r->binaries));
	r->nbinaries--;
	qp_watch_unlock(r);
	exclude_pid_targets(r, b, false);
	for (k = 0; k < b->ndetached; k++) {
		bool keep = qp_registry_find(r, b->detached[k]) != NULL;

		for (i = 0; i < r->nbinaries && !keep; i++)
			keep = qp_binary_detached(r->binaries[i], b->detached[k]);
		if (!keep)
			qp_scopes_exclude(r->scopes, (uint32_t)b->detached[k], false);
	}
	qp_info("detached from every process running %s", b->path);
	qp_binary_free(r, b);
	return 0;
}
