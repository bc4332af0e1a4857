/* test_ring_pair.c - the ring collector's pairing (daemon/collect/ring_pair.c)
 * on hand-made records, no root: nesting and parents, exact durations, min,
 * max and histogram; SCOPE_BEGIN/END keyed by the name; every drop reason
 * (no enter, out of order, too deep, a new thread owner, records lost);
 * garbage (a lone argument, time going back, a site that is no address, an
 * argument missing); records before the attach; marks; the flight
 * recorder; forgetting a process; a full table; QPROF_LOG records; the
 * exact (compensated) sum of values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collect/collect_scopes.h"
#include "collect/ring_pair.h"
#include "testlib.h"

#define A 0x401000ull
#define B 0x401040ull
#define C 0x401080ull
#define NAME 0x402000ull
#define D 0x500000ull

static struct qprof_ring_rec recs[256];
static size_t nrecs;

static void put(uint64_t ts, uint64_t site, unsigned kind)
{
	recs[nrecs].ts = ts;
	recs[nrecs++].word = site | kind;
}

static void put_arg(uint64_t arg)
{
	recs[nrecs].ts = arg;
	recs[nrecs++].word = QPROF_REC_ARG;
}

/* the clock: ticks are ns, offset 1000 */
static const struct qp_ring_clock clk = { .tsc0 = 0, .ns0 = 1000, .ns_per_tick = 1.0 };

static const struct scope_stats *row(struct qp_ring_agg *a, uint32_t pid, uint64_t site, uint64_t parent)
{
	struct scope_key k = { .tgid = pid, .site = site, .parent = parent };
	int64_t i = qp_htab_find(&a->rows, &k, sizeof(k));

	return i < 0 ? NULL : qp_htab_value(&a->rows, (size_t)i);
}

static void feed(struct qp_ring_agg *a, struct qp_ring_reader *rd, struct qp_ring_counts *c, uint64_t min_ts)
{
	qp_ring_feed(a, rd, recs, nrecs, &clk, false, min_ts, c);
	nrecs = 0;
}

static void test_nesting(void)
{
	struct qp_ring_agg a;
	struct qp_ring_reader rd = { .pid = 7, .tid = 8 };
	struct qp_ring_flight fl = { 0 };
	struct qp_ring_counts c = { 0 };
	const struct scope_stats *s;

	qp_ring_agg_init(&a, 100);
	fl.max = 16;
	rd.fl = &fl;
	put(100, 0, QPROF_REC_THREAD);
	recs[0].word = (1ull << 32) | (9ull << 3); /* generation 1, tid 9 */
	put(110, A, QPROF_REC_ENTER);
	put(120, B, QPROF_REC_ENTER);
	put(150, B, QPROF_REC_EXIT);	/* B: 30 under A */
	put(160, B, QPROF_REC_ENTER);
	put(260, B, QPROF_REC_EXIT);	/* B: 100 under A */
	put(300, A, QPROF_REC_EXIT);	/* A: 190 at top */
	put(310, C, QPROF_REC_BEGIN);
	put_arg(NAME);
	put(320, A, QPROF_REC_ENTER);
	put(330, A, QPROF_REC_EXIT);	/* A: 10 under C */
	put(400, C + 64, QPROF_REC_END);	/* another END site, the same name */
	put_arg(NAME);			/* C: 90 at top, recorded under the BEGIN site */
	put(410, A, QPROF_REC_MARK);
	feed(&a, &rd, &c, 0);
	CHECK_INT(rd.tid, 9);
	CHECK_INT(rd.depth, 0);
	s = row(&a, 7, B, A);
	CHECK(s != NULL);
	if (s) {
		CHECK_INT(s->count, 2);
		CHECK_INT(s->sum_ns, 130);
		CHECK_INT(s->min_ns, 30);
		CHECK_INT(s->max_ns, 100);
		CHECK_INT(s->hist[qprof_hist_index(30)], 1);
		CHECK_INT(s->hist[qprof_hist_index(100)], 1);
	}
	/* A inside the SCOPE_BEGIN span C is no child of it (C is no block
	 * scope): both A's at top level, 190 + 10 */
	s = row(&a, 7, A, 0);
	CHECK(s && s->count == 2 && s->sum_ns == 200);
	CHECK(row(&a, 7, A, C) == NULL);
	s = row(&a, 7, C, 0);
	CHECK(s && s->count == 1 && s->sum_ns == 90);
	CHECK(row(&a, 7, C + 64, 0) == NULL);
	CHECK_INT(a.rows.n, 3);
	CHECK_INT(a.marks.n, 1);
	CHECK_INT(c.records, 13);
	CHECK_INT(c.no_enter + c.out_of_order + c.too_deep + c.thread_exit + c.garbage + c.lost, 0);
	/* the flight recorder: 5 scopes and the mark, in order of their ends */
	CHECK_INT(fl.seq, 6);
	CHECK_INT(fl.v[0].site, B);
	CHECK_INT(fl.v[0].parent, A);
	CHECK_INT(fl.v[0].depth, 1);
	CHECK_INT(fl.v[0].tid, 9);
	CHECK_INT(fl.v[0].begin_ns, 1120);	/* ns0 + ticks */
	CHECK_INT(fl.v[0].end_ns, 1150);
	CHECK_INT(fl.v[2].site, A);
	CHECK_INT(fl.v[2].depth, 0);
	CHECK_INT(fl.v[4].kind, QPROF_REC_END);
	CHECK_INT(fl.v[5].kind, QPROF_REC_MARK);
	CHECK_INT(fl.v[5].begin_ns, 1410);
	/* rows for the model */
	{
		struct qp_scope_row *rows = NULL;
		struct qp_mark_row *marks = NULL;
		size_t n = 0, m = 0;

		CHECK_INT(qp_ring_agg_rows(&a, 7, &rows, &n), 0);
		CHECK_INT(n, 3);
		CHECK_INT(qp_ring_agg_rows(&a, 8, &rows, &n), 0);
		CHECK_INT(n, 3);
		CHECK_INT(qp_ring_agg_marks(&a, 0, &marks, &m), 0);
		CHECK_INT(m, 1);
		CHECK(m == 1 && marks[0].count == 1 && marks[0].last_ns == 1410 && marks[0].key.site == A);
		free(rows);
		free(marks);
	}
	CHECK_INT(qp_ring_agg_forget(&a, 7), 0);
	CHECK_INT(a.rows.n, 0);
	CHECK_INT(a.marks.n, 0);
	qp_ring_flight_free(&fl);
	qp_ring_agg_free(&a);
}

