/* collect_heap.c - loads bpf/heap.bpf.c and keeps its targets: for each,
 * the uprobes on the allocator entry points (entry and return) of every
 * executable file it maps that defines them, found by name in the file's
 * symbols (elf_syms.h) and attached through /proc/PID/map_files (that very
 * inode), and its generation in heap_targets. Return probes are attached
 * before entry probes, and the pid enters heap_targets last: no call is
 * seen whose return is not. The brk/mmap probes (the syscalls/
 * tracepoints, or the raw syscall tracepoints where tracefs is not
 * mounted) are attached with the first target and detached with the last:
 * otherwise nothing else of the system pays for them. The object itself is
 * loaded with the first target too (qp_heap_load), with the growth programs
 * of the kind the host can attach only. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "common/elf_syms.h"
#include "heap_internal.h"
#include "common/log.h"
#include "common/procfs.h"

/* The entry points, in the order they are reported. operator new and
 * delete of libstdc++ call malloc and free, so they are seen there (with
 * their own frame on the stack) and are not probed themselves. */
static const struct entry {
	const char *name;
	enum heap_fn fn;
} entries[] = {
	{ "malloc", HEAP_MALLOC },	{ "calloc", HEAP_CALLOC },
	{ "realloc", HEAP_REALLOC },	{ "free", HEAP_FREE },
	{ "posix_memalign", HEAP_POSIX_MEMALIGN },
	{ "aligned_alloc", HEAP_MEMALIGN }, { "memalign", HEAP_MEMALIGN },
	{ "valloc", HEAP_MALLOC },	{ "pvalloc", HEAP_MALLOC },
};
#define NENTRIES (sizeof(entries) / sizeof(entries[0]))

static struct bpf_program *prog_of(struct heap *s, enum heap_fn fn)
{
	switch (fn) {
	case HEAP_MALLOC: return s->progs.heap_malloc;
	case HEAP_CALLOC: return s->progs.heap_calloc;
	case HEAP_REALLOC: return s->progs.heap_realloc;
	case HEAP_MEMALIGN: return s->progs.heap_memalign;
	case HEAP_POSIX_MEMALIGN: return s->progs.heap_posix_memalign;
	default: return s->progs.heap_free;
	}
}

