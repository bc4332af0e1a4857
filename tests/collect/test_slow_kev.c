/* test_slow_kev.c - the kernel figures of the ring collector's slow
 * instances (slow_kev.c) on hand-made histories: an instance counts
 * exactly its thread's faults and irq time within [begin, end] and the
 * migrations of the intervals inside it; a BPF instance keeps its own
 * figures; without the history they stay unknown; a span of lost events
 * overlapping an instance, or a history wrapped past its begin, makes it
 * partial; loss spans of consecutive drains merge, and once more spans
 * than are remembered, an instance older than them is partial. */
#include <stdlib.h>
#include "collect/slow_store.h"
#include "bpf/offcpu.h"
#include "testlib.h"

static bool all(void *arg, uint64_t site)
{
	(void)arg;
	(void)site;
	return true;
}

static struct slow_record ring_rec(uint32_t tid, uint64_t site, uint64_t begin, uint64_t end)
{
	struct slow_record r = { .tgid = 1, .tid = tid, .site = site, .begin_ns = begin, .end_ns = end,
				 .dur_ns = end - begin, .flags = QPROF_SLOW_NO_KERNEL };

	return r;
}

/* join R alone in a fresh reservoir, its instance into *OUT; 1 if there */
static int join1(struct qp_slow_store *s, struct qp_cpu_table *t, struct slow_record r, struct qp_slow_inst *out)
{
	struct qp_slow_inst *v;
	uint64_t since;
	size_t n, i;
	int found = 0;

	qp_slow_queue(s, &r);
	qp_slow_join(s, t, t, 1, NULL, NULL);
	if (qp_slow_copy(s, 1, all, NULL, &v, &n, &since))
		return 0;
	for (i = 0; i < n; i++)
		if (v[i].r.site == r.site) {
			*out = v[i];
			out->ivs = NULL;
			out->samples = NULL;
			found = 1;
		}
	qp_slow_insts_free(v, n);
	return found;
}

static void kev(struct qp_slow_store *s, uint32_t tid, uint64_t ts, uint32_t kind, uint32_t ns)
{
	qp_slow_note_kev(s, &(struct qp_slow_hkev){ .tgid = 1, .tid = tid, .ts = ts, .kind = kind, .ns = ns });
}

