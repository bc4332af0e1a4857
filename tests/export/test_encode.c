/* test_encode.c - each data route's encoding from a hand-made model, byte
 * for byte: {"scopes": ...} (a scope, a span, a child scope with a hostile
 * name, a timed row of a mark site, a mark, a probe), {"values": ...}, the
 * figure sections of /api/status, {"instances": ...} of the slowest
 * instances (two instances: one of the BPF collector with a wait, one of
 * the ring collector). (/metrics: test_metrics.c.) */
#include <stdlib.h>
#include "testlib.h"
#include "export/export_json.h"
#include "export/export_slow.h"
#include "common/util.h"

static const struct qp_scope_item scope_items[] = {
	{ .shape = QP_ITEM_TIMED, .pid = 10, .kind = "span", .name = "gc", .site_kind = "span",
	  .begin = "py:gc__start", .end = "py:gc__done", .count = 3, .total_ns = 3000000, .min_ns = 900000,
	  .max_ns = 1100000, .mean_ns = 1000000, .p50_ns = 990000, .p90_ns = 1050000, .p99_ns = 1100000,
	  .p999_ns = 1100000 },
	{ .shape = QP_ITEM_TIMED, .pid = 10, .kind = "scope", .name = "calc", .site_kind = "scope",
	  .located = true, .file = "s.c", .line = 10, .function = "gen", .count = 11, .total_ns = 15000,
	  .min_ns = 992, .max_ns = 5000, .mean_ns = 15000.0 / 11, .p50_ns = 1000.8, .p90_ns = 1007.2,
	  .p99_ns = 5000, .p999_ns = 5000, .has_kernel = true,
	  .kernel = { .off_cpu_ns = 2500, .voluntary = 3, .involuntary = 4, .migrations = 1, .page_faults = 7,
		      .irq_ns = 90 } },
	{ .shape = QP_ITEM_TIMED, .pid = 10, .kind = "scope", .name = "in\"ner\n", .site_kind = "func",
	  .located = true, .file = NULL, .line = 20, .function = "f", .count = 2, .total_ns = 600, .min_ns = 300,
	  .max_ns = 300, .mean_ns = 300, .p50_ns = 300, .p90_ns = 300, .p99_ns = 300, .p999_ns = NAN,
	  .parent = "calc" },
	{ .shape = QP_ITEM_TIMED, .pid = 10, .kind = "mark", .name = "0x9000", .site_kind = "unknown",
	  .count = 1, .total_ns = 7, .min_ns = 7, .max_ns = 7, .mean_ns = 7, .p50_ns = 7, .p90_ns = 7,
	  .p99_ns = 7, .p999_ns = 7 },
	{ .shape = QP_ITEM_TIMED, .pid = 10, .kind = "async_span", .name = "order_rt",
	  .site_kind = "async_begin", .located = true, .file = "o.c", .line = 70, .function = "send",
	  .count = 4, .total_ns = 400000, .min_ns = 90000, .max_ns = 110000, .mean_ns = 100000,
	  .p50_ns = 100000, .p90_ns = 110000, .p99_ns = 110000, .p999_ns = 110000 },
	{ .shape = QP_ITEM_TIMED, .pid = 10, .kind = "async_span", .name = "acked", .site_kind = "async_step",
	  .located = true, .file = "o.c", .line = 80, .function = "gw", .count = 4, .total_ns = 40000,
	  .min_ns = 9000, .max_ns = 11000, .mean_ns = 10000, .p50_ns = 10000, .p90_ns = 11000,
	  .p99_ns = 11000, .p999_ns = 11000, .parent = "order_rt" },
	{ .shape = QP_ITEM_MARK, .pid = 10, .kind = "mark", .name = "tick", .site_kind = "mark", .located = true,
	  .file = "m.c", .line = 40, .function = "loop", .count = 50, .rate_per_s = 12.5 },
	{ .shape = QP_ITEM_PROBE, .pid = 20, .kind = "probe", .name = "libc:malloc", .count = 60,
	  .rate_per_s = 1.0 / 3 },
};