int qp_heap_open(struct qp_heap **out, const struct qp_heap_opts *o, char *err, size_t errlen)
{
	struct qp_heap *h;
	int ret;

	*out = NULL;
	if (!o->interval || o->interval > (1ULL << 30) || !o->max_live || !o->max_stacks) {
		snprintf(err, errlen, "heap: bad options");
		return -EINVAL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	pthread_mutex_init(&h->lock, NULL);
	pthread_mutex_init(&h->load_lock, NULL);
	h->interval = o->interval;
	h->ncpus = libbpf_num_possible_cpus();
	h->skel = heap__open();
	if (!h->skel || h->ncpus <= 0) {
		ret = errno ? -errno : -EINVAL;
		snprintf(err, errlen, "cannot open the heap BPF object: %s", strerror(-ret));
		goto fail;
	}
	h->skel->rodata->interval = o->interval;
	if ((ret = bpf_map__set_max_entries(h->skel->maps.heap_live, o->max_live)) ||
	    (ret = bpf_map__set_max_entries(h->skel->maps.heap_stacks, o->max_stacks))) {
		snprintf(err, errlen, "cannot size the heap maps: %s", strerror(-ret));
		goto fail;
	}
	/* the labels of a stack: its thread's open scopes, from the maps the
	 * scopes and the rings keep (absent: the stacks carry none) */
	if ((o->thread_stacks_fd >= 0 &&
	     (ret = bpf_map__reuse_fd(h->skel->maps.thread_stacks, o->thread_stacks_fd))) ||
	    (o->ring_tids_fd >= 0 && (ret = bpf_map__reuse_fd(h->skel->maps.ring_tids, o->ring_tids_fd)))) {
		snprintf(err, errlen, "cannot share the scopes' maps with the heap: %s", strerror(-ret));
		goto fail;
	}
	/* the CFI walker's maps: the CPU sampler's, given before the load
	 * (qp_heap_set_cfi); not given, they hold nothing and the walk is off */
	if ((ret = bpf_map__set_max_entries(h->skel->maps.cfi_rows, 1)) ||
	    (ret = bpf_map__set_max_entries(h->skel->maps.cfi_procs, 1))) {
		snprintf(err, errlen, "cannot size the heap's CFI maps: %s", strerror(-ret));
		goto fail;
	}
	*out = h;
	return 0;
fail:
	qp_heap_close(h);
	return ret;
}

void qp_heap_set_cfi(struct qp_heap *h, const int fds[4])
{
	struct bpf_map *m[4];
	int i, ret = 0;

	if (!h)
		return;
	m[0] = h->skel->maps.cfi_rows;
	m[1] = h->skel->maps.cfi_files;
	m[2] = h->skel->maps.cfi_procs;
	m[3] = h->skel->maps.cfi_counts;
	pthread_mutex_lock(&h->load_lock);
	for (i = 0; i < 4 && !ret && !h->loaded && !h->load_err; i++)
		ret = bpf_map__reuse_fd(m[i], fds[i]);
	if (ret)
		qp_warn("heap stacks: not walked by the CFI tables (%s): frame pointers", strerror(-ret));
	else if (!h->loaded && !h->load_err)
		h->skel->rodata->walk_cfi = true;
	pthread_mutex_unlock(&h->load_lock);
}

void qp_heap_expect_cfi(struct qp_heap *h)
{
	if (h)
		__atomic_store_n(&h->cfi_pending, true, __ATOMIC_RELEASE);
}

void qp_heap_cfi_settled(struct qp_heap *h)
{
	if (h)
		__atomic_store_n(&h->cfi_pending, false, __ATOMIC_RELEASE);
}

static void target_unlink(struct qp_heap *h, struct heap_target *t)
{
	size_t i;

	if (t->gen) {
		__u32 pid = (__u32)t->pid;

		bpf_map_delete_elem(bpf_map__fd(h->skel->maps.heap_targets), &pid);
		t->gen = 0;
	}
	for (i = 0; i < t->nlinks; i++)
		bpf_link__destroy(t->links[i]);
	free(t->links);
	t->links = NULL;
	t->nlinks = 0;
	t->st.tracing = false;
}

void qp_heap_close(struct qp_heap *h)
{
	size_t i;

	if (!h)
		return;
	for (i = 0; i < h->nt; i++)
		target_unlink(h, &h->t[i]);
	for (i = 0; i < 4; i++)
		bpf_link__destroy(h->tp[i]);
	free(h->t);
	heap__destroy(h->skel);
	pthread_mutex_destroy(&h->load_lock);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

uint64_t qp_heap_interval(const struct qp_heap *h) { return h->interval; }

/* Whether the growth tracepoints of syscalls/ can be attached (tracefs). */
static bool have_syscall_events(void)
{
	return !access("/sys/kernel/tracing/events/syscalls/sys_enter_brk/id", F_OK) ||
	       !access("/sys/kernel/debug/tracing/events/syscalls/sys_enter_brk/id", F_OK);
}

int qp_heap_load(struct qp_heap *h, char *err, size_t errlen)
{
	uint64_t t0;
	bool tfs;
	int ret = 0;

	if (qp_heap_loaded(h))
		return 0;
	if (__atomic_load_n(&h->cfi_pending, __ATOMIC_ACQUIRE)) {
		snprintf(err, errlen, "the CPU sampler, whose stack tables the heap profiler walks with, is still "
			 "loading: try again in a second");
		return -EAGAIN;
	}
	pthread_mutex_lock(&h->load_lock);
	if (h->loaded || h->load_err) {
		ret = h->load_err;
		if (ret)
			snprintf(err, errlen, "%s", h->load_msg);
		pthread_mutex_unlock(&h->load_lock);
		return ret;
	}
	/* the growth programs this host can attach: the raw syscall ones
	 * (about 130,000 instructions to verify) only without tracefs */
	tfs = have_syscall_events();
	bpf_program__set_autoload(h->skel->progs.heap_brk_enter, tfs);
	bpf_program__set_autoload(h->skel->progs.heap_brk_exit, tfs);
	bpf_program__set_autoload(h->skel->progs.heap_mmap_enter, tfs);
	bpf_program__set_autoload(h->skel->progs.heap_mmap_exit, tfs);
	bpf_program__set_autoload(h->skel->progs.heap_sys_enter, !tfs);
	bpf_program__set_autoload(h->skel->progs.heap_sys_exit, !tfs);
	t0 = qp_now_ns();
	ret = heap__load(h->skel);
	if (ret) {
		snprintf(h->load_msg, sizeof(h->load_msg), "cannot load the heap profiler: %s", strerror(-ret));
		snprintf(err, errlen, "%s", h->load_msg);
		h->load_err = ret;	/* a libbpf object is loaded once: for good */
	} else {
		__atomic_store_n(&h->loaded, true, __ATOMIC_RELEASE);
		qp_info("heap profiler loaded (the first heap target needs it) in %.1f ms",
			(double)(qp_now_ns() - t0) / 1e6);
	}
	pthread_mutex_unlock(&h->load_lock);
	return ret;
}

static struct heap_target *find_locked(struct qp_heap *h, int pid)
{
	size_t i;

	for (i = 0; i < h->nt; i++)
		if (h->t[i].pid == pid)
			return &h->t[i];
	return NULL;
}

static int add_link(struct heap_target *t, struct bpf_link *l)
{
	struct bpf_link **v = realloc(t->links, (t->nlinks + 1) * sizeof(*v));

	if (!v) {
		bpf_link__destroy(l);
		return -ENOMEM;
	}
	t->links = v;
	t->links[t->nlinks++] = l;
	return 0;
}

static int attach_one(struct qp_heap *h, struct heap_target *t, const char *path, uint64_t off,
		      enum heap_fn fn, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .retprobe = ret);
	struct bpf_link *l;

	l = bpf_program__attach_uprobe_opts(ret ? h->skel->progs.heap_ret : prog_of(h->skel, fn), t->pid,
					    path, (size_t)off, &uo);
	if (!l)
		return -errno;
	return add_link(t, l);
}

/* glibc's free begins with "test %rdi,%rdi" (48 85 ff), which the kernel
 * cannot emulate: a uprobe there is single-stepped, many microseconds per
 * call on a VM. When a conditional jump follows (0f 8x rel32, or 7x rel8),
 * the probe goes on that jump instead: the kernel emulates branches, the
 * pointer is still in %rdi, and the jump is an instruction start by
 * construction. Anything else: the entry itself. */
static uint64_t free_skip(int fd, uint64_t off)
{
	unsigned char b[5];

	if (pread(fd, b, sizeof(b), (off_t)off) != (ssize_t)sizeof(b))
		return 0;
	if (b[0] == 0x48 && b[1] == 0x85 && b[2] == 0xff &&
	    ((b[3] == 0x0f && (b[4] & 0xf0) == 0x80) || (b[3] & 0xf0) == 0x70))
		return 3;
	return 0;
}

/* The entry points of the mapped file M of T's process: attached, and
 * named in T's status. Returns how many, or -errno. */
static int attach_file(struct qp_heap *h, struct heap_target *t, const struct qp_map *m, char *err,
		       size_t errlen)
{
	struct qp_elf_func f[NENTRIES];
	char path[96], serr[128];
	struct stat st;
	size_t i, j, used;
	int fd, n, ret, done = 0;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", t->pid, (unsigned long long)m->start,
		 (unsigned long long)m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : 0;	/* gone, or not ours to read: skipped */
	/* the very inode the maps line names */
	if (fstat(fd, &st) || (uint64_t)st.st_ino != m->inode || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	for (i = 0; i < NENTRIES; i++)
		f[i].name = entries[i].name;
	n = qp_elf_find_funcs(fd, f, NENTRIES, serr, sizeof(serr));
	if (n <= 0) {
		close(fd);
		return 0;
	}
	for (i = 0; i < NENTRIES; i++)
		if (entries[i].fn == HEAP_FREE && f[i].offset)
			f[i].offset += free_skip(fd, f[i].offset);
	close(fd);
	/* returns first, then entries: a call is seen only when its return will be */
	for (int pass = 0; pass < 2; pass++) {
		for (i = 0; i < NENTRIES; i++) {
			bool alias = false;

			if (!f[i].offset || (pass == 0 && entries[i].fn == HEAP_FREE))
				continue;
			for (j = 0; j < i && !alias; j++)
				alias = f[j].offset == f[i].offset;	/* aligned_alloc = memalign */
			if (alias)
				continue;
			ret = attach_one(h, t, path, f[i].offset, entries[i].fn, pass == 0);
			if (ret) {
				snprintf(err, errlen, "cannot probe %s in %s: %s", entries[i].name, m->path,
					 strerror(-ret));
				return ret;
			}
			if (pass)
				done++;
		}
	}
	used = strlen(t->st.traced);
	for (i = 0; i < NENTRIES; i++) {
		if (!f[i].offset)
			continue;
		snprintf(t->st.traced + used, sizeof(t->st.traced) - used, "%s%s", used ? " " : "",
			 entries[i].name);
		used = strlen(t->st.traced);
	}
	snprintf(t->st.traced + used, sizeof(t->st.traced) - used, " in %s;", m->path);
	return done;
}

/* No target traced any more: the syscall tracepoints go (each syscall of
 * the system runs them while they are attached). h->lock held. */
static void growth_probes_release_locked(struct qp_heap *h)
{
	size_t i;

	for (i = 0; i < h->nt; i++)
		if (h->t[i].st.tracing || h->t[i].held)
			return;
	for (i = 0; i < 4; i++) {
		bpf_link__destroy(h->tp[i]);
		h->tp[i] = NULL;
	}
	h->tp_attached = false;
}

/* The syscall tracepoints through tracefs when it is mounted (a program
 * runs for brk and mmap only), else the raw ones (no tracefs; every
 * syscall of the system calls into BPF while they are attached). */
static int attach_growth_probes(struct qp_heap *h, char *err, size_t errlen)
{
	struct bpf_program *ev[4] = { h->skel->progs.heap_brk_enter, h->skel->progs.heap_brk_exit,
				      h->skel->progs.heap_mmap_enter, h->skel->progs.heap_mmap_exit };
	struct bpf_program *raw[2] = { h->skel->progs.heap_sys_enter, h->skel->progs.heap_sys_exit };
	int i, ret = 0;

	if (h->tp_attached)
		return 0;
	/* where libbpf looks for their ids: without them, the raw ones at
	 * once (no libbpf warning on a host that has no tracefs) */
	if (bpf_program__fd(ev[0]) >= 0 && have_syscall_events()) {
		for (i = 0; i < 4; i++) {
			h->tp[i] = bpf_program__attach(ev[i]);
			if (!h->tp[i]) {
				ret = -errno;
				break;
			}
		}
		if (i == 4) {
			h->tp_raw = false;
			h->tp_attached = true;
			return 0;
		}
		while (i-- > 0) {
			bpf_link__destroy(h->tp[i]);
			h->tp[i] = NULL;
		}
	} else {
		ret = -ENOENT;
	}
	qp_info("heap growth: the raw syscall tracepoints (the syscalls/ ones: %s, tracefs not mounted?); "
		"every syscall of the system calls into BPF while a heap target exists", strerror(-ret));
	for (i = 0; i < 2; i++) {
		h->tp[i] = bpf_program__attach(raw[i]);
		if (!h->tp[i]) {
			ret = -errno;
			snprintf(err, errlen, "cannot attach the brk/mmap probes (raw syscall tracepoints): %s",
				 strerror(-ret));
			while (i-- > 0) {
				bpf_link__destroy(h->tp[i]);
				h->tp[i] = NULL;
			}
			return ret;
		}
	}
	h->tp_raw = true;
	h->tp_attached = true;
	return 0;
}

static int attach_locked(struct qp_heap *h, struct heap_target *t, char *err, size_t errlen)
{
	struct qp_maps maps = { 0 };
	size_t i, j;
	int ret, n = 0;
	__u32 pid = (__u32)t->pid, gen;

	ret = qp_maps_read(t->pid, &maps);
	if (ret) {
		snprintf(err, errlen, "cannot read /proc/%d/maps: %s", t->pid, strerror(-ret));
		return ret == -ENOENT ? -ESRCH : ret;
	}
	for (i = 0; i < maps.n; i++) {
		const struct qp_map *m = &maps.v[i];
		bool seen = false;

		if (m->path[0] != '/' || !strchr(m->perms, 'x'))
			continue;
		for (j = 0; j < i && !seen; j++)
			seen = maps.v[j].inode == m->inode && maps.v[j].dev == m->dev &&
			       strchr(maps.v[j].perms, 'x');
		if (seen)
			continue;
		ret = attach_file(h, t, m, err, errlen);
		if (ret < 0)
			goto out;
		n += ret;
	}
	t->st.functions = (unsigned int)n;
	if (!n)
		snprintf(t->st.note, sizeof(t->st.note),
			 "no allocator entry point (malloc, calloc, realloc, free, posix_memalign, "
			 "aligned_alloc, memalign, valloc, pvalloc) is defined in the files process %d maps "
			 "(a static binary without symbols, or an allocator of its own): no allocation is "
			 "traced; the heap's growth (brk, anonymous mmap) is", t->pid);
	else
		snprintf(t->st.note, sizeof(t->st.note),
			 "allocations made through other functions (an allocator of the program's own, "
			 "direct mmap, libraries loaded after the attach) are not traced, except as growth");
	ret = attach_growth_probes(h, err, errlen);
	if (ret)
		goto out;
	{
		/* where allocations whose stack is not kept count (heap.h) */
		struct heap_stack lost = { .tgid = pid };
		__u64 key = heap_lost_key(pid);

		if (bpf_map_update_elem(bpf_map__fd(h->skel->maps.heap_stacks), &key, &lost, BPF_NOEXIST) &&
		    errno != EEXIST)
			qp_warn("heap of pid %d: no room for its stack of lost stacks: %s", t->pid,
				strerror(errno));
	}
	gen = ++h->gen ? h->gen : ++h->gen;
	if (bpf_map_update_elem(bpf_map__fd(h->skel->maps.heap_targets), &pid, &gen, BPF_ANY)) {
		ret = -errno;
		snprintf(err, errlen, "cannot add pid %d to the heap targets: %s", t->pid, strerror(-ret));
		goto out;
	}
	t->gen = gen;
	t->st.tracing = true;
	ret = 0;
out:
	qp_maps_free(&maps);
	return ret;
}

static int heap_attach(struct qp_heap *h, int pid, bool held, struct qp_heap_status *st, char *err,
		       size_t errlen)
{
	struct heap_target *v, *t;
	int ret;

	ret = qp_heap_load(h, err, errlen);	/* without the lock: status reads go on */
	if (ret)
		return ret;
	pthread_mutex_lock(&h->lock);
	if (find_locked(h, pid)) {
		pthread_mutex_unlock(&h->lock);
		snprintf(err, errlen, "the heap of process %d is profiled already", pid);
		return -EEXIST;
	}
	v = realloc(h->t, (h->nt + 1) * sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&h->lock);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	h->t = v;
	t = &h->t[h->nt];
	memset(t, 0, sizeof(*t));
	t->pid = t->st.pid = pid;
	t->held = held;
	ret = attach_locked(h, t, err, errlen);
	if (ret) {
		target_unlink(h, t);
		qp_heap_map_forget(h, pid);
		growth_probes_release_locked(h);
		pthread_mutex_unlock(&h->lock);
		if (ret == -ESRCH || kill(pid, 0))
			snprintf(err, errlen, "process %d exited while its heap probes were attached", pid);
		return ret == -ESRCH || kill(pid, 0) ? -ESRCH : ret;
	}
	h->nt++;
	if (st)
		*st = t->st;
	qp_info("heap of pid %d: %u entry point(s): %s", pid, t->st.functions,
		t->st.traced[0] ? t->st.traced : "none");
	pthread_mutex_unlock(&h->lock);
	return 0;
}

int qp_heap_attach(struct qp_heap *h, int pid, struct qp_heap_status *st, char *err, size_t errlen)
{
	return heap_attach(h, pid, false, st, err, errlen);
}

int qp_heap_attach_held(struct qp_heap *h, int pid, struct qp_heap_status *st, char *err, size_t errlen)
{
	return heap_attach(h, pid, true, st, err, errlen);
}

void qp_heap_release(struct qp_heap *h, int pid)
{
	struct heap_target *t;

	pthread_mutex_lock(&h->lock);
	t = find_locked(h, pid);
	if (t)
		t->held = false;
	pthread_mutex_unlock(&h->lock);
}

void qp_heap_stop(struct qp_heap *h, int pid)
{
	struct heap_target *t;

	pthread_mutex_lock(&h->lock);
	t = find_locked(h, pid);
	if (t && t->st.tracing && !t->held) {
		target_unlink(h, t);
		growth_probes_release_locked(h);
	}
	pthread_mutex_unlock(&h->lock);
}

void qp_heap_forget(struct qp_heap *h, int pid)
{
	struct heap_target *t;

	pthread_mutex_lock(&h->lock);
	t = find_locked(h, pid);
	if (t && !t->held) {
		target_unlink(h, t);
		*t = h->t[--h->nt];
		qp_heap_map_forget(h, pid);
		growth_probes_release_locked(h);
	}
	pthread_mutex_unlock(&h->lock);
}

bool qp_heap_status_of(struct qp_heap *h, int pid, struct qp_heap_status *st)
{
	struct heap_target *t;

	pthread_mutex_lock(&h->lock);
	t = find_locked(h, pid);
	if (t)
		*st = t->st;
	pthread_mutex_unlock(&h->lock);
	return t != NULL;
}

long qp_heap_pids(struct qp_heap *h, int **pids)
{
	size_t i;
	long n;

	pthread_mutex_lock(&h->lock);
	*pids = malloc((h->nt ? h->nt : 1) * sizeof(**pids));
	if (!*pids) {
		pthread_mutex_unlock(&h->lock);
		return -ENOMEM;
	}
	for (i = 0; i < h->nt; i++)
		(*pids)[i] = h->t[i].pid;
	n = (long)h->nt;
	pthread_mutex_unlock(&h->lock);
	return n;
}
