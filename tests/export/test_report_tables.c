/* test_report_tables.c - the scope tables of an exit report's summary.txt,
 * from a hand-made scope model through qp_srows_from, byte for byte. The
 * case that matters: a duration that reads 0 after the BPF collector took
 * its calibrated cost off is written as the bound it is, "<N ns" (N the
 * row's calibration_ns), never as "0 ns"; a 0 of the ring collector (no
 * correction) stays "0 ns", and a row with no instance shows no bound. */
#include <stdlib.h>
#include <string.h>
#include "common/buf.h"
#include "model/model_scopes.h"
#include "export/report_figures.h"
#include "testlib.h"

static struct qp_scope_item timed(const char *name, const char *parent, uint64_t count, uint64_t total,
				  double mean, double p50, double p99, uint64_t max, uint64_t cal)
{
	struct qp_scope_item it = { .shape = QP_ITEM_TIMED, .pid = 42, .exe = "strategy", .kind = "scope",
				    .name = name, .parent = parent, .count = count, .total_ns = total,
				    .mean_ns = mean, .p50_ns = p50, .p90_ns = p99, .p99_ns = p99,
				    .p999_ns = p99, .max_ns = max, .calibration_ns = cal };
	return it;
}

/* the number of times NEEDLE occurs in the line of B that starts with PREFIX */
static int in_line(const char *b, const char *prefix, const char *needle)
{
	const char *l = strstr(b, prefix), *e, *p;
	int n = 0;

	if (!l)
		return -1;
	e = strchr(l, '\n');
	for (p = strstr(l, needle); p && (!e || p < e); p = strstr(p + 1, needle))
		n++;
	return n;
}

int main(void)
{
	struct qp_scope_item items[] = {
		/* the BPF collector, a scope that does work: figures as they are */
		timed("on_tick", NULL, 1000, 5000000, 5000, 4000, 9000, 20000, 691),
		/* the BPF collector, an empty scope: every duration at or below the
		 * correction, so each reads 0 and is < 691 ns in truth */
		timed("empty", "on_tick", 500, 0, 0, 0, 0, 0, 691),
		/* some instances above the correction: only the 0 becomes a bound */
		timed("tiny", "on_tick", 300, 900, 3, 0, 12, 40, 691),
		/* the ring collector: no correction, a 0 is a 0 */
		timed("ring_empty", NULL, 200, 0, 0, 0, 0, 0, 0),
		/* a corrected row with no instance in the window: nothing bounded */
		timed("idle", NULL, 0, 0, 0, 0, 0, 0, 691),
		{ .shape = QP_ITEM_MARK, .pid = 42, .exe = "strategy", .kind = "mark", .name = "signal",
		  .count = 7 },
	};
	struct qp_scope_model m = { .n = sizeof(items) / sizeof(items[0]), .items = items };
	struct srow *rows;
	struct qp_buf b;
	size_t n = qp_srows_from(&m, &rows);

	CHECK_INT(n, 6);
	CHECK(rows != NULL);
	if (!rows)
		return test_done("unit_report_tables");
	CHECK_INT(rows[1].calibration_ns, 691);
	CHECK_INT(rows[3].calibration_ns, 0);

	qp_buf_init(&b);
	qp_report_scope_table(&b, "Scopes by total time", rows, n, qp_srow_by_total, true);
	qp_report_scope_table(&b, "Scopes by count", rows, n, qp_srow_by_count, false);
	CHECK(!b.failed);
	if (b.failed)
		return test_done("unit_report_tables");
	CHECK_STR(b.data,
		  "\n"
		  "Scopes by total time\n"
		  "  SCOPE       PARENT        COUNT        MEAN         P50         P99         MAX       TOTAL\n"
		  "  on_tick     -              1000     5.00 us     4.00 us     9.00 us     20.0 us     5.00 ms\n"
		  "  tiny        on_tick         300        3 ns     <691 ns       12 ns       40 ns      900 ns\n"
		  "  empty       on_tick         500     <691 ns     <691 ns     <691 ns     <691 ns        0 ns\n"
		  "  idle        -                 0        0 ns        0 ns        0 ns        0 ns        0 ns\n"
		  "  ring_empty  -               200        0 ns        0 ns        0 ns        0 ns        0 ns\n"
		  "\n"
		  "Scopes by count\n"
		  "  SCOPE       PARENT        COUNT        MEAN         P50         P99         MAX       TOTAL\n"
		  "  on_tick     -              1000     5.00 us     4.00 us     9.00 us     20.0 us     5.00 ms\n"
		  "  empty       on_tick         500     <691 ns     <691 ns     <691 ns     <691 ns        0 ns\n"
		  "  tiny        on_tick         300        3 ns     <691 ns       12 ns       40 ns      900 ns\n"
		  "  ring_empty  -               200        0 ns        0 ns        0 ns        0 ns        0 ns\n"
		  "  signal      -                 7           -           -           -           -           -\n"
		  "  idle        -                 0        0 ns        0 ns        0 ns        0 ns        0 ns\n");
	/* the same, said plainly: the bound where a corrected figure is 0, and
	 * nowhere else (the TOTAL of the empty scope is a sum, not a bound) */
	CHECK_INT(in_line(b.data, "  empty ", "<691 ns"), 4);
	CHECK_INT(in_line(b.data, "  tiny ", "<691 ns"), 1);
	CHECK_INT(in_line(b.data, "  on_tick ", "<"), 0);
	CHECK_INT(in_line(b.data, "  ring_empty ", "<"), 0);
	CHECK_INT(in_line(b.data, "  idle ", "<"), 0);
	qp_buf_free(&b);

	free(rows);

	/* only a mark: no timed row, the duration table says so */
	m.items = items + 5;
	m.n = 1;
	CHECK_INT(qp_srows_from(&m, &rows), 1);
	qp_buf_init(&b);
	qp_report_scope_table(&b, "Scopes by p99", rows, 1, qp_srow_by_p99, true);
	CHECK_STR(b.data, "\nScopes by p99\n  (none)\n");
	qp_buf_free(&b);
	free(rows);
	return test_done("unit_report_tables");
}
