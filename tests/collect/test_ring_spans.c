/* test_ring_spans.c - the ring collector's spans across threads
 * (daemon/collect/ring_spans.c, and their records in ring_pair.c) on
 * hand-made events, no root: an END read before the BEGIN another thread
 * wrote earlier still pairs (time order), nothing is paired past the
 * watermark, steps under their span, every drop reason (end or step
 * without a begin, an id reused, the table full, abandoned after the
 * timeout), the table rebuilt as ended spans pile up, a process forgotten,
 * the record triples of the ring (and what is garbage), and a stream of
 * every record group at once (spans, scopes, marks, values, logs). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collect/collect_scopes.h"
#include "collect/ring_pair.h"
#include "collect/ring_spans.h"
#include "testlib.h"

#define PID 7
#define BEGIN_SITE 0x401000ull
#define END_SITE 0x401040ull
#define STEP_SITE 0x401080ull
#define NAME 0x402000ull
#define MS 1000000ull
#define SCOPE_SITE 0x4010c0ull
#define MARK_SITE 0x401200ull
#define LOG_SITE 0x401300ull
#define NAME2 0x402040ull

static struct qp_ring_counts cnt;
static struct qp_ring_flight flight = { .max = 64 };

static void who(void *arg, uint32_t pid, struct qp_ring_counts **c, struct qp_ring_flight **fl)
{
	(void)arg;
	*c = pid == PID ? &cnt : NULL;
	*fl = pid == PID ? &flight : NULL;
}

static void ev(struct qp_ring_spans *sp, uint32_t kind, uint64_t ns, uint64_t id, uint32_t tid)
{
	struct qp_ring_span_ev e = { .ns = ns, .site = kind == QPROF_REC_BEGIN ? BEGIN_SITE :
							 kind == QPROF_REC_MARK ? STEP_SITE : END_SITE,
				     .name = NAME, .id = id, .pid = PID, .tid = tid, .kind = kind };

	CHECK_INT(qp_ring_spans_add(sp, &e, ns), 0);
}

static const struct scope_stats *row(struct qp_ring_agg *a, uint64_t site, uint64_t parent)
{
	struct scope_key k = { .tgid = PID, .site = site, .parent = parent };
	int64_t i = qp_htab_find(&a->rows, &k, sizeof(k));

	return i < 0 ? NULL : qp_htab_value(&a->rows, (size_t)i);
}

static void test_pairing(void)
{
	struct qp_ring_spans sp;
	struct qp_ring_agg a;
	const struct scope_stats *s;

	qp_ring_agg_init(&a, 100);
	qp_ring_spans_init(&sp, 4, 10 * MS, 1024);
	/* the gateway's ring read first: END and STEP before the BEGIN */
	ev(&sp, QPROF_REC_MARK, 1000 * MS + 30, 5, 2);
	ev(&sp, QPROF_REC_END, 1000 * MS + 70, 5, 2);
	ev(&sp, QPROF_REC_BEGIN, 1000 * MS + 10, 5, 1);
	/* a second one whose END is past the watermark */
	ev(&sp, QPROF_REC_BEGIN, 1000 * MS + 100, 6, 1);
	ev(&sp, QPROF_REC_END, 1000 * MS + 500, 6, 2);
	qp_ring_spans_pair(&sp, &a, 1000 * MS + 200, who, NULL);
	s = row(&a, BEGIN_SITE, 0);
	CHECK(s && s->count == 1 && s->sum_ns == 60);
	s = row(&a, STEP_SITE, BEGIN_SITE);
	CHECK(s && s->count == 1 && s->sum_ns == 20);
	CHECK(row(&a, END_SITE, 0) == NULL);
	CHECK_INT(sp.live, 1);	/* id 6 */
	CHECK_INT(sp.nq, 1);	/* its END waits */
	CHECK_INT(flight.seq, 2);
	CHECK_INT(flight.v[0].kind, QP_RING_INST_ASTEP);
	CHECK_INT(flight.v[0].parent, BEGIN_SITE);
	CHECK_INT(flight.v[0].arg, 5);
	CHECK_INT(flight.v[1].kind, QP_RING_INST_ASPAN);
	CHECK_INT(flight.v[1].site, BEGIN_SITE);
	CHECK_INT(flight.v[1].begin_ns, 1000 * MS + 10);
	CHECK_INT(flight.v[1].end_ns, 1000 * MS + 70);
	CHECK_INT(flight.v[1].tid, 2);
	qp_ring_spans_pair(&sp, &a, 1000 * MS + 600, who, NULL);
	s = row(&a, BEGIN_SITE, 0);
	CHECK(s && s->count == 2 && s->sum_ns == 60 + 400 && s->max_ns == 400);
	CHECK_INT(sp.live, 0);
	CHECK_INT(sp.nq, 0);

	/* the reasons */
	ev(&sp, QPROF_REC_END, 1001 * MS, 9, 2);	/* no begin */
	ev(&sp, QPROF_REC_MARK, 1001 * MS + 1, 9, 2);	/* no begin */
	ev(&sp, QPROF_REC_BEGIN, 1001 * MS + 2, 10, 1);
	ev(&sp, QPROF_REC_BEGIN, 1001 * MS + 5, 10, 1);	/* reused: the newer kept */
	ev(&sp, QPROF_REC_END, 1001 * MS + 8, 10, 2);	/* 3 ns, from the newer */
	ev(&sp, QPROF_REC_BEGIN, 1001 * MS + 10, 11, 1);
	ev(&sp, QPROF_REC_BEGIN, 1001 * MS + 11, 12, 1);
	ev(&sp, QPROF_REC_BEGIN, 1001 * MS + 12, 13, 1);
	ev(&sp, QPROF_REC_BEGIN, 1001 * MS + 13, 14, 1);
	ev(&sp, QPROF_REC_BEGIN, 1001 * MS + 14, 15, 1);	/* a fifth pending: table full (4) */
	qp_ring_spans_pair(&sp, &a, 1002 * MS, who, NULL);
	CHECK_INT(cnt.span_end_no_begin, 1);
	CHECK_INT(cnt.span_step_no_begin, 1);
	CHECK_INT(cnt.span_id_reused, 1);
	CHECK_INT(cnt.span_table_full, 1);
	CHECK_INT(cnt.span_abandoned, 0);
	s = row(&a, BEGIN_SITE, 0);
	CHECK(s && s->count == 3 && s->min_ns == 3);
	CHECK_INT(sp.live, 4);
	/* the sweep (every 250 ms of watermark): older than 10 ms, abandoned */
	qp_ring_spans_pair(&sp, &a, 1300 * MS, who, NULL);
	CHECK_INT(cnt.span_abandoned, 4);
	CHECK_INT(sp.live, 0);
	ev(&sp, QPROF_REC_END, 1300 * MS + 1, 11, 2);	/* too late: no begin */
	qp_ring_spans_pair(&sp, &a, 1301 * MS, who, NULL);
	CHECK_INT(cnt.span_end_no_begin, 2);
	CHECK_INT(row(&a, BEGIN_SITE, 0)->count, 3);

	/* forgetting the process: its begins and queued events go, uncounted */
	ev(&sp, QPROF_REC_BEGIN, 1302 * MS, 20, 1);
	qp_ring_spans_pair(&sp, &a, 1303 * MS, who, NULL);
	ev(&sp, QPROF_REC_END, 1304 * MS, 20, 2);
	CHECK_INT(sp.live, 1);
	CHECK_INT(qp_ring_spans_forget(&sp, PID), 0);
	CHECK_INT(sp.live, 0);
	CHECK_INT(sp.nq, 0);
	CHECK_INT(sp.pending.n, 0);
	/* a stamp two seconds ahead of the clock is no record */
	{
		struct qp_ring_span_ev e = { .ns = 5000 * MS, .pid = PID, .kind = QPROF_REC_BEGIN };

		CHECK_INT(qp_ring_spans_add(&sp, &e, 2000 * MS), -ERANGE);
	}
	qp_ring_spans_free(&sp);
	qp_ring_agg_free(&a);
	qp_ring_flight_free(&flight);
}