static void test_drops(void)
{
	struct qp_ring_agg a;
	struct qp_ring_reader rd = { .pid = 7, .tid = 8 };
	struct qp_ring_counts c = { 0 };
	int i;

	qp_ring_agg_init(&a, 100);
	put(10, A, QPROF_REC_EXIT);	/* no enter */
	put(20, A, QPROF_REC_ENTER);
	put(30, B, QPROF_REC_ENTER);	/* never closed */
	put(40, A, QPROF_REC_EXIT);	/* closes A, skips B */
	feed(&a, &rd, &c, 0);
	CHECK_INT(c.no_enter, 1);
	CHECK_INT(c.out_of_order, 1);
	CHECK(row(&a, 7, A, 0) && row(&a, 7, A, 0)->sum_ns == 20);
	CHECK(row(&a, 7, B, A) == NULL);

	/* 40 deep: 32 kept, 8 counted, all exits consumed */
	for (i = 0; i < 40; i++)
		put(100 + i, D + 64 * (uint64_t)i, QPROF_REC_ENTER);
	for (i = 39; i >= 0; i--)
		put(200 + (39 - i), D + 64 * (uint64_t)i, QPROF_REC_EXIT);
	feed(&a, &rd, &c, 0);
	CHECK_INT(c.too_deep, 8);
	CHECK_INT(rd.depth, 0);
	CHECK_INT(c.no_enter, 1);
	CHECK(row(&a, 7, D + 64 * 31, D + 64 * 30) != NULL);
	CHECK(row(&a, 7, D + 64 * 32, D + 64 * 31) == NULL);

	/* a new owner with a scope open: thread_exit */
	put(300, A, QPROF_REC_ENTER);
	put(310, (2ull << 32) | (11ull << 3), QPROF_REC_THREAD);
	put(320, A, QPROF_REC_EXIT);
	feed(&a, &rd, &c, 0);
	CHECK_INT(c.thread_exit, 1);
	CHECK_INT(c.no_enter, 2);
	CHECK_INT(rd.tid, 11);

	/* records lost with a scope open: its exit never pairs with a later enter */
	put(400, A, QPROF_REC_ENTER);
	feed(&a, &rd, &c, 0);
	qp_ring_gap(&rd, 5, &c);
	CHECK_INT(c.lost, 5);
	CHECK_INT(c.after_loss, 1);
	put(500, A, QPROF_REC_EXIT);
	feed(&a, &rd, &c, 0);
	/* its exit came after the gap: the scope open at the loss, already
	 * counted after_loss, not one more without an enter */
	CHECK_INT(c.no_enter, 2);
	CHECK_INT(rd.gap_closed, 1);
	CHECK_INT(row(&a, 7, A, 0)->count, 1); /* still only the first */
	qp_ring_agg_free(&a);
}

