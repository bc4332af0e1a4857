/* test_export_trace.c - the trace model and exporter on hand-made records
 * (no root, no BPF): a fake namer, records of two processes (one not a
 * target), a log message inside and one outside the window, a NaN value,
 * names with quotes and invalid UTF-8; the JSON compared byte for byte,
 * then the same in speedscope's format byte for byte, then the cap
 * (dropped events counted and said), the size caps of both formats,
 * speedscope's nesting, then the sort order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "export/export_trace.h"
#include "model/model_trace.h"
#include "testlib.h"

#define PID 100
#define OTHER 200	/* not a target: its records are left out */

static struct qp_site_info sites[] = {
	{ .name = "outer" }, { .name = "inner \"q\"" }, { .name = "tick" }, { .name = "price" },
	{ .name = "log_site" },
};

static bool fake_target(void *arg, uint32_t pid, struct qp_target_times *out)
{
	memset(out, 0, sizeof(*out));
	return pid == PID;
}

static const struct qp_site_info *fake_site(void *arg, uint32_t pid, uint64_t addr)
{
	if (pid != PID || addr < 0x1000 || addr >= 0x1000 + sizeof(sites) / sizeof(sites[0]))
		return NULL;
	return &sites[addr - 0x1000];
}

static const struct qp_usdt_def *fake_def(void *arg, uint32_t id)
{
	return NULL;
}

static struct trace_record rec(uint16_t kind, uint32_t pid, uint32_t tid, uint64_t site, uint64_t ts,
			       uint64_t arg, uint16_t depth)
{
	struct trace_record r = { .site = site, .ts_ns = ts, .arg = arg, .pid = pid, .tid = tid,
				  .kind = kind, .depth = depth };
	return r;
}

static uint64_t bits(double d)
{
	uint64_t b;

	memcpy(&b, &d, sizeof(b));
	return b;
}

static const char want[] =
	"{\"traceEvents\":["
	"{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":100,\"tid\":100,\"args\":{\"name\":\"main\\ufffdx\"}},"
	"{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":100,\"tid\":101,\"args\":{\"name\":\"worker\"}},"
	"{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":100,\"tid\":100,\"args\":{\"name\":\"main\\ufffdx\"}},"
	"{\"name\":\"outer\",\"cat\":\"scope\",\"ph\":\"X\",\"ts\":1000.000,\"pid\":100,\"tid\":101,\"dur\":5.250},"
	"{\"name\":\"inner \\\"q\\\"\",\"cat\":\"scope\",\"ph\":\"X\",\"ts\":1000.000,\"pid\":100,\"tid\":101,\"dur\":1.001},"
	"{\"name\":\"tick\",\"cat\":\"mark\",\"ph\":\"i\",\"ts\":1002.000,\"pid\":100,\"tid\":100,\"s\":\"t\"},"
	"{\"name\":\"log\",\"cat\":\"log\",\"ph\":\"i\",\"ts\":1003.000,\"pid\":100,\"tid\":100,\"s\":\"t\",\"args\":{\"message\":\"x=1 \\\"y\\\"\\n\",\"site\":\"log_site\"}},"
	"{\"name\":\"price\",\"cat\":\"value\",\"ph\":\"C\",\"ts\":1004.000,\"pid\":100,\"tid\":100,\"args\":{\"value\":1.5}},"
	"{\"name\":\"price\",\"cat\":\"value\",\"ph\":\"i\",\"ts\":1004.500,\"pid\":100,\"tid\":100,\"s\":\"t\",\"args\":{\"value\":\"nan\"}},"
	"{\"name\":\"0x9999\",\"cat\":\"scope\",\"ph\":\"X\",\"ts\":1006.000,\"pid\":100,\"tid\":100,\"dur\":0.000}"
	"],\"displayTimeUnit\":\"ns\",\"otherData\":{\"collector\":\"bpf\",\"begin_ns\":999000,"
	"\"end_ns\":1010000,\"events\":7,\"dropped_events\":0,\"lost_events\":0,\"calibration_ns\":0,\"max_bytes\":0,\"cut_events\":0}}";

/* the same model in speedscope's format: frames in the order met, a
 * profile per thread in the order met, times from the window's begin */
