/* lifecycle.c - see lifecycle.h. The BPF side stops a child forked by a
 * watched process that has uprobe trampolines; this thread repairs it
 * (lifecycle_fork.c) and sends SIGCONT at once. Exec records, and the /proc
 * safety net, are queued for the poll loop (lifecycle_exec.c). The thread
 * needs no registry lock: the files, sites and pids it uses are its own. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include "lifecycle.skel.h"
#include "lifecycle.h"
#include "lifecycle_fork.h"
#include "targets_view.h"
#include "lifecycle_priv.h"
#include "common/log.h"
#include "common/procfs.h"
#include "common/util.h"
#include "bpf/lifecycle.h"

static uint64_t kdev(dev_t d)
{
	return ((uint64_t)major(d) << 20) | minor(d);
}

static bool is_binary_file(dev_t dev, ino_t ino, void *arg)
{
	const struct qp_lifecycle *lc = arg;
	size_t i;

	for (i = 0; i < lc->nfiles; i++)
		if (lc->files[i].dev == dev && lc->files[i].ino == ino)
			return true;
	return false;
}

static void queue_exec(struct qp_lifecycle *lc, const struct qp_lc_exec *e)
{
	size_t i;

	for (i = 0; i < lc->nexecs; i++) {
		/* the same kind of record (adopt a forked child, or an exec) only */
		if (lc->execs[i].pid == e->pid && lc->execs[i].parent == e->parent &&
		    lc->execs[i].dl == e->dl) {
			if (e->stopped)	/* the newest hold's: an older one is over */
				lc->execs[i].ts_ns = e->ts_ns;
			lc->execs[i].stopped |= e->stopped;
			lc->execs[i].unloaded |= e->unloaded;
			return;
		}
	}
	if (lc->nexecs == LC_MAX_EXECS) {
		lc->execs_dropped++;
		if (e->stopped && e->dl)
			lc_dl_release(lc, e->pid, e->ts_ns);
		else if (e->stopped)
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

		/* under lc->lock: --binary files cannot go while int3 is written */
		lc_sites_repair(lc->sites, (int)e->child, is_binary_file, lc, &lc->rep);
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
	} else if (e->kind == QPROF_LC_DL) {
		/* a library came or went: the poll loop rescans the mappings */
		struct qp_lc_exec x = { .pid = (int)e->pid, .stopped = e->stopped != 0, .dl = true,
					.unloaded = e->dl_what == QPROF_DL_UNLOADED, .ts_ns = e->ts_ns };

		queue_exec(lc, &x);
	}
	pthread_mutex_unlock(&lc->lock);
	return 0;
}

static void *lc_thread(void *arg)
{
	struct qp_lifecycle *lc = arg;

	for (;;) {
		struct pollfd p[2] = { { .fd = ring_buffer__epoll_fd(lc->rb), .events = POLLIN },
				       { .fd = lc->stop_fd, .events = POLLIN } };
		bool stop;
		int n;

		pthread_mutex_lock(&lc->lock);
		stop = lc->stopping;
		pthread_mutex_unlock(&lc->lock);
		if (stop)
			break;
		/* the ring's epoll and the stop: a shutdown waits for no timeout */
		if (poll(p, lc->stop_fd >= 0 ? 2 : 1, 100) < 0 && errno != EINTR) {
			qp_warn("lifecycle thread: poll: %s", strerror(errno));
			break;
		}
		if (p[1].revents)
			break;
		n = ring_buffer__consume(lc->rb);
		if (n < 0 && n != -EINTR) {
			qp_warn("lifecycle ring buffer: %s", strerror(-n));
			break;
		}
	}
	return NULL;
}

