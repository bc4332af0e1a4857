/* sym_maps.c - user addresses to names: each process's mappings, read
 * from PROC_ROOT/PID/maps (common/procfs.c, the tree's one maps reader)
 * while it lives and kept after it exits, so it is still symbolized; an
 * address goes through its mapping to a file offset and to the file's
 * symbol (sym_elf.c). A mapped file is opened through PROC_ROOT/PID/root
 * (the process's own view), then PROC_ROOT/PID/map_files, then by its path
 * in qprofd's namespace (device and inode checked), and only when its inode
 * matches the mapping: a binary replaced or deleted on disk, or another
 * file at that path in qprofd's namespace, is never read as the wrong
 * file. The maps file and any new ELF file are read without
 * the symbolizer's lock; the new mapping list is swapped in under it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/procfs.h"
#include "common/elf_probes.h"
#include "sym_internal.h"

static struct qp_sym_process *proc_find(struct qp_symbolizer *s, int pid)
{
	struct qp_sym_process *p;

	for (p = s->procs; p; p = p->next)
		if (p->pid == pid)
			return p;
	return NULL;
}

static const char *base_name(const char *p)
{
	const char *b = strrchr(p, '/');

	return b && b[1] ? b + 1 : p;
}

/* Open the file behind mapping M of PID: by its path as the process sees
 * it (PROC_ROOT/PID/root: its own mount namespace), through map_files (the
 * very mapping; needs CAP_SYS_ADMIN), and last by the path in qprofd's own
 * mount namespace. The inode must match the maps line; on that last path,
 * the device as well: another file system mounted there (a container's
 * tmpfs and qprofd's) has files of the same inode numbers. Btrfs and
 * overlayfs show another device in maps than stat, so the first two are
 * checked by inode alone: they name what the process itself maps.
 * Only regular files. No lock held. */
static struct symfile *map_file(struct qp_symbolizer *s, int pid, const struct qp_map *m,
				const char *path, bool deleted)
{
	char cand[3][PATH_MAX];
	bool dirok[3] = { true, false, true }, devcheck[3] = { false, false, true };
	int ncand = 0, i;

	if (!deleted && path[0] == '/' &&
	    snprintf(cand[ncand], PATH_MAX, "%s/%d/root%s", s->proc_root, pid, path) < PATH_MAX)
		ncand++;
	snprintf(cand[ncand], PATH_MAX, "%s/%d/map_files/%" PRIx64 "-%" PRIx64, s->proc_root,
		 pid, m->start, m->end);
	dirok[ncand] = devcheck[ncand] = false;
	ncand++;
	if (!deleted && path[0] == '/') {
		snprintf(cand[ncand], PATH_MAX, "%s", path);
		dirok[ncand] = devcheck[ncand] = true;
		ncand++;
	}
	for (i = 0; i < ncand; i++) {
		struct symfile *f;
		struct stat st;
		/* never opened unless regular: the path may be a FIFO or a
		 * device now, or in qprofd's mount namespace */
		int fd = qp_open_regular_st(cand[i], &st);

		if (fd < 0)
			continue;
		if ((m->inode && (uint64_t)st.st_ino != m->inode) ||
		    (devcheck[i] && (uint64_t)st.st_dev != m->dev)) {
			close(fd);
			continue;
		}
		/* A debuglink is looked for next to the file as the
		 * process sees it (map_files has no directory of its own). */
		f = sym_file_get(s, fd, &st, path, dirok[i] ? cand[i] : (deleted ? NULL : path));
		close(fd);
		if (f)
			return f;
	}
	return NULL;
}

static const struct symmap *proc_map_find(const struct qp_sym_process *p, uint64_t addr)
{
	size_t lo = 0, hi = p->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < p->v[lo - 1].end)
		return &p->v[lo - 1];
	return NULL;
}

static struct symfile *reuse_file(const struct qp_sym_process *p, const struct qp_map *m,
				  const char *path)
{
	const struct symmap *o;

	if (!p)
		return NULL;
	o = proc_map_find(p, m->start);
	if (o && o->start == m->start && o->end == m->end && o->offset == m->offset &&
	    o->inode == m->inode && o->path == path)
		return o->file;
	return NULL;
}

/* The mapping list of MAPS, named under the lock (interned strings, the
 * files PID's last list had); the files still missing are parsed after it
 * is dropped. *missing: some executable file mapping has no file yet. */
static struct symmap *maps_name_locked(struct qp_symbolizer *s, const struct qp_sym_process *p,
				       struct qp_maps *maps, bool *deleted, bool *missing)
{
	static const char deleted_sfx[] = " (deleted)";
	struct symmap *v = calloc(maps->n ? maps->n : 1, sizeof(*v));
	size_t i;

