/* test_http_query.c - the query-string checks of the HTTP API (http_query.c)
 * with plain strings: exact values, clamping and error texts.
 *
 * Decided and pinned here: a leading '+' is accepted ("+5" is 5, as
 * qp_parse_i64 reads it); blanks anywhere, exponents and empty values are
 * not numbers; a number beyond int64 is "not an integer" (400) rather than
 * being clamped, and pid beyond INT32_MAX is not a pid. */
#include <errno.h>
#include "http/http_query.h"
#include "testlib.h"

#define SEC_ERR "seconds must be an integer (clamped to 1..300)"
#define PID_ERR "pid must be a positive integer"

static void seconds_ok(const char *s, unsigned int want, int line)
{
	unsigned int v = 12345;
	char err[128] = "untouched";
	int ret = qp_query_seconds(s, &v, err, sizeof(err));

	if (ret != 0 || v != want)
		fprintf(stderr, "line %d: seconds '%s' -> ret %d, %u\n", line, s ? s : "(absent)", ret, v);
	CHECK_INT(ret, 0);
	CHECK_INT(v, want);
	CHECK_STR(err, "untouched"); /* no message on success */
}

static void seconds_bad(const char *s, int line)
{
	unsigned int v = 12345;
	char err[128] = "";
	int ret = qp_query_seconds(s, &v, err, sizeof(err));

	if (ret != -EINVAL)
		fprintf(stderr, "line %d: seconds '%s' accepted as %u\n", line, s, v);
	CHECK_INT(ret, -EINVAL);
	CHECK_INT(v, 0);
	CHECK_STR(err, SEC_ERR);
}

static void pid_ok(const char *s, int want, int line)
{
	char err[128] = "untouched";
	int v = -7, ret = qp_query_pid(s, &v, err, sizeof(err));

	if (ret != 0 || v != want)
		fprintf(stderr, "line %d: pid '%s' -> ret %d, %d\n", line, s ? s : "(absent)", ret, v);
	CHECK_INT(ret, 0);
	CHECK_INT(v, want);
	CHECK_STR(err, "untouched");
}

static void pid_bad(const char *s, int line)
{
	char err[128] = "";
	int v = -7, ret = qp_query_pid(s, &v, err, sizeof(err));

	if (ret != -EINVAL)
		fprintf(stderr, "line %d: pid '%s' accepted as %d\n", line, s, v);
	CHECK_INT(ret, -EINVAL);
	CHECK_INT(v, 0);
	CHECK_STR(err, PID_ERR);
}

static void test_seconds(void)
{
	seconds_ok(NULL, 0, __LINE__); /* absent: everything since attach */
	seconds_ok("0", 1, __LINE__);
	seconds_ok("1", 1, __LINE__);
	seconds_ok("300", 300, __LINE__);
	seconds_ok("301", 300, __LINE__);
	seconds_ok("-5", 1, __LINE__);
	seconds_ok("+5", 5, __LINE__);
	seconds_ok("007", 7, __LINE__);
	seconds_ok("9223372036854775807", 300, __LINE__);  /* INT64_MAX: clamped */
	seconds_ok("-9223372036854775808", 1, __LINE__);   /* INT64_MIN: clamped */
	seconds_bad("abc", __LINE__);
	seconds_bad("", __LINE__);
	seconds_bad("1e3", __LINE__);
	seconds_bad(" 5", __LINE__);
	seconds_bad("5 ", __LINE__);
	seconds_bad("5s", __LINE__);
	seconds_bad("1.5", __LINE__);
	seconds_bad("0x10", __LINE__);
	seconds_bad("+", __LINE__);
	seconds_bad("-", __LINE__);
	seconds_bad("+-5", __LINE__);
	seconds_bad("99999999999999999999999", __LINE__);
	seconds_bad("9223372036854775808", __LINE__);  /* INT64_MAX + 1 */
	seconds_bad("-99999999999999999999999", __LINE__);

	/* a NULL or zero-length err buffer is allowed */
	{
		unsigned int v = 9;

		CHECK_INT(qp_query_seconds("abc", &v, NULL, 0), -EINVAL);
		CHECK_INT(qp_query_seconds("42", &v, NULL, 0), 0);
		CHECK_INT(v, 42);
	}
	/* a short buffer is cut, still terminated */
	{
		unsigned int v;
		char err[8];

		CHECK_INT(qp_query_seconds("x", &v, err, sizeof(err)), -EINVAL);
		CHECK_STR(err, "seconds");
	}
}