static const char scopes_json[] =
	"{\"scopes\":["
	"{\"pid\":10,\"kind\":\"span\",\"name\":\"gc\",\"site_kind\":\"span\",\"begin\":\"py:gc__start\","
	"\"end\":\"py:gc__done\",\"file\":null,\"line\":null,\"function\":null,\"count\":3,"
	"\"total_ns\":3000000,\"mean_ns\":1000000,\"min_ns\":900000,\"max_ns\":1100000,\"p50_ns\":990000,"
	"\"p90_ns\":1050000,\"p99_ns\":1100000,\"p999_ns\":1100000,\"calibration_ns\":0,\"parent\":null"
	",\"off_cpu_ns\":null,\"voluntary_switches\":null,\"involuntary_switches\":null,\"migrations\":null,\"page_faults\":null,\"irq_ns\":null},"
	"{\"pid\":10,\"kind\":\"scope\",\"name\":\"calc\",\"site_kind\":\"scope\",\"file\":\"s.c\",\"line\":10,"
	"\"function\":\"gen\",\"count\":11,\"total_ns\":15000,\"mean_ns\":1363.6363636363637,\"min_ns\":992,"
	"\"max_ns\":5000,\"p50_ns\":1000.8,\"p90_ns\":1007.2,\"p99_ns\":5000,\"p999_ns\":5000,\"calibration_ns\":0,\"parent\":null"
	",\"off_cpu_ns\":2500,\"voluntary_switches\":3,\"involuntary_switches\":4,\"migrations\":1,\"page_faults\":7,\"irq_ns\":90},"
	"{\"pid\":10,\"kind\":\"scope\",\"name\":\"in\\\"ner\\n\",\"site_kind\":\"func\",\"file\":null,"
	"\"line\":20,\"function\":\"f\",\"count\":2,\"total_ns\":600,\"mean_ns\":300,\"min_ns\":300,"
	"\"max_ns\":300,\"p50_ns\":300,\"p90_ns\":300,\"p99_ns\":300,\"p999_ns\":null,\"calibration_ns\":0,\"parent\":\"calc\""
	",\"off_cpu_ns\":null,\"voluntary_switches\":null,\"involuntary_switches\":null,\"migrations\":null,\"page_faults\":null,\"irq_ns\":null},"
	"{\"pid\":10,\"kind\":\"mark\",\"name\":\"0x9000\",\"site_kind\":\"unknown\",\"file\":null,"
	"\"line\":null,\"function\":null,\"count\":1,\"total_ns\":7,\"mean_ns\":7,\"min_ns\":7,\"max_ns\":7,"
	"\"p50_ns\":7,\"p90_ns\":7,\"p99_ns\":7,\"p999_ns\":7,\"calibration_ns\":0,\"parent\":null"
	",\"off_cpu_ns\":null,\"voluntary_switches\":null,\"involuntary_switches\":null,\"migrations\":null,\"page_faults\":null,\"irq_ns\":null},"
	"{\"pid\":10,\"kind\":\"async_span\",\"name\":\"order_rt\",\"site_kind\":\"async_begin\","
	"\"file\":\"o.c\",\"line\":70,\"function\":\"send\",\"count\":4,\"total_ns\":400000,"
	"\"mean_ns\":100000,\"min_ns\":90000,\"max_ns\":110000,\"p50_ns\":100000,\"p90_ns\":110000,"
	"\"p99_ns\":110000,\"p999_ns\":110000,\"calibration_ns\":0,\"parent\":null"
	",\"off_cpu_ns\":null,\"voluntary_switches\":null,\"involuntary_switches\":null,\"migrations\":null,\"page_faults\":null,\"irq_ns\":null},"
	"{\"pid\":10,\"kind\":\"async_span\",\"name\":\"acked\",\"site_kind\":\"async_step\","
	"\"file\":\"o.c\",\"line\":80,\"function\":\"gw\",\"count\":4,\"total_ns\":40000,"
	"\"mean_ns\":10000,\"min_ns\":9000,\"max_ns\":11000,\"p50_ns\":10000,\"p90_ns\":11000,"
	"\"p99_ns\":11000,\"p999_ns\":11000,\"calibration_ns\":0,\"parent\":\"order_rt\""
	",\"off_cpu_ns\":null,\"voluntary_switches\":null,\"involuntary_switches\":null,\"migrations\":null,\"page_faults\":null,\"irq_ns\":null},"
	"{\"pid\":10,\"kind\":\"mark\",\"name\":\"tick\",\"site_kind\":\"mark\",\"file\":\"m.c\",\"line\":40,"
	"\"function\":\"loop\",\"count\":50,\"rate_per_s\":12.5,\"total_ns\":null,\"mean_ns\":null,"
	"\"min_ns\":null,\"max_ns\":null,\"p50_ns\":null,\"p90_ns\":null,\"p99_ns\":null,\"p999_ns\":null,"
	"\"parent\":null},"
	"{\"pid\":20,\"kind\":\"probe\",\"name\":\"libc:malloc\",\"file\":null,\"line\":null,"
	"\"function\":null,\"count\":60,\"rate_per_s\":0.3333333333333333,\"total_ns\":null,\"mean_ns\":null,"
	"\"min_ns\":null,\"max_ns\":null,\"p50_ns\":null,\"p90_ns\":null,\"p99_ns\":null,\"p999_ns\":null,"
	"\"parent\":null}]}";

