/* collect_slow.c - the slowest instances' side of the CPU collector: the
 * ring collector's flight recorders fed into the store (slow_store.h), the
 * copies the model reads, and the windows of seconds= queries
 * (slow_window.h) opened and closed under the collector's lock, which is
 * never held while a window runs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include "cpu_internal.h"
#include "common/log.h"
#include "slow_window.h"
#include "common/util.h"

#define RING_CHUNK 4096
#define SUBMIT_PAUSE_NS 2000000L	/* a scope exit stamped before a window's end submits within this */

/* Write slot F (the seqlock of scopes.h, struct slow_floor: seq odd while
 * the fields change; the release fences keep the stores in order, as an
 * exit's loads are on x86) */
static void floor_write(struct slow_floor *f, uint32_t tgid, uint64_t site, uint64_t min_ns)
{
	uint32_t seq = __atomic_load_n(&f->seq, __ATOMIC_RELAXED);

	__atomic_store_n(&f->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&f->tgid, tgid, __ATOMIC_RELAXED);
	__atomic_store_n(&f->site, site, __ATOMIC_RELAXED);
	__atomic_store_n(&f->min_ns, min_ns, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&f->seq, seq + 2, __ATOMIC_RELAXED);
}

/* a reservoir's threshold moved: BPF sends only instances that reach it.
 * In the key's slot of slow_floor when it owns it or the slot is free (an
 * exit then needs no hash lookup), and in slow_min for the others. Called
 * under c->lock, which makes the daemon the slots' single writer. */
void qp_cpu_slow_threshold(void *arg, uint32_t tgid, uint64_t site, uint64_t min_ns)
{
	struct qp_cpu *c = arg;
	struct mark_key k = { .tgid = tgid, .site = site };

	if (bpf_map_update_elem(c->slow_min_fd, &k, &min_ns, BPF_ANY))
		qp_debug("slow threshold of pid %u: %s", tgid, strerror(errno));
	if (c->slow_floor) {
		struct slow_floor *f = &c->slow_floor[qprof_slow_slot(tgid, site)];

		if (!f->tgid || (f->tgid == tgid && f->site == site))
			floor_write(f, tgid, site, min_ns);
	}
}

void qp_cpu_slow_floor_forget(struct qp_cpu *c, uint32_t pid)
{
	uint32_t i;

	for (i = 0; c->slow_floor && i < QPROF_SLOW_FLOOR_SLOTS; i++)
		if (c->slow_floor[i].tgid == pid)
			floor_write(&c->slow_floor[i], 0, 0, 0);
}

void qp_cpu_set_slow_floor(struct qp_cpu *c, struct slow_floor *floor)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->slow_floor = c->slow_on ? floor : NULL;
	pthread_mutex_unlock(&c->lock);
}

void qp_cpu_set_ring(struct qp_cpu *c, struct qp_ring *ring)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	if (ring && !c->ring_buf)
		c->ring_buf = malloc(RING_CHUNK * sizeof(*c->ring_buf));
	if (ring && !c->ring_pids)
		c->ring_pids = malloc(RING_CHUNK * sizeof(*c->ring_pids));
	c->ring = c->ring_buf && c->ring_pids ? ring : NULL;
	pthread_mutex_unlock(&c->lock);
}

