/* test_model.c - the model stage without BPF or root: windows from two
 * hand-made collector snapshots (counts, sums, bounds, percentiles), the
 * scope tree (one row per parent), marks and counted probes over a window
 * and since attach, values, and the status figures. Names come from a fake
 * namer that stands in for the registry. */
#include <stdlib.h>
#include "testlib.h"
#include "qprof/qprof.h"
#include "model/model_scopes.h"
#include "model/model_status.h"
#include "model/model_values.h"
#include "model/scope_window.h"
#include "targets/targets.h"
#include "common/util.h"

/* ---- a collector snapshot, filled as the BPF side would ------------------ */

static void hit(struct scope_stats *st, uint64_t ns, unsigned int times)
{
	while (times--) {
		if (!st->count || ns < st->min_ns)
			st->min_ns = ns;
		if (ns > st->max_ns)
			st->max_ns = ns;
		st->count++;
		st->sum_ns += ns;
		st->hist[qprof_hist_index(ns)]++;
	}
}

static struct qp_scope_row *row(struct qp_scope_snapshot *s, uint32_t pid, uint64_t site, uint64_t parent)
{
	struct qp_scope_row *r;

	s->rows = realloc(s->rows, (s->n + 1) * sizeof(*s->rows));
	r = &s->rows[s->n++];
	memset(r, 0, sizeof(*r));
	r->key.tgid = pid;
	r->key.site = site;
	r->key.parent = parent;
	return r;
}

static int cmp_rows(const void *a, const void *b)
{
	return qp_scope_key_cmp(&((const struct qp_scope_row *)a)->key, &((const struct qp_scope_row *)b)->key);
}

static void sort(struct qp_scope_snapshot *s)
{
	qsort(s->rows, s->n, sizeof(*s->rows), cmp_rows);
}

/* ---- the fake registry ---------------------------------------------------- */

#define SITE_CALC 0x1000
#define SITE_INNER 0x2000
#define SITE_LEAF 0x3000
#define SITE_GONE 0x3800	/* a site the registry cannot name */
#define SITE_TICK 0x4000
#define SITE_PRICE 0x5000
#define SPAN_GC ((1ull << 63) | 1)

static struct qp_site_info sites[] = {
	{ SITE_CALC, QPROF_KIND_SCOPE, 10, "calc", "s.c", "gen", NULL },
	{ SITE_INNER, QPROF_KIND_FUNC, 20, "inner", "s.c", "inner", NULL },
	{ SITE_LEAF, QPROF_KIND_SCOPE, 30, "leaf", "t.c", "leafy", NULL },
	{ SITE_TICK, QPROF_KIND_MARK, 40, "tick", "m.c", "loop", NULL },
	{ SITE_PRICE, QPROF_KIND_VALUE, 50, "price", "v.c", "px", NULL },
};

static struct qp_usdt_def defs[] = {
	{ .id = 1, .span = true, .name = "gc", .begin = "py:gc__start", .end = "py:gc__done" },
	{ .id = 2, .name = "libc:malloc" },
};

static bool fake_target(void *arg, uint32_t pid, struct qp_target_times *out)
{
	if (pid == 10) {
		*out = (struct qp_target_times){ .exited = false, .attached_ms = 1000 };
		return true;
	}
	if (pid == 20) {	/* a process a --binary target produced, adopted and exited since */
		*out = (struct qp_target_times){ .exited = true, .attached_ms = 1000, .exited_ms = 5000 };
		return true;
	}
	return false;
}

static const struct qp_site_info *fake_site(void *arg, uint32_t pid, uint64_t addr)
{
	size_t i;

	for (i = 0; i < QP_ARRAY_SIZE(sites); i++)
		if (sites[i].vaddr == addr)
			return &sites[i];
	return NULL;
}

static const struct qp_usdt_def *fake_def(void *arg, uint32_t id)
{
	return id >= 1 && id <= QP_ARRAY_SIZE(defs) ? &defs[id - 1] : NULL;
}

static const struct qp_namer namer = { fake_target, fake_site, fake_def, NULL };

/* ---- the two snapshots of a window --------------------------------------- */

