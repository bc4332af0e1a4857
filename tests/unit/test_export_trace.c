/* test_export_trace.c - the trace model and exporter on hand-made records
 * (no root, no BPF): a fake namer, records of two processes (one not a
 * target), a log message inside and one outside the window, a NaN value,
 * names with quotes and invalid UTF-8; the JSON compared byte for byte,
 * then the cap (dropped events counted and said), then the sort order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "export_trace.h"
#include "model_trace.h"
#include "testlib.h"

#define PID 100
#define OTHER 200	/* not a target: its records are left out */

static struct qp_site_info sites[] = {
	{ .name = "outer" }, { .name = "inner \"q\"" }, { .name = "tick" }, { .name = "price" },
	{ .name = "log_site" },
};

static bool fake_target(void *arg, uint32_t pid, bool adopt, struct qp_target_times *out)
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
	"{\"name\":\"outer\",\"cat\":\"scope\",\"ph\":\"X\",\"ts\":1000.000,\"pid\":100,\"tid\":101,\"dur\":5.250,\"args\":{\"depth\":0}},"
	"{\"name\":\"inner \\\"q\\\"\",\"cat\":\"scope\",\"ph\":\"X\",\"ts\":1000.000,\"pid\":100,\"tid\":101,\"dur\":1.001,\"args\":{\"depth\":1}},"
	"{\"name\":\"tick\",\"cat\":\"mark\",\"ph\":\"i\",\"ts\":1002.000,\"pid\":100,\"tid\":100,\"s\":\"t\"},"
	"{\"name\":\"log\",\"cat\":\"log\",\"ph\":\"i\",\"ts\":1003.000,\"pid\":100,\"tid\":100,\"s\":\"t\",\"args\":{\"message\":\"x=1 \\\"y\\\"\\n\",\"site\":\"log_site\"}},"
	"{\"name\":\"price\",\"cat\":\"value\",\"ph\":\"C\",\"ts\":1004.000,\"pid\":100,\"tid\":100,\"args\":{\"value\":1.5}},"
	"{\"name\":\"price\",\"cat\":\"value\",\"ph\":\"i\",\"ts\":1004.500,\"pid\":100,\"tid\":100,\"s\":\"t\",\"args\":{\"value\":\"nan\"}},"
	"{\"name\":\"0x9999\",\"cat\":\"scope\",\"ph\":\"X\",\"ts\":1006.000,\"pid\":100,\"tid\":100,\"dur\":0.000,\"args\":{\"depth\":0}}"
	"],\"displayTimeUnit\":\"ns\",\"otherData\":{\"collector\":\"bpf\",\"begin_ns\":999000,"
	"\"end_ns\":1010000,\"events\":7,\"dropped_events\":0,\"lost_events\":0,\"calibration_ns\":0}}";

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
	CHECK_INT(qp_export_trace(&m.doc, &j), 0);
	s = qp_json_finish(&j, &len);
	CHECK(s != NULL);
	if (s && strcmp(s, want)) {
		fprintf(stderr, "got:  %s\nwant: %s\n", s, want);
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
	CHECK_INT(qp_export_trace(&m.doc, &j), 0);
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
		CHECK_INT(qp_export_trace(&m.doc, &j), 0);
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
	return test_done("test_export_trace");
}
