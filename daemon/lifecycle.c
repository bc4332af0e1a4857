/* lifecycle.c - see lifecycle.h. The fork side: the kernel optimizes a
 * uprobe on a nop5 into "call <trampoline>" in the mm that hit it; fork
 * copies that text into the child without the trampoline mapping. The BPF
 * side stops such a child before its first instruction; here every USDT site
 * of the files it maps whose file bytes are a nop5 is read through
 * /proc/CHILD/mem, and a site that holds a call (only the kernel writes one
 * there) is rewritten: to "int3 + the nop's last 4 bytes" in a --binary file
 * (the kernel then handles it as a plain uprobe hit in the child, which stays
 * probed), to the original nop5 elsewhere (the child is no target). Then
 * SIGCONT. The thread needs no registry lock: files and sites are its own. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include "lifecycle.skel.h"
#include "lifecycle.h"
#include "elf_probes.h"
#include "json_writer.h"
#include "log.h"
#include "procfs.h"
#include "util.h"
#include "../bpf/lifecycle.h"

#define LC_MAX_MODULES 64
#define LC_MAX_EXECS 1024

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

struct lc_watched {
	int pid;
	dev_t dev;	/* of /proc/PID/exe when watched */
	ino_t ino;
	bool changed;	/* seen different once: queued if still so at the next check */
};

struct qp_lifecycle {
	struct lifecycle *skel;
	struct ring_buffer *rb;
	pthread_t thread, main;
	int wake;
	bool started;
	pthread_mutex_t lock;	/* guards what follows */
	bool stopping;
	struct { dev_t dev; ino_t ino; } *files;
	size_t nfiles;
	struct lc_module mods[LC_MAX_MODULES];
	size_t nmods;
	uint64_t use_clock;
	struct lc_watched *watched;
	size_t nwatched;
	struct qp_lc_exec execs[LC_MAX_EXECS];
	size_t nexecs;
	uint64_t execs_dropped;
	/* figures for /api/status */
	uint64_t resumed, repaired_nop, repaired_int3, repair_failed, stall_max_ns, stall_sum_ns;
	uint64_t execs_seen, execs_by_proc, binary_starts, exec_stall_max_ns;
};

static uint64_t kdev(dev_t d)
{
	return ((uint64_t)major(d) << 20) | minor(d);
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

/* The cached module of the file open as FD, scanned on first use. lc->lock held. */
static struct lc_module *module_get(struct qp_lifecycle *lc, int fd, const char *path)
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

static bool is_binary_file(const struct qp_lifecycle *lc, dev_t dev, ino_t ino)
{
	size_t i;

	for (i = 0; i < lc->nfiles; i++)
		if (lc->files[i].dev == dev && lc->files[i].ino == ino)
			return true;
	return false;
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
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue;
		if (!fstat(fd, &st) && S_ISREG(st.st_mode) && (uint64_t)st.st_ino == m->inode)
			return fd;
		close(fd);
	}
	return -1;
}

/* Rewrite the optimized sites of stopped child PID. lc->lock held (so that
 * --binary files cannot go while int3 is written). */
static void repair_child(struct qp_lifecycle *lc, int pid)
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
			lc->repair_failed++;
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
		binary = is_binary_file(lc, mod->dev, mod->ino);
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
				lc->repair_failed++;
				qp_warn("pid %d: cannot rewrite the uprobe site at 0x%llx: %s", pid,
					(unsigned long long)addr, strerror(errno));
				continue;
			}
			if (binary)
				lc->repaired_int3++;
			else
				lc->repaired_nop++;
		}
	}
	close(mem);
	qp_maps_free(&maps);
}

