/* side_load.c - see side_load.h. */
#include <stdio.h>
#include <string.h>
#include "side_load.h"
#include "collect/collect_cpu.h"
#include "collect/collect_scopes.h"
#include "collect/collect_threads.h"
#include "common/log.h"
#include "common/util.h"

void side_init(struct side_load *s, struct qprofd *d, struct qp_heap_opts *heap_opts)
{
	memset(s, 0, sizeof(*s));
	s->d = d;
	s->heap_opts = heap_opts;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
}

void side_destroy(struct side_load *s)
{
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
}

/* The sampler C (NULL: it failed, ERR why) made the daemon's: its figures
 * wired, the running targets added under the registry lock (a target
 * pushed after that adds itself, r->cpu being set), then visible. */
static void publish(struct side_load *s, struct qp_cpu *c, const char *err)
{
	struct qprofd *d = s->d;
	int cfi_fds[4];
	size_t i;

	if (c) {
		qp_cpu_set_slow_floor(c, qp_scopes_slow_floor(d->scopes));
		qp_cpu_set_ring(c, s->ring);
		if (!s->heap_ret && qp_cpu_cfi_maps(c, cfi_fds))
			qp_heap_set_cfi(d->heap, cfi_fds);
	} else {
		snprintf(d->cpu_error, sizeof(d->cpu_error), "%s", err);
	}
	qp_heap_cfi_settled(d->heap);
	pthread_mutex_lock(&d->reg.lock);
	d->reg.cpu = c;
	for (i = 0; c && i < d->reg.ntargets; i++) {
		struct qp_target *t = d->reg.targets[i];

		if (t->state == QP_TARGET_RUNNING && qp_cpu_add_pid(c, (uint32_t)t->pid))
			qp_warn("pid %d: cannot add it to the CPU sampler", t->pid);
	}
	d->cpu = c;
	__atomic_store_n(&d->cpu_settled, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&d->reg.lock);
	/* not while the calibration runs (it turns them off for its own scopes) */
	pthread_mutex_lock(&d->slow_lock);
	qp_scopes_set_slow(d->scopes, qp_cpu_slow_on(c));
	pthread_mutex_unlock(&d->slow_lock);
	if (c)
		qp_info("CPU sampler ready %.1f ms after the start", (double)(qp_now_ns() - s->start_ns) / 1e6);
	else
		qp_warn("CPU sampling unavailable: %s (scopes still work)", err);
}

static void *side_run(void *arg)
{
	struct side_load *s = arg;
	struct qprofd *d = s->d;
	struct qp_cpu *c = NULL;
	char err[sizeof(d->cpu_error)] = "";
	bool maps;

	/* thread stacks (GET /api/threads): a task iterator, loaded once */
	if (qp_threads_open(&d->threads, d->threads_error, sizeof(d->threads_error)))
		d->threads = NULL;
	pthread_mutex_lock(&s->lock);
	while (!s->fds_set)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	maps = s->heap_opts->thread_stacks_fd >= 0;
	/* opened always (a POST may ask for a heap), loaded with the first
	 * heap target (or at the join, for --heap: after the CPU sampler's CFI
	 * maps it shares); its tracepoints and probes come with a heap target */
	s->heap_ret = qp_heap_open(&d->heap, s->heap_opts, d->heap_error, sizeof(d->heap_error));
	if (!s->heap_ret && maps)
		qp_heap_expect_cfi(d->heap);
	pthread_mutex_lock(&s->lock);
	s->opened = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (!s->live)	/* start-up gave up before the maps: nothing to publish to */
		return NULL;
	if (!maps)
		snprintf(err, sizeof(err), "the scopes object has no thread stacks map to share");
	else if (qp_cpu_open(&c, s->heap_opts->thread_stacks_fd, s->heap_opts->ring_tids_fd, s->slow_rb_fd,
			     s->slow_min_fd, s->o->offcpu_ring_mb << 20, s->o->frequency, s->o->all, s->o->unwind, err,
			     sizeof(err)))
		c = NULL;
	publish(s, c, err);
	return NULL;
}

void side_start(struct side_load *s, const struct options *o, uint64_t start_ns)
{
	s->begun = true;
	s->o = o;
	s->start_ns = start_ns;
	s->started = !pthread_create(&s->th, NULL, side_run, s);
}

static void give(struct side_load *s, bool live, int thread_stacks_fd, int ring_tids_fd, int slow_rb_fd,
		 int slow_min_fd, struct qp_ring *ring)
{
	if (!s->begun)
		return;
	pthread_mutex_lock(&s->lock);
	if (!s->fds_set) {
		s->live = live;
		s->heap_opts->thread_stacks_fd = thread_stacks_fd;
		s->heap_opts->ring_tids_fd = ring_tids_fd;
		s->slow_rb_fd = slow_rb_fd;
		s->slow_min_fd = slow_min_fd;
		s->ring = ring;
		s->fds_set = true;
		pthread_cond_broadcast(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
	if (!s->started && !s->opened)	/* no thread for it: loaded here */
		side_run(s);
}

void side_fds(struct side_load *s, int thread_stacks_fd, int ring_tids_fd, int slow_rb_fd, int slow_min_fd,
	      struct qp_ring *ring)
{
	give(s, true, thread_stacks_fd, ring_tids_fd, slow_rb_fd, slow_min_fd, ring);
}

void side_cancel(struct side_load *s)
{
	give(s, false, -1, -1, -1, -1, NULL);
}

void side_wait_opened(struct side_load *s)
{
	pthread_mutex_lock(&s->lock);
	while (!s->opened)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
}

void side_join(struct side_load *s)
{
	if (s->started)
		pthread_join(s->th, NULL);
	s->started = false;
}
