/* test_cli.c - qprof-cli end to end, without root and without qprofd: the
 * real binary is run with bad arguments (exit 2 and the message), against a
 * socket nobody listens on (exit 1 and the message), against a fake HTTP
 * server on a temporary unix socket that answers canned bytes (Content-
 * Length, chunked in small pieces, read-to-close, a 404 JSON error, a 500
 * without JSON, garbage, a cut answer) while recording the request, and on a
 * fixture binary for `probes`.
 *
 * Usage: test_cli QPROF_CLI args|http|probes [FIXTURE] */
#define _GNU_SOURCE	/* strcasestr */
#include "cli_harness.h"


/* ---- argument errors ---------------------------------------------------- */

static void expect_usage(const char *const *args, const char *msg)
{
	struct run r;

	run_cli(&r, "/nonexistent/qprof.sock", args);
	CHECK_INT(r.code, 2);
	CHECK_HAS(r.err, msg);
	CHECK_STR(r.out, "");
}

static void test_args(void)
{
	struct run r;

	expect_usage((const char *[]){ NULL }, "no command given");
	expect_usage((const char *[]){ "frobnicate", NULL },
		     "qprof-cli: unknown command 'frobnicate'\nTry 'qprof-cli --help'.");
	expect_usage((const char *[]){ "--bogus", "status", NULL }, "unknown option '--bogus'");
	expect_usage((const char *[]){ "attach", "--pid", NULL },
		     "qprof-cli attach: option '--pid' needs a value");
	expect_usage((const char *[]){ "attach", "--pid", "abc", NULL }, "invalid --pid 'abc'");
	expect_usage((const char *[]){ "attach", "--pid", "-1", NULL }, "invalid --pid '-1'");
	expect_usage((const char *[]){ "attach", "--pid", "0", NULL }, "invalid --pid '0'");
	expect_usage((const char *[]){ "attach", "--pid", "12x", NULL }, "invalid --pid '12x'");
	expect_usage((const char *[]){ "attach", "--pid", "99999999999999999999", NULL },
		     "invalid --pid");
	expect_usage((const char *[]){ "attach", NULL }, "missing --pid N or --binary PATH");
	expect_usage((const char *[]){ "attach", "--pid", "1", "--binary", "/bin/true", NULL },
		     "not both");
	expect_usage((const char *[]){ "detach", NULL }, "missing --pid N or --binary PATH");
	expect_usage((const char *[]){ "detach", "--pid", "1", "--binary", "/a", NULL },
		     "give one --pid or one --binary");
	expect_usage((const char *[]){ "detach", "--pid", "x", NULL }, "invalid --pid 'x'");
	expect_usage((const char *[]){ "scopes", "--seconds", "0", NULL }, "invalid --seconds '0'");
	expect_usage((const char *[]){ "scopes", "--seconds", "301", NULL },
		     "invalid --seconds '301'");
	expect_usage((const char *[]){ "scopes", "--seconds", "x", NULL }, "invalid --seconds 'x'");
	expect_usage((const char *[]){ "scopes", "--seconds", "", NULL }, "invalid --seconds ''");
	expect_usage((const char *[]){ "scopes", "--pid", "-5", NULL }, "invalid --pid '-5'");
	expect_usage((const char *[]){ "scopes", "extra", NULL }, "unexpected argument 'extra'");
	expect_usage((const char *[]){ "probes", NULL }, "missing BINARY");
	expect_usage((const char *[]){ "attach", "--pid", "1", "--usdt", "nocolon", NULL },
		     "invalid --usdt 'nocolon'");
	expect_usage((const char *[]){ "attach", "--pid", "1", "--usdt", "a:b:c", NULL },
		     "invalid --usdt");
	expect_usage((const char *[]){ "attach", "--pid", "1", "--collector", "perf", NULL },
		     "--collector wants ring or bpf, got 'perf'");
	/* bad --span shapes */
	static const char *const bad_spans[] = {
		"gc", "=a:b,c:d", "gc=a:b", "gc=a:b,", "gc=a:b,c", "gc=a:b,c:d,e:f",
		"gc=:b,c:d", "gc=a:,c:d", "g c=a:b,c:d", "gc=a:b,c:d ", "gc=a;b,c:d",
		"gc=a:b:x,c:d", "gc==a:b,c:d",
	};
	for (size_t i = 0; i < sizeof(bad_spans) / sizeof(bad_spans[0]); i++) {
		char msg[128];

		snprintf(msg, sizeof(msg), "invalid --span '%s'", bad_spans[i]);
		expect_usage((const char *[]){ "attach", "--pid", "1", "--span", bad_spans[i], NULL },
			     msg);
	}
	/* help and version go to stdout with exit 0 */
	run_cli(&r, NULL, (const char *[]){ "--help", NULL });
	CHECK_INT(r.code, 0);
	CHECK_HAS(r.out, "Usage: qprof-cli");
	CHECK_HAS(r.out, "values");
	CHECK_HAS(r.out, "logs");
	expect_usage((const char *[]){ "logs", "--since", "x", NULL }, "invalid --since 'x'");
	expect_usage((const char *[]){ "values", "--pid", "0", NULL }, "--pid");
	/* trace: --format and --max-mb checked before anything is asked */
	expect_usage((const char *[]){ "trace", "-o", "x", "--format", "perfetto", NULL },
		     "--format must be chrome or speedscope");
	expect_usage((const char *[]){ "trace", "-o", "x", "--max-mb", "0", NULL },
		     "--max-mb must be an integer in 1..4096");
	expect_usage((const char *[]){ "trace", "-o", "x", "--max-mb", "4097", NULL },
		     "--max-mb must be an integer in 1..4096");
	/* CPU commands: their own argument errors */
	expect_usage((const char *[]){ "pprof", "--seconds", "0", "-o", "x", NULL }, "--seconds");
	expect_usage((const char *[]){ "folded", "--callgraph", NULL }, "--callgraph is an option of flamegraph");
	expect_usage((const char *[]){ "folded", "--scope", "", NULL }, "--scope wants a scope name");
	expect_usage((const char *[]){ "folded", "--pid", "abc", NULL }, "--pid");
	/* offcpu and slow */
	expect_usage((const char *[]){ "offcpu", "--scope", "", NULL }, "--scope wants a scope name");
	expect_usage((const char *[]){ "offcpu", "--callgraph", NULL }, "--callgraph is an option of flamegraph");
	expect_usage((const char *[]){ "slow", NULL }, "slow wants a scope NAME");
	expect_usage((const char *[]){ "slow", "tick", "-n", "0", NULL }, "invalid -n '0'");
	expect_usage((const char *[]){ "slow", "tick", "-n", "33", NULL }, "invalid -n '33'");
	expect_usage((const char *[]){ "slow", "tick", "--pid", "x", NULL }, "--pid");
	expect_usage((const char *[]){ "slow", "tick", "extra", NULL }, "unexpected argument 'extra'");
	run_cli(&r, NULL, (const char *[]){ "--help", NULL });
	CHECK_HAS(r.out, "offcpu");
	CHECK_HAS(r.out, "slow");
	run_cli(&r, NULL, (const char *[]){ "scopes", "--help", NULL });
	CHECK_INT(r.code, 0);
	CHECK_HAS(r.out, "Usage: qprof-cli scopes");
	run_cli(&r, NULL, (const char *[]){ "--version", NULL });
	CHECK_INT(r.code, 0);
	CHECK_HAS(r.out, "qprof-cli ");

	/* nobody listening: exit 1 and the message, from --socket and from env */
	run_cli(&r, NULL, (const char *[]){ "--socket", "/nonexistent/q.sock", "status", NULL });
	CHECK_INT(r.code, 1);
	CHECK_STR(r.err, "qprof-cli: cannot connect to qprofd at /nonexistent/q.sock: "
			 "No such file or directory (is qprofd running?)\n");
	run_cli(&r, "/nonexistent/env.sock", (const char *[]){ "scopes", NULL });
	CHECK_INT(r.code, 1);
	CHECK_HAS(r.err, "cannot connect to qprofd at /nonexistent/env.sock");
	/* a socket file with no listener behind it */
	{
		char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);

		snprintf(path, sizeof(path), "%s/dead.sock", tmpdir);
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
		CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
		close(fd);
		run_cli(&r, path, (const char *[]){ "status", NULL });
		CHECK_INT(r.code, 1);
		CHECK_HAS(r.err, "Connection refused (is qprofd running?)");
		unlink(path);
	}
}

