/* watch.c - fanotify permission events on the inode of every --binary
 * version. The kernel places a uprobe by (inode, offset); when a file is
 * rewritten in place (`cp new app`, same inode), links made for the old
 * content would be installed at the old offsets in the next process that
 * maps the new content, and it dies. So before another process opens a
 * watched inode (exec, dlopen), this thread compares the file with the
 * version its links were made for; a changed one loses its links before the
 * open may go on, and the poll thread attaches to the new content.
 * qprofd's own opens are let through at once without the registry lock:
 * a thread holding the lock may be the one opening the file. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/log.h"
#include "targets_priv.h"

struct qp_watch {
	struct qp_registry *r;
	/* guards r->binaries and the versions' links for this thread, which
	 * never waits for r->lock: that can be held for long */
	pthread_mutex_t lock;
	int fd;
	pthread_t thread;
	atomic_bool stop;
	struct fanotify_event_metadata *queue;	/* events of other processes, not answered yet */
	size_t nqueue, cap;
};

static void answer(struct qp_watch *w, int fd)
{
	struct fanotify_response resp = { .fd = fd, .response = FAN_ALLOW };

	if (write(w->fd, &resp, sizeof(resp)) != sizeof(resp))
		qp_warn("fanotify: cannot answer an open: %s", strerror(errno));
	close(fd);
}

/* Read what is pending: our own opens are allowed now, others queued. */
static void drain(struct qp_watch *w)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct fanotify_event_metadata))));
	struct fanotify_event_metadata *ev;
	ssize_t n;

	while ((n = read(w->fd, buf, sizeof(buf))) > 0) {
		for (ev = (void *)buf; FAN_EVENT_OK(ev, n); ev = FAN_EVENT_NEXT(ev, n)) {
			if (ev->vers != FANOTIFY_METADATA_VERSION || ev->fd < 0)
				continue;
			if (ev->pid == getpid()) {
				answer(w, ev->fd);
				continue;
			}
			if (w->nqueue == w->cap) {
				size_t cap = w->cap ? w->cap * 2 : 16;
				void *v = realloc(w->queue, cap * sizeof(*w->queue));

				if (!v) {	/* never leave an opener waiting */
					answer(w, ev->fd);
					continue;
				}
				w->queue = v;
				w->cap = cap;
			}
			w->queue[w->nqueue++] = *ev;
		}
	}
}

/* Drop the links of the version of FD if its file is no longer what they
 * were made for. w->lock held. */
static void check_open(struct qp_registry *r, int fd, int pid)
{
	struct stat st;
	size_t bi, k;

	if (fstat(fd, &st))
		return;
	for (bi = 0; bi < r->nbinaries; bi++) {
		struct qp_binary *b = r->binaries[bi];

		for (k = 0; k <= b->nold; k++) {
			struct qp_binary_gen *g = k < b->nold ? &b->old[k] : &b->cur;

			if (g->ino != (uint64_t)st.st_ino || g->dev != (uint64_t)st.st_dev || !g->mod)
				continue;
			if (!g->nlinks || qp_elf_same_file(g->mod->elf, fd) == 1)
				continue;
			qp_warn("%s changed on disk (same inode) before pid %d opened it: its probes are "
				"removed first, then attached to the new content", b->path, pid);
			qp_binary_gen_unlink(g);
			if (g == &b->cur)
				b->stale = true;
		}
	}
}

static void *watch_main(void *arg)
{
	struct qp_watch *w = arg;
	struct pollfd p = { .fd = w->fd, .events = POLLIN };
	size_t i;

	while (!atomic_load(&w->stop)) {
		if (poll(&p, 1, 200) <= 0)
			continue;
		drain(w);
		if (!w->nqueue)
			continue;
		/* wait for the lock while still letting our own opens through: its
		 * holder may be attaching, and libbpf opens the file */
		while (pthread_mutex_trylock(&w->lock)) {
			if (poll(&p, 1, 1) > 0)
				drain(w);
		}
		for (i = 0; i < w->nqueue; i++)
			check_open(w->r, w->queue[i].fd, w->queue[i].pid);
		pthread_mutex_unlock(&w->lock);
		for (i = 0; i < w->nqueue; i++)
			answer(w, w->queue[i].fd);
		w->nqueue = 0;
	}
	return NULL;
}

int qp_watch_start(struct qp_registry *r)
{
	struct qp_watch *w = calloc(1, sizeof(*w));
	int ret;

	if (!w)
		return -ENOMEM;
	w->r = r;
	pthread_mutex_init(&w->lock, NULL);
	w->fd = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC | FAN_NONBLOCK,
			      O_RDONLY | O_LARGEFILE | O_CLOEXEC);
	if (w->fd < 0) {
		ret = -errno;
		pthread_mutex_destroy(&w->lock);
		free(w);
		return ret;
	}
	ret = pthread_create(&w->thread, NULL, watch_main, w);
	if (ret) {
		close(w->fd);
		pthread_mutex_destroy(&w->lock);
		free(w);
		return -ret;
	}
	r->watch = w;
	return 0;
}

void qp_watch_stop(struct qp_registry *r)
{
	struct qp_watch *w = r->watch;
	size_t i;

	if (!w)
		return;
	atomic_store(&w->stop, true);
	pthread_join(w->thread, NULL);
	for (i = 0; i < w->nqueue; i++)
		answer(w, w->queue[i].fd);
	close(w->fd);	/* the kernel allows whatever is still pending */
	pthread_mutex_destroy(&w->lock);
	free(w->queue);
	free(w);
	r->watch = NULL;
}

void qp_watch_lock(struct qp_registry *r)
{
	if (r->watch)
		pthread_mutex_lock(&r->watch->lock);
}

void qp_watch_unlock(struct qp_registry *r)
{
	if (r->watch)
		pthread_mutex_unlock(&r->watch->lock);
}

int qp_watch_add(struct qp_registry *r, int fd)
{
	if (!r->watch)
		return -ENOSYS;
	return fanotify_mark(r->watch->fd, FAN_MARK_ADD, FAN_OPEN_PERM, fd, NULL) ? -errno : 0;
}

void qp_watch_remove(struct qp_registry *r, int fd)
{
	if (r->watch)
		fanotify_mark(r->watch->fd, FAN_MARK_REMOVE, FAN_OPEN_PERM, fd, NULL);
}
