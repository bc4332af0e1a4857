/* modules.c - the cache of parsed ELF files. A module is one version of a
 * file: it is found again only when the file open now has the same dev,
 * inode, size, mtime, ctime and build-id bytes, so a binary rebuilt in
 * place (same inode) is parsed again instead of being probed at the old
 * version's offsets. Modules are counted references: a target or a binary
 * version holds the ones whose sites it names; the last put frees it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/log.h"
#include "targets_priv.h"

static void module_count(struct qp_module *m)
{
	size_t i;

	for (i = 0; i < m->elf->nnotes; i++)
		if (!strcmp(m->elf->notes[i].provider, "qprof") && !m->elf->notes[i].bad)
			m->qprof_notes++;
	if (m->elf->nbad_notes)
		qp_warn("%s: %zu probe site(s) refused: %s", m->path, m->elf->nbad_notes,
			"their bytes or semaphores are not what their notes promise");
}

/* The cached module of the version open at FD (identity, then the build-id
 * bytes: no parse), with a new reference, or NULL. */
static struct qp_module *module_find_fd(struct qp_registry *r, int fd, const struct qp_file_id *id)
{
	size_t i;

	for (i = 0; i < r->nmodules; i++) {
		struct qp_module *m = r->modules[i];

		if (qp_file_id_eq(&m->elf->id, id) && qp_elf_same_file(m->elf, fd) == 1) {
			m->refs++;
			return m;
		}
	}
	return NULL;
}

struct qp_module *qp_module_insert(struct qp_registry *r, struct qp_elf_probes *elf, const char *path)
{
	struct qp_module *m, **v;
	size_t i;

	for (i = 0; i < r->nmodules; i++) {
		m = r->modules[i];
		if (qp_file_id_eq(&m->elf->id, &elf->id) && !strcmp(m->elf->build_id, elf->build_id)) {
			qp_elf_probes_free(elf);
			m->refs++;
			return m;
		}
	}
	m = calloc(1, sizeof(*m));
	v = m ? realloc(r->modules, (r->nmodules + 1) * sizeof(*v)) : NULL;
	if (v)
		r->modules = v;
	if (!m || !v || !(m->path = strdup(path))) {
		free(m);
		qp_elf_probes_free(elf);
		return NULL;
	}
	m->elf = elf;
	module_count(m);
	m->refs = 1;
	r->modules[r->nmodules++] = m;
	return m;
}

/* FD's identity into ID; -errno with the reason in ERR. */
static int fd_id(int fd, const char *path, struct qp_file_id *id, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st)) {
		int e = errno;

		snprintf(err, errlen, "%s: cannot stat: %s", path, strerror(e));
		return -e;
	}
	qp_file_id_of(&st, id);
	return 0;
}

/* The module of the file open at FD: the cached version or a fresh parse.
 * TAKE: the caller does not hold r->lock, which is then taken for the cache
 * only, never across the parse. */
static struct qp_module *get_fd(struct qp_registry *r, int fd, const char *path, bool take, int *ret,
				char *err, size_t errlen)
{
	struct qp_elf_probes *elf;
	struct qp_module *m;
	struct qp_file_id id;

	*ret = fd_id(fd, path, &id, err, errlen);
	if (*ret)
		return NULL;
	if (take)
		pthread_mutex_lock(&r->lock);
	m = module_find_fd(r, fd, &id);
	if (take)
		pthread_mutex_unlock(&r->lock);
	if (m)
		return m;
	/* notes, descriptors and site bytes: without the lock when TAKE */
	*ret = qp_elf_probes_fdopen(fd, path, &elf, err, errlen);
	if (*ret)
		return NULL;
	if (take)
		pthread_mutex_lock(&r->lock);
	m = qp_module_insert(r, elf, path);	/* a version put in meanwhile wins */
	if (take)
		pthread_mutex_unlock(&r->lock);
	if (!m) {
		*ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
	}
	return m;
}

struct qp_module *qp_module_get_fd(struct qp_registry *r, int fd, const char *path, int *ret,
				   char *err, size_t errlen)
{
	return get_fd(r, fd, path, false, ret, err, errlen);
}

struct qp_module *qp_module_get_fd_unlocked(struct qp_registry *r, int fd, const char *path, int *ret,
					    char *err, size_t errlen)
{
	return get_fd(r, fd, path, true, ret, err, errlen);
}

void qp_module_put(struct qp_registry *r, struct qp_module *m)
{
	size_t i;

	if (!m || --m->refs)
		return;
	for (i = 0; i < r->nmodules; i++) {
		if (r->modules[i] != m)
			continue;
		memmove(&r->modules[i], &r->modules[i + 1], (r->nmodules - i - 1) * sizeof(*r->modules));
		r->nmodules--;
		break;
	}
	qp_elf_probes_free(m->elf);
	free(m->path);
	free(m);
}

int qp_map_open(int pid, const struct qp_map *m, char *path, size_t len, int *fd, char *err,
		size_t errlen)
{
	struct stat st;
	int ret;

	*fd = -1;
	snprintf(path, len, "/proc/%d/map_files/%llx-%llx", pid, (unsigned long long)m->start,
		 (unsigned long long)m->end);
	/* through O_PATH first: a mapping of a FIFO or device is refused unopened */
	ret = qp_open_regular(path, fd, err, errlen);
	if ((ret == -EPERM || ret == -EACCES) && !strstr(m->path, " (deleted)")) {
		/* map_files needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE; the
		 * path through the process's root is checked against the maps
		 * line instead. The links are for PID only: should the path change
		 * before the attach, they would match nothing it maps. */
		snprintf(path, len, "/proc/%d/root%s", pid, m->path);
		ret = qp_open_regular(path, fd, err, errlen);
	}
	if (ret)
		return ret == -ENOENT ? -ESRCH : ret;
	/* inode only: btrfs and overlayfs show another dev in maps than stat */
	if (fstat(*fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_ino != m->inode) {
		close(*fd);
		*fd = -1;
		snprintf(err, errlen, "%s is not the file its maps line names", path);
		return -EINVAL;
	}
	return 0;
}

int qp_target_hold(struct qp_target *t, struct qp_module *m)
{
	struct qp_module **v = realloc(t->mods, (t->nmods + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	t->mods = v;
	t->mods[t->nmods++] = m;
	return 0;
}