int main(void)
{
	struct qp_cpu_table t;
	struct qp_slow_store s;
	struct qp_slow_inst in;
	struct slow_record r;
	uint64_t i;

	qp_cpu_table_init(&t, 100, 100, 1 << 20);

	/* not enabled: a ring instance's figures stay unknown */
	CHECK_INT(qp_slow_init(&s), 0);
	kev(&s, 10, 1500, QPROF_KEV_FAULT, 0);
	CHECK_INT(s.cnt.kevents, 0);
	CHECK(join1(&s, &t, ring_rec(10, 0xa0, 1000, 4000), &in));
	CHECK(in.r.flags & QPROF_SLOW_NO_KERNEL);
	qp_slow_free(&s);

	CHECK_INT(qp_slow_init(&s), 0);
	CHECK_INT(qp_slow_kev_enable(&s), 0);
	/* thread 10: faults at 999 (before), 1000, 2500, 4000 (the bounds
	 * count) and 4001 (after); irq runs of 300 and 45 inside, 7 after;
	 * thread 11's fault and irq inside the same time */
	kev(&s, 10, 999, QPROF_KEV_FAULT, 0);
	kev(&s, 10, 1000, QPROF_KEV_FAULT, 0);
	kev(&s, 11, 1200, QPROF_KEV_FAULT, 0);
	kev(&s, 10, 1300, QPROF_KEV_IRQ, 300);
	kev(&s, 11, 1400, QPROF_KEV_IRQ, 1000);
	kev(&s, 10, 2500, QPROF_KEV_FAULT, 0);
	kev(&s, 10, 3000, QPROF_KEV_IRQ, 45);
	kev(&s, 10, 4000, QPROF_KEV_FAULT, 0);
	kev(&s, 10, 4001, QPROF_KEV_FAULT, 0);
	kev(&s, 10, 4100, QPROF_KEV_IRQ, 7);
	CHECK_INT(s.cnt.kevents, 10);
	/* intervals of thread 10: 2 migrations inside, 1 in one that began
	 * before the instance (not inside), 4 of thread 11 */
	qp_slow_note_off(&s, &(struct qp_slow_hoff){ .tgid = 1, .tid = 10, .ts_out = 900, .ts_in = 1100,
						    .reason = QPROF_OFF_PREEMPTED, .kid = -1, .uid = -1,
						    .migrations = 1 });
	qp_slow_note_off(&s, &(struct qp_slow_hoff){ .tgid = 1, .tid = 10, .ts_out = 2000, .ts_in = 2200,
						    .reason = QPROF_OFF_PREEMPTED, .kid = -1, .uid = -1,
						    .migrations = 2 });
	qp_slow_note_off(&s, &(struct qp_slow_hoff){ .tgid = 1, .tid = 11, .ts_out = 2000, .ts_in = 2200,
						    .reason = QPROF_OFF_PREEMPTED, .kid = -1, .uid = -1,
						    .migrations = 4 });
	CHECK(join1(&s, &t, ring_rec(10, 0xa0, 1000, 4000), &in));
	CHECK(!(in.r.flags & QPROF_SLOW_NO_KERNEL));
	CHECK_INT(in.r.page_faults, 3);		/* 1000, 2500, 4000 */
	CHECK_INT(in.r.irq_ns, 345);
	CHECK_INT(in.r.migrations, 2);
	CHECK(!in.partial);
	/* a BPF instance keeps the figures BPF sent */
	r = ring_rec(10, 0xb0, 1000, 4000);
	r.flags = 0;
	r.page_faults = 9;
	r.migrations = 8;
	r.irq_ns = 7;
	CHECK(join1(&s, &t, r, &in));
	CHECK_INT(in.r.page_faults, 9);
	CHECK_INT(in.r.migrations, 8);
	CHECK_INT(in.r.irq_ns, 7);

	/* a loss span overlapping the instance makes it partial; one before
	 * it does not; spans of consecutive drains merge */
	qp_slow_kev_loss(&s, 5000, 5050);
	qp_slow_kev_loss(&s, 5050, 5100);
	CHECK_INT(s.nloss, 1);
	CHECK_INT(s.loss[0][1], 5100);
	CHECK(join1(&s, &t, ring_rec(10, 0xc0, 5100, 6000), &in));
	CHECK(in.partial);
	CHECK_INT(s.cnt.partial, 1);
	CHECK(join1(&s, &t, ring_rec(10, 0xc1, 5101, 6000), &in));
	CHECK(!in.partial);
	/* more spans than remembered: an instance older than the oldest kept is partial */
	for (i = 0; i < QP_SLOW_LOSSES; i++)
		qp_slow_kev_loss(&s, 10000 + i * 100, 10000 + i * 100 + 10);
	CHECK_INT(s.nloss, QP_SLOW_LOSSES + 1);
	CHECK(join1(&s, &t, ring_rec(10, 0xc2, 5200, 5300), &in));	/* between spans, the first forgotten */
	CHECK(in.partial);
	CHECK(join1(&s, &t, ring_rec(10, 0xc3, 10020, 10090), &in));	/* between two remembered */
	CHECK(!in.partial);

	/* a history wrapped past the instance's begin: partial, faults counted from what is left */
	for (i = 0; i < QP_SLOW_HIST + 5; i++)
		kev(&s, 12, 100000 + i, QPROF_KEV_FAULT, 0);
	CHECK(join1(&s, &t, ring_rec(12, 0xd0, 99000, 100000 + QP_SLOW_HIST + 10), &in));
	CHECK(in.partial);
	CHECK_INT(in.r.page_faults, QP_SLOW_HIST);
	qp_slow_free(&s);
	qp_cpu_table_free(&t);
	return test_done("unit_slow_kev");
}