static void snapshots(struct qp_scope_snapshot *base, struct qp_scope_snapshot *now)
{
	struct qp_scope_row *r;

	memset(base, 0, sizeof(*base));
	memset(now, 0, sizeof(*now));
	/* calc at top level: 10 x 100 ns before; 10 x 1000 ns and 1 x 5000 ns in the window */
	hit(&row(base, 10, SITE_CALC, 0)->stats, 100, 10);
	r = row(now, 10, SITE_CALC, 0);
	hit(&r->stats, 100, 10);
	hit(&r->stats, 1000, 10);
	hit(&r->stats, 5000, 1);
	/* inner under calc: nothing new in the window */
	hit(&row(base, 10, SITE_INNER, SITE_CALC)->stats, 200, 5);
	hit(&row(now, 10, SITE_INNER, SITE_CALC)->stats, 200, 5);
	/* calc again, under inner: 1 before, 2 more in the window (a second tree row) */
	hit(&row(base, 10, SITE_CALC, SITE_INNER)->stats, 300, 1);
	hit(&row(now, 10, SITE_CALC, SITE_INNER)->stats, 300, 3);
	/* leaf under calc: new in the window, counts whole */
	hit(&row(now, 10, SITE_LEAF, SITE_CALC)->stats, 20, 2);
	/* an unnamed site deleted and re-created meanwhile (fewer now): left out */
	hit(&row(base, 10, SITE_GONE, 0)->stats, 50, 9);
	hit(&row(now, 10, SITE_GONE, 0)->stats, 50, 3);
	/* the span gc: 2 before, 3 in the window */
	hit(&row(base, 10, SPAN_GC, 0)->stats, 1000000, 2);
	hit(&row(now, 10, SPAN_GC, 0)->stats, 1000000, 5);
	/* pid 20: an exited target; pid 30: never a target (or not adopted yet) */
	hit(&row(now, 20, SITE_CALC, 0)->stats, 400, 4);
	hit(&row(now, 30, SITE_CALC, 0)->stats, 400, 4);
	sort(base);
	sort(now);
	base->counters[QPROF_CNT_DROP_NO_ENTER] = 1;
	now->counters[QPROF_CNT_DROP_NO_ENTER] = 3;
	now->counters[QPROF_CNT_DROP_OUT_OF_ORDER] = 5;
	now->counters[QPROF_CNT_DROP_TOO_DEEP] = 7;
	now->counters[QPROF_CNT_DROP_THREAD_EXIT] = 11;
	now->counters[QPROF_CNT_DROP_MAP_FULL] = 13;
	now->counters[QPROF_CNT_DROP_NO_STACK] = 17;
	now->counters[QPROF_CNT_LOG_LOST] = 19;
	now->counters[QPROF_CNT_VALUE_LOST] = 23;
	now->counters[QPROF_CNT_MARK_LOST] = 29;
	now->counters[QPROF_CNT_BEGIN_UNENDED] = 31;
	now->counters[QPROF_CNT_SPAN_END_NO_BEGIN] = 37;
	now->counters[QPROF_CNT_SPAN_STEP_NO_BEGIN] = 41;
	now->counters[QPROF_CNT_SPAN_ID_REUSED] = 43;
	now->counters[QPROF_CNT_SPAN_TABLE_FULL] = 47;
	now->counters[QPROF_CNT_SPAN_ABANDONED] = 53;
	now->counters[QPROF_CNT_EVENTS] = 1000; /* unused by the kernel: not a drop */
}

