/* side_load.h - what qprofd loads on a thread of its own while the main
 * thread loads the scopes, ring and lifecycle objects and then serves:
 * thread stacks, the heap profiler (opened, loaded with its first target)
 * and the CPU sampler, whose two stack-walking programs are most of the
 * verifier's work at start-up.
 *
 * The main thread waits for the first two (side_wait_opened) before it
 * attaches targets; it does not wait for the CPU sampler unless --heap asks
 * for the heap at start (the heap walks stacks with the sampler's tables).
 * When the sampler is loaded, the side thread publishes it: it takes the
 * registry lock, adds every running target to it, and only then makes it
 * visible (qprofd_cpu()); until then the CPU routes answer 503 "starting".
 * A target attached meanwhile is sampled from the publish on. */
#ifndef QPROF_SIDE_LOAD_H
#define QPROF_SIDE_LOAD_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "collect/collect_heap.h"
#include "http/qprofd.h"
#include "options.h"

struct qp_ring;

struct side_load {
	struct qprofd *d;
	const struct options *o;
	struct qp_heap_opts *heap_opts;
	int heap_ret;			/* qp_heap_open's (valid once opened) */
	int slow_rb_fd, slow_min_fd;	/* the CPU sampler's too */
	struct qp_ring *ring;		/* the ring collector, given with the maps */
	uint64_t start_ns;		/* qprofd's start, for the log */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool begun;			/* side_start was called */
	bool fds_set;			/* the maps shared below are given (or -1) */
	bool live;			/* by side_fds: the daemon is there to publish to */
	bool opened;			/* thread stacks and the heap opened */
	pthread_t th;
	bool started;			/* th runs (else side_start loaded it all) */
};

void side_init(struct side_load *s, struct qprofd *d, struct qp_heap_opts *heap_opts);
/* Starts the thread (or, without one, does nothing until side_fds). */
void side_start(struct side_load *s, const struct options *o, uint64_t start_ns);
/* The maps the heap's and the CPU sampler's programs share (-1: none) and
 * the ring collector; once. Without a thread, everything is loaded here. */
void side_fds(struct side_load *s, int thread_stacks_fd, int ring_tids_fd, int slow_rb_fd, int slow_min_fd,
	      struct qp_ring *ring);
/* Start-up gave up before side_fds: thread stacks and the heap are opened
 * (for stop() to close), the CPU sampler is not. */
void side_cancel(struct side_load *s);
/* Until thread stacks and the heap are opened. */
void side_wait_opened(struct side_load *s);
/* Until all of it, the CPU sampler published, is done (a no-op after). */
void side_join(struct side_load *s);
void side_destroy(struct side_load *s);
#endif