void qp_slow_ring_feed(struct qp_cpu *c)
{
	uint64_t missed;
	size_t n, i;

	if (!c->ring || !c->slow_on || c->off_error[0])
		return;
	do {
		n = qp_ring_instances_all(c->ring, c->ring_buf, c->ring_pids, RING_CHUNK, &missed);
		c->slow.cnt.ring_missed += missed;
		for (i = 0; i < n; i++) {
			const struct qp_ring_inst *in = &c->ring_buf[i];
			struct slow_record r = { 0 };

			if (in->kind != QPROF_REC_EXIT || in->end_ns < in->begin_ns)
				continue;
			r.tgid = c->ring_pids[i];
			r.tid = in->tid;
			r.site = in->site;
			r.parent = in->parent;
			r.begin_ns = in->begin_ns;
			r.end_ns = in->end_ns;
			r.dur_ns = in->end_ns - in->begin_ns;
			r.flags = QPROF_SLOW_NO_KERNEL;
			if (!qp_slow_wanted(&c->slow, &r))
				continue;
			/* a full queue is joined now: these ended before the
			 * consume, so their kernel events are in */
			if (c->slow.npending == QP_SLOW_PENDING) {
				ring_buffer__consume(c->rb);
				qp_offcpu_losses_locked(c);
				qp_slow_join(&c->slow, &c->tab, &c->off, qp_now_ns(), qp_cpu_slow_threshold, c);
			}
			qp_slow_queue(&c->slow, &r);
		}
	} while (n == RING_CHUNK);
}

bool qp_cpu_slow_on(const struct qp_cpu *c)
{
	return c && c->slow_on && !c->off_error[0];
}

int qp_cpu_slow_copy(struct qp_cpu *c, uint32_t pid, bool (*keep)(void *arg, uint64_t site), void *arg,
		     struct qp_slow_inst **out, size_t *n, uint64_t *since_ns)
{
	int ret;

	pthread_mutex_lock(&c->lock);
	qp_cpu_drain_locked(c);
	ret = qp_slow_copy(&c->slow, pid, keep, arg, out, n, since_ns);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

void qp_cpu_slow_counters(struct qp_cpu *c, struct qp_slow_counters *out)
{
	memset(out, 0, sizeof(*out));
	if (!c || !c->slow_on)
		return;
	pthread_mutex_lock(&c->pub_lock);
	*out = c->pub.slow;
	pthread_mutex_unlock(&c->pub_lock);
}

int qp_cpu_slow_sites(struct qp_cpu *c, uint32_t pid, uint64_t **sites, size_t *n)
{
	uint64_t *v;
	size_t i;

	*sites = NULL;
	*n = 0;
	pthread_mutex_lock(&c->lock);
	qp_cpu_drain_locked(c);
	v = malloc((c->slow.nres ? c->slow.nres : 1) * sizeof(*v));
	for (i = 0; v && i < c->slow.nres; i++)
		if (c->slow.res[i].tgid == pid)
			v[(*n)++] = c->slow.res[i].site;
	pthread_mutex_unlock(&c->lock);
	if (!v)
		return -ENOMEM;
	*sites = v;
	return 0;
}

int qp_cpu_slow_window_open(struct qp_cpu *c, uint32_t pid, const uint64_t *named, size_t nnamed,
			    const uint64_t *other, size_t nother, unsigned int keep, uint64_t *id)
{
	int ret;

	pthread_mutex_lock(&c->lock);
	ret = qp_slow_win_open(&c->slow, pid, named, nnamed, other, nother, keep, qp_cpu_slow_threshold, c, id);
	/* its sites' thresholds are in BPF: a scope exit stamped from now on
	 * reads them */
	if (!ret)
		qp_slow_win_time(&c->slow, *id, false, qp_now_ns());
	qp_cpu_publish_locked(c);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int qp_cpu_slow_window_close(struct qp_cpu *c, uint64_t id, struct qp_slow_inst **out, size_t *n,
			     bool *complete)
{
	struct timespec pause = { 0, SUBMIT_PAUSE_NS };
	int ret;

	pthread_mutex_lock(&c->lock);
	qp_slow_win_time(&c->slow, id, true, qp_now_ns());
	pthread_mutex_unlock(&c->lock);
	nanosleep(&pause, NULL);
	pthread_mutex_lock(&c->lock);
	qp_cpu_drain_locked(c);
	ret = qp_slow_win_close(&c->slow, id, qp_cpu_slow_threshold, c, out, n, complete);
	qp_cpu_publish_locked(c);
	pthread_mutex_unlock(&c->lock);
	return ret;
}