static const struct qp_value_item value_items[] = {
	{ .pid = 10, .name = "price", .located = true, .file = "v.c", .line = 50, .count = 4, .min = 2,
	  .max = 8, .mean = 5.0009765625, .p50 = 2.0001220703125, .p99 = 8, .last = 8 },
	{ .pid = 10, .name = "0x5100", .nan = 3, .pos_inf = 1, .neg_inf = 2, .last = INFINITY },
};

static const char values_json[] =
	"{\"values\":["
	"{\"pid\":10,\"name\":\"price\",\"file\":\"v.c\",\"line\":50,\"count\":4,\"min\":2,\"max\":8,"
	"\"mean\":5.0009765625,\"p50\":2.0001220703125,\"p99\":8,\"last\":8,\"nan\":0,\"pos_inf\":0,"
	"\"neg_inf\":0},"
	"{\"pid\":10,\"name\":\"0x5100\",\"file\":null,\"line\":null,\"count\":0,\"min\":null,\"max\":null,"
	"\"mean\":null,\"p50\":null,\"p99\":null,\"last\":null,\"nan\":3,\"pos_inf\":1,\"neg_inf\":2}]}";

static void status_model(struct qp_status_model *m)
{
	memset(m, 0, sizeof(*m));
	m->uptime_ms = 1234;
	m->cpu.running = false;
	m->cpu.frequency_hz = 99;
	m->cpu.aged = 31;
	m->cpu.table_bytes = 262144;
	snprintf(m->cpu.error, sizeof(m->cpu.error), "perf_event_open: \"denied\"");
	m->scopes.sites = 7;
	m->scopes.events = 47;
	m->scopes.drops = (struct qp_scope_drops){ 3, 5, 7, 11, 13, 17, 2, 4, 6, 8, 10, 12, 1 };
	m->scopes.spans_pending = 9;
	m->scopes.span_table = 65536;
	m->scopes.dropped = qp_scope_drops_total(&m->scopes.drops);
	m->logs.running = true;
	m->logs.received = 100;
	m->logs.lost = 19;
	m->logs.oldest_seq = 42;
	m->values_lost = 23;
	m->marks_lost = 29;
	m->scopes.minmax_inexact = 2;
	m->scopes.poll.polls = 3;
	m->scopes.poll.chunks_read = 1000;
	m->scopes.poll.full_scans = 1;
	m->scopes.poll.cpu_ns = 4567890;
	m->scopes.poll.chunks = 900;
	m->trace.running = true;
	m->trace.st = (struct qp_tracer_stats){ 1, 3, 1000, 31, 37 };
	m->calib = (struct qp_calibration){ .done = true, .correction_ns = 412, .samples = 40000,
					    .p10_ns = 380, .p50_ns = 412, .p90_ns = 470 };
	m->targets_running = 1;
	m->targets_exited = 2;
	m->offcpu.running = true;
	m->offcpu.intervals = 5000;
	m->offcpu.lost = 3;
	m->offcpu.no_state = 1;
	m->offcpu.kstats_full = 2;
	m->offcpu.slow = (struct qp_slow_counters){ .records = 40, .pending_lost = 4, .refused = 5, .partial = 6,
						    .ring_missed = 7, .kevents = 9, .kevents_lost = 10, .received = 9,
						    .windows_open = 1, .window_records = 11, .windows_refused = 2 };
	m->offcpu.slow_lost = 8;
}

