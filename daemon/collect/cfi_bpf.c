/* cfi_bpf.c - see cfi_bpf.h: the worker thread that reads targets'
 * mappings, has their files' tables loaded (cfi_kmem.c) and writes each
 * target's sorted mappings into cfi_procs. The queue lock guards the list
 * of processes and is never held while a file is read or compiled; the
 * registry of files is the worker's alone. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cfi_bpf.h"
#include "cfi_kmem.h"
#include "cfi_table.h"
#include "common/log.h"
#include "common/procfs.h"
#include "common/util.h"

#define RESCAN_MIN_NS 1000000000ull	/* a process's mappings read again at most once a second when asked */
#define PERIOD_NS 5000000000ull		/* and every 5 s anyway (a dlclose then a dlopen at the same place) */
#define IDLE_MS 500

struct kproc {
	uint32_t pid;
	bool used, want, gone, scanned;
	uint64_t last_ns;	/* its last scan (monotonic) */
	uint32_t nids;
	uint32_t ids[QPROF_CFI_MAPS];	/* distinct file ids its mappings name */
};

struct qp_cfi_bpf {
	int procs_fd, counts_fd, ncpus;
	pthread_t thread;
	bool started, stop;
	pthread_mutex_t qlock;	/* procs[].used/want/gone/scanned/pid, stop, pub */
	pthread_cond_t cond;
	struct kproc *procs;	/* QPROF_CFI_PROCS */
	struct qp_cfi_bpf_stats pub;
	/* the worker's own */
	struct qp_kmem km;
	struct cfi_kproc *val;	/* the value being built */
	uint64_t scans, scan_errors, too_many;
	const void *vdso;
	size_t vdso_len;
};

/* ---- one process --------------------------------------------------------- */

/* fields 27 (endcode) and 28 (startstack) of /proc/PID/stat, after the
 * last ')' so that a comm cannot shift them */
static int read_stamp(uint32_t pid, __u64 *end_code, __u64 *start_stack)
{
	char path[64], buf[1024], *p;
	unsigned long long v;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	p++;
	for (field = 3; field <= 28; field++) {
		char *end;

		while (*p == ' ')
			p++;
		if (!*p)
			return -EINVAL;
		errno = 0;
		v = strtoull(p, &end, 10);
		if (field == 27)
			*end_code = v;
		if (field == 28)
			*start_stack = v;
		while (*p && *p != ' ')
			p++;
	}
	return 0;
}

/* the file of mapping M of PID: the very one it maps (map_files), else
 * its path in the process's root, checked to be the same inode */