/* A ring of scopes only, N of them written, records [lo, hi) of each
 * listed gap lost: counted + lost scopes == N, exactly, whatever the gaps
 * cut (an enter, an exit, whole scopes); nested scopes too. */
static uint64_t lost_run(unsigned nest, const uint64_t (*gaps)[2], size_t ngaps, uint64_t n,
			 struct qp_ring_lost_est *e)
{
	static struct qprof_ring_rec all[4096];
	struct qp_ring_reader rd = { .pid = 9, .tid = 1 };
	struct qp_ring_counts c = { 0 };
	struct qp_ring_agg a;
	uint64_t i, w = 0, counted = 0, from = 0;
	size_t g;

	qp_ring_agg_init(&a, 100);
	/* nest 0: flat A scopes; nest 1: each A holds one B */
	for (i = 0; i < n; i++) {
		all[w++] = (struct qprof_ring_rec){ 10 * w, A | QPROF_REC_ENTER };
		if (nest) {
			all[w++] = (struct qprof_ring_rec){ 10 * w, B | QPROF_REC_ENTER };
			all[w++] = (struct qprof_ring_rec){ 10 * w, B | QPROF_REC_EXIT };
		}
		all[w++] = (struct qprof_ring_rec){ 10 * w, A | QPROF_REC_EXIT };
	}
	for (g = 0; g <= ngaps; g++) {
		uint64_t to = g < ngaps ? gaps[g][0] : w;

		qp_ring_feed(&a, &rd, all + from, (size_t)(to - from), &clk, false, 0, &c);
		if (g < ngaps) {
			qp_ring_gap(&rd, gaps[g][1] - gaps[g][0], &c);
			from = gaps[g][1];
		}
	}
	memset(e, 0, sizeof(*e));
	qp_ring_lost_of(&rd, e);
	/* every row: a scope after a gap may have lost its parent */
	for (i = 0; i < a.rows.n; i++)
		counted += ((const struct scope_stats *)qp_htab_value(&a.rows, (size_t)i))->count;
	CHECK_INT(c.no_enter, 0);
	qp_ring_agg_free(&a);
	return counted;
}

static void test_lost_scopes(void)
{
	static const uint64_t flat[][2] = { { 1, 2 }, { 10, 30 }, { 41, 100 }, { 200, 201 }, { 300, 1000 } };
	static const uint64_t nested[][2] = { { 1, 2 }, { 10, 31 }, { 42, 101 }, { 203, 205 }, { 300, 1000 } };
	struct qp_ring_lost_est e;
	uint64_t got;

	got = lost_run(0, flat, 5, 1000, &e);
	CHECK_INT(got + e.scopes, 1000);
	CHECK_INT(e.records, 1 + 20 + 59 + 1 + 700);
	CHECK(!e.estimated);
	got = lost_run(1, nested, 5, 500, &e);
	CHECK_INT(got + e.scopes, 1000);
	CHECK(!e.estimated);
	got = lost_run(0, flat, 0, 1000, &e);
	CHECK_INT(got, 1000);
	CHECK_INT(e.scopes, 0);

	/* a ring with marks too: the whole scopes in a gap are a share, said so */
	{
		struct qp_ring_reader rd = { .pid = 9, .tid = 1 };
		struct qp_ring_counts c = { 0 };
		struct qp_ring_agg a;
		int i;

		qp_ring_agg_init(&a, 100);
		for (i = 0; i < 40; i++) {
			put(10 + 3 * (uint64_t)i, A, QPROF_REC_ENTER);
			put(11 + 3 * (uint64_t)i, A, QPROF_REC_EXIT);
			put(12 + 3 * (uint64_t)i, B, QPROF_REC_MARK);
		}
		feed(&a, &rd, &c, 0);
		qp_ring_gap(&rd, 30, &c);
		memset(&e, 0, sizeof(e));
		qp_ring_lost_of(&rd, &e);
		CHECK(e.estimated);
		CHECK_INT(e.scopes, 10);
		CHECK_INT(e.marks, 10);
		qp_ring_agg_free(&a);
	}
}