	*missing = false;
	if (!v)
		return NULL;
	for (i = 0; i < maps->n; i++) {
		struct qp_map *m = &maps->v[i];
		struct symmap *sm = &v[i];
		size_t plen = strlen(m->path);

		sm->start = m->start;
		sm->end = m->end;
		sm->offset = m->offset;
		sm->inode = m->inode;
		deleted[i] = false;
		if (!plen) {
			sm->kind = SYM_MAP_ANON;
			sm->module = sym_intern_locked(s, "[anon]");
			continue;
		}
		if (m->path[0] == '[') {
			sm->kind = SYM_MAP_SPECIAL;
			sm->module = sym_intern_locked(s, m->path);
			if (!strcmp(m->path, "[vdso]"))
				sm->file = sym_vdso_locked(s);
			continue;
		}
		if (plen > sizeof(deleted_sfx) - 1 &&
		    !strcmp(m->path + plen - (sizeof(deleted_sfx) - 1), deleted_sfx)) {
			deleted[i] = true;
			m->path[plen - (sizeof(deleted_sfx) - 1)] = '\0';
		}
		sm->kind = SYM_MAP_FILE;
		sm->path = sym_intern_locked(s, m->path);
		sm->module = sym_intern_locked(s, base_name(m->path));
		if (m->perms[2] != 'x')
			continue;
		sm->file = reuse_file(p, m, sm->path);
		if (!sm->file)
			*missing = true;
	}
	return v;
}

/* The entry of PID, made when new (s->lock held). NULL: no memory. */
static struct qp_sym_process *proc_get_locked(struct qp_symbolizer *s, int pid)
{
	struct qp_sym_process *p = proc_find(s, pid);

	if (!p && (p = calloc(1, sizeof(*p)))) {
		p->pid = pid;
		p->next = s->procs;
		s->procs = p;
	}
	return p;
}