static const char status_json[] =
	"{\"version\":\"0.1.0\",\"uptime_ms\":3723000,"
	"\"targets\":[{\"pid\":4242,\"comm\":\"strategy\",\"exe\":\"/opt/s/strategy\","
	"\"state\":\"running\",\"attached_ms\":303000,\"probes\":14,\"collector\":\"ring\","
	"\"collector_reason\":\"ring (default)\",\"modules\":["
	"{\"path\":\"/opt/s/strategy\",\"state\":\"probed\",\"probes\":12,\"attached_ms\":303000,"
	"\"detached_ms\":null,\"loads\":1},"
	"{\"path\":\"/opt/s/libmr\\u001b.so\",\"state\":\"unloaded\",\"probes\":2,"
	"\"attached_ms\":61000,\"detached_ms\":70000,\"loads\":3},"
	"{\"path\":\"/opt/s/libx.so\",\"state\":\"refused\",\"probes\":0,\"attached_ms\":null,"
	"\"detached_ms\":null,\"loads\":0,\"error\":\"corrupt\"}]},"
	"{\"pid\":77,\"comm\":\"md\\u001b[31m\",\"exe\":\"/opt/md\",\"state\":\"exited\","
	"\"attached_ms\":42000,\"probes\":3,\"collector\":\"bpf\"}],"
	"\"cpu\":{\"running\":true,\"frequency_hz\":99,\"samples\":123456,\"lost\":0},"
	"\"scopes\":{\"sites\":12,\"events\":5000,\"dropped\":1}}";

