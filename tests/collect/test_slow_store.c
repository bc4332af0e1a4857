/* test_slow_store.c - the slowest instances (slow_store.c) on hand-made
 * histories: an instance gets exactly the intervals and samples of its
 * thread inside it (others' and those outside are not), split into
 * blocked and runnable time; a reservoir keeps the QP_SLOW_KEEP slowest
 * and reports its threshold; a full pending queue counts its losses; an
 * instance older than the history is marked partial; forgetting a process
 * frees its reservoirs. */
#include <stdlib.h>
#include "collect/slow_store.h"
#include "bpf/offcpu.h"
#include "testlib.h"

static const uint64_t no_scopes[QPROF_SAMPLE_SCOPES];
static uint64_t last_min, last_site;
static unsigned int thresholds;

static void on_threshold(void *arg, uint32_t tgid, uint64_t site, uint64_t min_ns)
{
	(void)arg;
	(void)tgid;
	last_site = site;
	last_min = min_ns;
	thresholds++;
}

/* a stack of one user frame LEAF in table T; its id */
static int32_t stack1(struct qp_cpu_table *t, uint64_t leaf)
{
	struct qp_cpu_sample_in in = { .tgid = 1, .user = &leaf, .nuser = 1, .scopes = no_scopes,
				       .comm = "prog\0\0\0\0\0\0\0\0\0\0\0" };
	int32_t kid = -1, uid = -1;

	CHECK(qp_cpu_table_add_ids(t, &in, &kid, &uid));
	return uid;
}

static bool all(void *arg, uint64_t site)
{
	(void)arg;
	(void)site;
	return true;
}

static bool only_b0(void *arg, uint64_t site)
{
	(void)arg;
	return site == 0xb0;
}

static bool only_d0(void *arg, uint64_t site)
{
	(void)arg;
	return site == 0xd0;
}

static struct slow_record rec(uint32_t tid, uint64_t site, uint64_t begin, uint64_t end)
{
	struct slow_record r = { .tgid = 1, .tid = tid, .site = site, .begin_ns = begin, .end_ns = end,
				 .dur_ns = end - begin };

	return r;
}