static const char want_ss[] =
	"{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"qprofd\","
	"\"shared\":{\"frames\":[{\"name\":\"outer\"},{\"name\":\"inner \\\"q\\\"\"},{\"name\":\"0x9999\"}]},"
	"\"profiles\":[{\"type\":\"evented\",\"name\":\"main\\ufffdx (pid 100), worker (tid 101)\","
	"\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":11000,\"events\":["
	"{\"type\":\"O\",\"frame\":0,\"at\":1000},{\"type\":\"O\",\"frame\":1,\"at\":1000},"
	"{\"type\":\"C\",\"frame\":1,\"at\":2001},{\"type\":\"C\",\"frame\":0,\"at\":6250}]},"
	"{\"type\":\"evented\",\"name\":\"main\\ufffdx (pid 100), main\\ufffdx (tid 100)\","
	"\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":11000,\"events\":["
	"{\"type\":\"O\",\"frame\":2,\"at\":7000},{\"type\":\"C\",\"frame\":2,\"at\":7000}]}],"
	"\"name\":\"main\\ufffdx\",\"activeProfileIndex\":0,"
	"\"qprof\":{\"collector\":\"bpf\",\"begin_ns\":999000,\"end_ns\":1010000,\"base_ns\":999000,"
	"\"scopes\":3,\"dropped_events\":0,\"lost_events\":0,\"calibration_ns\":0,\"max_bytes\":0,"
	"\"cut_scopes\":0,\"left_out\":{\"marks\":1,\"values\":2,\"logs\":1,\"span_events\":0}}}";

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	while (s && (s = strstr(s, what))) {
		n++;
		s += strlen(what);
	}
	return n;
}

static uint64_t num_after(const char *s, const char *key)
{
	const char *p = s ? strstr(s, key) : NULL;

	return p ? strtoull(p + strlen(key), NULL, 10) : UINT64_MAX;
}

/* 1000 scopes of 500 ns, one every us, on one thread, and a mark */
static struct qp_trace_event many[1001];
static const struct qp_trace_process many_proc = { 7, "busy" };
static const struct qp_trace_thread many_thread = { 7, 8, "worker" };

static struct qp_trace_doc many_doc(void)
{
	struct qp_trace_doc d = { .ev = many, .n = 1001, .threads = &many_thread, .nthreads = 1,
				  .procs = &many_proc, .nprocs = 1, .begin_ns = 0, .end_ns = 2000000 };
	size_t i;

	for (i = 0; i < 1000; i++)
		many[i] = (struct qp_trace_event){ .kind = QP_TEV_SCOPE, .pid = 7, .tid = 8,
						   .ts_ns = 1000 * (i + 1), .dur_ns = 500, .name = "s" };
	many[1000] = (struct qp_trace_event){ .kind = QP_TEV_MARK, .pid = 7, .tid = 8, .ts_ns = 1001000,
					      .name = "m" };
	return d;
}

/* the size caps of both formats: the file within the cap, a prefix kept,
 * the cut said where it is */