static const char status_text[] =
	"qprofd 0.1.0, up 1h 02m\n"
	"cpu sampling: running at 99 Hz, 123k samples, 0 lost\n"
	"scopes: 12 sites, 5000 events, 1 dropped\n"
	"\n"
	" PID  COMM      STATE    PROBES  ATTACHED  COLLECTOR       EXE\n"
	"4242  strategy  running      14    5m 03s  ring (default)  /opt/s/strategy\n"
	"  77  md?[31m   exited        3      42 s  bpf             /opt/md\n"
	"\n"
	"modules (files probed, and libraries loaded later that were not):\n"
	" PID  STATE     PROBES  LOADS  ATTACHED  MODULE\n"
	"4242  probed        12      1    5m 03s  /opt/s/strategy\n"
	"4242  unloaded       2      3    1m 01s  /opt/s/libmr?.so\n"
	"4242  refused        0      0         -  /opt/s/libx.so\n";

/* A call tree: main > {calc_ma, io > calc_ma, rec > rec}, a mark, rows
 * whose parent is not in the answer (one of the BPF collector whose P50
 * and P90 are 0 after its calibration: "<691 ns"), and a second pid. Deliberately out of
 * order. */
static const char scopes_json[] =
	"{\"scopes\":["
	"{\"pid\":100,\"kind\":\"scope\",\"name\":\"io\",\"file\":\"s.c\",\"line\":20,"
	"\"function\":\"main\",\"count\":1000,\"total_ns\":3000000,\"mean_ns\":3000,"
	"\"min_ns\":900,\"max_ns\":90000,\"p50_ns\":2500,\"p90_ns\":5000,\"p99_ns\":20000,"
	"\"p999_ns\":80000,\"parent\":\"main\"},"
	"{\"pid\":100,\"kind\":\"mark\",\"name\":\"signal\",\"file\":\"s.c\",\"line\":30,"
	"\"function\":\"main\",\"count\":12345,\"total_ns\":null,\"mean_ns\":null,"
	"\"min_ns\":null,\"max_ns\":null,\"p50_ns\":null,\"p90_ns\":null,\"p99_ns\":null,"
	"\"p999_ns\":null,\"parent\":null},"
	"{\"pid\":100,\"kind\":\"scope\",\"name\":\"calc_ma\",\"file\":\"s.c\",\"line\":10,"
	"\"function\":\"sig\",\"count\":2000,\"total_ns\":6000000,\"mean_ns\":3000,"
	"\"min_ns\":100,\"max_ns\":1500000,\"p50_ns\":812,\"p90_ns\":12300,\"p99_ns\":456000,"
	"\"p999_ns\":1000000,\"parent\":\"main\"},"
	"{\"pid\":100,\"kind\":\"func\",\"name\":\"main\",\"file\":\"s.c\",\"line\":5,"
	"\"function\":\"main\",\"count\":1,\"total_ns\":10000000000,\"mean_ns\":10000000000,"
	"\"min_ns\":10000000000,\"max_ns\":10000000000,\"p50_ns\":10000000000,"
	"\"p90_ns\":10000000000,\"p99_ns\":10000000000,\"p999_ns\":10000000000,\"parent\":null},"
	"{\"pid\":100,\"kind\":\"scope\",\"name\":\"calc_ma\",\"file\":\"s.c\",\"line\":10,"
	"\"function\":\"sig\",\"count\":10,\"total_ns\":50000,\"mean_ns\":5000,"
	"\"min_ns\":4000,\"max_ns\":6000,\"p50_ns\":5000,\"p90_ns\":6000,\"p99_ns\":6000,"
	"\"p999_ns\":6000,\"parent\":\"io\"},"
	"{\"pid\":100,\"kind\":\"scope\",\"name\":\"rec\",\"file\":\"s.c\",\"line\":40,"
	"\"function\":\"rec\",\"count\":3,\"total_ns\":7000,\"mean_ns\":2333.3,"
	"\"min_ns\":1000,\"max_ns\":4000,\"p50_ns\":2000,\"p90_ns\":4000,\"p99_ns\":4000,"
	"\"p999_ns\":4000,\"parent\":\"main\"},"
	"{\"pid\":100,\"kind\":\"scope\",\"name\":\"rec\",\"file\":\"s.c\",\"line\":40,"
	"\"function\":\"rec\",\"count\":2,\"total_ns\":3000,\"mean_ns\":1500,"
	"\"min_ns\":1000,\"max_ns\":2000,\"p50_ns\":1000,\"p90_ns\":2000,\"p99_ns\":2000,"
	"\"p999_ns\":2000,\"parent\":\"rec\"},"
	"{\"pid\":100,\"kind\":\"scope\",\"name\":\"lost\",\"file\":\"s.c\",\"line\":50,"
	"\"function\":\"x\",\"count\":4,\"total_ns\":400,\"mean_ns\":100,"
	"\"min_ns\":100,\"max_ns\":100,\"p50_ns\":100,\"p90_ns\":100,\"p99_ns\":100,"
	"\"p999_ns\":100,\"parent\":\"gone\"},"
	"{\"pid\":100,\"kind\":\"scope\",\"name\":\"tiny\",\"file\":\"s.c\",\"line\":60,"
	"\"function\":\"x\",\"count\":5,\"total_ns\":1500,\"mean_ns\":300,"
	"\"min_ns\":0,\"max_ns\":900,\"p50_ns\":0,\"p90_ns\":0,\"p99_ns\":900,"
	"\"p999_ns\":900,\"calibration_ns\":691,\"parent\":\"gone\"},"
	"{\"pid\":7,\"kind\":\"probe\",\"name\":\"python:gc__start\",\"file\":null,\"line\":0,"
	"\"function\":null,\"count\":9,\"total_ns\":null,\"mean_ns\":null,"
	"\"min_ns\":null,\"max_ns\":null,\"p50_ns\":null,\"p90_ns\":null,\"p99_ns\":null,"
	"\"p999_ns\":null,\"parent\":null}"
	"]}";

