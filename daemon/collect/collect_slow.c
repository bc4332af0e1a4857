/* collect_slow.c - see collect_slow.h. The windows of seconds= queries
 * (slow_window.h) are opened and closed under this side's lock, which is
 * never held while a window runs. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "collect_slow.h"
#include "cpu_events.h"
#include "common/log.h"
#include "ring_collect.h"
#include "slow_window.h"
#include "common/util.h"

#define RING_CHUNK 4096

struct qp_slow_side {
	pthread_mutex_t lock;		/* the store */
	struct qp_slow_store st;
	int slow_min_fd;
	struct slow_floor *floor;	/* the thresholds' slots (bpf/scopes.h), written under lock; NULL: none */
	/* losses of kernel events seen so far (apply) */
	uint64_t kev_lost_seen, off_lost_seen, losses_at;
	pthread_mutex_t feed_lock;	/* the ring, held by a fetch */
	struct qp_ring *ring;		/* its flight recorders feed the store too */
	struct qp_ring_inst *ring_buf;
	uint32_t *ring_pids;		/* the pid of each of ring_buf */
};

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
 * under s->lock (the join), which makes the daemon the slots' single
 * writer. */
static void write_threshold(void *arg, uint32_t tgid, uint64_t site, uint64_t min_ns)
{
	struct qp_slow_side *s = arg;
	struct mark_key k = { .tgid = tgid, .site = site };

	if (bpf_map_update_elem(s->slow_min_fd, &k, &min_ns, BPF_ANY))
		qp_debug("slow threshold of pid %u: %s", tgid, strerror(errno));
	if (s->floor) {
		struct slow_floor *f = &s->floor[qprof_slow_slot(tgid, site)];

		if (!f->tgid || (f->tgid == tgid && f->site == site))
			floor_write(f, tgid, site, min_ns);
	}
}

void qp_slow_side_set_floor(struct qp_slow_side *s, struct slow_floor *floor)
{
	if (!s)
		return;
	qp_lock(&s->lock);
	s->floor = floor;
	pthread_mutex_unlock(&s->lock);
}

int qp_slow_side_new(struct qp_slow_side **out, int slow_min_fd)
{
	struct qp_slow_side *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s || qp_slow_init(&s->st)) {
		free(s);
		return -ENOMEM;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->feed_lock, NULL);
	s->slow_min_fd = slow_min_fd;
	*out = s;
	return 0;
}

void qp_slow_side_free(struct qp_slow_side *s)
{
	if (!s)
		return;
	qp_slow_free(&s->st);
	free(s->ring_buf);
	free(s->ring_pids);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->feed_lock);
	free(s);
}

int qp_slow_side_kev_on(struct qp_slow_side *s)
{
	s->losses_at = qp_now_ns();
	return qp_slow_kev_enable(&s->st);
}

void qp_slow_side_kev_off(struct qp_slow_side *s)
{
	free(s->st.hk);
	s->st.hk = NULL;
}

void qp_slow_side_set_ring(struct qp_slow_side *s, struct qp_ring *ring)
{
	qp_lock(&s->feed_lock);
	if (ring && !s->ring_buf)
		s->ring_buf = malloc(RING_CHUNK * sizeof(*s->ring_buf));
	if (ring && !s->ring_pids)
		s->ring_pids = malloc(RING_CHUNK * sizeof(*s->ring_pids));
	s->ring = s->ring_buf && s->ring_pids ? ring : NULL;
	pthread_mutex_unlock(&s->feed_lock);
}