int qp_lifecycle_open(struct qp_lifecycle **out, pthread_t main, int wake, unsigned int hold_ms,
		      char *err, size_t errlen)
{
	struct qp_lifecycle *lc = calloc(1, sizeof(*lc));
	int ret;

	*out = NULL;
	if (!lc)
		return -ENOMEM;
	pthread_mutex_init(&lc->lock, NULL);
	lc->main = main;
	lc->wake = wake;
	lc->releaser_pipe = -1;
	lc->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	lc->hold_ns = (uint64_t)hold_ms * 1000000ull;
	lc->sites = lc_sites_new();
	if (!lc->sites) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	/* lc_dl as a uprobe-multi program first (no perf event: the service's
	 * capabilities suffice), else a perf-event uprobe */
	for (int attempt = 0; attempt < 2; attempt++) {
		lc->skel = lifecycle__open();
		if (!lc->skel) {
			ret = -errno;
			snprintf(err, errlen, "cannot open the lifecycle BPF program: %s", strerror(-ret));
			goto fail;
		}
		/* attached per dynamic linker file (lifecycle_dl.c), not by the skeleton */
		bpf_program__set_autoattach(lc->skel->progs.lc_dl, false);
		lc->dl_multi = attempt == 0;
		if (lc->dl_multi)
			bpf_program__set_expected_attach_type(lc->skel->progs.lc_dl, QP_LC_UPROBE_MULTI);
		ret = lifecycle__load(lc->skel);
		if (!ret)
			break;
		lifecycle__destroy(lc->skel);
		lc->skel = NULL;
		if (!lc->dl_multi) {
			snprintf(err, errlen, "cannot load the lifecycle BPF program: %s", strerror(-ret));
			goto fail;
		}
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
	if (lc_dl_start(lc, err, errlen)) {
		qp_warn("%s: libraries loaded by targets are found by the 1 s rescan only", err);
	} else {
		struct qp_maps self = { 0 };

		/* the system's dynamic linker (ours): linked before any target */
		if (!qp_maps_read(getpid(), &self))
			qp_lifecycle_watch_ldso(lc, 0, &self);
		qp_maps_free(&self);
	}
	err[0] = '\0';
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
		if (lc->stop_fd >= 0 && eventfd_write(lc->stop_fd, 1))
			qp_warn("lifecycle thread: cannot wake it: %s", strerror(errno));
		pthread_join(lc->thread, NULL);
	}
	if (lc->stop_fd >= 0)
		close(lc->stop_fd);
	/* the ld.so links first (no new hold), then the release process ends
	 * every hold left */
	lc_dl_stop(lc);
	if (lc->skel)
		lifecycle__detach(lc->skel);
	/* the children forked before the detach still wait for us */
	if (lc->rb)
		ring_buffer__consume(lc->rb);
	for (i = 0; i < lc->nexecs; i++)
		if (lc->execs[i].stopped && !lc->execs[i].dl)
			kill(lc->execs[i].pid, SIGCONT);
	ring_buffer__free(lc->rb);
	lifecycle__destroy(lc->skel);
	lc_sites_free(lc->sites);
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
	lc->skel->bss->nfiles = (__u32)lc->nfiles;
	pthread_mutex_unlock(&lc->lock);
}

void qp_lifecycle_forget_files(struct qp_lifecycle *lc)
{
	if (!lc)
		return;
	pthread_mutex_lock(&lc->lock);
	lc->nfiles = 0;
	lc->skel->bss->nfiles = 0;
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
	lc_dl_check(lc);
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

bool qp_lifecycle_exec_done(struct qp_lifecycle *lc, const struct qp_lc_exec *e)
{
	if (e->dl) {
		/* holds on, and this one not held: qprofd was silent (counted) */
		bool late = lc && lc->hold_ns && !e->stopped;

		if (lc && e->stopped) {
			pthread_mutex_lock(&lc->lock);
			late = lc_dl_release(lc, e->pid, e->ts_ns);
			pthread_mutex_unlock(&lc->lock);
		}
		return late;
	}
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
	return false;
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

void qp_lifecycle_figures(struct qp_lifecycle *lc, struct qp_lifecycle_figures *out)
{
	out->forks = counter(lc, QPROF_LCNT_FORKS);
	out->shared_mm_children = counter(lc, QPROF_LCNT_SHARED_MM);
	out->children_stopped = counter(lc, QPROF_LCNT_STOPPED);
	out->stop_failed = counter(lc, QPROF_LCNT_SIGNAL_FAILED);
	out->records_lost = counter(lc, QPROF_LCNT_LOST);
	out->descendants_unwatched = counter(lc, QPROF_LCNT_WATCH_FULL);
	out->dl_rendezvous = counter(lc, QPROF_LCNT_DL);
	out->dl_held = counter(lc, QPROF_LCNT_DL_HELD);
	out->dl_unheld = counter(lc, QPROF_LCNT_DL_UNHELD);
	pthread_mutex_lock(&lc->lock);
	out->children_resumed = lc->resumed;
	out->sites_restored_nop = lc->rep.nop;
	out->sites_restored_int3 = lc->rep.int3;
	out->site_rewrites_failed = lc->rep.failed;
	out->semaphores_lowered = lc->rep.sema_lowered;
	out->semaphore_writes_failed = lc->rep.sema_failed;
	out->child_stall_max_ns = lc->stall_max_ns;
	out->child_stall_mean_ns = lc->resumed ? lc->stall_sum_ns / lc->resumed : 0;
	out->execs = lc->execs_seen;
	out->exec_stall_max_ns = lc->exec_stall_max_ns;
	out->binary_starts = lc->binary_starts;
	out->execs_seen_in_proc = lc->execs_by_proc;
	out->execs_dropped = lc->execs_dropped;
	out->dl_released = lc->dl_released;
	out->dl_released_late = lc->dl_released_late;
	out->dl_hold_max_ns = lc->dl_hold_max_ns;
	out->dl_hold_mean_ns = lc->dl_released ? lc->dl_hold_sum_ns / lc->dl_released : 0;
	out->dl_linkers = lc->nldsos;
	out->dl_skipped_unresponsive = counter(lc, QPROF_LCNT_DL_SKIP_STALE);
	out->dl_skipped_traced = counter(lc, QPROF_LCNT_DL_SKIP_TRACED);
	out->dl_skipped_no_signal = counter(lc, QPROF_LCNT_DL_SKIP_NOSIGNAL);
	pthread_mutex_unlock(&lc->lock);
}