static void test_garbage(void)
{
	struct qp_ring_agg a;
	struct qp_ring_reader rd = { .pid = 7, .tid = 8 };
	struct qp_ring_flight fl = { 0 };
	struct qp_ring_counts c = { 0 };

	qp_ring_agg_init(&a, 2);	/* scope rows; the mark below takes none of their room */
	fl.max = 4;
	rd.fl = &fl;
	put_arg(123);			/* a lone argument (its record lapped) */
	put(100, A, QPROF_REC_ENTER);
	put(90, A, QPROF_REC_EXIT);	/* time going back: garbage, the stack reset */
	put(110, 0, QPROF_REC_ENTER);	/* no site */
	put(120, 1ull << 50, QPROF_REC_ENTER); /* no user address */
	put(130, C, QPROF_REC_BEGIN);	/* no argument after it */
	put(140, A, QPROF_REC_MARK);
	put(150, C, QPROF_REC_VALUE);	/* an argument of the wrong shape */
	recs[nrecs].ts = 5;
	recs[nrecs++].word = 0x1000 | QPROF_REC_ARG;
	feed(&a, &rd, &c, 0);
	CHECK_INT(c.garbage, 7);
	CHECK_INT(c.after_loss, 1);
	CHECK_INT(a.rows.n, 0);
	CHECK_INT(a.marks.n, 1);

	rd.last_ts = 0;
	put(500, B, QPROF_REC_ENTER);	/* before the attach (min_ts 1000): skipped, counted */
	put(600, B, QPROF_REC_EXIT);
	put(1500, A, QPROF_REC_ENTER);
	put(1600, A, QPROF_REC_EXIT);
	put(1700, B, QPROF_REC_ENTER);
	put(1800, B, QPROF_REC_EXIT);
	put(1900, C, QPROF_REC_ENTER);
	put(2000, C, QPROF_REC_EXIT);	/* a third row: max_rows 2 */
	feed(&a, &rd, &c, 1000);
	CHECK_INT(c.before_attach, 2);
	CHECK_INT(a.rows.n, 2);
	CHECK_INT(c.table_full, 1);
	/* the flight recorder wraps: 4 kept of the 4 instances (mark, A, B, C) */
	CHECK_INT(fl.seq, 4);
	CHECK_INT(fl.v[3].site, C);
	qp_ring_flight_free(&fl);
	qp_ring_agg_free(&a);
}

static uint64_t bits_of(double d)
{
	uint64_t b;

	memcpy(&b, &d, sizeof(b));
	return b;
}

static void test_values(void)
{
	struct qp_ring_agg a;
	struct qp_ring_reader rd = { .pid = 7, .tid = 8 };
	struct qp_ring_flight fl = { 0 };
	struct qp_ring_counts c = { 0 };
	struct qp_value_row *rows = NULL;
	size_t n = 0;

	qp_ring_agg_init(&a, 100);
	fl.max = 8;
	rd.fl = &fl;
	put(10, A, QPROF_REC_VALUE);
	put_arg(bits_of(2.0));
	put(20, A, QPROF_REC_VALUE);
	put_arg(bits_of(-3.0));
	put(30, A, QPROF_REC_VALUE);
	put_arg(bits_of(2.0));
	put(40, A, QPROF_REC_VALUE);
	put_arg(bits_of(__builtin_inf()));
	feed(&a, &rd, &c, 0);
	CHECK_INT(fl.seq, 4);	/* the flight recorder has the values */
	CHECK_INT(fl.v[1].kind, QPROF_REC_VALUE);
	CHECK_INT(fl.v[1].arg, bits_of(-3.0));
	CHECK_INT(fl.v[1].begin_ns, 1020);
	CHECK_INT(qp_ring_agg_values(&a, 7, &rows, &n), 0);
	CHECK_INT(n, 1);
	if (n == 1) {
		CHECK_INT(rows[0].st.count, 3);
		CHECK_INT(rows[0].st.pos_inf, 1);
		CHECK_INT(rows[0].st.min_key, ~bits_of(-3.0));
		CHECK_INT(rows[0].st.max_key, bits_of(2.0) | (1ULL << 63));
		CHECK_INT(rows[0].st.last_bits, bits_of(__builtin_inf()));
		CHECK_INT(rows[0].st.last_ns, 1040);
		CHECK_INT(rows[0].nbuckets, 2);	/* -3 and 2, sorted by order key */
		CHECK(rows[0].nbuckets == 2 && rows[0].buckets[0].count == 1 && rows[0].buckets[1].count == 2);
		CHECK(rows[0].nbuckets == 2 &&
		      rows[0].buckets[1].bucket == (bits_of(2.0) | (1ULL << 63)) >> QPROF_VALUE_BUCKET_SHIFT);
		free(rows[0].buckets);
	}
	free(rows);
	rows = NULL;
	n = 0;
	CHECK_INT(qp_ring_agg_values(&a, 9, &rows, &n), 0);
	CHECK_INT(n, 0);
	free(rows);
	qp_ring_flight_free(&fl);
	qp_ring_agg_free(&a);

	/* a value spread over many buckets takes no room of the rows: with
	 * max_rows 3, 60 buckets of one value, then a scope, all kept */
	{
		struct qp_ring_reader rd2 = { .pid = 7, .tid = 8 };
		struct qp_ring_counts c2 = { 0 };
		int k;

		qp_ring_agg_init(&a, 3);
		for (k = 0; k < 60; k++) {
			put(100 + k, A, QPROF_REC_VALUE);
			put_arg(bits_of(1.0 + k * 1e6));
		}
		put(200, B, QPROF_REC_ENTER);
		put(300, B, QPROF_REC_EXIT);
		feed(&a, &rd2, &c2, 0);
		CHECK(a.vhist.n >= 20);
		CHECK_INT(a.values.n, 1);
		CHECK(row(&a, 7, B, 0) && row(&a, 7, B, 0)->count == 1);
		CHECK_INT(c2.table_full, 0);
		CHECK_INT(c2.values_lost, 0);
		qp_ring_agg_free(&a);
	}
}