static const char scopes_text[] =
	"PID  KIND   NAME              COUNT     MEAN      P50      P90      P99    P99.9      MAX    TOTAL\n"
	"  7  probe  python:gc__start      9        -        -        -        -        -        -        -\n"
	"100  func   main                  1   10.0 s   10.0 s   10.0 s   10.0 s   10.0 s   10.0 s   10.0 s\n"
	"100  scope    calc_ma          2000  3.00 us   812 ns  12.3 us   456 us  1.00 ms  1.50 ms  6.00 ms\n"
	"100  scope    io               1000  3.00 us  2.50 us  5.00 us  20.0 us  80.0 us  90.0 us  3.00 ms\n"
	"100  scope      calc_ma          10  5.00 us  5.00 us  6.00 us  6.00 us  6.00 us  6.00 us  50.0 us\n"
	"100  scope    rec                 3  2.33 us  2.00 us  4.00 us  4.00 us  4.00 us  4.00 us  7.00 us\n"
	"100  scope      rec               2  1.50 us  1.00 us  2.00 us  2.00 us  2.00 us  2.00 us  3.00 us\n"
	"100  mark   signal            12.3k        -        -        -        -        -        -        -\n"
	"100  scope  tiny                  5   300 ns  <691 ns  <691 ns   900 ns   900 ns   900 ns  1.50 us\n"
	"100  scope  lost                  4   100 ns   100 ns   100 ns   100 ns   100 ns   100 ns   400 ns\n";