/* 10,000 spans begun and ended: the table keeps no more than its live
 * ones plus the dead it tolerates; the queue bound forces a pairing. */
static void test_bounds(void)
{
	struct qp_ring_spans sp;
	struct qp_ring_agg a;
	uint64_t i;

	qp_ring_agg_init(&a, 100);
	qp_ring_spans_init(&sp, 16, 10 * MS, 64);
	memset(&cnt, 0, sizeof(cnt));
	for (i = 0; i < 10000; i++) {
		ev(&sp, QPROF_REC_BEGIN, 2000 * MS + 2 * i, i, 1);
		ev(&sp, QPROF_REC_END, 2000 * MS + 2 * i + 1, i, 2);
		if (sp.nq == 64) /* full: paired whatever the watermark */
			qp_ring_spans_pair(&sp, &a, 0, who, NULL);
	}
	qp_ring_spans_pair(&sp, &a, 3000 * MS, who, NULL);
	CHECK_INT(row(&a, BEGIN_SITE, 0)->count, 10000);
	CHECK_INT(row(&a, BEGIN_SITE, 0)->sum_ns, 10000);
	CHECK(sp.pending.n <= 4097 + 16);
	CHECK_INT(cnt.span_end_no_begin + cnt.span_table_full + cnt.span_id_reused, 0);
	qp_ring_spans_free(&sp);
	qp_ring_agg_free(&a);
	qp_ring_flight_free(&flight);
}

