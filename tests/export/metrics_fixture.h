/* metrics_fixture.h - the hand-made models of the /metrics tests
 * (test_metrics.c, test_metrics_pb.c): timed rows from lists of
 * durations, marks and probes, values from sorted lists, and model A:
 * two processes of one executable (merged), an odd name, a span across
 * threads, a 0 ns scope, marks, a probe, values and status figures. */
#ifndef QPROF_METRICS_FIXTURE_H
#define QPROF_METRICS_FIXTURE_H
#include <stdlib.h>
#include "testlib.h"
#include "export/export_metrics.h"
#include "export/metrics_writer.h"
#include "model/percentile.h"
#include "common/util.h"

#define ODD_NAME "in\"ner\n\\x\xff\xc3\xbc"	/* quote, newline, backslash, a bad byte, u-umlaut */
#define ODD_TEXT "in\\\"ner\\n\\\\x\xef\xbf\xbd\xc3\xbc"	/* as the text format writes it */
#define ODD_PB "in\"ner\n\\x\xef\xbf\xbd\xc3\xbc"		/* as protobuf carries it */

static void timed(struct qp_scope_item *it, int32_t pid, const char *exe, const char *name, const char *parent,
		  const char *kind, const uint64_t *d, size_t n)
{
	uint64_t *dense = calloc(QPROF_HIST_BUCKETS, sizeof(*dense));
	struct qp_hist_count *sp = malloc(QPROF_HIST_BUCKETS * sizeof(*sp));
	size_t i;

	memset(it, 0, sizeof(*it));
	it->shape = QP_ITEM_TIMED;
	it->pid = pid;
	it->exe = exe;
	it->name = name;
	it->parent = parent;
	it->kind = kind;
	for (i = 0; i < n; i++) {
		dense[qprof_hist_index(d[i])]++;
		it->total_ns += d[i];
	}
	it->count = n;
	it->nhist = qp_hist_sparse(dense, sp);
	it->hist = sp;
	free(dense);
}

static void counted(struct qp_scope_item *it, int32_t pid, const char *exe, const char *name, bool probe,
		    uint64_t n)
{
	memset(it, 0, sizeof(*it));
	it->shape = probe ? QP_ITEM_PROBE : QP_ITEM_MARK;
	it->pid = pid;
	it->exe = exe;
	it->name = name;
	it->kind = probe ? "probe" : "mark";
	it->count = n;
}

static void value(struct qp_value_item *it, int32_t pid, const char *name, const double *v, size_t n,
		  double last, uint64_t last_ns, uint64_t nan)
{
	struct qp_value_bucket *b = calloc(n ? n : 1, sizeof(*b));
	size_t i, k = 0;

	memset(it, 0, sizeof(*it));
	it->pid = pid;
	it->exe = "strat";
	it->name = name;
	it->count = n;
	it->min = n ? v[0] : 0;
	it->max = n ? v[n - 1] : 0;	/* V sorted */
	for (i = 0; i < n; i++) {
		uint64_t bk = qp_value_key(v[i]) >> QPROF_VALUE_BUCKET_SHIFT;

		if (k && b[k - 1].bucket == bk)
			b[k - 1].count++;
		else
			b[k++] = (struct qp_value_bucket){ bk, 1 };
	}
	it->buckets = b;
	it->nbuckets = k;
	it->last = last;
	it->last_ns = last_ns;
	it->nan = nan;
}

/* Model A: merged rows, an odd name, a span, a mark, a probe, values. */
static struct qp_scope_item A_items[9];
static struct qp_value_item A_values[3];

static void model_a(struct qp_scope_model *sm, struct qp_value_model *vm, struct qp_status_model *st)
{
	static const uint64_t d0[] = { 1023, 1024, 1024, 5000 }, d1[] = { 1023, 70000 }, d2[] = { 300 },
			      d3[] = { 100000 }, d4[] = { 50 }, d5[] = { 0 };
	static const double v0[] = { 2, 2, 8, 8 }, v1[] = { 4 };

	timed(&A_items[0], 10, "strat", "calc", NULL, "scope", d0, 4);
	timed(&A_items[1], 11, "strat", "calc", NULL, "scope", d1, 2);
	timed(&A_items[2], 10, "strat", ODD_NAME, "calc", "scope", d2, 1);
	timed(&A_items[3], 10, "strat", "order_rt", NULL, "async_span", d3, 1);
	timed(&A_items[4], 10, "other", "calc", NULL, "scope", d4, 1);
	timed(&A_items[5], 10, "strat", "zero", NULL, "scope", d5, 1);
	counted(&A_items[6], 10, "strat", "tick", false, 50);
	counted(&A_items[7], 11, "strat", "tick", false, 7);
	counted(&A_items[8], 20, "py", "libc:malloc", true, 60);
	sm->n = QP_ARRAY_SIZE(A_items);
	sm->items = A_items;
	sm->arena = NULL;
	value(&A_values[0], 10, "price", v0, 4, 8, 100, 0);
	value(&A_values[1], 11, "price", v1, 1, 4, 200, 0);
	value(&A_values[2], 10, "nanv", NULL, 0, NAN, 300, 3);
	vm->n = QP_ARRAY_SIZE(A_values);
	vm->items = A_values;
	vm->arena = NULL;
	memset(st, 0, sizeof(*st));
	st->scopes.drops.exit_without_enter = 3;
	st->logs.received = 100;
	st->targets_running = 2;
	st->calib.done = true;
	st->calib.correction_ns = 412;
	st->self.ok = true;
	st->self.rss_bytes = 1234567;
	st->self.cpu_ns = 1500000000;
}

static void free_items(struct qp_scope_item *it, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free((void *)it[i].hist);
}

#endif