static const char status_json[] =
	"{\"cpu\":{\"running\":false,\"frequency_hz\":99,\"samples\":0,\"lost\":0,\"aged\":31,\"table_bytes\":262144,\"all\":false,\"cpus\":0,"
	"\"starting\":false,\"error\":\"perf_event_open: \\\"denied\\\"\"},"
	"\"offcpu\":{\"running\":true,\"intervals\":5000,\"lost\":3,\"no_state\":1,\"kstats_full\":2,"
	"\"slow\":{\"records\":40,\"lost\":8,\"pending_lost\":4,\"refused\":5,\"partial\":6,\"ring_missed\":7,\"kevents\":9,\"kevents_lost\":10,"
	"\"received\":9,\"windows_open\":1,\"window_records\":11,\"windows_refused\":2}},"
	"\"scopes\":{\"sites\":7,\"events\":47,\"dropped\":99,\"dropped_by_reason\":{\"exit_without_enter\":3,"
	"\"out_of_order\":5,\"too_deep\":7,\"thread_exit\":11,\"map_full\":13,\"stack_unavailable\":17,"
	"\"begin_unended\":2,\"span_end_without_begin\":4,\"span_step_without_begin\":6,"
	"\"span_id_reused\":8,\"span_table_full\":10,\"span_abandoned\":12,\"ring_lost\":1},"
	"\"minmax_inexact\":2,\"poll\":{\"polls\":3,\"chunks_read\":1000,\"full_scans\":1,\"cpu_us\":4567,\"chunks\":900},"
	"\"spans_pending\":9,\"span_table\":65536},"
	"\"logs\":{\"running\":true,\"received\":100,\"lost\":19,\"oldest_seq\":42},"
	"\"values\":{\"lost\":23},\"marks\":{\"lost\":29},"
	"\"trace\":{\"running\":true,\"active\":1,\"sessions\":3,\"records\":1000,\"dropped\":31,\"lost\":37},"
	"\"calibration\":{\"done\":true,\"correction_ns\":412,\"samples\":40000,\"p10_ns\":380,"
	"\"p50_ns\":412,\"p90_ns\":470,\"mean_ns\":0},"
	"\"ring\":{\"running\":false,\"default\":false,\"announcements\":0,\"not_target\":0,\"bad\":0,"
	"\"refused\":0,\"lost\":0,\"dropped_rings\":0,\"thread_exits\":0,\"thread_exits_lost\":0,\"thread_exit_heads_unread\":0,"
	"\"exit_hook\":false,\"ring_records\":null,\"tsc_ns_per_tick\":0}}";

static const char *wait_frames[] = { "schedule_[k]", "sleep_2ms" };
static struct qp_slow_wait waits[] = {
	{ .at_ns = 1500, .ns = 2000, .runq_ns = 300, .reason = "blocked", .nframes = 2, .frames = wait_frames },
};
static struct qp_slow_folded folded[] = { { "main;spin_2ms", 3 }, { "[samples not kept]", 1 } };
static struct qp_slow_item slow_items[] = {
	{ .tid = 12, .thread = "worker", .parent = "loop", .start_ns = 1000, .dur_ns = 5000, .on_cpu_ns = 3000,
	  .off_cpu_ns = 2000, .runq_ns = 300, .blocked_ns = 1700, .irq_ns = 40, .migrations = 1, .page_faults = 2,
	  .kernel_known = true, .nwaits = 1, .waits = waits, .waits_more = 4, .nfolded = 2, .folded = folded,
	  .samples = 4 },
	{ .tid = 13, .thread = "r\"ing", .start_ns = 7000, .dur_ns = 900, .on_cpu_ns = 900, .partial = true },
};