/* A log head at SITE (16-aligned) with TEXT, LEN the length it had. */
static void put_log(uint64_t ts, uint64_t site, const char *text, unsigned len)
{
	unsigned stored = (unsigned)strlen(text), n = (stored + 14) / 15, k;

	recs[nrecs].ts = ts;
	recs[nrecs++].word = site | QPROF_REC_ARG | (uint64_t)stored << 47 | (uint64_t)len << 55;
	for (k = 0; k < n; k++) {
		char b[16] = { 0 };
		uint64_t lo, hi;

		memcpy(b, text + 15 * k, stored - 15 * k < 15 ? stored - 15 * k : 15);
		memcpy(&lo, b, 8);
		memcpy(&hi, b + 8, 8);
		recs[nrecs].ts = lo;
		recs[nrecs++].word = hi << 8 | QPROF_REC_LOG_TEXT;
	}
}

static char got_msg[4][300];
static int32_t got_len[4];
static uint64_t got_ns[4];
static int ngot;

static void on_log(void *arg, const struct qp_ring_log *l)
{
	CHECK(arg == &ngot);
	CHECK_INT(l->pid, 7);
	CHECK_INT(l->tid, 8);
	CHECK_INT(l->site, 0x401100);
	if (ngot < 4) {
		snprintf(got_msg[ngot], sizeof(got_msg[ngot]), "%s", l->msg);
		got_len[ngot] = l->len;
		got_ns[ngot] = l->mono_ns;
	}
	ngot++;
}

/* QPROF_LOG records: messages whole, a cut one counted, a text record
 * alone and a head without its text are garbage; a log before the attach
 * is skipped; records around them still pair. */
static void test_logs(void)
{
	struct qp_ring_agg a;
	struct qp_ring_reader rd = { .pid = 7, .tid = 8 };
	struct qp_ring_counts c = { 0 };
	char long_text[256];
	const struct scope_stats *s;

	memset(long_text, 'x', 255);
	long_text[255] = '\0';
	qp_ring_agg_init(&a, 100);
	a.log_fn = on_log;
	a.log_arg = &ngot;
	put_log(5, 0x401100, "early", 5);	/* before the attach (min_ts 10) */
	put(10, A, QPROF_REC_ENTER);
	put_log(20, 0x401100, "hello 42", 8);
	put_log(30, 0x401100, long_text, 300);	/* 17 text records, cut */
	put_log(40, 0x401100, "", 0);
	put(50, A, QPROF_REC_EXIT);
	recs[nrecs].ts = 1;			/* a text record alone */
	recs[nrecs++].word = 0x41424300ull | QPROF_REC_LOG_TEXT;
	put_log(60, 0x401108, "bad site", 8);	/* not 16-aligned: bit 3 set, as a text record */
	put_log(70, 0x401100, "cut off at the end", 18);
	nrecs -= 1;				/* its second text record missing */
	feed(&a, &rd, &c, 10);
	CHECK_INT(ngot, 3);
	CHECK_STR(got_msg[0], "hello 42");
	CHECK_INT(got_len[0], 8);
	CHECK_INT(got_ns[0], 1020);
	CHECK_INT(strlen(got_msg[1]), 255);
	CHECK_INT(got_len[1], 300);
	CHECK_STR(got_msg[2], "");
	CHECK_INT(c.logs, 3);
	CHECK_INT(c.logs_cut, 1);
	CHECK_INT(c.before_attach, 2);		/* "early": head and text */
	/* 1 + 1 + 1 (enter, "hello 42") + 1 + 17 + 1 + 1 (exit) */
	CHECK_INT(c.records, 23);
	/* the lone text; "bad site" head and text; "cut off" head and its one text */
	CHECK_INT(c.garbage, 5);
	s = row(&a, 7, A, 0);
	CHECK(s && s->count == 1 && s->sum_ns == 40);
	qp_ring_agg_free(&a);
}