int main(void)
{
	struct qp_cpu_table samples, off;
	struct qp_slow_store s;
	struct qp_slow_inst *v;
	uint64_t since;
	size_t n, i;
	int32_t sleep_id, spin_id, other_id;

	qp_cpu_table_init(&samples, 1000, 1000, 1 << 20);
	qp_cpu_table_init(&off, 1000, 1000, 1 << 20);
	CHECK_INT(qp_slow_init(&s), 0);
	sleep_id = stack1(&off, 0x1000);
	spin_id = stack1(&samples, 0x2000);
	other_id = stack1(&samples, 0x3000);

	/* thread 10: blocked 1000..3000 (woken at 2600), preempted 3500..3700;
	 * thread 11 off inside the same time; thread 10 off before the instance */
	qp_slow_note_off(&s, &(struct qp_slow_hoff){ 1, 10, 100, 150, 200, QPROF_OFF_BLOCKED, -1, sleep_id, 0 });
	qp_slow_note_off(&s, &(struct qp_slow_hoff){ 1, 10, 1000, 2600, 3000, QPROF_OFF_BLOCKED, -1, sleep_id, 0 });
	qp_slow_note_off(&s, &(struct qp_slow_hoff){ 1, 11, 1100, 0, 3100, QPROF_OFF_PREEMPTED, -1, -1, 0 });
	qp_slow_note_off(&s, &(struct qp_slow_hoff){ 1, 10, 3500, 0, 3700, QPROF_OFF_PREEMPTED, -1, -1, 0 });
	qp_slow_note_sample(&s, &(struct qp_slow_hsample){ 1, 10, 900, -1, spin_id });
	qp_slow_note_sample(&s, &(struct qp_slow_hsample){ 1, 10, 3800, -1, spin_id });
	qp_slow_note_sample(&s, &(struct qp_slow_hsample){ 1, 11, 3900, -1, other_id });
	qp_slow_note_sample(&s, &(struct qp_slow_hsample){ 1, 10, 5000, -1, other_id });
	{
		struct slow_record r = rec(10, 0xa0, 950, 4000);

		qp_slow_queue(&s, &r);
	}
	qp_slow_join(&s, &samples, &off, 1, on_threshold, NULL);
	CHECK_INT(s.cnt.records, 1);
	CHECK_INT(s.npending, 0);
	CHECK_INT(qp_slow_copy(&s, 1, all, NULL, &v, &n, &since), 0);
	CHECK_INT(n, 1);
	if (n == 1) {
		CHECK_INT(v[0].r.tid, 10);
		CHECK_INT(v[0].nivs, 2);		/* 1000..3000 and 3500..3700, not 100..200, not tid 11 */
		CHECK_INT(v[0].off_ns, 2000 + 200);
		CHECK_INT(v[0].blocked_ns, 1600);	/* 1000..2600 */
		CHECK_INT(v[0].runq_ns, 400 + 200);	/* 2600..3000, and the preemption */
		CHECK_INT(v[0].ivs[0].ts_out, 1000);	/* by time */
		CHECK_INT(v[0].ivs[0].st.nu, 1);
		CHECK_INT(v[0].ivs[0].st.ips[0], 0x1000);
		CHECK_INT(v[0].nsamples, 1);		/* 3800 only: 900 and 5000 are outside, 3900 is tid 11's */
		CHECK_INT(v[0].samples[0].st.ips[0], 0x2000);
		CHECK(!v[0].partial);
		CHECK_INT(since, 0);
	}
	qp_slow_insts_free(v, n);

	/* 40 instances of site 0xb0: the 32 slowest are kept, the threshold is
	 * the fastest of them, reported each time it moves */
	thresholds = 0;
	for (i = 0; i < 40; i++) {
		struct slow_record r = rec(12, 0xb0, 10000 + i * 100, 10000 + i * 100 + 10 + i);

		qp_slow_queue(&s, &r);
	}
	qp_slow_join(&s, &samples, &off, 77, on_threshold, NULL);
	CHECK_INT(qp_slow_copy(&s, 1, only_b0, NULL, &v, &n, &since), 0);
	CHECK_INT(n, QP_SLOW_KEEP);
	{
		uint64_t min = ~0ull;

		for (i = 0; i < n; i++)
			min = v[i].r.dur_ns < min ? v[i].r.dur_ns : min;
		CHECK_INT(min, 10 + 8);		/* durations 10..49: the 8 fastest left */
	}
	CHECK_INT(since, 77);
	CHECK_INT(last_site, 0xb0);
	CHECK_INT(last_min, 18);
	CHECK_INT(thresholds, 1 + 8);		/* when it filled, then at each of 8 replacements */
	CHECK(qp_slow_wanted(&s, &(struct slow_record){ .tgid = 1, .site = 0xb0, .dur_ns = 19 }));
	CHECK(!qp_slow_wanted(&s, &(struct slow_record){ .tgid = 1, .site = 0xb0, .dur_ns = 18 }));
	CHECK(qp_slow_wanted(&s, &(struct slow_record){ .tgid = 1, .site = 0xc0, .dur_ns = 1 }));	/* no reservoir yet */
	qp_slow_insts_free(v, n);

	/* the pending queue is bounded; what does not fit is counted */
	for (i = 0; i < QP_SLOW_PENDING + 5; i++) {
		struct slow_record r = rec(13, 0xc0, 20000, 20001);

		qp_slow_queue(&s, &r);
	}
	CHECK_INT(s.npending, QP_SLOW_PENDING);
	CHECK_INT(s.cnt.pending_lost, 5);
	qp_slow_join(&s, &samples, &off, 78, NULL, NULL);

	/* a history that has wrapped past the instance's begin: partial */
	for (i = 0; i < QP_SLOW_HIST + 10; i++)
		qp_slow_note_sample(&s, &(struct qp_slow_hsample){ 1, 14, 100000 + i, -1, spin_id });
	{
		struct slow_record r = rec(14, 0xd0, 50000, 100000 + QP_SLOW_HIST + 20);

		qp_slow_queue(&s, &r);
	}
	qp_slow_join(&s, &samples, &off, 79, NULL, NULL);
	CHECK_INT(qp_slow_copy(&s, 1, only_d0, NULL, &v, &n, &since), 0);
	CHECK_INT(n, 1);
	if (n == 1) {
		CHECK(v[0].partial);
		CHECK_INT(v[0].nsamples, QP_SLOW_SAMPLES);
		CHECK_INT(v[0].samples_more, QP_SLOW_HIST - QP_SLOW_SAMPLES);
	}
	CHECK_INT(s.cnt.partial, 1);
	qp_slow_insts_free(v, n);

	/* forgetting the process frees its reservoirs and their memory */
	qp_slow_forget(&s, 1);
	CHECK_INT(s.nres, 0);
	CHECK_INT(s.bytes, 0);
	qp_slow_free(&s);
	qp_cpu_table_free(&samples);
	qp_cpu_table_free(&off);
	return test_done("unit_slow_store");
}