static void test_window(void)
{
	struct qp_scope_snapshot base, now;
	struct qp_wrow *w;
	size_t n;

	snapshots(&base, &now);
	CHECK_INT(qp_scope_window(&now, &base, 0, &w, &n), 0);
	/* pid 10 by total time: gc, calc, calc under inner, leaf; then pids 20, 30 */
	CHECK_INT(n, 6);
	CHECK(w[0].key.site == SPAN_GC && w[0].st.count == 3 && w[0].st.sum_ns == 3000000);
	CHECK(w[1].key.site == SITE_CALC && w[1].key.parent == 0);
	CHECK_INT(w[1].st.count, 11);
	CHECK_INT(w[1].st.sum_ns, 15000);
	/* the window's min is the bucket bound of 1000 ns (its exact min is
	 * unknown); its max is exact: a new lifetime max happened in it */
	CHECK_INT(w[1].st.min_ns, 992);
	CHECK_INT(w[1].st.max_ns, 5000);
	CHECK_INT(w[1].st.hist[qprof_hist_index(100)], 0);
	CHECK_INT(w[1].st.hist[qprof_hist_index(1000)], 10);
	CHECK(w[2].key.site == SITE_CALC && w[2].key.parent == SITE_INNER && w[2].st.count == 2 &&
	      w[2].st.sum_ns == 600);
	/* lifetime min and max of an unchanged extreme clamp the bucket bounds */
	CHECK_INT(w[2].st.min_ns, 300);
	CHECK_INT(w[2].st.max_ns, 300);
	CHECK(w[3].key.site == SITE_LEAF && w[3].st.count == 2 && w[3].st.min_ns == 20);
	CHECK_INT(w[4].key.tgid, 20);
	CHECK_INT(w[5].key.tgid, 30);
	free(w);
	/* pid= keeps one process */
	CHECK_INT(qp_scope_window(&now, &base, 20, &w, &n), 0);
	CHECK_INT(n, 1);
	CHECK_INT(w[0].st.count, 4);
	free(w);
	/* without a base: everything since attach, the re-created row too */
	CHECK_INT(qp_scope_window(&now, NULL, 10, &w, &n), 0);
	CHECK_INT(n, 6);
	CHECK_INT(w[0].st.count, 5);
	CHECK_INT(w[1].st.count, 21);
	CHECK_INT(w[1].st.min_ns, 100);
	free(w);
	qp_scope_snapshot_free(&base);
	qp_scope_snapshot_free(&now);
}

static const struct qp_scope_item *find(const struct qp_scope_model *m, int pid, const char *name,
					const char *parent)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (m->items[i].pid == pid && !strcmp(m->items[i].name, name) &&
		    ((!parent && !m->items[i].parent) ||
		     (parent && m->items[i].parent && !strcmp(m->items[i].parent, parent))))
			return &m->items[i];
	return NULL;
}

