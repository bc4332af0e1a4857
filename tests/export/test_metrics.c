/* test_metrics.c - GET /metrics as text from hand-made models
 * (export_metrics.c, metrics_writer.c), without root: the classic le
 * bounds are kernel bucket edges less 1 ns and their counts exact; every
 * kernel bucket lands within one schema-5 bucket of its values; labels
 * escaped per the text format and invalid UTF-8 replaced; rows of one
 * label set merged (not with the pid label); the cap on label sets and its
 * count, at 10,000 scopes; values as summaries. (Protobuf:
 * test_metrics_pb.c; the Accept negotiation: test_http_query.c.)
 *
 * `test_metrics --print` writes the text of a hostile model (odd names,
 * merged rows, 10,000 scopes) for `promtool check metrics`
 * (ctest unit_metrics_promtool). */
#include "metrics_fixture.h"
#include "targets/targets_view.h"
static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	const char *p = text;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len == n && !memcmp(p, line, n))
			return true;
		p = nl ? nl + 1 : NULL;
	}
	fprintf(stderr, "missing line: %s\n", line);
	return false;
}

static size_t count_prefix(const char *text, const char *prefix)
{
	size_t n = 0, k = strlen(prefix);
	const char *p = text;

	while (p && *p) {
		if (!strncmp(p, prefix, k))
			n++;
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	return n;
}

static char *export_text(const struct qp_status_model *st, const struct qp_scope_model *sm,
			 const struct qp_value_model *vm, const struct qp_metrics_opts *o)
{
	struct qp_buf b;

	qp_buf_init(&b);
	CHECK_INT(qp_export_metrics(st, NULL, sm, vm, NULL, o, false, &b), 0);
	return qp_buf_steal(&b, NULL);
}

#define CALC "exe=\"strat\",scope=\"calc\",parent=\"\",kind=\"scope\""

static void check_edges(void)
{
	bool edges_ok = true, native_ok = true, mono = true;
	int32_t prev_n = INT32_MIN;
	unsigned int k;
	size_t i;

	for (i = 0; i < QP_METRICS_LE_N; i++) {
		uint64_t e = qp_metrics_le_edge_ns(i);

		edges_ok &= qprof_hist_lower(qprof_hist_index(e)) == e;	/* a kernel edge */
		edges_ok &= !i || e > qp_metrics_le_edge_ns(i - 1);
	}
	CHECK(edges_ok);
	CHECK_INT(qp_metrics_le_edge_ns(0), 64);
	CHECK_INT(qp_metrics_le_edge_ns(1), 80);
	CHECK_INT(qp_metrics_le_edge_ns(QP_METRICS_LE_N - 1), 1ull << 33);
	/* every value of a kernel bucket within one schema-5 bucket of where its
	 * count is put (the last kernel bucket is open-ended: left out) */
	for (k = 1; k + 1 < QPROF_HIST_BUCKETS; k++) {
		int32_t n = qp_metrics_native_index(k);
		double lo = (double)qprof_hist_lower(k), hi = lo + (double)qprof_hist_width(k) - 1;
		int32_t nlo = (int32_t)ceil(log2(lo / 1e9) * 32), nhi = (int32_t)ceil(log2(hi / 1e9) * 32);

		native_ok &= nlo >= n - 1 && nlo <= n + 1 && nhi >= n - 1 && nhi <= n + 1;
		mono &= n >= prev_n;
		prev_n = n;
	}
	CHECK(native_ok);
	CHECK(mono);
	/* 1000 ns: kernel bucket [992, 1007], midpoint 999.5 ns, in (2^(-638/32), 2^(-637/32)] s */
	CHECK_INT(qp_metrics_native_index(qprof_hist_index(1000)), -637);
}

static void check_text_a(void)
{
	struct qp_scope_model sm;
	struct qp_value_model vm;
	struct qp_status_model st;
	struct qp_metrics_opts o = { 0 };
	char *t;

	model_a(&sm, &vm, &st);
	t = export_text(&st, &sm, &vm, &o);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK(has_line(t, "# HELP qprof_up 1 while qprofd answers."));
	CHECK(has_line(t, "qprof_up 1"));
	CHECK(has_line(t, "# TYPE qprof_scope_duration_seconds histogram"));
	/* pids 10 and 11 of strat merged: {1023, 1024, 1024, 5000} + {1023, 70000} */
	CHECK(has_line(t, "qprof_scope_duration_seconds_bucket{" CALC ",le=\"6.3e-08\"} 0"));
	CHECK(has_line(t, "qprof_scope_duration_seconds_bucket{" CALC ",le=\"8.95e-07\"} 0"));
	CHECK(has_line(t, "qprof_scope_duration_seconds_bucket{" CALC ",le=\"1.023e-06\"} 2"));
	CHECK(has_line(t, "qprof_scope_duration_seconds_bucket{" CALC ",le=\"1.279e-06\"} 4"));
	CHECK(has_line(t, "qprof_scope_duration_seconds_bucket{" CALC ",le=\"4.095e-06\"} 4"));
	CHECK(has_line(t, "qprof_scope_duration_seconds_bucket{" CALC ",le=\"5.119e-06\"} 5"));
	CHECK(has_line(t, "qprof_scope_duration_seconds_bucket{" CALC ",le=\"6.5535e-05\"} 5"));
	CHECK(has_line(t, "qprof_scope_duration_seconds_bucket{" CALC ",le=\"8.1919e-05\"} 6"));
	CHECK(has_line(t, "qprof_scope_duration_seconds_bucket{" CALC ",le=\"8.589934591\"} 6"));
	CHECK(has_line(t, "qprof_scope_duration_seconds_bucket{" CALC ",le=\"+Inf\"} 6"));
	CHECK(has_line(t, "qprof_scope_duration_seconds_sum{" CALC "} 7.9094e-05"));
	CHECK(has_line(t, "qprof_scope_duration_seconds_count{" CALC "} 6"));
	CHECK_INT(count_prefix(t, "qprof_scope_duration_seconds_bucket{" CALC ","), QP_METRICS_LE_N + 1);
	/* another executable is another label set */
	CHECK(has_line(t, "qprof_scope_duration_seconds_count{exe=\"other\",scope=\"calc\",parent=\"\",kind=\"scope\"} 1"));
	CHECK(has_line(t, "qprof_scope_duration_seconds_count{exe=\"strat\",scope=\"" ODD_TEXT
			  "\",parent=\"calc\",kind=\"scope\"} 1"));
	CHECK(has_line(t, "qprof_scope_duration_seconds_count{exe=\"strat\",scope=\"order_rt\",parent=\"\","
			  "kind=\"async_span\"} 1"));
	CHECK(has_line(t, "qprof_scope_duration_seconds_bucket{exe=\"strat\",scope=\"zero\",parent=\"\",kind=\"scope\","
			  "le=\"6.3e-08\"} 1"));
	CHECK_INT(count_prefix(t, "qprof_scope_duration_seconds_count{"), 5);
	CHECK(has_line(t, "# TYPE qprof_events_total counter"));
	CHECK(has_line(t, "qprof_events_total{exe=\"strat\",name=\"tick\",kind=\"mark\"} 57"));
	CHECK(has_line(t, "qprof_events_total{exe=\"py\",name=\"libc:malloc\",kind=\"probe\"} 60"));
	/* values of pids 10 and 11 merged: 2, 2, 4, 8, 8; the last is pid 11's */
	CHECK(has_line(t, "# TYPE qprof_value summary"));
	CHECK(has_line(t, "qprof_value{exe=\"strat\",name=\"price\",quantile=\"0\"} 2"));
	CHECK(has_line(t, "qprof_value{exe=\"strat\",name=\"price\",quantile=\"1\"} 8"));
	CHECK(has_line(t, "qprof_value_count{exe=\"strat\",name=\"price\"} 5"));
	CHECK(has_line(t, "qprof_value_last{exe=\"strat\",name=\"price\"} 4"));
	CHECK(has_line(t, "qprof_value{exe=\"strat\",name=\"nanv\",quantile=\"0.5\"} NaN"));
	CHECK(has_line(t, "qprof_value_count{exe=\"strat\",name=\"nanv\"} 0"));
	CHECK(has_line(t, "qprof_value_last{exe=\"strat\",name=\"nanv\"} NaN"));
	CHECK(has_line(t, "qprof_value_nonfinite_total{exe=\"strat\",name=\"nanv\",class=\"nan\"} 3"));
	{
		const char *p = strstr(t, "qprof_value{exe=\"strat\",name=\"price\",quantile=\"0.5\"} ");

		CHECK(p != NULL);
		if (p)	/* the 3rd of 5, read at its bucket's midpoint: within 1/8192 */
			CHECK_REL(strtod(p + strlen("qprof_value{exe=\"strat\",name=\"price\",quantile=\"0.5\"} "), NULL),
				  4.0, 1.0 / 8192);
	}
	CHECK(has_line(t, "qprof_scopes_dropped_total{reason=\"exit_without_enter\"} 3"));
	CHECK(has_line(t, "qprof_logs_received_total 100"));
	CHECK(has_line(t, "qprof_targets{state=\"running\"} 2"));
	CHECK(has_line(t, "qprof_probe_correction_seconds 4.12e-07"));
	CHECK(has_line(t, "process_resident_memory_bytes 1234567"));
	CHECK(has_line(t, "process_cpu_seconds_total 1.5"));
	CHECK(has_line(t, "qprof_metrics_label_sets_omitted{family=\"qprof_scope_duration_seconds\"} 0"));
	/* every family has its HELP (promtool's first complaint before) */
	CHECK_INT(count_prefix(t, "# HELP "), count_prefix(t, "# TYPE "));
	free(t);

	/* --metrics-pid-label: no merging across processes */
	o.pid_label = true;
	t = export_text(&st, &sm, &vm, &o);
	if (t) {
		CHECK(has_line(t, "qprof_scope_duration_seconds_count{exe=\"strat\",pid=\"10\",scope=\"calc\",parent=\"\","
				  "kind=\"scope\"} 4"));
		CHECK(has_line(t, "qprof_scope_duration_seconds_count{exe=\"strat\",pid=\"11\",scope=\"calc\",parent=\"\","
				  "kind=\"scope\"} 2"));
		CHECK(has_line(t, "qprof_events_total{exe=\"strat\",pid=\"11\",name=\"tick\",kind=\"mark\"} 7"));
		CHECK(has_line(t, "qprof_value_count{exe=\"strat\",pid=\"10\",name=\"price\"} 4"));
		CHECK_INT(count_prefix(t, "qprof_scope_duration_seconds_count{"), 6);
	}
	free(t);
	free_items(A_items, QP_ARRAY_SIZE(A_items));
	for (size_t i = 0; i < QP_ARRAY_SIZE(A_values); i++)
		free((void *)A_values[i].buckets);
}

/* The scopes' kernel figures: a counter family each, labelled
 * and merged like the durations; a row without them (a ring target) gives
 * no series, and a set of such rows none either. */
static void check_kernel(void)
{
	static const uint64_t d[] = { 1000 };
	struct qp_value_model vm = { 0 };
	struct qp_status_model st = { 0 };
	struct qp_metrics_opts o = { 0 };
	struct qp_scope_item it[4];
	struct qp_scope_model sm = { .n = 4, .items = it };
	char *t;

	timed(&it[0], 10, "strat", "calc", NULL, "scope", d, 1);
	timed(&it[1], 11, "strat", "calc", NULL, "scope", d, 1);
	timed(&it[2], 12, "strat", "calc", NULL, "scope", d, 1);	/* a ring target: none */
	timed(&it[3], 13, "ringy", "calc", NULL, "scope", d, 1);	/* ditto, alone in its set */
	it[0].has_kernel = it[1].has_kernel = true;
	it[0].kernel = (struct scope_kstats){ .off_cpu_ns = 2500000000, .voluntary = 3, .involuntary = 4,
					      .migrations = 1, .page_faults = 7, .irq_ns = 90 };
	it[1].kernel = (struct scope_kstats){ .off_cpu_ns = 500000000, .voluntary = 10, .involuntary = 20,
					      .migrations = 30, .page_faults = 40, .irq_ns = 10 };
	it[2].kernel.voluntary = 1000;	/* not counted: has_kernel is false */
	t = export_text(&st, &sm, &vm, &o);
	CHECK(t != NULL);
	if (t) {
		CHECK(has_line(t, "# HELP qprof_scope_off_cpu_seconds_total Time off the CPU while the scope was its "
				  "thread's innermost, since attach."));
		CHECK(has_line(t, "# TYPE qprof_scope_off_cpu_seconds_total counter"));
		CHECK(has_line(t, "qprof_scope_off_cpu_seconds_total{" CALC "} 3"));
		CHECK(has_line(t, "qprof_scope_voluntary_switches_total{" CALC "} 13"));
		CHECK(has_line(t, "qprof_scope_involuntary_switches_total{" CALC "} 24"));
		CHECK(has_line(t, "qprof_scope_migrations_total{" CALC "} 31"));
		CHECK(has_line(t, "qprof_scope_page_faults_total{" CALC "} 47"));
		CHECK(has_line(t, "qprof_scope_irq_seconds_total{" CALC "} 1e-07"));
		CHECK_INT(count_prefix(t, "qprof_scope_off_cpu_seconds_total{"), 1);
		CHECK_INT(count_prefix(t, "qprof_scope_page_faults_total{"), 1);
		CHECK(strstr(t, "qprof_scope_voluntary_switches_total{exe=\"ringy\"") == NULL);
		CHECK_INT(count_prefix(t, "# TYPE qprof_scope_"), 7);	/* durations + 6 */
		CHECK_INT(count_prefix(t, "# HELP "), count_prefix(t, "# TYPE "));
	}
	free(t);
	o.pid_label = true;
	t = export_text(&st, &sm, &vm, &o);
	if (t) {
		CHECK(has_line(t, "qprof_scope_voluntary_switches_total{exe=\"strat\",pid=\"10\",scope=\"calc\","
				  "parent=\"\",kind=\"scope\"} 3"));
		CHECK(has_line(t, "qprof_scope_off_cpu_seconds_total{exe=\"strat\",pid=\"11\",scope=\"calc\","
				  "parent=\"\",kind=\"scope\"} 0.5"));
		CHECK_INT(count_prefix(t, "qprof_scope_voluntary_switches_total{"), 2);
	}
	free(t);
	/* no row with kernel figures: the families are left out */
	it[0].has_kernel = it[1].has_kernel = false;
	o.pid_label = false;
	t = export_text(&st, &sm, &vm, &o);
	if (t)
		CHECK(strstr(t, "qprof_scope_off_cpu_seconds_total") == NULL);
	free(t);
	free_items(it, 4);
}

/* 10,000 scopes of one executable: NSETS label sets kept, the rest counted. */
static struct qp_scope_item *many_scopes(size_t n, char (**names)[32])
{
	static const uint64_t d[] = { 1000 };
	struct qp_scope_item *v = calloc(n, sizeof(*v));
	size_t i;

	*names = calloc(n, sizeof(**names));
	for (i = 0; i < n; i++) {
		snprintf((*names)[i], 32, "s%05zu", n - 1 - i);	/* out of label order */
		timed(&v[i], 10, "big", (*names)[i], NULL, "scope", d, 1);
	}
	return v;
}

static void check_cap(void)
{
	struct qp_value_model vm = { 0 };
	struct qp_status_model st = { 0 };
	struct qp_metrics_opts o = { 0 };
	struct qp_scope_model sm;
	char (*names)[32];
	char *t;

	sm.n = 10000;
	sm.items = many_scopes(sm.n, &names);
	sm.arena = NULL;
	t = export_text(&st, &sm, &vm, &o);
	if (t) {
		CHECK_INT(count_prefix(t, "qprof_scope_duration_seconds_count{"), QP_METRICS_MAX_SETS_DEFAULT);
		/* the series count: (109 bounds + +Inf + _sum + _count) per kept set */
		CHECK_INT(count_prefix(t, "qprof_scope_duration_seconds"), QP_METRICS_MAX_SETS_DEFAULT * 112);
		CHECK(has_line(t, "qprof_metrics_label_sets_omitted{family=\"qprof_scope_duration_seconds\"} 9000"));
		CHECK(strstr(t, "scope=\"s00999\"") != NULL);	/* the first 1000 in label order */
		CHECK(strstr(t, "scope=\"s01000\"") == NULL);
	}
	free(t);
	o.max_sets = 20000;
	t = export_text(&st, &sm, &vm, &o);
	if (t) {
		CHECK_INT(count_prefix(t, "qprof_scope_duration_seconds_count{"), 10000);
		CHECK(has_line(t, "qprof_metrics_label_sets_omitted{family=\"qprof_scope_duration_seconds\"} 0"));
	}
	free(t);
	free_items(sm.items, sm.n);
	free(sm.items);
	free(names);
}

static void ring_view(struct qp_targets_view *tv, struct qp_target_view *t);

static int print_hostile(void)
{
	struct qp_scope_model sm, big;
	struct qp_value_model vm;
	struct qp_status_model st;
	struct qp_metrics_opts o = { 0 };
	struct qp_scope_item *all;
	char (*names)[32];
	struct qp_buf b;
	int ret;

	model_a(&sm, &vm, &st);
	big.n = 10000;
	big.items = many_scopes(big.n, &names);
	all = calloc(sm.n + big.n, sizeof(*all));
	memcpy(all, sm.items, sm.n * sizeof(*all));
	memcpy(all + sm.n, big.items, big.n * sizeof(*all));
	sm.items = all;
	sm.n += big.n;
	all[0].has_kernel = all[2].has_kernel = true;	/* the kernel families too */
	all[0].kernel.off_cpu_ns = 1500;
	all[2].kernel.page_faults = 9;
	qp_buf_init(&b);
	{
		struct qp_targets_view tv;
		struct qp_target_view t[2];

		ring_view(&tv, t);
		ret = qp_export_metrics(&st, NULL, &sm, &vm, &tv, &o, false, &b);
	}
	if (!ret)
		fwrite(b.data, 1, b.len, stdout);
	qp_buf_free(&b);
	return ret ? 1 : 0;
}

/* Two targets, one on the ring with losses, one on BPF: the ring's
 * families give the ring target's figures (those of targets[].ring in
 * /api/status) under its pid, and nothing of the other. */
static void ring_view(struct qp_targets_view *tv, struct qp_target_view *t)
{
	memset(tv, 0, sizeof(*tv));
	memset(t, 0, 2 * sizeof(*t));
	t[0].pid = 4242;
	t[0].exe = "/opt/md/feed";
	t[0].ring = t[0].has_ring_status = true;
	t[0].ring_status.read = 1999000;
	t[0].ring_status.c.lost = 1000;
	t[0].ring_status.est.scopes = 500;
	t[0].ring_status.est.marks = 3;
	t[0].ring_status.est.values = 2;
	t[1].pid = 77;
	t[1].exe = "/opt/md/gateway";
	tv->targets = t;
	tv->ntargets = 2;
}

static void check_ring(void)
{
	struct qp_scope_model sm;
	struct qp_value_model vm;
	struct qp_status_model st;
	struct qp_metrics_opts o = { 0 };
	struct qp_targets_view tv;
	struct qp_target_view t[2];
	struct qp_buf b;
	char *txt;

	model_a(&sm, &vm, &st);
	ring_view(&tv, t);
	qp_buf_init(&b);
	CHECK_INT(qp_export_metrics(&st, NULL, &sm, &vm, &tv, &o, false, &b), 0);
	txt = qp_buf_steal(&b, NULL);
	CHECK(has_line(txt, "# TYPE qprof_ring_records_lost_total counter"));
	CHECK(has_line(txt, "qprof_ring_records_read_total{pid=\"4242\",exe=\"feed\"} 1999000"));
	CHECK(has_line(txt, "qprof_ring_records_lost_total{pid=\"4242\",exe=\"feed\"} 1000"));
	CHECK(has_line(txt, "qprof_ring_events_lost_total{pid=\"4242\",exe=\"feed\",kind=\"scope\"} 500"));
	CHECK(has_line(txt, "qprof_ring_events_lost_total{pid=\"4242\",exe=\"feed\",kind=\"scope_partial\"} 0"));
	CHECK(has_line(txt, "qprof_ring_events_lost_total{pid=\"4242\",exe=\"feed\",kind=\"mark\"} 3"));
	CHECK(has_line(txt, "qprof_ring_events_lost_total{pid=\"4242\",exe=\"feed\",kind=\"value\"} 2"));
	CHECK(has_line(txt, "qprof_ring_lost_estimated{pid=\"4242\",exe=\"feed\"} 0"));
	CHECK(strstr(txt, "pid=\"77\"") == NULL);	/* not on the ring: no series */
	CHECK_INT((long)count_prefix(txt, "qprof_ring_events_lost_total{"), 5);
	free(txt);
	t[0].ring_status.c.start_unknown = 1;	/* a ring found late: an estimate */
	qp_buf_init(&b);
	CHECK_INT(qp_export_metrics(&st, NULL, &sm, &vm, &tv, &o, false, &b), 0);
	txt = qp_buf_steal(&b, NULL);
	CHECK(has_line(txt, "qprof_ring_lost_estimated{pid=\"4242\",exe=\"feed\"} 1"));
	free(txt);
}

int main(int argc, char **argv)
{
	char f[32];

	if (argc > 1 && !strcmp(argv[1], "--print"))
		return print_hostile();
	CHECK_STR(qp_metrics_fmt(63 / 1e9, f), "6.3e-08");
	CHECK_STR(qp_metrics_fmt(8589934591 / 1e9, f), "8.589934591");
	CHECK_STR(qp_metrics_fmt(12, f), "12");
	CHECK_STR(qp_metrics_fmt(NAN, f), "NaN");
	CHECK_STR(qp_metrics_fmt(-INFINITY, f), "-Inf");
	CHECK_STR(qp_metrics_fmt(60, f), "60");
	CHECK_STR(qp_metrics_fmt(9000, f), "9000");
	CHECK_STR(qp_metrics_fmt(1.5, f), "1.5");
	CHECK_STR(qp_metrics_fmt(0.000123, f), "0.000123");
	CHECK_STR(qp_metrics_fmt(1234567.5, f), "1.2345675e+06");
	CHECK_STR(qp_metrics_fmt(1e300, f), "1e+300");
	CHECK_STR(qp_metrics_fmt(0.1 + 0.2, f), "0.30000000000000004");
	check_edges();
	check_text_a();
	check_kernel();
	check_cap();
	check_ring();
	return test_done("test_metrics");
}