static void test_caps(void)
{
	struct qp_trace_doc d = many_doc();
	struct qp_json j;
	uint64_t kept;
	size_t len;
	char *s;

	qp_json_init(&j);
	CHECK_INT(qp_export_trace(&d, 10000, &j), 0);
	s = qp_json_finish(&j, &len);
	CHECK(s && len <= 10000 && len > 10000 - 1536 - 200);
	kept = num_after(s, "\"events\":");
	CHECK(kept > 0 && kept < 1000);
	CHECK_INT(count(s, "\"ph\":\"X\""), kept);
	CHECK_INT(num_after(s, "\"cut_events\":"), 1001 - kept);
	CHECK_INT(num_after(s, "\"cut_at_ns\":"), 1000 * (kept + 1));
	CHECK(strstr(s, "{\"name\":\"qprof: trace cut here (the 10000-byte cap): later events left out\","
			"\"cat\":\"qprof\",\"ph\":\"i\",\"s\":\"g\""));
	CHECK_INT(num_after(s, "\"events_left_out\":"), 1001 - kept);
	free(s);

	/* no cap: everything, and "cut_events":0 with no cut_at_ns */
	qp_json_init(&j);
	CHECK_INT(qp_export_trace(&d, 0, &j), 0);
	s = qp_json_finish(&j, &len);
	CHECK_INT(count(s, "\"ph\":\"X\""), 1000);
	CHECK(s && strstr(s, "\"max_bytes\":0,\"cut_events\":0}}") && !strstr(s, "cut_at_ns"));
	free(s);

	qp_json_init(&j);
	CHECK_INT(qp_export_speedscope(&d, 10000, &j), 0);
	s = qp_json_finish(&j, &len);
	CHECK(s && len <= 10000 && len > 10000 - 3000);
	kept = num_after(s, "\"scopes\":");
	CHECK(kept > 0 && kept < 1000);
	CHECK_INT(count(s, "\"type\":\"O\""), kept);
	CHECK_INT(count(s, "\"type\":\"C\""), kept);
	CHECK_INT(num_after(s, "\"cut_scopes\":"), 1000 - kept);
	CHECK_INT(num_after(s, "\"cut_at_ns\":"), 1000 * (kept + 1));
	{
		char note[160];

		/* the cut's time from the base (the window's begin, 0), in us */
		snprintf(note, sizeof(note), "\"name\":\"busy [cut at +0.%06llu s: the 10000-byte cap]\"",
			 (unsigned long long)(kept + 1));
		CHECK(strstr(s, note) != NULL);
		snprintf(note, sizeof(note), "\"name\":\"busy (pid 7), worker (tid 8) [cut at +0.%06llu s: "
			 "the 10000-byte cap]\"", (unsigned long long)(kept + 1));
		CHECK(strstr(s, note) != NULL);
	}
	CHECK(strstr(s, "\"left_out\":{\"marks\":1,\"values\":0,\"logs\":0,\"span_events\":0}") != NULL);
	free(s);

	/* every size from 1 byte to past the whole file: never over the cap
	 * (but when not even the names fit), the kept scopes a prefix */
	{
		size_t whole, cap;

		qp_json_init(&j);
		CHECK_INT(qp_export_speedscope(&d, 0, &j), 0);
		s = qp_json_finish(&j, &whole);
		CHECK_INT(num_after(s, "\"scopes\":"), 1000);
		free(s);
		for (cap = 1500; cap < whole + 4000; cap += 997) {
			qp_json_init(&j);
			CHECK_INT(qp_export_speedscope(&d, cap, &j), 0);
			s = qp_json_finish(&j, &len);
			CHECK(s && len <= cap);
			CHECK_INT(count(s, "\"type\":\"O\""), num_after(s, "\"scopes\":"));
			free(s);
			qp_json_init(&j);
			CHECK_INT(qp_export_trace(&d, cap, &j), 0);
			s = qp_json_finish(&j, &len);
			CHECK(s && len <= cap);
			free(s);
		}
	}
}

/* speedscope wants frames nested and in time order: a scope that would
 * end after the one around it is closed with it; a scope of 0 ns opens
 * and closes at once */
static void test_nesting(void)
{
	struct qp_trace_event ev[] = {
		{ .kind = QP_TEV_SCOPE, .pid = 1, .tid = 1, .ts_ns = 100, .dur_ns = 50, .name = "A" },
		{ .kind = QP_TEV_SCOPE, .pid = 1, .tid = 1, .ts_ns = 120, .dur_ns = 100, .depth = 1, .name = "B" },
		{ .kind = QP_TEV_SCOPE, .pid = 1, .tid = 1, .ts_ns = 160, .dur_ns = 10, .name = NULL },
		{ .kind = QP_TEV_SCOPE, .pid = 1, .tid = 1, .ts_ns = 170, .dur_ns = 0, .name = "A" },
	};
	struct qp_trace_doc d = { .ev = ev, .n = 4, .begin_ns = 50, .end_ns = 1000, .collector = "ring",
				  .calibration_ns = 3 };
	struct qp_json j;
	size_t len;
	char *s;

	qp_json_init(&j);
	CHECK_INT(qp_export_speedscope(&d, 0, &j), 0);
	s = qp_json_finish(&j, &len);
	CHECK_STR(s, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"qprofd\","
		  "\"shared\":{\"frames\":[{\"name\":\"A\"},{\"name\":\"B\"},{\"name\":\"?\"}]},"
		  "\"profiles\":[{\"type\":\"evented\",\"name\":\"1 (pid 1), 1 (tid 1)\",\"unit\":\"nanoseconds\","
		  "\"startValue\":0,\"endValue\":950,\"events\":["
		  "{\"type\":\"O\",\"frame\":0,\"at\":50},{\"type\":\"O\",\"frame\":1,\"at\":70},"
		  "{\"type\":\"C\",\"frame\":1,\"at\":100},{\"type\":\"C\",\"frame\":0,\"at\":100},"
		  "{\"type\":\"O\",\"frame\":2,\"at\":110},{\"type\":\"C\",\"frame\":2,\"at\":120},"
		  "{\"type\":\"O\",\"frame\":0,\"at\":120},{\"type\":\"C\",\"frame\":0,\"at\":120}]}],"
		  "\"name\":\"qprof trace\",\"activeProfileIndex\":0,\"qprof\":{\"collector\":\"ring\","
		  "\"begin_ns\":50,\"end_ns\":1000,\"base_ns\":50,\"scopes\":4,\"dropped_events\":0,"
		  "\"lost_events\":0,\"calibration_ns\":3,\"max_bytes\":0,\"cut_scopes\":0,"
		  "\"left_out\":{\"marks\":0,\"values\":0,\"logs\":0,\"span_events\":0}}}");
	free(s);

	/* nothing at all: one empty profile (speedscope opens no file without one) */
	d.n = 0;
	qp_json_init(&j);
	CHECK_INT(qp_export_speedscope(&d, 0, &j), 0);
	s = qp_json_finish(&j, &len);
	CHECK(s && strstr(s, "\"profiles\":[{\"type\":\"evented\",\"name\":\"qprof trace\","
			  "\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":950,\"events\":[]}]"));
	free(s);
}