static int symmap_cmp(const void *a, const void *b)
{
	const struct symmap *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* V (N entries, from a fresh read) with the executable file ranges of OLD
 * that nothing in V covers now: a library unloaded since keeps naming the
 * samples taken inside it before (its file's parse is never freed). At
 * most SYM_KEEP_UNMAPPED are carried, the last of OLD first. s->lock held.
 * Returns the new list (V itself when nothing is carried or no memory). */
static struct symmap *carry_unmapped(struct symmap *v, size_t *n, const struct qp_sym_process *old)
{
	size_t i, k, keep = 0, m = *n;
	struct symmap *w;

	for (i = 0; old && i < old->n; i++)
		keep += old->v[i].kind == SYM_MAP_FILE && old->v[i].file;
	if (!keep)
		return v;
	keep = keep < SYM_KEEP_UNMAPPED ? keep : SYM_KEEP_UNMAPPED;
	w = realloc(v, (m + keep) * sizeof(*w));
	if (!w)
		return v;
	for (i = old->n; i-- > 0 && keep;) {
		const struct symmap *o = &old->v[i];
		bool covered = false;

		if (o->kind != SYM_MAP_FILE || !o->file)
			continue;
		for (k = 0; k < m && !covered; k++)	/* overlaps a current or carried range */
			covered = o->start < w[k].end && w[k].start < o->end;
		if (covered)
			continue;
		w[m++] = *o;
		keep--;
	}
	if (m != *n)
		qsort(w, m, sizeof(*w), symmap_cmp);
	*n = m;
	return w;
}

/* The start time of PID under PROC_ROOT (field 22 of its stat), 0 when it
 * cannot be read (gone, or a fixture without one). */
static uint64_t start_of(const struct qp_symbolizer *s, int pid)
{
	char path[PATH_MAX], buf[1024];
	uint64_t t = 0;
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%d/stat", s->proc_root, pid) >= (int)sizeof(path))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return qp_stat_parse_starttime(buf, &t) ? 0 : t;
}

/* PID's mappings are MAPS (taken over and freed), or ERR when they could
 * not be read. CARRY: keep the unloaded ranges of the list it replaces
 * (a read of /proc; the registry's own lists already hold them): then a
 * process of another START time than the one known is another process
 * of the same pid, whose mappings never name the first one's addresses.
 * START 0: unknown. */
static int process_set(struct qp_symbolizer *s, int pid, struct qp_maps maps, int err, bool carry,
		       uint64_t start)
{
	static const char deleted_sfx[] = " (deleted)";
	struct qp_sym_process *p;
	struct symmap *v = NULL;
	bool *deleted = NULL, missing = false;
	uint64_t ticket;
	char link[PATH_MAX], exe[PATH_MAX];
	ssize_t n = -1;
	size_t i;

	if (!err && !(deleted = calloc(maps.n ? maps.n : 1, sizeof(*deleted)))) {
		qp_maps_free(&maps);
		return -ENOMEM;
	}
	if (!err && snprintf(link, sizeof(link), "%s/%d/exe", s->proc_root, pid) < (int)sizeof(link))
		n = readlink(link, exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		if ((size_t)n > sizeof(deleted_sfx) - 1 &&
		    !strcmp(exe + n - (sizeof(deleted_sfx) - 1), deleted_sfx))
			exe[n - (sizeof(deleted_sfx) - 1)] = '\0';
	}
	pthread_mutex_lock(&s->lock);
	if (err) {
		/* Keep what was read while it lived. */
		p = proc_get_locked(s, pid);
		if (p) {
			p->last_refresh_ns = qp_now_ns();
			if (err == -ESRCH)
				p->gone = true;
		}
		pthread_mutex_unlock(&s->lock);
		return p ? err : -ENOMEM;
	}
	/* mappings handed in later win, whichever finishes its files first
	 * (a poll's read of a process that exec'd meanwhile is older than
	 * the exec handler's) */
	ticket = ++s->tickets;
	/* an entry is made only with its list: a reader never sees a new
	 * process without mappings */
	p = proc_find(s, pid);
	if (p)
		p->last_refresh_ns = qp_now_ns();
	if (p && carry && start && p->start && start != p->start) {
		/* the process known exited; what it mapped stays its own */
		p->gone = true;
		pthread_mutex_unlock(&s->lock);
		qp_maps_free(&maps);
		free(deleted);
		return -ESRCH;
	}
	v = maps_name_locked(s, p, &maps, deleted, &missing);
	pthread_mutex_unlock(&s->lock);
	if (!v) {
		qp_maps_free(&maps);
		free(deleted);
		return -ENOMEM;
	}
	/* new files: opened and parsed with no lock held */
	for (i = 0; missing && i < maps.n; i++)
		if (v[i].kind == SYM_MAP_FILE && !v[i].file && maps.v[i].perms[2] == 'x')
			v[i].file = map_file(s, pid, &maps.v[i], v[i].path, deleted[i]);
	free(deleted);
	pthread_mutex_lock(&s->lock);
	p = proc_get_locked(s, pid);
	if (p && ticket > p->ticket) {
		size_t n = maps.n;

		if (carry)
			v = carry_unmapped(v, &n, p);
		free(p->v);
		p->v = v;
		p->n = n;
		p->ticket = ticket;
		p->gone = false;
		if (start || !carry)
			p->start = start;
		if (n > 0)
			p->exe = sym_intern_locked(s, exe);
		p->last_refresh_ns = qp_now_ns();
		v = NULL;
	}
	pthread_mutex_unlock(&s->lock);
	free(v);
	qp_maps_free(&maps);
	return p ? 0 : -ENOMEM;
}

int qp_sym_process_refresh(struct qp_symbolizer *s, int pid)
{
	struct qp_maps maps = { 0 };
	uint64_t before, after;
	int err;

	if (!s || pid <= 0)
		return -EINVAL;
	/* the same process before and after the read: a pid reused meanwhile
	 * would hand over another program's mappings */
	before = start_of(s, pid);
	err = qp_maps_read_at(s->proc_root, pid, &maps);
	after = start_of(s, pid);
	if (!err && before != after) {
		qp_maps_free(&maps);
		err = -ESRCH;
	}
	return process_set(s, pid, maps, err, true, after);
}

int qp_sym_process_set_maps(struct qp_symbolizer *s, int pid, const struct qp_maps *maps)
{
	struct qp_maps copy;
	int err;

	if (!s || pid <= 0 || !maps)
		return -EINVAL;
	err = qp_maps_copy(maps, &copy);
	return err ? err : process_set(s, pid, copy, 0, false, start_of(s, pid));
}

void qp_sym_forget(struct qp_symbolizer *s, int pid)
{
	struct qp_sym_process **pp;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	for (pp = &s->procs; *pp; pp = &(*pp)->next) {
		if ((*pp)->pid == pid) {
			struct qp_sym_process *p = *pp;

			*pp = p->next;
			free(p->v);
			free(p);
			break;
		}
	}
	pthread_mutex_unlock(&s->lock);
}

const char *qp_sym_process_exe(struct qp_symbolizer *s, int pid)
{
	struct qp_sym_process *p;
	const char *exe = NULL;

	if (!s)
		return NULL;
	pthread_mutex_lock(&s->lock);
	p = proc_find(s, pid);
	if (p)
		exe = p->exe;
	pthread_mutex_unlock(&s->lock);
	return exe;
}

void sym_procs_free(struct qp_symbolizer *s)
{
	while (s->procs) {
		struct qp_sym_process *p = s->procs;

		s->procs = p->next;
		free(p->v);
		free(p);
	}
}

static void sym_init(struct qp_sym *out)
{
	memset(out, 0, sizeof(*out));
	out->build_id = "";
}

/* Fill OUT for ADDR in mapping M. s->lock held. */
static void resolve_map(struct qp_symbolizer *s, const struct symmap *m, uint64_t addr,
			struct qp_sym *out)
{
	struct symfile *file = sym_file_current(m->file);
	struct sym_fsym *fs = NULL;
	uint64_t va = 0;

	out->map_start = m->start;
	out->map_limit = m->end;
	out->map_offset = m->offset;
	out->module = m->module;
	out->path = m->path;
	if (m->kind == SYM_MAP_ANON) {
		out->file_off = addr - m->start;
		out->name = sym_internf_locked(s, "[anon]+0x%" PRIx64, out->file_off);
		return;
	}
	out->file_off = addr - m->start + m->offset;
	if (file) {
		out->build_id = file->build_id;
		fs = sym_file_lookup(file, out->file_off, &va);
	}
	if (!fs) {
		out->name = sym_internf_locked(s, "%s+0x%" PRIx64, m->module, out->file_off);
		return;
	}
	if (!fs->dem)	/* hashed once per symbol, not once per frame */
		fs->dem = sym_demangle_locked(s, fs->name);
	out->name = fs->dem;
	out->offset = va - fs->addr;
	out->found = true;
}

/* The file:line and inlined functions of link-time address VA of F (no
 * symbolizer lock held: the DWARF has its own). */
static void add_src(struct symfile *f, uint64_t va, struct qp_sym *out)
{
	struct sym_src src;
	size_t k;

	if (!sym_dwarf_lookup(f->dw, va, &src))
		return;
	out->src_file = src.file;
	out->src_line = src.line;
	out->inl_truncated = src.inl_truncated;
	out->ninl = src.ninl;
	for (k = 0; k < src.ninl; k++)
		out->inl[k] = src.inl[k];
	if (!out->found && src.func) {	/* DWARF names what the symbol tables do not */
		out->name = src.func;
		out->found = true;
	}
}

int qp_sym_user(struct qp_symbolizer *s, int pid, uint64_t addr, struct qp_sym *out)
{
	struct qp_sym_process *p;
	const struct symmap *m = NULL;
	struct symfile *dwf = NULL;
	bool refresh = false;
	uint64_t va = 0;

	sym_init(out);
	if (!s) {
		out->name = out->module = "[unknown]";
		return 0;
	}
	pthread_mutex_lock(&s->lock);
	p = proc_find(s, pid);
	if (!p && pid > 0) {
		refresh = true;
	} else if (p) {
		m = proc_map_find(p, addr);
		if (!m && !p->gone && qp_now_ns() - p->last_refresh_ns >= SYM_MISS_REFRESH_NS) {
			/* one reader refreshes; the others of this 1/10 s do not */
			p->last_refresh_ns = qp_now_ns();
			refresh = true;
		}
	}
	if (refresh) {
		pthread_mutex_unlock(&s->lock);
		qp_sym_process_refresh(s, pid);
		pthread_mutex_lock(&s->lock);
		p = proc_find(s, pid);
	}
	if (p && !m)
		m = proc_map_find(p, addr);
	if (!m) {
		out->module = sym_intern_locked(s, "[unknown]");
		out->file_off = addr;
		out->name = sym_internf_locked(s, "[unknown]+0x%" PRIx64, addr);
	} else {
		struct symfile *file = sym_file_current(m->file);

		resolve_map(s, m, addr, out);
		if (m->kind == SYM_MAP_FILE && file && file->dw &&
		    sym_file_vaddr(file, out->file_off, &va))
			dwf = file;
	}
	pthread_mutex_unlock(&s->lock);
	if (dwf)
		add_src(dwf, va, out);
	return 0;
}

const char *qp_sym_any(struct qp_symbolizer *s, uint64_t addr)
{
	struct qp_sym_process *p;
	struct qp_sym out;
	const char *name = NULL;

	if (!s)
		return NULL;
	pthread_mutex_lock(&s->lock);
	for (p = s->procs; p && !name; p = p->next) {
		const struct symmap *m = proc_map_find(p, addr);

		if (!m || !m->file)
			continue;
		sym_init(&out);
		resolve_map(s, m, addr, &out);
		if (out.found)
			name = out.name;
	}
	pthread_mutex_unlock(&s->lock);
	if (name)
		return name;
	qp_sym_kernel(s, addr, &out);
	return out.found ? out.name : NULL;
}