/* The exact sum of a value row: compensated, so that 1e20 + 1 - 1e20 is 1
 * (a plain sum, even in long double, gives 0). */
static void test_exact_sum(void)
{
	struct qp_ring_agg a;
	struct qp_ring_reader rd = { .pid = 7, .tid = 8 };
	struct qp_ring_counts c = { 0 };
	struct qp_value_row *rows = NULL;
	size_t n = 0;
	double vals[] = { 1e20, 1.0, -1e20, 0.5, 0.25 };
	unsigned i;

	qp_ring_agg_init(&a, 100);
	for (i = 0; i < 5; i++) {
		put(10 + i, A, QPROF_REC_VALUE);
		put_arg(bits_of(vals[i]));
	}
	put(20, A, QPROF_REC_VALUE);
	put_arg(bits_of(__builtin_nan("")));	/* not in the sum */
	feed(&a, &rd, &c, 0);
	CHECK_INT(qp_ring_agg_values(&a, 7, &rows, &n), 0);
	CHECK_INT(n, 1);
	if (n == 1) {
		CHECK(rows[0].has_sum);
		CHECK_INT(rows[0].st.count, 5);
		CHECK((double)rows[0].sum == 1.75);
		free(rows[0].buckets);
	}
	free(rows);
	qp_ring_agg_free(&a);
}

/* QPROF_SCOPE_BEGIN/END: slots of their own beside the block scopes
 * (the BPF collector's rule, as bpf/spans.bpf.h): 40 BEGINs never ended neither fill
 * the stack nor re-parent or drop later scopes; a BEGIN again before its
 * END replaces it; a 9th open at once replaces the oldest; open ones are
 * counted when the ring changes owner or records are lost. */