static void queue_exec(struct qp_lifecycle *lc, const struct qp_lc_exec *e)
{
	size_t i;

	for (i = 0; i < lc->nexecs; i++) {
		if (lc->execs[i].pid == e->pid) {
			lc->execs[i].stopped |= e->stopped;
			return;
		}
	}
	if (lc->nexecs == LC_MAX_EXECS) {
		lc->execs_dropped++;
		if (e->stopped)
			kill(e->pid, SIGCONT);	/* never leave a process stopped */
		return;
	}
	lc->execs[lc->nexecs++] = *e;
	if (lc->wake)
		pthread_kill(lc->main, lc->wake);
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct qp_lifecycle *lc = ctx;
	const struct lc_event *e = data;

	if (size < sizeof(*e))
		return 0;
	pthread_mutex_lock(&lc->lock);
	if (e->kind == QPROF_LC_FORK && e->stopped) {
		uint64_t stall;

		repair_child(lc, (int)e->child);
		if (kill((pid_t)e->child, SIGCONT) && errno != ESRCH)
			qp_warn("pid %u: SIGCONT: %s", e->child, strerror(errno));
		stall = qp_now_ns() - e->ts_ns;
		lc->resumed++;
		lc->stall_sum_ns += stall;
		if (stall > lc->stall_max_ns)
			lc->stall_max_ns = stall;
		qp_debug("fork %u -> %u: child resumed after %llu us", e->pid, e->child,
			 (unsigned long long)(stall / 1000));
	} else if (e->kind == QPROF_LC_FORK && e->signal_err) {
		qp_warn("fork %u -> %u: the child could not be stopped (%d): it may crash at an optimized uprobe site",
			e->pid, e->child, e->signal_err);
	}
	if (e->kind == QPROF_LC_FORK && lc->nfiles) {
		/* a child of a --binary target is a process of that binary: adopted
		 * by the poll loop at once, before it may be gone */
		struct qp_lc_exec x = { .pid = (int)e->child, .parent = (int)e->pid, .ts_ns = e->ts_ns };

		queue_exec(lc, &x);
	} else if (e->kind == QPROF_LC_EXEC) {
		struct qp_lc_exec x = { .pid = (int)e->pid, .stopped = e->stopped != 0,
					.adopt = e->binary && e->watched != QPROF_LC_TARGET,
					.ts_ns = e->ts_ns };

		if (e->watched == QPROF_LC_TARGET)
			lc->execs_seen++;
		else
			lc->binary_starts++;
		if (e->watched == QPROF_LC_TARGET || e->binary)
			queue_exec(lc, &x);
	}
	pthread_mutex_unlock(&lc->lock);
	return 0;
}

static void *lc_thread(void *arg)
{
	struct qp_lifecycle *lc = arg;

	for (;;) {
		bool stop;
		int n;

		pthread_mutex_lock(&lc->lock);
		stop = lc->stopping;
		pthread_mutex_unlock(&lc->lock);
		if (stop)
			break;
		n = ring_buffer__poll(lc->rb, 100);
		if (n < 0 && n != -EINTR) {
			qp_warn("lifecycle ring buffer: %s", strerror(-n));
			break;
		}
	}
	return NULL;
}

int qp_lifecycle_open(struct qp_lifecycle **out, pthread_t main, int wake, char *err, size_t errlen)
{
	struct qp_lifecycle *lc = calloc(1, sizeof(*lc));
	int ret;

	*out = NULL;
	if (!lc)
		return -ENOMEM;
	pthread_mutex_init(&lc->lock, NULL);
	lc->main = main;
	lc->wake = wake;
	lc->skel = lifecycle__open_and_load();
	if (!lc->skel) {
		ret = -errno;
		snprintf(err, errlen, "cannot load the lifecycle BPF program: %s", strerror(-ret));
		goto fail;
	}
	ret = lifecycle__attach(lc->skel);
	if (ret) {
		snprintf(err, errlen, "cannot attach to sched_process_fork/exec/exit: %s", strerror(-ret));
		goto fail;
	}
	lc->rb = ring_buffer__new(bpf_map__fd(lc->skel->maps.lc_events), on_event, lc, NULL);
	if (!lc->rb) {
		ret = -errno;
		snprintf(err, errlen, "lifecycle ring buffer: %s", strerror(-ret));
		goto fail;
	}
	ret = -pthread_create(&lc->thread, NULL, lc_thread, lc);
	if (ret) {
		snprintf(err, errlen, "lifecycle thread: %s", strerror(-ret));
		goto fail;
	}
	lc->started = true;
	*out = lc;
	return 0;
fail:
	qp_lifecycle_close(lc);
	return ret;
}