/* values: histogram figures shown as such ("~"), exact when all equal */
static const char values_json[] =
	"{\"values\":["
	"{\"pid\":100,\"name\":\"qty\",\"file\":\"s.c\",\"line\":3,\"count\":1000,\"min\":2,"
	"\"max\":2,\"mean\":2.00024,\"p50\":2.00024,\"p99\":2.00024,\"last\":2,\"nan\":0,"
	"\"pos_inf\":0,\"neg_inf\":0},"
	"{\"pid\":100,\"name\":\"price\",\"file\":\"s.c\",\"line\":4,\"count\":100,\"min\":1,"
	"\"max\":100,\"mean\":50.5061,\"p50\":50.0061,\"p99\":100.012,\"last\":7,\"nan\":1,"
	"\"pos_inf\":0,\"neg_inf\":0}"
	"]}";
static const char values_text[] =
	"PID  NAME   COUNT  MIN    MEAN     P50   P99  MAX  LAST  NON-FINITE\n"
	"100  qty     1000    2       2       2     2    2     2           0\n"
	"100  price    100    1  ~50.51  ~50.01  ~100  100     7           1\n";

static void test_values(void)
{
	struct fake f;
	struct run r;
	char cl[64];

	snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n\r\n", strlen(values_json));
	run_fake(&r, &f,
		 (const char *const[]){ "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n",
					cl, values_json, NULL },
		 (const char *[]){ "values", NULL });
	CHECK_INT(r.code, 0);
	CHECK_STR(r.out, values_text);
}

/* trace: the query asked for, and the summary of a speedscope trailer
 * that says it was cut (on stderr, the file on stdout with -o -) */
static void test_trace_summary(void)
{
	static const char body[] =
		"{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"profiles\":[],"
		"\"qprof\":{\"collector\":\"ring\",\"begin_ns\":1000000000,\"end_ns\":3000000000,"
		"\"scopes\":1234,\"dropped_events\":0,\"lost_events\":0,\"max_bytes\":2000000,"
		"\"cut_scopes\":55,\"cut_at_ns\":1250000000,\"left_out\":{\"marks\":3,\"values\":4,"
		"\"logs\":0,\"span_events\":6}}}";
	struct fake f;
	struct run r;
	char cl[64], want[512];

	snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n\r\n", strlen(body));
	run_fake(&r, &f,
		 (const char *const[]){ "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n", cl, body, NULL },
		 (const char *[]){ "trace", "-o", "-", "--format", "speedscope", "--max-mb", "2", "--pid", "42",
				   NULL });
	CHECK_INT(r.code, 0);
	CHECK_STR(r.out, body);
	CHECK(strncmp(f.req, "GET /api/trace?max_mb=2&format=speedscope&pid=42 HTTP/1.1\r\n", 59) == 0);
	snprintf(want, sizeof(want), "wrote standard output: 1234 scopes (%zu bytes)\n"
		 "note: the trace was cut at the 2 MB cap, 0.250 s into the window: 55 later scopes left out\n"
		 "note: the speedscope format holds scopes only: 3 marks, 4 values, 0 log lines and 6 span "
		 "events are in --format chrome\n", strlen(body));
	CHECK_STR(r.err, want);
}