static void test_begin_slots(void)
{
	struct qp_ring_agg a;
	struct qp_ring_reader rd = { .pid = 7, .tid = 8 };
	struct qp_ring_counts c = { 0 };
	const struct scope_stats *s;
	uint64_t ts = 100;
	int i;

	qp_ring_agg_init(&a, 100);
	for (i = 0; i < 40; i++) {	/* the same name begun 40 times, never ended */
		put(ts++, C, QPROF_REC_BEGIN);
		put_arg(NAME);
		put(ts, A, QPROF_REC_ENTER);
		ts += 10;
		put(ts++, A, QPROF_REC_EXIT);
	}
	feed(&a, &rd, &c, 0);
	s = row(&a, 7, A, 0);
	CHECK(s && s->count == 40 && s->sum_ns == 400);	/* at top level, every one */
	CHECK_INT(c.begin_unended, 39);
	CHECK_INT(c.too_deep + c.out_of_order + c.no_enter, 0);
	CHECK_INT(rd.depth, 0);

	/* under a block scope: the span's parent is A, A's children are not its */
	put(ts++, A, QPROF_REC_ENTER);
	put(ts, C, QPROF_REC_BEGIN);	/* replaces the 40th: 40 unended */
	put_arg(NAME);
	put(ts + 5, B, QPROF_REC_ENTER);
	put(ts + 7, B, QPROF_REC_EXIT);
	put(ts + 20, C + 64, QPROF_REC_END);
	put_arg(NAME);
	put(ts + 30, A, QPROF_REC_EXIT);
	ts += 31;
	feed(&a, &rd, &c, 0);
	s = row(&a, 7, C, A);
	CHECK(s && s->count == 1 && s->sum_ns == 20);
	s = row(&a, 7, B, A);
	CHECK(s && s->count == 1 && s->sum_ns == 2);
	CHECK_INT(c.begin_unended, 40);

	/* 9 names open at once: the oldest goes; END of it finds nothing */
	for (i = 0; i < 9; i++) {
		put(ts++, C, QPROF_REC_BEGIN);
		put_arg(NAME + 16 * (uint64_t)(i + 1));
	}
	put(ts++, C, QPROF_REC_END);
	put_arg(NAME + 16);		/* the first, replaced by the 9th */
	put(ts++, C, QPROF_REC_END);
	put_arg(NAME + 16 * 9);		/* the 9th: paired */
	feed(&a, &rd, &c, 0);
	CHECK_INT(c.begin_unended, 41);
	CHECK_INT(c.no_enter, 1);
	s = row(&a, 7, C, 0);
	CHECK(s && s->count == 1);
	/* 7 still open: a new owner of the ring counts them thread_exit */
	put(ts++, 0, QPROF_REC_THREAD);
	recs[nrecs - 1].word = (2ull << 32) | (10ull << 3);
	put(ts++, C, QPROF_REC_END);
	put_arg(NAME + 16 * 2);		/* the old thread's: no pair on the new one */
	feed(&a, &rd, &c, 0);
	CHECK_INT(c.thread_exit, 7);
	CHECK_INT(c.no_enter, 2);
	/* records lost: open begins are dropped (after_loss), never paired across */
	put(ts++, C, QPROF_REC_BEGIN);
	put_arg(NAME);
	feed(&a, &rd, &c, 0);
	qp_ring_gap(&rd, 5, &c);
	CHECK_INT(c.after_loss, 1);
	put(ts++, C, QPROF_REC_END);
	put_arg(NAME);
	feed(&a, &rd, &c, 0);
	CHECK_INT(c.no_enter, 3);
	/* a name at address 0 is no marker's */
	put(ts++, C, QPROF_REC_BEGIN);
	put_arg(0);
	feed(&a, &rd, &c, 0);
	CHECK_INT(c.garbage, 1);
	qp_ring_agg_free(&a);
}

/* The clock across drain passes (the flake of integration_trace_ring): an
 * inner scope read and converted in one pass, its outer scope's exit read
 * in the next, after a recalibration that found CLOCK_MONOTONIC 250 ns
 * behind the map. Before, the map was replaced by the fresh pair: the outer
 * scope, both ends converted with it, came out as [850, 955] around an
 * inner [1110, 1200]. Now a stamp converts to the same ns in every pass. */
static void test_clock_passes(void)
{
	struct qp_ring_clock k = { .tsc0 = 0, .ns0 = 1000, .ns_per_tick = 1.0 };
	struct qp_ring_agg a;
	struct qp_ring_reader rd = { .pid = 7, .tid = 9 };
	struct qp_ring_flight fl = { 0 };
	struct qp_ring_counts c = { 0 };
	uint64_t prev = 0, t;
	bool mono = true;
	int i;

	qp_ring_agg_init(&a, 100);
	fl.max = 16;
	rd.fl = &fl;
	put(100, A, QPROF_REC_ENTER);
	put(110, B, QPROF_REC_ENTER);
	put(200, B, QPROF_REC_EXIT);
	qp_ring_feed(&a, &rd, recs, nrecs, &k, false, 0, &c);
	nrecs = 0;
	/* at TSC 300 the map says 1300, the clock 1050: slew over 1000 ns */
	qp_ring_clock_step(&k, 300, 1050, 1.0, 1000.0);
	CHECK_INT(k.tsc0, 300);
	CHECK_INT(k.ns0, 1300);		/* continuous: no step back */
	CHECK(k.ns_per_tick == 0.75);
	CHECK_INT(k.nold, 1);
	CHECK_INT(qp_ring_clock_ns(&k, 205, false), 1205);	/* the old segment's */
	CHECK_INT(qp_ring_clock_ns(&k, 400, false), 1375);
	put(205, A, QPROF_REC_EXIT);
	qp_ring_feed(&a, &rd, recs, nrecs, &k, false, 0, &c);
	nrecs = 0;
	CHECK_INT(fl.seq, 2);
	CHECK_INT(fl.v[0].site, B);
	CHECK_INT(fl.v[0].begin_ns, 1110);
	CHECK_INT(fl.v[0].end_ns, 1200);
	CHECK_INT(fl.v[1].site, A);
	CHECK_INT(fl.v[1].begin_ns, 1100);
	CHECK_INT(fl.v[1].end_ns, 1205);	/* ends after the inner scope */
	CHECK_INT(c.no_enter + c.out_of_order + c.garbage, 0);
	/* a fast clock: the slope at most doubles; slow: at least halves */
	qp_ring_clock_step(&k, 400, 1e6, 1.0, 1000.0);
	CHECK_INT(k.ns0, 1375);
	CHECK(k.ns_per_tick == 2.0);
	qp_ring_clock_step(&k, 500, 0, 1.0, 1000.0);
	CHECK_INT(k.ns0, 1575);
	CHECK(k.ns_per_tick == 0.5);
	/* a TSC not after the newest segment changes nothing */
	qp_ring_clock_step(&k, 450, 0, 1.0, 1000.0);
	CHECK_INT(k.tsc0, 500);
	CHECK_INT(k.nold, 3);
	/* every stamp keeps its ns through more steps than are kept:
	 * increasing over all of them, and past ones unchanged */
	CHECK_INT(qp_ring_clock_ns(&k, 205, false), 1205);
	CHECK_INT(qp_ring_clock_ns(&k, 450, false), 1475);
	for (i = 1; i <= 20; i++)
		qp_ring_clock_step(&k, 500 + 100 * (uint64_t)i, i % 2 ? 0 : 1e6, 1.0, 1000.0);
	CHECK_INT(k.nold, QP_RING_CLOCK_OLD);
	for (t = 1000; t < 2600; t += 7) {
		uint64_t v = qp_ring_clock_ns(&k, t, false);

		if (v < prev)
			mono = false;
		prev = v;
	}
	CHECK(mono);
	CHECK_INT(qp_ring_clock_ns(&k, 2400, false) - qp_ring_clock_ns(&k, 2300, false), 200);
	qp_ring_agg_free(&a);
}