/* The ring's records: a triple is a span event; two are garbage. */
static void test_records(void)
{
	static const struct qp_ring_clock clk = { .tsc0 = 0, .ns0 = 1000, .ns_per_tick = 1.0 };
	struct qprof_ring_rec r[12] = {
		{ 100, BEGIN_SITE | QPROF_REC_BEGIN }, { NAME, QPROF_REC_ARG }, { 77, QPROF_REC_ARG },
		{ 110, STEP_SITE | QPROF_REC_MARK }, { NAME, QPROF_REC_ARG }, { 77, QPROF_REC_ARG },
		{ 120, END_SITE | QPROF_REC_END }, { NAME, QPROF_REC_ARG }, { 77, QPROF_REC_ARG },
		{ 130, STEP_SITE | QPROF_REC_MARK }, { NAME, QPROF_REC_ARG },	/* its id missing */
		{ 140, BEGIN_SITE | QPROF_REC_MARK },
	};
	struct qp_ring_reader rd = { .pid = PID, .tid = 3 };
	struct qp_ring_counts c = { 0 };
	struct qp_ring_spans sp;
	struct qp_ring_agg a;

	qp_ring_agg_init(&a, 100);
	qp_ring_spans_init(&sp, 16, 10 * MS, 64);
	rd.spans = &sp;
	qp_ring_feed(&a, &rd, r, 12, &clk, false, 0, &c);
	CHECK_INT(sp.nq, 3);
	CHECK_INT(c.garbage, 2);
	CHECK_INT(c.records, 10);
	CHECK_INT(a.marks.n, 1);	/* the plain mark at 140 */
	CHECK(sp.nq == 3 && sp.q[0].kind == QPROF_REC_BEGIN && sp.q[0].id == 77 && sp.q[0].name == NAME &&
	      sp.q[0].ns == 1100 && sp.q[0].tid == 3);
	CHECK(sp.nq == 3 && sp.q[1].kind == QPROF_REC_MARK && sp.q[2].kind == QPROF_REC_END);
	memset(&cnt, 0, sizeof(cnt));
	qp_ring_spans_pair(&sp, &a, 2000, who, NULL);
	CHECK(row(&a, BEGIN_SITE, 0) && row(&a, BEGIN_SITE, 0)->sum_ns == 20);
	CHECK(row(&a, STEP_SITE, BEGIN_SITE) && row(&a, STEP_SITE, BEGIN_SITE)->sum_ns == 10);
	/* without a span table (a reader of no collector): counted garbage */
	rd.spans = NULL;
	rd.last_ts = 0;
	qp_ring_feed(&a, &rd, r, 3, &clk, false, 0, &c);
	CHECK_INT(c.garbage, 5);
	qp_ring_spans_free(&sp);
	qp_ring_agg_free(&a);
	qp_ring_flight_free(&flight);
}

/* One record scheme for every marker (ring_layout.h): spans' triples,
 * SCOPE_BEGIN/END pairs, plain marks, values and QPROF_LOG heads with
 * their text, interleaved, each read as what it is; a step whose id was
 * lapped is garbage and the log after it is still read. */
static int nlogs;
static char last_log[32];

static void on_log(void *arg, const struct qp_ring_log *l)
{
	(void)arg;
	nlogs++;
	snprintf(last_log, sizeof(last_log), "%s", l->msg);
}

static size_t put_log(struct qprof_ring_rec *r, uint64_t ts, const char *text)
{
	size_t stored = strlen(text), n = (stored + 14) / 15, k;

	r[0].ts = ts;
	r[0].word = LOG_SITE | QPROF_REC_ARG | (uint64_t)stored << 47 | (uint64_t)stored << 55;
	for (k = 0; k < n; k++) {
		char b[16] = { 0 };
		uint64_t hi;

		memcpy(b, text + 15 * k, stored - 15 * k < 15 ? stored - 15 * k : 15);
		memcpy(&r[1 + k].ts, b, 8);
		memcpy(&hi, b + 8, 8);
		r[1 + k].word = hi << 8 | QPROF_REC_LOG_TEXT;
	}
	return 1 + n;
}