void qp_lifecycle_close(struct qp_lifecycle *lc)
{
	size_t i;

	if (!lc)
		return;
	if (lc->started) {
		pthread_mutex_lock(&lc->lock);
		lc->stopping = true;
		pthread_mutex_unlock(&lc->lock);
		pthread_join(lc->thread, NULL);
	}
	if (lc->skel)
		lifecycle__detach(lc->skel);
	/* the children forked before the detach still wait for us */
	if (lc->rb)
		ring_buffer__consume(lc->rb);
	for (i = 0; i < lc->nexecs; i++)
		if (lc->execs[i].stopped)
			kill(lc->execs[i].pid, SIGCONT);
	ring_buffer__free(lc->rb);
	lifecycle__destroy(lc->skel);
	for (i = 0; i < lc->nmods; i++)
		module_clear(&lc->mods[i]);
	free(lc->files);
	free(lc->watched);
	pthread_mutex_destroy(&lc->lock);
	free(lc);
}

void qp_lifecycle_watch(struct qp_lifecycle *lc, int pid, bool on)
{
	__u32 key = (__u32)pid, val = QPROF_LC_TARGET;
	char path[64];
	struct stat st;
	size_t i;

	if (!lc || pid <= 0)
		return;
	pthread_mutex_lock(&lc->lock);
	for (i = 0; i < lc->nwatched && lc->watched[i].pid != pid; i++)
		;
	if (on) {
		snprintf(path, sizeof(path), "/proc/%d/exe", pid);
		if (stat(path, &st))
			memset(&st, 0, sizeof(st));
		if (i == lc->nwatched) {
			struct lc_watched *v = realloc(lc->watched, (lc->nwatched + 1) * sizeof(*v));

			if (v) {
				lc->watched = v;
				lc->nwatched++;
			} else {
				i = SIZE_MAX;
			}
		}
		if (i != SIZE_MAX)
			lc->watched[i] = (struct lc_watched){ pid, st.st_dev, st.st_ino, false };
		if (bpf_map_update_elem(bpf_map__fd(lc->skel->maps.lc_watch), &key, &val, BPF_ANY))
			qp_warn("pid %d: cannot watch its forks and execs: %s", pid, strerror(errno));
	} else {
		if (i < lc->nwatched)
			lc->watched[i] = lc->watched[--lc->nwatched];
		bpf_map_delete_elem(bpf_map__fd(lc->skel->maps.lc_watch), &key);
	}
	pthread_mutex_unlock(&lc->lock);
}

void qp_lifecycle_watch_file(struct qp_lifecycle *lc, dev_t dev, ino_t ino, bool on)
{
	struct lc_file key = { .dev = kdev(dev), .ino = (__u64)ino };
	__u32 one = 1;
	size_t i;

	if (!lc)
		return;
	pthread_mutex_lock(&lc->lock);
	for (i = 0; i < lc->nfiles && !(lc->files[i].dev == dev && lc->files[i].ino == ino); i++)
		;
	if (on && i == lc->nfiles) {
		void *v = realloc(lc->files, (lc->nfiles + 1) * sizeof(*lc->files));

		if (v) {
			lc->files = v;
			lc->files[lc->nfiles].dev = dev;
			lc->files[lc->nfiles].ino = ino;
			lc->nfiles++;
		}
		if (bpf_map_update_elem(bpf_map__fd(lc->skel->maps.lc_files), &key, &one, BPF_ANY))
			qp_warn("cannot watch the execs of a --binary file: %s", strerror(errno));
	} else if (!on && i < lc->nfiles) {
		lc->files[i] = lc->files[--lc->nfiles];
		bpf_map_delete_elem(bpf_map__fd(lc->skel->maps.lc_files), &key);
	}
	pthread_mutex_unlock(&lc->lock);
}

void qp_lifecycle_forget_files(struct qp_lifecycle *lc)
{
	if (!lc)
		return;
	pthread_mutex_lock(&lc->lock);
	lc->nfiles = 0;
	pthread_mutex_unlock(&lc->lock);
}

void qp_lifecycle_check_exes(struct qp_lifecycle *lc)
{
	char path[64];
	struct stat st;
	size_t i;

	if (!lc)
		return;
	pthread_mutex_lock(&lc->lock);
	for (i = 0; i < lc->nwatched; i++) {
		struct lc_watched *w = &lc->watched[i];
		struct qp_lc_exec x = { .pid = w->pid };

		snprintf(path, sizeof(path), "/proc/%d/exe", w->pid);
		if (stat(path, &st) || !w->ino || (st.st_dev == w->dev && st.st_ino == w->ino)) {
			w->changed = false;
			continue;	/* gone (the exit is seen elsewhere), or the same image */
		}
		/* the BPF record of an exec comes within microseconds and its
		 * handling re-watches the pid: wait one check before acting alone */
		if (!w->changed) {
			w->changed = true;
			continue;
		}
		w->changed = false;
		w->dev = st.st_dev;
		w->ino = st.st_ino;
		lc->execs_by_proc++;
		queue_exec(lc, &x);
	}
	pthread_mutex_unlock(&lc->lock);
}