static void test_scope_model(void)
{
	struct qp_scope_snapshot base, now;
	/* marks: none at the window's start (the map had no entry yet) */
	struct qp_mark_row marks[] = { { .key = { .tgid = 10, .site = SITE_TICK }, .count = 50 },
				       { .key = { .tgid = 30, .site = SITE_TICK }, .count = 9 } };
	struct qp_probe_row probes[] = { { .tgid = 10, .id = 2, .count = 100 }, { .tgid = 10, .id = 7, .count = 1 } };
	struct qp_probe_row pbase[] = { { .tgid = 10, .id = 2, .count = 40 } };
	struct qp_scope_input in = { .now = &now, .base = &base, .marks = marks, .nmarks = 2, .probes = probes,
				     .nprobes = 2, .pbase = pbase, .npbase = 1, .window_s = 2, .now_ms = 11000 };
	const struct qp_scope_item *it;
	struct qp_scope_model m;

	snapshots(&base, &now);
	CHECK_INT(qp_scope_model_make(&in, &namer, &m), 0);
	/* 5 timed rows of pid 10 (the re-created one left out), pid 20's,
	 * pid 30 none; the mark of pid 10; one defined probe */
	CHECK_INT(m.n, 7);
	CHECK(m.n == 7 && m.items[0].shape == QP_ITEM_TIMED && !strcmp(m.items[0].kind, "span"));
	it = &m.items[0];
	CHECK_STR(it->name, "gc");
	CHECK_STR(it->site_kind, "span");
	CHECK_STR(it->begin, "py:gc__start");
	CHECK_STR(it->end, "py:gc__done");
	CHECK(!it->located && !it->file && !it->parent);
	/* the scope tree: calc at top level and calc under inner are two rows */
	it = find(&m, 10, "calc", NULL);
	CHECK(it != NULL);
	if (it) {
		CHECK_STR(it->kind, "scope");
		CHECK_STR(it->site_kind, "scope");
		CHECK(it->located && it->line == 10);
		CHECK_STR(it->file, "s.c");
		CHECK_STR(it->function, "gen");
		CHECK_INT(it->count, 11);
		CHECK_INT(it->total_ns, 15000);
		CHECK(it->mean_ns == 15000.0 / 11);
		CHECK_INT(it->min_ns, 992);
		CHECK_INT(it->max_ns, 5000);
		/* nearest rank inside the 1000 ns bucket [992, 1008): 6th and 10th of 10 */
		CHECK(it->p50_ns == 992 + 16 * 5.5 / 10);
		CHECK(it->p90_ns == 992 + 16 * 9.5 / 10);
		/* the 11th is the 5000 ns value's bucket, clamped to the max */
		CHECK(it->p99_ns == 5000);
		CHECK(it->p999_ns == 5000);
	}
	it = find(&m, 10, "calc", "inner");
	CHECK(it != NULL && it->count == 2 && it->total_ns == 600 && it->p50_ns == 300);
	it = find(&m, 10, "leaf", "calc");
	CHECK(it != NULL && it->count == 2 && it->p99_ns == 20);
	CHECK(find(&m, 10, "inner", "calc") == NULL);	/* nothing in the window */
	CHECK(find(&m, 10, "0x3800", NULL) == NULL);	/* re-created */
	it = find(&m, 20, "calc", NULL);
	CHECK(it != NULL && it->count == 4);
	/* the mark: 50 in a 2 s window whose start had none: 25 per second */
	it = find(&m, 10, "tick", NULL);
	CHECK(it != NULL);
	if (it) {
		CHECK(it->shape == QP_ITEM_MARK);
		CHECK_INT(it->count, 50);
		CHECK(it->rate_per_s == 25);
		CHECK_STR(it->site_kind, "mark");
	}
	it = &m.items[m.n - 1];
	CHECK(it->shape == QP_ITEM_PROBE && it->count == 60 && it->rate_per_s == 30 && !it->site_kind);
	CHECK_STR(it->name, "libc:malloc");
	qp_scope_model_free(&m);
	CHECK(m.n == 0 && m.items == NULL);

	/* since attach, pid 10 only: the mark's rate over the running target's
	 * 10 s; the unnamed site now counts (named by its address) */
	memset(&in, 0, sizeof(in));
	in.now = &now;
	in.marks = marks;
	in.nmarks = 2;
	in.pid = 10;
	in.now_ms = 11000;
	CHECK_INT(qp_scope_model_make(&in, &namer, &m), 0);
	CHECK_INT(m.n, 7);
	it = find(&m, 10, "0x3800", NULL);
	CHECK(it != NULL && it->count == 3 && !it->located);
	if (it)
		CHECK_STR(it->site_kind, "unknown");
	it = find(&m, 10, "tick", NULL);
	CHECK(it != NULL && it->count == 50 && it->rate_per_s == 5);
	qp_scope_model_free(&m);
	qp_scope_snapshot_free(&base);
	qp_scope_snapshot_free(&now);
}

static void test_counts(void)
{
	struct qp_mark_row base[] = { { .key = { .tgid = 1, .site = 8 }, .count = 5 },
				      { .key = { .tgid = 2, .site = 4 }, .count = 7 },
				      { .key = { .tgid = 2, .site = 9 }, .count = 100 } };
	struct qp_mark_row cur = { .key = { .tgid = 2, .site = 4 }, .count = 10 };
	struct qp_probe_row pb[] = { { .tgid = 3, .id = 1, .count = 4 } };
	struct qp_probe_row pc = { .tgid = 3, .id = 1, .count = 3 };

	CHECK_INT(qp_mark_window_count(&cur, base, 3), 3);
	CHECK_INT(qp_mark_window_count(&cur, NULL, 0), 10);
	cur.key.site = 9;	/* base above now: re-created, not subtracted */
	CHECK_INT(qp_mark_window_count(&cur, base, 3), 10);
	cur.key.site = 5;	/* not in the base: new in the window */
	CHECK_INT(qp_mark_window_count(&cur, base, 3), 10);
	CHECK_INT(qp_probe_window_count(&pc, pb, 1), 3);
	pc.count = 9;
	CHECK_INT(qp_probe_window_count(&pc, pb, 1), 5);
}