static const char slow_json[] =
	"{\"pid\":42,\"name\":\"tick\",\"kept\":7,\"complete\":true,\"instances\":["
	"{\"tid\":12,\"thread\":\"worker\",\"parent\":\"loop\",\"start_ns\":1000,\"dur_ns\":5000,"
	"\"on_cpu_ns\":3000,\"off_cpu_ns\":2000,\"runnable_ns\":300,\"blocked_ns\":1700,\"irq_ns\":40,"
	"\"migrations\":1,\"page_faults\":2,\"partial\":false,\"off_cpu\":[{\"at_ns\":1500,\"ns\":2000,"
	"\"runnable_ns\":300,\"reason\":\"blocked\",\"stack\":[\"schedule_[k]\",\"sleep_2ms\"]}],"
	"\"off_cpu_more\":4,\"sample_count\":4,\"samples\":[{\"stack\":\"main;spin_2ms\",\"count\":3},"
	"{\"stack\":\"[samples not kept]\",\"count\":1}]},"
	"{\"tid\":13,\"thread\":\"r\\\"ing\",\"parent\":null,\"start_ns\":7000,\"dur_ns\":900,"
	"\"on_cpu_ns\":900,\"off_cpu_ns\":0,\"runnable_ns\":0,\"blocked_ns\":0,\"irq_ns\":null,"
	"\"migrations\":null,\"page_faults\":null,\"partial\":true,\"off_cpu\":[],\"off_cpu_more\":0,"
	"\"sample_count\":0,\"samples\":[]}]}";

/* J's text, compared whole; on a mismatch the first differing byte is shown */
static void check_text(const char *what, const char *got, size_t len, const char *want)
{
	size_t i;

	CHECK(got != NULL);
	if (!got)
		return;
	CHECK_INT(len, strlen(want));
	for (i = 0; got[i] && got[i] == want[i]; i++)
		;
	if (got[i] || want[i])
		fprintf(stderr, "%s differs at byte %zu:\n got: %.80s\nwant: %.80s\n", what, i, got + i, want + i);
	CHECK_STR(got, want);
}

int main(void)
{
	struct qp_scope_model sm = { QP_ARRAY_SIZE(scope_items), (struct qp_scope_item *)scope_items, NULL };
	struct qp_value_model vm = { QP_ARRAY_SIZE(value_items), (struct qp_value_item *)value_items, NULL };
	struct qp_status_model st;
	struct qp_json j;
	size_t len;
	char *s;

	qp_json_init(&j);
	qp_export_scopes_json(&sm, &j);
	s = qp_json_finish(&j, &len);
	check_text("scopes", s, len, scopes_json);
	free(s);

	qp_json_init(&j);
	qp_export_values_json(&vm, &j);
	s = qp_json_finish(&j, &len);
	check_text("values", s, len, values_json);
	free(s);

	status_model(&st);
	qp_json_init(&j);
	qp_json_obj_begin(&j);
	qp_export_status_figures_json(&st, &j);
	qp_json_obj_end(&j);
	s = qp_json_finish(&j, &len);
	check_text("status", s, len, status_json);
	free(s);

	/* an empty model: an empty array, not a missing one */
	sm.n = 0;
	qp_json_init(&j);
	qp_export_scopes_json(&sm, &j);
	s = qp_json_finish(&j, &len);
	check_text("empty scopes", s, len, "{\"scopes\":[]}");
	free(s);
	sm.n = QP_ARRAY_SIZE(scope_items);

	{
		struct qp_slow_model m = { .pid = 42, .name = "tick", .n = 2, .items = slow_items, .kept = 7,
					   .window_complete = true };

		qp_json_init(&j);
		qp_export_slow_json(&m, &j);
		s = qp_json_finish(&j, &len);
		check_text("slowest", s, len, slow_json);
		free(s);
	}
	return test_done("test_encode");
}