size_t qp_lifecycle_take_execs(struct qp_lifecycle *lc, struct qp_lc_exec *v, size_t max)
{
	size_t n;

	if (!lc)
		return 0;
	pthread_mutex_lock(&lc->lock);
	n = lc->nexecs < max ? lc->nexecs : max;
	memcpy(v, lc->execs, n * sizeof(*v));
	memmove(lc->execs, lc->execs + n, (lc->nexecs - n) * sizeof(*v));
	lc->nexecs -= n;
	pthread_mutex_unlock(&lc->lock);
	return n;
}

void qp_lifecycle_exec_done(struct qp_lifecycle *lc, const struct qp_lc_exec *e)
{
	if (e->stopped && kill(e->pid, SIGCONT) && errno != ESRCH)
		qp_warn("pid %d: SIGCONT after exec: %s", e->pid, strerror(errno));
	if (lc && e->stopped && e->ts_ns) {
		uint64_t stall = qp_now_ns() - e->ts_ns;

		pthread_mutex_lock(&lc->lock);
		if (stall > lc->exec_stall_max_ns)
			lc->exec_stall_max_ns = stall;
		pthread_mutex_unlock(&lc->lock);
		qp_debug("pid %d resumed %llu us after its exec", e->pid, (unsigned long long)(stall / 1000));
	}
}

static uint64_t counter(struct qp_lifecycle *lc, __u32 which)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	uint64_t sum = 0;
	__u64 *v;

	if (ncpu <= 0)
		return 0;
	v = calloc((size_t)ncpu, sizeof(*v));
	if (!v)
		return 0;
	if (!bpf_map_lookup_elem(bpf_map__fd(lc->skel->maps.lc_counters), &which, v))
		for (i = 0; i < ncpu; i++)
			sum += v[i];
	free(v);
	return sum;
}

void qp_lifecycle_json(struct qp_lifecycle *lc, struct qp_json *j)
{
	qp_json_key(j, "lifecycle");
	if (!lc) {
		qp_json_null(j);
		return;
	}
	qp_json_obj_begin(j);
	qp_json_kv_u64(j, "forks", counter(lc, QPROF_LCNT_FORKS));
	qp_json_kv_u64(j, "shared_mm_children", counter(lc, QPROF_LCNT_SHARED_MM));
	qp_json_kv_u64(j, "children_stopped", counter(lc, QPROF_LCNT_STOPPED));
	qp_json_kv_u64(j, "stop_failed", counter(lc, QPROF_LCNT_SIGNAL_FAILED));
	qp_json_kv_u64(j, "records_lost", counter(lc, QPROF_LCNT_LOST));
	qp_json_kv_u64(j, "descendants_unwatched", counter(lc, QPROF_LCNT_WATCH_FULL));
	pthread_mutex_lock(&lc->lock);
	qp_json_kv_u64(j, "children_resumed", lc->resumed);
	qp_json_kv_u64(j, "sites_restored_nop", lc->repaired_nop);
	qp_json_kv_u64(j, "sites_restored_int3", lc->repaired_int3);
	qp_json_kv_u64(j, "site_rewrites_failed", lc->repair_failed);
	qp_json_kv_u64(j, "child_stall_max_ns", lc->stall_max_ns);
	qp_json_kv_u64(j, "child_stall_mean_ns", lc->resumed ? lc->stall_sum_ns / lc->resumed : 0);
	qp_json_kv_u64(j, "execs", lc->execs_seen);
	qp_json_kv_u64(j, "exec_stall_max_ns", lc->exec_stall_max_ns);
	qp_json_kv_u64(j, "binary_starts", lc->binary_starts);
	qp_json_kv_u64(j, "execs_seen_in_proc", lc->execs_by_proc);
	qp_json_kv_u64(j, "execs_dropped", lc->execs_dropped);
	pthread_mutex_unlock(&lc->lock);
	qp_json_obj_end(j);
}