static void test_pid(void)
{
	pid_ok(NULL, 0, __LINE__); /* absent: every target */
	pid_ok("123", 123, __LINE__);
	pid_ok("1", 1, __LINE__);
	pid_ok("+123", 123, __LINE__);
	pid_ok("2147483647", 2147483647, __LINE__);
	pid_bad("abc", __LINE__);
	pid_bad("0", __LINE__);
	pid_bad("-1", __LINE__);
	pid_bad("2147483648", __LINE__);
	pid_bad("99999999999999999999999", __LINE__);
	pid_bad("", __LINE__);
	pid_bad(" 123", __LINE__);
	pid_bad("123 ", __LINE__);
	pid_bad("12a", __LINE__);
	pid_bad("1e3", __LINE__);
}

static void test_keys(void)
{
	static const char *const none[] = { NULL };
	static const char *const scopes[] = { "pid", "seconds", NULL };
	const char *ok[] = { "seconds", "pid", "pid" };
	const char *bad[] = { "pid", "bogus", "other" };
	const char *caps[] = { "PID" };
	const char *empty[] = { "" };
	char longkey[200], want[128], err[128];

	CHECK(qp_query_unknown_key(scopes, NULL, 0, err, sizeof(err)) == NULL);
	CHECK(qp_query_unknown_key(none, NULL, 0, err, sizeof(err)) == NULL);
	CHECK(qp_query_unknown_key(scopes, ok, 3, err, sizeof(err)) == NULL);
	/* the first unknown one is named */
	CHECK_STR(qp_query_unknown_key(scopes, bad, 3, err, sizeof(err)), "bogus");
	CHECK_STR(err, "unknown query parameter 'bogus'");
	/* a route without parameters refuses every key */
	CHECK_STR(qp_query_unknown_key(none, ok, 3, err, sizeof(err)), "seconds");
	CHECK_STR(err, "unknown query parameter 'seconds'");
	/* names are case-sensitive and exact */
	CHECK_STR(qp_query_unknown_key(scopes, caps, 1, err, sizeof(err)), "PID");
	CHECK_STR(qp_query_unknown_key(scopes, empty, 1, err, sizeof(err)), "");
	CHECK_STR(err, "unknown query parameter ''");
	/* NULL err is fine */
	CHECK_STR(qp_query_unknown_key(scopes, bad, 3, NULL, 0), "bogus");
	/* a long key is cut to 63 bytes in the message */
	memset(longkey, 'k', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	{
		const char *keys[] = { longkey };

		CHECK(qp_query_unknown_key(scopes, keys, 1, err, sizeof(err)) == longkey);
		snprintf(want, sizeof(want), "unknown query parameter '%.63s'", longkey);
		CHECK_STR(err, want);
	}
}

/* The Accept header of a /metrics scrape: protobuf only when offered and
 * preferred. */
static void test_accept(void)
{
	/* Prometheus 2.42 with --enable-feature=native-histograms, byte for byte */
	CHECK(qp_accept_protobuf("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
				 "encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,"
				 "application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,"
				 "*/*;q=0.1"));
	CHECK(qp_accept_protobuf("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
				 "encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"));
	CHECK(qp_accept_protobuf("application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
				 "encoding=delimited"));
	CHECK(qp_accept_protobuf("text/plain;q=0.5, APPLICATION/VND.GOOGLE.PROTOBUF;"
				 "proto=\"io.prometheus.client.MetricFamily\";encoding=delimited;q=0.5"));
	/* what Prometheus sends without the feature, curl, nothing */
	CHECK(!qp_accept_protobuf("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
				  "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"));
	CHECK(!qp_accept_protobuf("*/*"));
	CHECK(!qp_accept_protobuf(NULL));
	CHECK(!qp_accept_protobuf(""));
	/* refused or outranked protobuf, other messages, text encoding */
	CHECK(!qp_accept_protobuf("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
				  "encoding=delimited;q=0"));
	CHECK(!qp_accept_protobuf("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
				  "encoding=delimited;q=0.2,text/plain;q=0.9"));
	CHECK(!qp_accept_protobuf("application/vnd.google.protobuf;proto=other.Message;encoding=delimited"));
	CHECK(!qp_accept_protobuf("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
				  "encoding=text"));
	/* a q that is not a number in 0..1 drops its range */
	CHECK(!qp_accept_protobuf("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
				  "encoding=delimited;q=2"));
	CHECK(!qp_accept_protobuf("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
				  "encoding=delimited;q=abc"));
	CHECK(!qp_accept_protobuf(";;;,,,=;q=;proto=;"));
}

/* The whole query, pair by pair: a repeated key, a NUL inside a value and a
 * key without '=' are refused with their own message; the first problem
 * wins; 32 pairs pass, a 33rd does not. */
static void test_scan(void)
{
	static const char *const names[33] = {
		"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9", "k10",
		"k11", "k12", "k13", "k14", "k15", "k16", "k17", "k18", "k19", "k20",
		"k21", "k22", "k23", "k24", "k25", "k26", "k27", "k28", "k29", "k30",
		"k31", "k32",
	};
	struct qp_query_scan s = { .n = 0 };
	size_t i;

	qp_query_scan_arg(&s, "pid", "12", 2);
	qp_query_scan_arg(&s, "seconds", "", 0);	/* empty: the route says what it needs */
	CHECK(!s.bad);
	CHECK_INT(s.n, 2);
	qp_query_scan_arg(&s, "pid", "13", 2);
	CHECK(s.bad);
	CHECK_STR(s.err, "query parameter 'pid' is given more than once");
	qp_query_scan_arg(&s, "x", NULL, 0);	/* ignored after the first */
	CHECK_STR(s.err, "query parameter 'pid' is given more than once");

	s = (struct qp_query_scan){ .n = 0 };
	qp_query_scan_arg(&s, "pid", "12\0x", 4);	/* "pid=12%00x" */
	CHECK(s.bad);
	CHECK_STR(s.err, "query parameter 'pid' holds a NUL byte (%00)");

	s = (struct qp_query_scan){ .n = 0 };
	qp_query_scan_arg(&s, "follow", NULL, 0);	/* "?follow" */
	CHECK(s.bad);
	CHECK_STR(s.err, "query parameter 'follow' has no value (write follow=VALUE)");

	s = (struct qp_query_scan){ .n = 0 };
	for (i = 0; i < 32; i++)
		qp_query_scan_arg(&s, names[i], "1", 1);
	CHECK(!s.bad);
	qp_query_scan_arg(&s, names[32], "1", 1);
	CHECK(s.bad);
	CHECK_STR(s.err, "more than 32 query parameters");
}

/* Percent-decoding as libmicrohttpd does it, but for %00. */
static void test_unescape(void)
{
	char a[] = "/api/targets/12%00x", b[] = "a%41%4a%4A%2f%zz%4", c[] = "%25%30%30%00%0a%ff", d[] = "";

	CHECK_INT(qp_http_unescape(a), 19);
	CHECK_STR(a, "/api/targets/12%00x");
	CHECK_INT(qp_http_unescape(b), 10);
	CHECK_STR(b, "aAJJ/%zz%4");
	CHECK_INT(qp_http_unescape(c), 8);
	CHECK_STR(c, "%00%00\n\xff");
	CHECK_INT(qp_http_unescape(d), 0);
}

int main(void)
{
	test_unescape();
	test_scan();
	test_seconds();
	test_pid();
	test_keys();
	test_accept();
	return test_done("test_http_query");
}