static int open_mapped(uint32_t pid, const struct qp_map *m)
{
	char path[4200];
	struct stat sb;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", pid, (unsigned long long)m->start,
		 (unsigned long long)m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	snprintf(path, sizeof(path), "/proc/%u/root%s", pid, m->path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && (fstat(fd, &sb) || sb.st_ino != m->inode)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void add_id(uint32_t *ids, uint32_t *n, uint32_t id)
{
	uint32_t i;

	if (id == QPROF_CFI_NOFILE)
		return;
	for (i = 0; i < *n; i++)
		if (ids[i] == id)
			return;
	if (*n < QPROF_CFI_MAPS)
		ids[(*n)++] = id;
}

/* The table of the kernel's [uprobes-trampoline] page: one rule for the
 * whole page (the walker finds the return address the probed site's call
 * pushed), rbp untouched. */
static struct qp_cfi_row tramp_rows[2] = {
	{ .addr = 0, .kind = QPROF_CFI_K_TRAMP | QPROF_CFI_BP_SAME << 4 },
	{ .addr = QPROF_CFI_TRAMP_BYTES, .kind = QPROF_CFI_K_NONE },
};
static const struct qp_cfi_table tramp_table = {
	.base = 0, .end = QPROF_CFI_TRAMP_BYTES, .nrows = 2, .rows = tramp_rows,
};

/* PID's mappings into cfi_procs; its file ids into IDS. 0 or -errno. */
static int scan(struct qp_cfi_bpf *b, uint32_t pid, uint32_t *ids, uint32_t *nids)
{
	struct cfi_kproc *v = b->val;
	struct qp_maps maps = { 0 };
	size_t i;
	int ret;

	*nids = 0;
	memset(v, 0, sizeof(*v));
	ret = read_stamp(pid, &v->end_code, &v->start_stack);
	if (!ret)
		ret = qp_maps_read((int)pid, &maps);
	if (ret)
		return ret;
	for (i = 0; i < maps.n; i++) {
		const struct qp_map *m = &maps.v[i];
		struct cfi_kmap *k;
		uint32_t id = QPROF_CFI_NOFILE;
		uint64_t bias = 0;

		if (m->perms[2] != 'x')
			continue;
		if (v->n == QPROF_CFI_MAPS) {
			b->too_many++;
			qp_maps_free(&maps);
			return -E2BIG;
		}
		if (m->path[0] == '/') {
			int fd = open_mapped(pid, m);

			if (fd >= 0) {
				id = qp_kmem_get(&b->km, fd, NULL, 0);
				close(fd);
			}
			if (id != QPROF_CFI_NOFILE && !qp_kmem_bias(&b->km, id, m->start, m->offset, &bias))
				id = QPROF_CFI_NOFILE;
		} else if (!strcmp(m->path, "[uprobes-trampoline]") && m->end - m->start == QPROF_CFI_TRAMP_BYTES) {
			id = qp_kmem_get_table(&b->km, "uprobes-trampoline", &tramp_table);
			bias = m->start;	/* the page's offsets are its table's */
		} else if (!strcmp(m->path, "[vdso]") && b->vdso && m->end - m->start == b->vdso_len) {
			id = qp_kmem_get(&b->km, -1, b->vdso, b->vdso_len);
			if (id != QPROF_CFI_NOFILE && !qp_kmem_bias(&b->km, id, m->start, 0, &bias))
				id = QPROF_CFI_NOFILE;
		}
		k = &v->map[v->n++];
		k->start = m->start;
		k->end = m->end;
		k->bias = bias;
		k->file = id;
		add_id(ids, nids, id);
	}
	qp_maps_free(&maps);
	/* referenced before the entry names them, so none is evicted meanwhile */
	for (i = 0; i < *nids; i++)
		qp_kmem_ref(&b->km, ids[i], 1);
	if (bpf_map_update_elem(b->procs_fd, &pid, v, BPF_ANY)) {
		ret = -errno;
		for (i = 0; i < *nids; i++)
			qp_kmem_ref(&b->km, ids[i], -1);
		*nids = 0;
		return ret;
	}
	return 0;
}

/* ---- the worker ---------------------------------------------------------- */

static void publish(struct qp_cfi_bpf *b)
{
	unsigned int i, procs = 0;

	for (i = 0; i < QPROF_CFI_PROCS; i++)
		procs += b->procs[i].used && b->procs[i].scanned && !b->procs[i].gone;
	b->pub = b->km.st;
	b->pub.procs = procs;
	b->pub.scans = b->scans;
	b->pub.scan_errors = b->scan_errors;
	b->pub.too_many = b->too_many;
}

/* the next process to handle (qlock held), -1 when none is due */
static int next_due(struct qp_cfi_bpf *b, uint64_t now)
{
	int i;

	for (i = 0; i < QPROF_CFI_PROCS; i++) {
		struct kproc *p = &b->procs[i];

		if (!p->used)
			continue;
		if (p->gone || !p->scanned || (p->want && now - p->last_ns >= RESCAN_MIN_NS) ||
		    now - p->last_ns >= PERIOD_NS)
			return i;
	}
	return -1;
}

static void *worker(void *arg)
{
	struct qp_cfi_bpf *b = arg;
	static uint32_t ids[QPROF_CFI_MAPS];	/* the worker alone */
	uint32_t nids, k;

	pthread_mutex_lock(&b->qlock);
	while (!b->stop) {
		uint64_t now = qp_now_ns();
		int i = next_due(b, now);
		struct kproc *p;
		uint32_t pid;
		bool gone;
		int ret;

		if (i < 0) {
			struct timespec until;

			clock_gettime(CLOCK_MONOTONIC, &until);
			until.tv_nsec += IDLE_MS * 1000000L;
			if (until.tv_nsec >= 1000000000L) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&b->cond, &b->qlock, &until);
			continue;
		}
		p = &b->procs[i];
		pid = p->pid;
		gone = p->gone;
		p->want = false;
		p->last_ns = now;
		pthread_mutex_unlock(&b->qlock);
		/* the old references go after the new entry is written */
		if (gone) {
			bpf_map_delete_elem(b->procs_fd, &pid);
			for (k = 0; k < p->nids; k++)
				qp_kmem_ref(&b->km, p->ids[k], -1);
			p->nids = 0;
			ret = 0;
		} else {
			ret = scan(b, pid, ids, &nids);
			b->scans++;
			if (ret) {
				b->scan_errors++;
				if (ret != -ESRCH && ret != -ENOENT)
					qp_debug("CFI tables of pid %u: %s", pid, strerror(-ret));
				bpf_map_delete_elem(b->procs_fd, &pid);
				nids = 0;
			}
			for (k = 0; k < p->nids; k++)
				qp_kmem_ref(&b->km, p->ids[k], -1);
			memcpy(p->ids, ids, nids * sizeof(ids[0]));
			p->nids = nids;
		}
		pthread_mutex_lock(&b->qlock);
		if (gone) {
			if (p->gone)
				p->used = false;	/* else added again meanwhile: read next */
		} else {
			p->scanned = true;
		}
		publish(b);
	}
	pthread_mutex_unlock(&b->qlock);
	return NULL;
}

/* qprofd's own vDSO: the same image in every process (one kernel) */
static void find_vdso(struct qp_cfi_bpf *b)
{
	struct qp_maps maps = { 0 };
	size_t i;

	b->vdso = (const void *)getauxval(AT_SYSINFO_EHDR);
	if (!b->vdso || qp_maps_read((int)getpid(), &maps))
		return;
	for (i = 0; i < maps.n; i++)
		if (maps.v[i].start == (uint64_t)(uintptr_t)b->vdso)
			b->vdso_len = maps.v[i].end - maps.v[i].start;
	qp_maps_free(&maps);
	if (!b->vdso_len)
		b->vdso = NULL;
}

struct qp_cfi_bpf *qp_cfi_bpf_new(struct bpf_map *rows, struct bpf_map *files, struct bpf_map *procs,
				  struct bpf_map *counts, int ncpus, char *err, size_t errlen)
{
	struct qp_cfi_bpf *b = calloc(1, sizeof(*b));
	int ret;

	if (!b || !(b->procs = calloc(QPROF_CFI_PROCS, sizeof(*b->procs))) || !(b->val = malloc(sizeof(*b->val)))) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	b->procs_fd = bpf_map__fd(procs);
	b->counts_fd = counts ? bpf_map__fd(counts) : -1;
	b->ncpus = ncpus;
	ret = qp_kmem_init(&b->km, bpf_map__fd(rows), bpf_map__max_entries(rows), bpf_map__fd(files));
	if (ret) {
		snprintf(err, errlen, "cannot map the CFI rows: %s", strerror(-ret));
		goto fail;
	}
	find_vdso(b);
	pthread_mutex_init(&b->qlock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&b->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	publish(b);
	ret = pthread_create(&b->thread, NULL, worker, b);
	if (ret) {
		snprintf(err, errlen, "cannot start the CFI table thread: %s", strerror(ret));
		qp_kmem_fini(&b->km);
		goto fail;
	}
	b->started = true;
	return b;
fail:
	if (b) {
		free(b->procs);
		free(b->val);
	}
	free(b);
	return NULL;
}

void qp_cfi_bpf_free(struct qp_cfi_bpf *b)
{
	if (!b)
		return;
	if (b->started) {
		pthread_mutex_lock(&b->qlock);
		b->stop = true;
		pthread_cond_broadcast(&b->cond);
		pthread_mutex_unlock(&b->qlock);
		pthread_join(b->thread, NULL);
	}
	qp_kmem_fini(&b->km);
	pthread_mutex_destroy(&b->qlock);
	pthread_cond_destroy(&b->cond);
	free(b->procs);
	free(b->val);
	free(b);
}

/* PID's entry (qlock held), made when MAKE; NULL when none (or no room) */
static struct kproc *entry(struct qp_cfi_bpf *b, uint32_t pid, bool make)
{
	int i, free_i = -1;

	for (i = 0; i < QPROF_CFI_PROCS; i++) {
		if (b->procs[i].used && b->procs[i].pid == pid)
			return &b->procs[i];
		if (!b->procs[i].used && free_i < 0)
			free_i = i;
	}
	if (!make || free_i < 0)
		return NULL;
	memset(&b->procs[free_i], 0, offsetof(struct kproc, nids));
	b->procs[free_i].used = true;
	b->procs[free_i].pid = pid;
	b->procs[free_i].nids = 0;
	return &b->procs[free_i];
}

void qp_cfi_bpf_add(struct qp_cfi_bpf *b, uint32_t pid)
{
	struct kproc *p;

	if (!b)
		return;
	pthread_mutex_lock(&b->qlock);
	p = entry(b, pid, true);
	if (p) {
		p->gone = false;
		p->scanned = false;	/* read at once */
		pthread_cond_signal(&b->cond);
	}
	pthread_mutex_unlock(&b->qlock);
}

void qp_cfi_bpf_rescan(struct qp_cfi_bpf *b, uint32_t pid)
{
	struct kproc *p;

	if (!b)
		return;
	pthread_mutex_lock(&b->qlock);
	p = entry(b, pid, false);
	if (p && !p->gone && !p->want) {
		p->want = true;
		if (qp_now_ns() - p->last_ns >= RESCAN_MIN_NS)
			pthread_cond_signal(&b->cond);
	}
	pthread_mutex_unlock(&b->qlock);
}

void qp_cfi_bpf_remove(struct qp_cfi_bpf *b, uint32_t pid)
{
	struct kproc *p;

	if (!b)
		return;
	pthread_mutex_lock(&b->qlock);
	p = entry(b, pid, false);
	if (p) {
		p->gone = true;
		pthread_cond_signal(&b->cond);
	}
	pthread_mutex_unlock(&b->qlock);
}

void qp_cfi_bpf_stats(struct qp_cfi_bpf *b, struct qp_cfi_bpf_stats *out)
{
	pthread_mutex_lock(&b->qlock);
	*out = b->pub;
	pthread_mutex_unlock(&b->qlock);
}

void qp_cfi_bpf_counts(struct qp_cfi_bpf *b, unsigned int user, uint64_t ends[QPROF_WALK__MAX], uint64_t *frames)
{
	__u64 *cnt;
	__u32 k;
	int cpu, e;

	memset(ends, 0, QPROF_WALK__MAX * sizeof(ends[0]));
	*frames = 0;
	if (b->counts_fd < 0 || b->ncpus <= 0 || user >= 4 || !(cnt = calloc((size_t)b->ncpus, sizeof(*cnt))))
		return;
	for (e = 0; e <= QPROF_WALK__MAX; e++) {
		k = e < QPROF_WALK__MAX ? user * 16 + (unsigned int)e : 4 * 16 + user;
		if (bpf_map_lookup_elem(b->counts_fd, &k, cnt))
			continue;
		for (cpu = 0; cpu < b->ncpus; cpu++) {
			if (e < QPROF_WALK__MAX)
				ends[e] += cnt[cpu];
			else
				*frames += cnt[cpu];
		}
	}
	free(cnt);
}

bool qp_cfi_bpf_wait(struct qp_cfi_bpf *b, uint32_t pid, unsigned int timeout_ms)
{
	uint64_t until = qp_now_ns() + (uint64_t)timeout_ms * 1000000ull;

	while (qp_now_ns() < until) {
		struct kproc *p;
		bool done;

		pthread_mutex_lock(&b->qlock);
		p = entry(b, pid, false);
		done = p && p->scanned;
		pthread_mutex_unlock(&b->qlock);
		if (done)
			return true;
		usleep(10000);
	}
	return false;
}
