/* ring_spans.c - see ring_spans.h: the ring collector's pending table of
 * spans across threads, its queue of events waiting for the watermark, the
 * pairing in time order and the sweep of abandoned begins. The table is
 * the one hash table of qprofd (hashtab.h), which has no delete: an ended
 * begin is marked dead and the table is rebuilt with the live ones once the
 * dead outnumber them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ring_spans.h"

#define SWEEP_NS 250000000ull	/* as the daemon's sweep of the BPF table */
#define FUTURE_NS 2000000000ull	/* a stamp further ahead is no record of ours */

struct qp_ring_span_key {
	uint32_t pid, pad;
	uint64_t name, id;
};

struct qp_ring_span_pend {
	uint64_t begin_ns, site;
	uint32_t live, pad;
};

void qp_ring_spans_init(struct qp_ring_spans *sp, size_t max_live, uint64_t timeout_ns, size_t max_q)
{
	memset(sp, 0, sizeof(*sp));
	qp_htab_init(&sp->pending, sizeof(struct qp_ring_span_pend));
	sp->max_live = max_live;
	sp->timeout_ns = timeout_ns;
	sp->max_q = max_q;
}

void qp_ring_spans_free(struct qp_ring_spans *sp)
{
	qp_htab_free(&sp->pending);
	free(sp->q);
	memset(sp, 0, sizeof(*sp));
}

int qp_ring_spans_add(struct qp_ring_spans *sp, const struct qp_ring_span_ev *e, uint64_t now_ns)
{
	if (e->ns > now_ns + FUTURE_NS)
		return -ERANGE;
	if (sp->nq == sp->qcap) {
		size_t cap = sp->qcap ? sp->qcap * 2 : 1024;
		struct qp_ring_span_ev *v;

		if (cap > sp->max_q)
			cap = sp->max_q;
		if (cap <= sp->nq)
			return -ENOSPC;
		v = realloc(sp->q, cap * sizeof(*v));
		if (!v)
			return -ENOSPC;
		sp->q = v;
		sp->qcap = cap;
	}
	sp->q[sp->nq++] = *e;
	return 0;
}

/* BEGIN before a step before an END stamped alike */
static int rank(uint32_t kind)
{
	return kind == QPROF_REC_BEGIN ? 0 : kind == QPROF_REC_MARK ? 1 : 2;
}