static void test_values(void)
{
	struct qp_value_row rows[3];
	struct qp_value_bucket b[2];
	struct qp_value_model m;
	double last = 8, nan_last = NAN;

	memset(rows, 0, sizeof(rows));
	/* price: 2, 2, 8, 8 (last 8); an unnamed site with only NaNs; pid 30 not a target */
	rows[0].key.tgid = 10;
	rows[0].key.site = SITE_PRICE;
	rows[0].st.count = 4;
	rows[0].st.min_key = qp_value_key(2);
	rows[0].st.max_key = qp_value_key(8);
	memcpy(&rows[0].st.last_bits, &last, sizeof(last));
	b[0].bucket = qp_value_key(2) >> QPROF_VALUE_BUCKET_SHIFT;
	b[0].count = 2;
	b[1].bucket = qp_value_key(8) >> QPROF_VALUE_BUCKET_SHIFT;
	b[1].count = 2;
	rows[0].buckets = b;
	rows[0].nbuckets = 2;
	rows[1].key.tgid = 10;
	rows[1].key.site = 0x5100;
	rows[1].st.nan = 3;
	memcpy(&rows[1].st.last_bits, &nan_last, sizeof(nan_last));
	rows[2].key.tgid = 30;
	rows[2].key.site = SITE_PRICE;
	rows[2].st.count = 1;
	CHECK_INT(qp_value_model_make(rows, 3, &namer, &m), 0);
	CHECK_INT(m.n, 2);
	if (m.n == 2) {
		CHECK_STR(m.items[0].name, "price");
		CHECK(m.items[0].located && m.items[0].line == 50);
		CHECK_STR(m.items[0].file, "v.c");
		CHECK_INT(m.items[0].count, 4);
		CHECK(m.items[0].min == 2 && m.items[0].max == 8 && m.items[0].last == 8);
		/* bucket midpoints: within 0.013 % (value_math.c) */
		CHECK_REL(m.items[0].mean, 5, 2e-4);
		CHECK_REL(m.items[0].p50, 2, 2e-4);
		CHECK_REL(m.items[0].p99, 8, 2e-4);
		CHECK_STR(m.items[1].name, "0x5100");
		CHECK(!m.items[1].located && m.items[1].count == 0 && m.items[1].nan == 3);
		CHECK(isnan(m.items[1].last));
	}
	qp_value_model_free(&m);
}

static void test_status(void)
{
	struct qp_scope_snapshot base, now;
	struct qp_status_model st;

	snapshots(&base, &now);
	memset(&st, 0, sizeof(st));
	qp_status_from_snapshot(&now, &st);
	CHECK_INT(st.scopes.drops.exit_without_enter, 3);
	CHECK_INT(st.scopes.drops.out_of_order, 5);
	CHECK_INT(st.scopes.drops.too_deep, 7);
	CHECK_INT(st.scopes.drops.thread_exit, 11);
	CHECK_INT(st.scopes.drops.map_full, 13);
	CHECK_INT(st.scopes.drops.stack_unavailable, 17);
	CHECK_INT(st.scopes.drops.begin_unended, 31);
	CHECK_INT(st.scopes.drops.span_end_without_begin, 37);
	CHECK_INT(st.scopes.drops.span_step_without_begin, 41);
	CHECK_INT(st.scopes.drops.span_id_reused, 43);
	CHECK_INT(st.scopes.drops.span_table_full, 47);
	CHECK_INT(st.scopes.drops.span_abandoned, 53);
	CHECK_INT(st.scopes.dropped, 3 + 5 + 7 + 11 + 13 + 17 + 31 + 37 + 41 + 43 + 47 + 53);
	CHECK_INT(st.logs.lost, 19);
	CHECK_INT(st.values_lost, 23);
	CHECK_INT(st.marks_lost, 29);
	/* sites: (10, calc) twice (two parents) counts once: calc, inner, leaf,
	 * the re-created one, gc; (20, calc); (30, calc) */
	CHECK_INT(st.scopes.sites, 7);
	CHECK_INT(st.scopes.events, 21 + 5 + 3 + 2 + 3 + 5 + 4 + 4);
	qp_scope_snapshot_free(&base);
	qp_scope_snapshot_free(&now);
}

int main(void)
{
	test_window();
	test_scope_model();
	test_counts();
	test_values();
	test_status();
	return test_done("test_model");
}