static void test_http(void)
{
	struct fake f;
	struct run r;
	char cl[64];

	test_values();
	test_trace_summary();

	/* Content-Length */
	snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n\r\n", strlen(status_json));
	run_fake(&r, &f,
		 (const char *const[]){ "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n",
					cl, status_json, NULL },
		 (const char *[]){ "status", NULL });
	CHECK_INT(r.code, 0);
	CHECK_STR(r.out, status_text);
	CHECK_STR(r.err, "");
	CHECK(strncmp(f.req, "GET /api/status HTTP/1.1\r\n", 26) == 0);
	CHECK_HAS(f.req, "\r\nHost: localhost\r\n");
	CHECK_HAS(f.req, "\r\nConnection: close\r\n");

	/* read to the end of the connection, an interim 100 first; --json
	 * after the command is verbatim */
	run_fake(&r, &f,
		 (const char *const[]){ "HTTP/1.1 100 Continue\r\n\r\n",
					"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n",
					status_json, NULL },
		 (const char *[]){ "status", "--json", NULL });
	CHECK_INT(r.code, 0);
	CHECK(strncmp(r.out, status_json, strlen(status_json)) == 0);
	CHECK_INT(strlen(r.out), strlen(status_json) + 1);

	/* chunked, cut at awkward places (inside the size line, inside the
	 * CRLF after data), with an extension and a trailer */
	{
		static char c1[64], c2[40000], c3[40000];
		size_t n = strlen(scopes_json), half = n / 2;

		snprintf(c1, sizeof(c1), "%zx;ext=1\r\n", half);
		snprintf(c2, sizeof(c2), "%.*s\r", (int)half, scopes_json);
		snprintf(c3, sizeof(c3), "\n%zX\r\n%s\r\n0\r\nX-Trailer: y\r\n\r\n", n - half,
			 scopes_json + half);
		run_fake(&r, &f,
			 (const char *const[]){ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
						"Content-Type: application/json\r\n\r\n", "",
						c1, c2, c3, NULL },
			 (const char *[]){ "scopes", "--pid", "100", "--seconds", "2", NULL });
		CHECK_INT(r.code, 0);
		CHECK(strncmp(f.req, "GET /api/scopes?pid=100&seconds=2 HTTP/1.1\r\n", 44) == 0);
		CHECK_STR(r.out, scopes_text);
		/* stderr is not a TTY here: no "collecting" line */
		CHECK_STR(r.err, "");
	}

	/* 404 with the daemon's JSON error */
	run_fake(&r, &f,
		 (const char *const[]){ "HTTP/1.1 404 Not Found\r\nContent-Length: 32\r\n\r\n",
					"{\"error\":\"no such target: 999\"}\n", NULL },
		 (const char *[]){ "detach", "--pid", "999", NULL });
	CHECK_INT(r.code, 1);
	CHECK_STR(r.err, "qprof-cli: no such target: 999 (HTTP 404)\n");
	CHECK_STR(r.out, "");
	CHECK(strncmp(f.req, "DELETE /api/targets/999 HTTP/1.1\r\n", 34) == 0);

	/* 500 without JSON */
	run_fake(&r, &f,
		 (const char *const[]){ "HTTP/1.1 500 Internal Server Error\r\n\r\noops", NULL },
		 (const char *[]){ "status", NULL });
	CHECK_INT(r.code, 1);
	CHECK_STR(r.err, "qprof-cli: qprofd answered HTTP 500 Internal Server Error\n");

	/* garbage */
	run_fake(&r, &f, (const char *const[]){ "hello there\r\n\r\n", NULL },
		 (const char *[]){ "status", NULL });
	CHECK_INT(r.code, 1);
	CHECK_HAS(r.err, "qprof-cli: bad answer from qprofd at ");
	CHECK_HAS(r.err, "not an HTTP/1.x answer");

	/* bad chunk size */
	run_fake(&r, &f,
		 (const char *const[]){ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
					"zz\r\nabc\r\n0\r\n\r\n", NULL },
		 (const char *[]){ "status", NULL });
	CHECK_INT(r.code, 1);
	CHECK_HAS(r.err, "malformed chunked encoding");

	/* cut short: fewer bytes than Content-Length */
	run_fake(&r, &f,
		 (const char *const[]){ "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"ver", NULL },
		 (const char *[]){ "status", NULL });
	CHECK_INT(r.code, 1);
	CHECK_HAS(r.err, "connection closed before the end of the answer");

	/* closed without a word */
	run_fake(&r, &f, (const char *const[]){ NULL }, (const char *[]){ "status", NULL });
	CHECK_INT(r.code, 1);
	CHECK_HAS(r.err, "connection closed without an answer");

	/* 200 that is not JSON */
	run_fake(&r, &f,
		 (const char *const[]){ "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc", NULL },
		 (const char *[]){ "status", NULL });
	CHECK_INT(r.code, 1);
	CHECK_HAS(r.err, "qprofd sent invalid JSON");

	/* attach: the body, built by the JSON writer, and the target printed */
	{
		static const char target[] =
			"{\"pid\":4242,\"comm\":\"strategy\",\"exe\":\"/opt/s/strategy\","
			"\"state\":\"running\",\"attached_ms\":0,\"probes\":14}";
		static const char body[] =
			"{\"pid\":4242,\"collector\":\"bpf\",\"usdt\":[\"python:function__entry\",\"a:b\"],"
			"\"spans\":[{\"name\":\"gc\",\"begin\":\"python:gc__start\","
			"\"end\":\"python:gc__done\"}]}";
		char clen[64];
		char *b;

		snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n\r\n", strlen(target));
		run_fake(&r, &f,
			 (const char *const[]){ "HTTP/1.1 201 Created\r\n", cl, target, NULL },
			 (const char *[]){ "attach", "--pid", "4242", "--usdt",
					   "python:function__entry", "--span",
					   "gc=python:gc__start,python:gc__done", "--usdt", "a:b",
					   "--collector", "bpf", NULL });
		CHECK_INT(r.code, 0);
		CHECK(strncmp(f.req, "POST /api/targets HTTP/1.1\r\n", 28) == 0);
		snprintf(clen, sizeof(clen), "\r\nContent-Length: %zu\r\n", strlen(body));
		CHECK_HAS(f.req, clen);
		CHECK_HAS(f.req, "\r\nContent-Type: application/json\r\n");
		b = strstr(f.req, "\r\n\r\n");
		CHECK_STR(b ? b + 4 : NULL, body);
		CHECK_STR(r.out, " PID  COMM      STATE    PROBES  ATTACHED  COLLECTOR  EXE\n"
				 "4242  strategy  running      14      0 ms  -          /opt/s/strategy\n");
	}

	/* attach --binary: a relative path is sent absolute, escaped */
	{
		char *cwd = getcwd(NULL, 0), *b, expect[4200];

		run_fake(&r, &f,
			 (const char *const[]){ "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}",
						NULL },
			 (const char *[]){ "attach", "--binary", ".", "--json", NULL });
		CHECK_INT(r.code, 0);
		CHECK_STR(r.out, "{}\n");
		snprintf(expect, sizeof(expect), "{\"binary\":\"%s\"}", cwd);
		b = strstr(f.req, "\r\n\r\n");
		CHECK_STR(b ? b + 4 : NULL, expect);
		free(cwd);
	}

	/* detach with 204 */
	run_fake(&r, &f, (const char *const[]){ "HTTP/1.1 204 No Content\r\n\r\n", NULL },
		 (const char *[]){ "detach", "--pid", "7", NULL });
	CHECK_INT(r.code, 0);
	CHECK_STR(r.out, "detached pid 7\n");

	/* detach --binary: DELETE /api/targets?binary= with the path encoded */
	run_fake(&r, &f, (const char *const[]){ "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", NULL },
		 (const char *[]){ "detach", "--binary", "/opt/my app", NULL });
	CHECK_INT(r.code, 0);
	CHECK_STR(r.out, "detached binary /opt/my app\n");
	CHECK(strncmp(f.req, "DELETE /api/targets?binary=%2Fopt%2Fmy%20app HTTP/1.1\r\n", 55) == 0);

	/* a pid a --binary target keeps */
	run_fake(&r, &f,
		 (const char *const[]){ "HTTP/1.1 200 OK\r\nContent-Length: 34\r\n\r\n"
					"{\"pid\":7,\"state\":\"kept_by_binary\"}", NULL },
		 (const char *[]){ "detach", "--pid", "7", NULL });
	CHECK_INT(r.code, 0);
	CHECK_STR(r.out, "pid 7: no longer attached by --pid; still a target of its --binary\n");

	/* empty scopes */
	run_fake(&r, &f,
		 (const char *const[]){ "HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n{\"scopes\":[]}",
					NULL },
		 (const char *[]){ "scopes", NULL });
	CHECK_INT(r.code, 0);
	CHECK_STR(r.out, "no scopes recorded\n");
}

/* ---- probes ------------------------------------------------------------- */

/* Does some line of TEXT hold exactly the whitespace-separated WORDS? */
static bool has_row(const char *text, const char *words)
{
	char want[512], line[1024], *save, *tok;
	const char *p = text;

	/* normalise WORDS and each line to single spaces */
	snprintf(want, sizeof(want), "%s", words);
	while (*p) {
		size_t n = strcspn(p, "\n"), o = 0;
		char norm[1024];

		snprintf(line, sizeof(line), "%.*s", (int)n, p);
		norm[0] = '\0';
		for (tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
			o += (size_t)snprintf(norm + o, sizeof(norm) - o, "%s%s", o ? " " : "", tok);
		if (strcmp(norm, want) == 0)
			return true;
		p += n;
		if (*p)
			p++;
	}
	return false;
}

static void test_probes(const char *fixture)
{
	char cmd[512], expect[4096], *line, *save;
	struct run r;
	FILE *f;
	size_t n;
	int rows = 0;

	/* what the fixture says it contains */
	snprintf(cmd, sizeof(cmd), "'%s' --expect", fixture);
	f = popen(cmd, "r");
	CHECK(f != NULL);
	if (!f)
		return;
	n = fread(expect, 1, sizeof(expect) - 1, f);
	expect[n] = '\0';
	pclose(f);

	run_cli(&r, NULL, (const char *[]){ "probes", fixture, NULL });
	CHECK_INT(r.code, 0);
	CHECK_STR(r.err, "");
	CHECK_HAS(r.out, "qprof sites in ");
	CHECK_HAS(r.out, ": 5\n");
	CHECK_HAS(r.out, "KIND");
	for (line = strtok_r(expect, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		rows++;
		if (has_row(r.out, line)) {
			tl_pass++;
		} else {
			tl_fail++;
			fprintf(stderr, "probes: row \"%s\" missing in:\n%s\n", line, r.out);
		}
	}
	CHECK_INT(rows, 5);
	CHECK_HAS(r.out, "qprof probe sites:");
	CHECK_HAS(r.out, " mark 1");
	CHECK_HAS(r.out, " value 1");
	CHECK_HAS(r.out, " log 1");
	CHECK_HAS(r.out, " scope_enter 2");
	CHECK_HAS(r.out, "\nother USDT probes: 1\n");
	CHECK(has_row(r.out, "PROVIDER:NAME ARGS SITES"));
	CHECK_HAS(r.out, "demo:tick");
	CHECK_HAS(r.out, "  2\n");	/* two sites of demo:tick */

	run_cli(&r, NULL, (const char *[]){ "--json", "probes", fixture, NULL });
	CHECK_INT(r.code, 0);
	CHECK_HAS(r.out, "\"name\":\"inner_loop\"");
	CHECK_HAS(r.out, "{\"provider\":\"demo\",\"name\":\"tick\",");
	CHECK_HAS(r.out, "\"sites\":2}");

	/* a binary without probes: a success with a message */
	run_cli(&r, NULL, (const char *[]){ "probes", cli_path, NULL });
	CHECK_INT(r.code, 0);
	snprintf(cmd, sizeof(cmd), "no USDT probes in %s\n", cli_path);
	CHECK_STR(r.out, cmd);

	/* missing, and not ELF */
	run_cli(&r, NULL, (const char *[]){ "probes", "/nonexistent/binary", NULL });
	CHECK_INT(r.code, 1);
	CHECK_HAS(r.err, "qprof-cli: cannot read probes of /nonexistent/binary: ");
	snprintf(cmd, sizeof(cmd), "%s/notelf", tmpdir);
	f = fopen(cmd, "w");
	if (f) {
		fputs("just some text, not an ELF file at all\n", f);
		fclose(f);
	}
	run_cli(&r, NULL, (const char *[]){ "probes", cmd, NULL });
	CHECK_INT(r.code, 1);
	CHECK_HAS(r.err, "qprof-cli: cannot read probes of ");
	CHECK_STR(r.out, "");
}

int main(int argc, char **argv)
{
	const char *mode;
	char rm[128];

	if (argc < 3) {
		fprintf(stderr, "usage: %s QPROF_CLI args|http|probes [FIXTURE]\n", argv[0]);
		return 2;
	}
	cli_path = argv[1];
	mode = argv[2];
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/qprof-cli-test.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	if (strcmp(mode, "args") == 0)
		test_args();
	else if (strcmp(mode, "http") == 0)
		test_http();
	else if (strcmp(mode, "probes") == 0 && argc > 3)
		test_probes(argv[3]);
	else
		fprintf(stderr, "unknown mode %s\n", mode), tl_fail++;
	snprintf(rm, sizeof(rm), "rm -rf '%s'", tmpdir);
	if (system(rm) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return test_done(mode);
}
