/* lifecycle_fork.c - see lifecycle_fork.h: the sites of a stopped child
 * that hold the kernel's call to its parent's uprobe trampoline are written
 * back, through /proc/CHILD/mem, to the original nop5 or to int3 + its last
 * four bytes. Only USDT sites whose bytes on disk are a nop5 are looked at:
 * the kernel optimizes no other uprobe, and it alone writes a call there. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "elf_probes.h"
#include "lifecycle_fork.h"
#include "log.h"
#include "procfs.h"

#define LC_MAX_MODULES 64

static const unsigned char nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

/* A file a forked child maps: the file offsets of its USDT sites that are
 * nop5 on disk (the only ones the kernel optimizes). */
struct lc_module {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	uint64_t *offs;
	size_t n;
	uint64_t last_use;
};

struct lc_sites {
	struct lc_module mods[LC_MAX_MODULES];
	size_t nmods;
	uint64_t use_clock;
};

struct lc_sites *lc_sites_new(void)
{
	return calloc(1, sizeof(struct lc_sites));
}

static void module_clear(struct lc_module *m)
{
	free(m->offs);
	memset(m, 0, sizeof(*m));
}

/* Offsets of the nop5 USDT sites of the file open as FD (path PATH). */
static int module_scan(struct lc_module *m, int fd, const char *path)
{
	struct qp_elf_probes *elf;
	char err[256];
	size_t i, j;
	int ret;

	ret = qp_elf_probes_open(path, &elf, err, sizeof(err));
	if (ret)
		return ret;	/* not ELF, no notes: nothing of ours */
	m->offs = calloc(elf->nnotes ? elf->nnotes : 1, sizeof(*m->offs));
	if (!m->offs) {
		qp_elf_probes_free(elf);
		return -ENOMEM;
	}
	for (i = 0; i < elf->nnotes; i++) {
		uint64_t pc = elf->notes[i].pc;
		unsigned char b[5];

		for (j = 0; j < elf->nsegs; j++) {
			const struct qp_elf_segment *g = &elf->segs[j];

			if (pc >= g->vaddr && pc - g->vaddr < g->filesz) {
				uint64_t off = pc - g->vaddr + g->offset;

				if (pread(fd, b, 5, (off_t)off) == 5 && !memcmp(b, nop5, 5))
					m->offs[m->n++] = off;
				break;
			}
		}
	}
	qp_elf_probes_free(elf);
	return 0;
}

/* The cached module of the file open as FD, scanned on first use. */
static struct lc_module *module_get(struct lc_sites *lc, int fd, const char *path)
{
	struct lc_module *m = NULL;
	struct stat st;
	size_t i;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return NULL;
	for (i = 0; i < lc->nmods; i++) {
		m = &lc->mods[i];
		if (m->dev == st.st_dev && m->ino == st.st_ino && m->size == st.st_size &&
		    m->mtime.tv_sec == st.st_mtim.tv_sec && m->mtime.tv_nsec == st.st_mtim.tv_nsec) {
			m->last_use = ++lc->use_clock;
			return m;
		}
	}
	if (lc->nmods < LC_MAX_MODULES) {
		m = &lc->mods[lc->nmods++];
	} else {
		m = &lc->mods[0];	/* the least recently used goes */
		for (i = 1; i < lc->nmods; i++)
			if (lc->mods[i].last_use < m->last_use)
				m = &lc->mods[i];
		module_clear(m);
	}
	m->dev = st.st_dev;
	m->ino = st.st_ino;
	m->size = st.st_size;
	m->mtime = st.st_mtim;
	m->last_use = ++lc->use_clock;
	if (module_scan(m, fd, path))
		m->n = 0;	/* remembered as a file without sites */
	return m;
}

/* Open the file of mapping M of PID read-only into PATH/FD: through
 * map_files (the very file, even deleted or in another mount namespace; it
 * needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE), else by its path, as seen
 * by qprofd or through the process's root, when the inode matches. */
static int open_mapped(int pid, const struct qp_map *m, char *path, size_t len)
{
	struct stat st;
	int fd, i;

	for (i = 0; i < 3; i++) {
		if (i == 0)
			snprintf(path, len, "/proc/%d/map_files/%llx-%llx", pid, (unsigned long long)m->start,
				 (unsigned long long)m->end);
		else if (i == 1)
			snprintf(path, len, "%s", m->path);
		else
			snprintf(path, len, "/proc/%d/root%s", pid, m->path);
		fd = qp_open_regular_st(path, &st);	/* a device is never opened */
		if (fd < 0)
			continue;
		if ((uint64_t)st.st_ino == m->inode)
			return fd;
		close(fd);
	}
	return -1;
}

void lc_sites_repair(struct lc_sites *lc, int pid, lc_is_binary_fn is_binary, void *arg,
		     struct lc_repair *res)
{
	struct qp_maps maps;
	char path[PATH_MAX + 64];
	size_t i, k;
	int mem;

	if (qp_maps_read(pid, &maps))
		return;		/* gone already */
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	mem = open(path, O_RDWR | O_CLOEXEC);
	if (mem < 0) {
		if (errno != ENOENT && errno != ESRCH)
			res->failed++;
		qp_maps_free(&maps);
		return;
	}
	for (i = 0; i < maps.n; i++) {
		const struct qp_map *m = &maps.v[i];
		struct lc_module *mod;
		bool binary;
		int fd;

		if (m->path[0] != '/' || !strchr(m->perms, 'x') || !m->inode)
			continue;
		fd = open_mapped(pid, m, path, sizeof(path));
		if (fd < 0)
			continue;
		mod = module_get(lc, fd, path);
		close(fd);
		if (!mod || !mod->n)
			continue;
		binary = is_binary(mod->dev, mod->ino, arg);
		for (k = 0; k < mod->n; k++) {
			uint64_t off = mod->offs[k], addr;
			unsigned char b[5], fix[5];

			if (off < m->offset || off - m->offset + 5 > m->end - m->start)
				continue;
			addr = m->start + (off - m->offset);
			if (pread(mem, b, 5, (off_t)addr) != 5 || b[0] != 0xe8)
				continue;	/* nop5 or int3: the kernel copes with both */
			memcpy(fix, nop5, 5);
			if (binary)
				fix[0] = 0xcc;
			if (pwrite(mem, fix, 5, (off_t)addr) != 5) {
				res->failed++;
				qp_warn("pid %d: cannot rewrite the uprobe site at 0x%llx: %s", pid,
					(unsigned long long)addr, strerror(errno));
				continue;
			}
			if (binary)
				res->int3++;
			else
				res->nop++;
		}
	}
	close(mem);
	qp_maps_free(&maps);
}

void lc_sites_free(struct lc_sites *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->nmods; i++)
		module_clear(&c->mods[i]);
	free(c);
}