static void test_mixed(void)
{
	static const struct qp_ring_clock clk = { .tsc0 = 0, .ns0 = 1000, .ns_per_tick = 1.0 };
	struct qprof_ring_rec r[64];
	struct qp_ring_reader rd = { .pid = PID, .tid = 3 };
	struct qp_ring_counts c = { 0 };
	struct qp_ring_spans sp;
	struct qp_ring_agg a;
	const struct scope_stats *s;
	double one = 1.0;
	uint64_t bits;
	size_t n = 0;

	memcpy(&bits, &one, sizeof(bits));
	r[n++] = (struct qprof_ring_rec){ 100, SCOPE_SITE | QPROF_REC_BEGIN };
	r[n++] = (struct qprof_ring_rec){ NAME2, QPROF_REC_ARG };
	n += put_log(r + n, 105, "in the scope");		/* 1 text record */
	r[n++] = (struct qprof_ring_rec){ 110, BEGIN_SITE | QPROF_REC_BEGIN };
	r[n++] = (struct qprof_ring_rec){ NAME, QPROF_REC_ARG };
	r[n++] = (struct qprof_ring_rec){ 77, QPROF_REC_ARG };
	n += put_log(r + n, 115, "after the span's begin, longer than 15"); /* 3 */
	r[n++] = (struct qprof_ring_rec){ 120, STEP_SITE | QPROF_REC_MARK };
	r[n++] = (struct qprof_ring_rec){ NAME, QPROF_REC_ARG };
	r[n++] = (struct qprof_ring_rec){ 77, QPROF_REC_ARG };
	r[n++] = (struct qprof_ring_rec){ 125, MARK_SITE | QPROF_REC_MARK };
	n += put_log(r + n, 126, "");				/* a head alone */
	r[n++] = (struct qprof_ring_rec){ 130, END_SITE | QPROF_REC_END };
	r[n++] = (struct qprof_ring_rec){ NAME, QPROF_REC_ARG };
	r[n++] = (struct qprof_ring_rec){ 77, QPROF_REC_ARG };
	r[n++] = (struct qprof_ring_rec){ 140, SCOPE_SITE | QPROF_REC_END };
	r[n++] = (struct qprof_ring_rec){ NAME2, QPROF_REC_ARG };
	r[n++] = (struct qprof_ring_rec){ 150, MARK_SITE | QPROF_REC_VALUE };
	r[n++] = (struct qprof_ring_rec){ bits, QPROF_REC_ARG };
	n += put_log(r + n, 155, "x");
	r[n++] = (struct qprof_ring_rec){ 160, STEP_SITE | QPROF_REC_MARK };
	r[n++] = (struct qprof_ring_rec){ NAME, QPROF_REC_ARG };	/* its id lapped */
	n += put_log(r + n, 165, "last");
	CHECK_INT(n, 29);
	qp_ring_agg_init(&a, 100);
	a.log_fn = on_log;
	qp_ring_spans_init(&sp, 16, 10 * MS, 64);
	rd.spans = &sp;
	qp_ring_feed(&a, &rd, r, n, &clk, false, 0, &c);
	CHECK_INT(c.garbage, 2);
	CHECK_INT(c.records, 27);
	CHECK_INT(c.logs, 5);
	CHECK_INT(nlogs, 5);
	CHECK_STR(last_log, "last");
	CHECK_INT(sp.nq, 3);
	CHECK(sp.nq == 3 && sp.q[0].kind == QPROF_REC_BEGIN && sp.q[1].kind == QPROF_REC_MARK &&
	      sp.q[2].kind == QPROF_REC_END && sp.q[2].id == 77 && sp.q[2].ns == 1130);
	CHECK_INT(a.marks.n, 1);
	CHECK_INT(a.values.n, 1);
	s = row(&a, SCOPE_SITE, 0);
	CHECK(s && s->count == 1 && s->sum_ns == 40);
	qp_ring_spans_pair(&sp, &a, 2000, who, NULL);
	s = row(&a, BEGIN_SITE, 0);
	CHECK(s && s->count == 1 && s->sum_ns == 20);
	qp_ring_spans_free(&sp);
	qp_ring_agg_free(&a);
	qp_ring_flight_free(&flight);
}

int main(void)
{
	test_pairing();
	test_bounds();
	test_records();
	test_mixed();
	return test_done("ring_spans");
}
