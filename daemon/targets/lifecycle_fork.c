/* lifecycle_fork.c - see lifecycle_fork.h: the sites of a stopped child
 * that hold the kernel's call to its parent's uprobe trampoline are written
 * back, through /proc/CHILD/mem, to the original nop5 or to int3 + its last
 * four bytes. Only USDT sites whose bytes on disk are a nop5 are looked at:
 * the kernel optimizes no other uprobe, and it alone writes a call there.
 *
 * A site written back to its nop5 is, for the kernel, no longer probed in
 * the child: when the uprobe goes (detach, or qprofd's death) it finds no
 * breakpoint there and leaves the child's USDT semaphore as fork copied it,
 * raised for ever. So the repair lowers that semaphore by one, as the
 * kernel's removal of the breakpoint would have (update_ref_ctr). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/elf_probes.h"
#include "lifecycle_fork.h"
#include "common/log.h"
#include "common/procfs.h"

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
	uint64_t *semas;	/* file offset of each site's semaphore, 0 if none */
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
	free(m->semas);
	memset(m, 0, sizeof(*m));
}

/* File offset of link-time address ADDR through the PT_LOAD segments (the
 * kernel's ref_ctr_offset of a semaphore is computed the same way), 0 if
 * none holds it. */
static uint64_t elf_offset(const struct qp_elf_probes *elf, uint64_t addr)
{
	size_t j;

	for (j = 0; j < elf->nsegs; j++) {
		const struct qp_elf_segment *g = &elf->segs[j];

		if (addr >= g->vaddr && addr - g->vaddr < g->filesz)
			return addr - g->vaddr + g->offset;
	}
	return 0;
}

/* Offsets of the nop5 USDT sites of the file open as FD (path PATH), and of
 * their semaphores. */
static int module_scan(struct lc_module *m, int fd, const char *path)
{
	struct qp_elf_probes *elf;
	char err[256];
	size_t i;
	int ret;

	ret = qp_elf_probes_open(path, &elf, err, sizeof(err));
	if (ret)
		return ret;	/* not ELF, no notes: nothing of ours */
	m->offs = calloc(elf->nnotes ? elf->nnotes : 1, sizeof(*m->offs));
	m->semas = calloc(elf->nnotes ? elf->nnotes : 1, sizeof(*m->semas));
	if (!m->offs || !m->semas) {
		qp_elf_probes_free(elf);
		return -ENOMEM;
	}
	for (i = 0; i < elf->nnotes; i++) {
		uint64_t off = elf_offset(elf, elf->notes[i].pc);
		unsigned char b[5];

		if (!off || pread(fd, b, 5, (off_t)off) != 5 || memcmp(b, nop5, 5))
			continue;
		m->offs[m->n] = off;
		m->semas[m->n++] = elf->notes[i].sema ? elf_offset(elf, elf->notes[i].sema) : 0;
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

/* Lower by one the semaphore at file offset SEMA of the file that mapping
 * X maps: the kernel's counter lives in a private writable mapping of that
 * same file (find_ref_ctr_vma), and never goes below 0. */
static void sema_lower(const struct qp_maps *maps, const struct qp_map *x, uint64_t sema, int mem,
		       int pid, struct lc_repair *res)
{
	size_t i;

	for (i = 0; i < maps->n; i++) {
		const struct qp_map *w = &maps->v[i];
		uint64_t addr;
		uint16_t v;

		if (w->inode != x->inode || w->dev != x->dev || strcmp(w->path, x->path) ||
		    w->perms[1] != 'w' || w->perms[3] != 'p' || sema < w->offset ||
		    sema - w->offset + sizeof(v) > w->end - w->start)
			continue;
		addr = w->start + (sema - w->offset);
		if (pread(mem, &v, sizeof(v), (off_t)addr) != sizeof(v)) {
			res->sema_failed++;
			return;
		}
		if (!v)
			return;	/* already down: never below 0, as the kernel */
		v--;
		if (pwrite(mem, &v, sizeof(v), (off_t)addr) != sizeof(v)) {
			res->sema_failed++;
			qp_warn("pid %d: cannot lower the USDT semaphore at 0x%llx: %s", pid,
				(unsigned long long)addr, strerror(errno));
			return;
		}
		res->sema_lowered++;
		return;
	}
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
			if (binary) {
				res->int3++;	/* still a breakpoint: the kernel lowers it later */
			} else {
				res->nop++;
				if (mod->semas[k])
					sema_lower(&maps, m, mod->semas[k], mem, pid, res);
			}
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