/* Marks, values and their histogram buckets have the BPF maps' bounds
 * (bpf/scopes.h), apart from the scope rows' --max-sites: a value that
 * spreads over more buckets than there are scope rows takes none of their
 * room, and what finds no room is counted by kind (values, marks), never as
 * a scope dropped. */
static void test_bounds(void)
{
	struct qp_ring_agg a;
	struct qp_ring_reader rd = { .pid = 7, .tid = 8 };
	struct qp_ring_counts c = { 0 };
	uint64_t ts = 10, i;

	qp_ring_agg_init(&a, 2);
	/* QPROF_VALUE_BUCKETS + 5 buckets of one value, 200 at a time */
	for (i = 0; i < QPROF_VALUE_BUCKETS + 5; i++) {
		put(ts++, A, QPROF_REC_VALUE);
		put_arg(0x3ff0000000000000ull + (i << QPROF_VALUE_BUCKET_SHIFT)); /* a bucket each */
		if (nrecs >= 200)
			feed(&a, &rd, &c, 0);
	}
	feed(&a, &rd, &c, 0);
	CHECK_INT(a.vhist.n, QPROF_VALUE_BUCKETS);
	CHECK_INT(c.values_lost, 5);
	/* marks past theirs */
	for (i = 0; i < QPROF_MARK_ENTRIES + 3; i++) {
		put(ts++, 0x100000ull + i * 8, QPROF_REC_MARK);
		if (nrecs >= 200)
			feed(&a, &rd, &c, 0);
	}
	feed(&a, &rd, &c, 0);
	CHECK_INT(a.marks.n, QPROF_MARK_ENTRIES);
	CHECK_INT(c.marks_lost, 3);
	/* the scope rows still have all their room */
	put(ts++, A, QPROF_REC_ENTER);
	put(ts++, B, QPROF_REC_ENTER);
	put(ts++, B, QPROF_REC_EXIT);
	put(ts++, A, QPROF_REC_EXIT);
	put(ts++, C, QPROF_REC_ENTER);	/* a third row: max_rows 2 */
	put(ts++, C, QPROF_REC_EXIT);
	feed(&a, &rd, &c, 0);
	CHECK_INT(a.rows.n, 2);
	CHECK_INT(c.table_full, 1);
	CHECK(row(&a, 7, A, 0) && row(&a, 7, A, 0)->count == 1);
	CHECK(row(&a, 7, B, A) && row(&a, 7, B, A)->count == 1);
	CHECK_INT(c.garbage, 0);
	qp_ring_agg_free(&a);
}

int main(void)
{
	test_clock_passes();
	test_logs();
	test_exact_sum();
	test_values();
	test_bounds();
	test_nesting();
	test_drops();
	test_garbage();
	test_begin_slots();
	test_lost_scopes();
	return test_done("ring_pair");
}