static int cmp_ev(const void *pa, const void *pb)
{
	const struct qp_ring_span_ev *a = pa, *b = pb;

	if (a->ns != b->ns)
		return a->ns < b->ns ? -1 : 1;
	if (rank(a->kind) != rank(b->kind))
		return rank(a->kind) - rank(b->kind);
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

/* The table with its live entries only (and none of PID when pid != 0). */
static int rebuild(struct qp_ring_spans *sp, uint32_t pid)
{
	struct qp_htab nt;
	size_t i, len;

	qp_htab_init(&nt, sizeof(struct qp_ring_span_pend));
	sp->live = 0;
	for (i = 0; i < sp->pending.n; i++) {
		const struct qp_ring_span_pend *p = qp_htab_value(&sp->pending, i);
		const char *k = qp_htab_key(&sp->pending, i, &len);
		uint32_t kp;
		int64_t j;

		memcpy(&kp, k, sizeof(kp));
		if (!p->live || (pid && kp == pid))
			continue;
		j = qp_htab_add(&nt, k, len, NULL);
		if (j < 0) {
			qp_htab_free(&nt);
			return (int)j;
		}
		memcpy(qp_htab_value(&nt, (size_t)j), p, sizeof(*p));
		sp->live++;
	}
	qp_htab_free(&sp->pending);
	sp->pending = nt;
	return 0;
}

static void one(struct qp_ring_spans *sp, struct qp_ring_agg *a, const struct qp_ring_span_ev *e,
		struct qp_ring_counts *c, struct qp_ring_flight *fl)
{
	struct qp_ring_span_key k = { .pid = e->pid, .name = e->name, .id = e->id };
	struct qp_ring_span_pend *p = NULL;
	struct qp_ring_inst in = { .arg = e->id, .tid = e->tid };
	int64_t i = qp_htab_find(&sp->pending, &k, sizeof(k));

	if (i >= 0) {
		p = qp_htab_value(&sp->pending, (size_t)i);
		if (!p->live)
			p = NULL;
	}
	switch (e->kind) {
	case QPROF_REC_BEGIN:
		if (p) {	/* the id is pending: the newer begin wins */
			c->span_id_reused++;
			p->begin_ns = e->ns;
			p->site = e->site;
			return;
		}
		if (sp->live >= sp->max_live) {
			c->span_table_full++;
			return;
		}
		if (i < 0)
			i = qp_htab_add(&sp->pending, &k, sizeof(k), NULL);
		if (i < 0) {
			c->span_table_full++;
			return;
		}
		p = qp_htab_value(&sp->pending, (size_t)i);
		p->begin_ns = e->ns;
		p->site = e->site;
		p->live = 1;
		sp->live++;
		return;
	case QPROF_REC_MARK:
		if (!p) {
			c->span_step_no_begin++;
			return;
		}
		in.kind = QP_RING_INST_ASTEP;
		in.site = e->site;
		in.parent = p->site;
		in.begin_ns = in.end_ns = e->ns;
		qp_ring_flight_put(fl, &in);
		qp_ring_agg_add(a, e->pid, e->site, p->site, e->ns > p->begin_ns ? e->ns - p->begin_ns : 0, c);
		return;
	default:
		if (!p) {
			c->span_end_no_begin++;
			return;
		}
		in.kind = QP_RING_INST_ASPAN;
		in.site = p->site;
		in.begin_ns = p->begin_ns;
		in.end_ns = e->ns;
		qp_ring_flight_put(fl, &in);
		qp_ring_agg_add(a, e->pid, p->site, 0, e->ns > p->begin_ns ? e->ns - p->begin_ns : 0, c);
		p->live = 0;
		sp->live--;
		return;
	}
}

static void sweep(struct qp_ring_spans *sp, uint64_t upto, qp_ring_pid_fn who, void *arg)
{
	size_t i;

	sp->swept_ns = upto;
	for (i = 0; i < sp->pending.n; i++) {
		struct qp_ring_span_pend *p = qp_htab_value(&sp->pending, i);
		struct qp_ring_counts *c = NULL;
		struct qp_ring_flight *fl = NULL;
		uint32_t pid;

		if (!p->live || p->begin_ns + sp->timeout_ns > upto)
			continue;
		memcpy(&pid, qp_htab_key(&sp->pending, i, NULL), sizeof(pid));
		who(arg, pid, &c, &fl);
		if (c)
			c->span_abandoned++;
		p->live = 0;
		sp->live--;
	}
}

void qp_ring_spans_pair(struct qp_ring_spans *sp, struct qp_ring_agg *a, uint64_t upto, qp_ring_pid_fn who,
			void *arg)
{
	bool all = sp->nq == sp->max_q;
	size_t i;

	if (sp->nq > 1)
		qsort(sp->q, sp->nq, sizeof(*sp->q), cmp_ev);
	for (i = 0; i < sp->nq && (all || sp->q[i].ns < upto); i++) {
		struct qp_ring_counts *c = NULL;
		struct qp_ring_flight *fl = NULL;

		who(arg, sp->q[i].pid, &c, &fl);
		if (c)
			one(sp, a, &sp->q[i], c, fl);
	}
	if (i) {
		memmove(sp->q, sp->q + i, (sp->nq - i) * sizeof(*sp->q));
		sp->nq -= i;
	}
	if (upto >= sp->swept_ns + SWEEP_NS)
		sweep(sp, upto, who, arg);
	/* ended begins stay in the table until they outnumber the live ones */
	if (sp->pending.n - sp->live > 4096 && sp->pending.n - sp->live > sp->live)
		rebuild(sp, 0);
}

int qp_ring_spans_forget(struct qp_ring_spans *sp, uint32_t pid)
{
	size_t i, k = 0;

	for (i = 0; i < sp->nq; i++)
		if (sp->q[i].pid != pid)
			sp->q[k++] = sp->q[i];
	sp->nq = k;
	return rebuild(sp, pid);
}