void qp_slow_side_fetch(struct qp_slow_side *s, struct qp_cpu_batch *b)
{
	uint64_t missed, missed_all = 0;
	bool full = false;
	size_t n, i;

	qp_lock(&s->feed_lock);
	do {
		if (!s->ring)
			break;
		n = qp_ring_instances_all(s->ring, s->ring_buf, s->ring_pids, RING_CHUNK, &missed);
		missed_all += missed;
		/* only what the store would keep goes into the batch: after a
		 * warm-up, the instances slower than the fastest kept */
		qp_lock(&s->lock);
		for (i = 0; i < n; i++) {
			const struct qp_ring_inst *in = &s->ring_buf[i];
			struct slow_record r = { 0 };

			if (in->kind != QPROF_REC_EXIT || in->end_ns < in->begin_ns)
				continue;
			r.tgid = s->ring_pids[i];
			r.tid = in->tid;
			r.site = in->site;
			r.parent = in->parent;
			r.begin_ns = in->begin_ns;
			r.end_ns = in->end_ns;
			r.dur_ns = in->end_ns - in->begin_ns;
			r.flags = QPROF_SLOW_NO_KERNEL;
			if (!qp_slow_wanted(&s->st, &r))
				continue;
			/* no room: counted in the batch */
			full |= qp_cpu_batch_ring_inst(b, &r) < 0;
		}
		pthread_mutex_unlock(&s->lock);
		/* the rest stays in the flight recorders for the next drain
		 * (counted missed there if they are lapped meanwhile) */
	} while (n == RING_CHUNK && !full);
	pthread_mutex_unlock(&s->feed_lock);
	if (missed_all) {
		qp_lock(&s->lock);
		s->st.cnt.ring_missed += missed_all;
		pthread_mutex_unlock(&s->lock);
	}
}

/* A span of time in which kernel events of ring threads (or intervals)
 * were lost, if any, to the store. */
static void note_losses(struct qp_slow_side *s, const struct qp_cpu_batch *b, uint64_t kev, uint64_t off)
{
	uint64_t now = qp_now_ns();

	s->st.cnt.kevents_lost += b->cnt.kev_bad;
	if (!s->st.hk)
		return;
	s->st.cnt.kevents_lost += kev - s->kev_lost_seen;
	/* lost since the last look: a ring instance overlapping that span is partial */
	if (kev != s->kev_lost_seen || off != s->off_lost_seen || b->cnt.kev_bad)
		qp_slow_kev_loss(&s->st, s->losses_at, now);
	s->kev_lost_seen = kev;
	s->off_lost_seen = off;
	s->losses_at = now;
}

void qp_slow_side_apply(struct qp_slow_side *s, const struct qp_cpu_batch *b, const struct qp_cpu_table *samples,
			const struct qp_cpu_table *off, uint64_t kev_lost, uint64_t off_lost)
{
	size_t i;

	qp_lock(&s->lock);
	s->st.cnt.pending_lost += b->cnt.inst_lost;
	/* slow_rb's records first, with what happened inside them, in order */
	for (i = 0; i < b->n; i++) {
		const struct qp_cpu_rec *r = &b->v[i];

		if (r->kind == QP_CPU_REC_INST) {
			qp_slow_queue(&s->st, &r->inst);
		} else if (r->kind == QP_CPU_REC_SAMPLE && r->kept) {
			struct qp_slow_hsample h = { .tgid = r->tgid, .tid = r->tid, .ts = r->ts,
						     .kid = r->kid, .uid = r->uid };

			qp_slow_note_sample(&s->st, &h);
		} else if (r->kind == QP_CPU_REC_OFF && r->kept) {
			struct qp_slow_hoff h = { .tgid = r->tgid, .tid = r->tid, .ts_out = r->ts_out,
						  .ts_wake = r->ts_wake, .ts_in = r->ts_in, .reason = r->reason,
						  .kid = r->kid, .uid = r->uid, .migrations = r->migrations };

			qp_slow_note_off(&s->st, &h);
		} else if (r->kind == QP_CPU_REC_KEV) {
			struct qp_slow_hkev h = { .tgid = r->tgid, .tid = r->tid, .ts = r->ts,
						  .kind = r->kev_kind, .ns = r->kev_ns };

			qp_slow_note_kev(&s->st, &h);
		}
	}
	note_losses(s, b, kev_lost, off_lost);
	/* then the ring collector's, fetched before the consume: their kernel
	 * events are in. A full queue is joined first */
	for (i = 0; i < b->n; i++) {
		const struct qp_cpu_rec *r = &b->v[i];

		if (r->kind != QP_CPU_REC_RING_INST || !qp_slow_wanted(&s->st, &r->inst))
			continue;
		if (s->st.npending == QP_SLOW_PENDING)
			qp_slow_join(&s->st, samples, off, qp_now_ns(), write_threshold, s);
		qp_slow_queue(&s->st, &r->inst);
	}
	if (s->st.npending)
		qp_slow_join(&s->st, samples, off, qp_now_ns(), write_threshold, s);
	pthread_mutex_unlock(&s->lock);
}