int main(void)
{
	struct qp_namer nm = { fake_target, fake_site, fake_def, NULL };
	struct trace_record recs[] = {
		/* exits arrive inner first: the model sorts */
		rec(QPROF_TR_SCOPE, PID, 101, 0x1001, 1000000, 1001, 1),
		rec(QPROF_TR_SCOPE, PID, 101, 0x1000, 1000000, 5250, 0),
		rec(QPROF_TR_MARK, PID, 100, 0x1002, 1002000, 0, 0),
		rec(QPROF_TR_VALUE, PID, 100, 0x1003, 1004000, bits(1.5), 0),
		rec(QPROF_TR_VALUE, PID, 100, 0x1003, 1004500, bits(NAN), 0),
		rec(QPROF_TR_SCOPE, OTHER, 201, 0x1000, 1005000, 10, 0),
		rec(QPROF_TR_SCOPE, PID, 100, 0x9999, 1006000, 0, 0),
		rec(77, PID, 100, 0x1000, 1007000, 0, 0),	/* unknown kind: skipped */
	};
	struct qp_trace_thread_name names[] = {
		{ PID, 101, "worker" }, { OTHER, 201, "other" }, { PID, 100, "main\xffx" },
	};
	struct qp_trace_result r = { .recs = recs, .n = sizeof(recs) / sizeof(recs[0]),
				     .begin_ns = 999000, .end_ns = 1010000, .threads = names,
				     .nthreads = 3 };
	struct qp_log_entry logs[2] = { { .seq = 1, .mono_ns = 1003000, .site = 0x1004, .pid = PID, .tid = 100 },
					{ .seq = 2, .mono_ns = 2000000, .site = 0x1004, .pid = PID, .tid = 100 } };
	struct qp_trace_model m;
	struct qp_json j;
	size_t len;
	char *s;

	strcpy(logs[0].msg, "x=1 \"y\"\n");
	strcpy(logs[1].msg, "after the window");
	CHECK_INT(qp_trace_model_make(&r, 0, logs, 2, &nm, 1000, &m), 0);
	CHECK_INT(m.doc.n, 7);
	qp_json_init(&j);
	CHECK_INT(qp_export_trace(&m.doc, 0, &j), 0);
	s = qp_json_finish(&j, &len);
	CHECK(s != NULL);
	if (s && strcmp(s, want)) {
		fprintf(stderr, "got:  %s\nwant: %s\n", s, want);
		CHECK(0);
	}
	free(s);
	qp_json_init(&j);
	CHECK_INT(qp_export_speedscope(&m.doc, 0, &j), 0);
	s = qp_json_finish(&j, &len);
	CHECK(s != NULL);
	if (s && strcmp(s, want_ss)) {
		fprintf(stderr, "got:  %s\nwant: %s\n", s, want_ss);
		CHECK(0);
	}
	free(s);
	qp_trace_model_free(&m);

	/* a cap of 3: the first three records kept, the rest counted and said */
	r.dropped = 2;	/* the session's own, past its cap */
	r.lost = 5;
	CHECK_INT(qp_trace_model_make(&r, PID, logs, 2, &nm, 3, &m), 0);
	CHECK_INT(m.doc.n, 3);
	CHECK_INT(m.doc.dropped, 2 + 3 + 1);	/* 2 + 3 records + 1 log past the cap */
	CHECK_INT(m.doc.lost, 5);
	qp_json_init(&j);
	CHECK_INT(qp_export_trace(&m.doc, 0, &j), 0);
	s = qp_json_finish(&j, &len);
	CHECK(s && strstr(s, "{\"name\":\"qprof: events dropped\",\"cat\":\"qprof\",\"ph\":\"i\",\"s\":\"g\","
			  "\"ts\":1010.000,\"pid\":100,\"tid\":100,\"args\":{\"dropped_events\":6,"
			  "\"lost_events\":5}}"));
	CHECK(s && strstr(s, "\"events\":3,\"dropped_events\":6,\"lost_events\":5"));
	free(s);
	qp_trace_model_free(&m);

	/* spans across threads: a span becomes "b" and "e", a step "n", all
	 * three with the span's name, its process-local id and scope */
	{
		struct trace_record sp[] = {
			rec(QPROF_TR_ASTEP, PID, 101, 0x1002, 1001500, 0x2a, 0),
			rec(QPROF_TR_ASPAN, PID, 100, 0x1000, 1001000, 2000, 0),
			rec(QPROF_TR_ASPAN, OTHER, 201, 0x1000, 1001000, 2000, 0),
		};
		struct qp_trace_result rs = { .recs = sp, .n = 3, .begin_ns = 999000, .end_ns = 1010000 };

		sp[0].arg2 = 0x1000;	/* the step's span: its begin site */
		sp[1].arg2 = 0x2a;	/* the span's id */
		CHECK_INT(qp_trace_model_make(&rs, 0, NULL, 0, &nm, 1000, &m), 0);
		CHECK_INT(m.doc.n, 3);
		qp_json_init(&j);
		CHECK_INT(qp_export_trace(&m.doc, 0, &j), 0);
		s = qp_json_finish(&j, &len);
		CHECK(s && strstr(s, "{\"name\":\"outer\",\"cat\":\"span\",\"ph\":\"b\",\"ts\":1001.000,"
				  "\"pid\":100,\"tid\":100,\"scope\":\"outer\",\"id2\":{\"local\":\"0x2a\"}},"
				  "{\"name\":\"outer\",\"cat\":\"span\",\"ph\":\"n\",\"ts\":1001.500,"
				  "\"pid\":100,\"tid\":101,\"scope\":\"outer\",\"id2\":{\"local\":\"0x2a\"},"
				  "\"args\":{\"step\":\"tick\"}},"
				  "{\"name\":\"outer\",\"cat\":\"span\",\"ph\":\"e\",\"ts\":1003.000,"
				  "\"pid\":100,\"tid\":100,\"scope\":\"outer\",\"id2\":{\"local\":\"0x2a\"}}]"));
		if (s && !strstr(s, "\"ph\":\"n\""))
			fprintf(stderr, "got: %s\n", s);
		free(s);
		qp_trace_model_free(&m);
		/* a cap of 2: the step (first) kept; the span needs two: both dropped */
		CHECK_INT(qp_trace_model_make(&rs, 0, NULL, 0, &nm, 2, &m), 0);
		CHECK_INT(m.doc.n, 1);
		CHECK_INT(m.doc.dropped, 2);
		CHECK_INT(m.doc.ev[0].kind, QP_TEV_ASTEP);
		qp_trace_model_free(&m);
	}
	/* the order: time, then depth, then the longer first */
	{
		struct qp_trace_event ev[4] = {
			{ .ts_ns = 5, .depth = 1, .dur_ns = 1 },
			{ .ts_ns = 5, .depth = 0, .dur_ns = 1 },
			{ .ts_ns = 3, .depth = 2 },
			{ .ts_ns = 5, .depth = 1, .dur_ns = 9 },
		};

		qp_trace_events_sort(ev, 4);
		CHECK_INT(ev[0].ts_ns, 3);
		CHECK_INT(ev[1].depth, 0);
		CHECK_INT(ev[2].dur_ns, 9);
		CHECK_INT(ev[3].dur_ns, 1);
	}
	/* ns written as us, exactly */
	{
		qp_json_init(&j);
		qp_json_arr_begin(&j);
		qp_json_milli(&j, 0);
		qp_json_milli(&j, 999);
		qp_json_milli(&j, 18446744073709551615ull);
		qp_json_arr_end(&j);
		s = qp_json_finish(&j, &len);
		CHECK_STR(s, "[0.000,0.999,18446744073709551.615]");
		free(s);
	}
	test_caps();
	test_nesting();
	return test_done("test_export_trace");
}
