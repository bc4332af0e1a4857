/* slow_kev.c - the migrations, page faults and irq time of the ring
 * collector's slow instances. The program writes their enters and exits
 * into its own memory, so the kernel never sees them: instead each user
 * page fault and irq run of a ring target's thread inside an open scope
 * comes as a time-stamped event (offcpu.h, struct kev_record), kept here
 * in a bounded history beside the off-CPU intervals (which carry the
 * migrations made while they lasted: a task moves only while off the
 * CPU), and an instance counts its thread's events within [begin, end]
 * when it is joined. Spans of time in which events were lost are
 * remembered, and an instance overlapping one, or older than the history,
 * is partial. See slow_store.h. */
#include <errno.h>
#include <stdlib.h>
#include "slow_store.h"
#include "bpf/offcpu.h"

/* as slow_store.c: entries a little out of order across CPUs */
#define SLACK_NS 1000000ull

int qp_slow_kev_enable(struct qp_slow_store *s)
{
	if (s->hk)
		return 0;
	s->hk = calloc(QP_SLOW_HIST, sizeof(*s->hk));
	return s->hk ? 0 : -ENOMEM;
}

void qp_slow_note_kev(struct qp_slow_store *s, const struct qp_slow_hkev *h)
{
	if (!s->hk)
		return;
	s->hk[s->hk_n++ % QP_SLOW_HIST] = *h;
	s->cnt.kevents++;
}

void qp_slow_kev_loss(struct qp_slow_store *s, uint64_t from_ns, uint64_t to_ns)
{
	uint64_t *l;

	if (s->nloss) {	/* one drain after another: one span */
		l = s->loss[(s->nloss - 1) % QP_SLOW_LOSSES];
		if (from_ns <= l[1]) {
			l[1] = to_ns > l[1] ? to_ns : l[1];
			return;
		}
	}
	l = s->loss[s->nloss++ % QP_SLOW_LOSSES];
	l[0] = from_ns;
	l[1] = to_ns;
}

/* Whether events of [BEGIN, END] may have been lost. */
static bool lost_inside(const struct qp_slow_store *s, uint64_t begin, uint64_t end)
{
	uint64_t i, n = s->nloss < QP_SLOW_LOSSES ? s->nloss : QP_SLOW_LOSSES;

	/* spans forgotten: anything before the oldest remembered may overlap one */
	if (s->nloss > QP_SLOW_LOSSES && begin <= s->loss[s->nloss % QP_SLOW_LOSSES][0])
		return true;
	for (i = 0; i < n; i++)
		if (s->loss[i][0] <= end && begin <= s->loss[i][1])
			return true;
	return false;
}

void qp_slow_kev_join(const struct qp_slow_store *s, struct qp_slow_inst *in, uint64_t migrations)
{
	const struct slow_record *r = &in->r;
	uint64_t i, faults = 0, irq = 0;

	if (!s->hk)
		return;
	for (i = 0; i < s->hk_n && i < QP_SLOW_HIST; i++) {
		const struct qp_slow_hkev *h = &s->hk[(s->hk_n - 1 - i) % QP_SLOW_HIST];

		if (h->ts + SLACK_NS < r->begin_ns)
			break;
		if (h->tid != r->tid || h->tgid != r->tgid || h->ts < r->begin_ns || h->ts > r->end_ns)
			continue;
		if (h->kind == QPROF_KEV_FAULT)
			faults++;
		else if (h->kind == QPROF_KEV_IRQ)
			irq += h->ns;
	}
	if ((s->hk_n > QP_SLOW_HIST && i == QP_SLOW_HIST) || lost_inside(s, r->begin_ns, r->end_ns))
		in->partial = true;
	in->r.migrations = migrations > UINT32_MAX ? UINT32_MAX : (uint32_t)migrations;
	in->r.page_faults = faults > UINT32_MAX ? UINT32_MAX : (uint32_t)faults;
	in->r.irq_ns = irq;
	in->r.flags &= ~QPROF_SLOW_NO_KERNEL;
}