void qp_slow_side_forget(struct qp_slow_side *s, uint32_t pid)
{
	uint32_t i;

	qp_lock(&s->lock);
	qp_slow_forget(&s->st, pid);
	for (i = 0; s->floor && i < QPROF_SLOW_FLOOR_SLOTS; i++)
		if (s->floor[i].tgid == pid)
			floor_write(&s->floor[i], 0, 0, 0);
	pthread_mutex_unlock(&s->lock);
}

void qp_slow_side_forget_thresholds(struct qp_slow_side *s, uint32_t pid)
{
	qp_cpu_delete_pid_keys(s->slow_min_fd, sizeof(struct mark_key), pid);
}

void qp_slow_side_counters(struct qp_slow_side *s, struct qp_slow_counters *out)
{
	qp_lock(&s->lock);
	*out = s->st.cnt;
	pthread_mutex_unlock(&s->lock);
}

int qp_slow_side_copy(struct qp_slow_side *s, uint32_t pid, bool (*keep)(void *arg, uint64_t site), void *arg,
		      struct qp_slow_inst **out, size_t *n, uint64_t *since_ns)
{
	int ret;

	qp_lock(&s->lock);
	ret = qp_slow_copy(&s->st, pid, keep, arg, out, n, since_ns);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int qp_slow_side_sites(struct qp_slow_side *s, uint32_t pid, uint64_t **sites, size_t *n)
{
	uint64_t *v;
	size_t i;

	*sites = NULL;
	*n = 0;
	qp_lock(&s->lock);
	v = malloc((s->st.nres ? s->st.nres : 1) * sizeof(*v));
	for (i = 0; v && i < s->st.nres; i++)
		if (s->st.res[i].tgid == pid)
			v[(*n)++] = s->st.res[i].site;
	pthread_mutex_unlock(&s->lock);
	if (!v)
		return -ENOMEM;
	*sites = v;
	return 0;
}

int qp_slow_side_window_open(struct qp_slow_side *s, uint32_t pid, const uint64_t *named, size_t nnamed,
			     const uint64_t *other, size_t nother, unsigned int keep, uint64_t *id)
{
	int ret;

	qp_lock(&s->lock);
	ret = qp_slow_win_open(&s->st, pid, named, nnamed, other, nother, keep, write_threshold, s, id);
	/* its sites' thresholds are in BPF: a scope exit stamped from now on
	 * reads them */
	if (!ret)
		qp_slow_win_time(&s->st, *id, false, qp_now_ns());
	pthread_mutex_unlock(&s->lock);
	return ret;
}

void qp_slow_side_window_end(struct qp_slow_side *s, uint64_t id)
{
	qp_lock(&s->lock);
	qp_slow_win_time(&s->st, id, true, qp_now_ns());
	pthread_mutex_unlock(&s->lock);
}

int qp_slow_side_window_close(struct qp_slow_side *s, uint64_t id, struct qp_slow_inst **out, size_t *n,
			      bool *complete)
{
	int ret;

	qp_lock(&s->lock);
	ret = qp_slow_win_close(&s->st, id, write_threshold, s, out, n, complete);
	pthread_mutex_unlock(&s->lock);
	return ret;
}
