/* test_http_auth.c - who may talk to qprofd (http_auth.c) with plain
 * strings: the exact status and reason of each refusal over TCP, that the
 * unix socket admits everything, the token file's ownership and mode
 * rules, the constant-time compare, hiding kernel addresses, and the
 * clamped seconds= (http_query.c) the answers report. */
#include <errno.h>
#include <stdlib.h>
#include "http/http_auth.h"
#include "http/http_query.h"
#include "model/model_cpu.h"
#include "testlib.h"

#define TOKEN "s3cret-token-0123456789"

static int admit(const struct qp_http_policy *p, const char *method, const char *url,
		 struct qp_http_headers h, bool *tok, char *msg)
{
	return qp_http_admit(p, method, url, &h, tok, msg, 512);
}

static void test_tcp_no_token(void)
{
	struct qp_http_policy p;
	struct qp_http_headers ok = { .host = "127.0.0.1:6464", .content_type = "application/json" };
	struct qp_http_headers h;
	char msg[512];
	bool tok = true;

	CHECK_INT(qp_http_policy_tcp(&p, "127.0.0.1:6464", NULL), 0);
	CHECK_INT(p.nhosts, 3);
	CHECK_INT(admit(&p, "GET", "/api/status", ok, &tok, msg), 0);
	CHECK(!tok);
	/* the three loopback names, any case */
	h = ok;
	h.host = "localhost:6464";
	CHECK_INT(admit(&p, "GET", "/api/status", h, &tok, msg), 0);
	h.host = "LocalHost:6464";
	CHECK_INT(admit(&p, "GET", "/api/status", h, &tok, msg), 0);
	h.host = "[::1]:6464";
	CHECK_INT(admit(&p, "GET", "/api/status", h, &tok, msg), 0);
	/* DNS rebinding: another name, another port, no port, none at all */
	h.host = "evil.example:6464";
	CHECK_INT(admit(&p, "GET", "/api/status", h, &tok, msg), 403);
	CHECK_STR(msg, "Host 'evil.example:6464' is not this daemon's address (want 127.0.0.1:6464, "
		       "localhost:6464, [::1]:6464)");
	h.host = "127.0.0.1:6465";
	CHECK_INT(admit(&p, "GET", "/api/status", h, &tok, msg), 403);
	h.host = "localhost";
	CHECK_INT(admit(&p, "GET", "/api/status", h, &tok, msg), 403);
	h.host = NULL;
	CHECK_INT(admit(&p, "GET", "/api/status", h, &tok, msg), 403);
	/* cross-site */
	h = ok;
	h.origin = "http://evil.example";
	CHECK_INT(admit(&p, "GET", "/api/status", h, &tok, msg), 403);
	CHECK_STR(msg, "cross-origin request from 'http://evil.example' refused");
	h.origin = "http://localhost:8080";	/* same site, another origin */
	CHECK_INT(admit(&p, "GET", "/api/status", h, &tok, msg), 403);
	h.origin = "null";
	CHECK_INT(admit(&p, "GET", "/api/status", h, &tok, msg), 403);
	h.origin = "http://127.0.0.1:6464";
	CHECK_INT(admit(&p, "GET", "/api/status", h, &tok, msg), 0);
	h = ok;
	h.sec_fetch_site = "cross-site";
	CHECK_INT(admit(&p, "GET", "/api/status", h, &tok, msg), 403);
	CHECK_STR(msg, "Sec-Fetch-Site 'cross-site' refused: only same-origin requests");
	h.sec_fetch_site = "same-site";
	CHECK_INT(admit(&p, "GET", "/api/status", h, &tok, msg), 403);
	h.sec_fetch_site = "same-origin";
	CHECK_INT(admit(&p, "GET", "/api/status", h, &tok, msg), 0);
	h.sec_fetch_site = "none";
	CHECK_INT(admit(&p, "GET", "/api/status", h, &tok, msg), 0);
	/* mutating routes: no token configured -> 403, whatever is sent */
	h = ok;
	h.authorization = "Bearer " TOKEN;
	CHECK_INT(admit(&p, "POST", "/api/targets", h, &tok, msg), 403);
	CHECK_STR(msg, "POST /api/targets over TCP needs qprofd --token-file; use the unix socket, or GET routes only");
	CHECK_INT(admit(&p, "DELETE", "/api/targets/12", h, &tok, msg), 403);
	CHECK_INT(admit(&p, "PUT", "/api/status", h, &tok, msg), 403);
	/* the symbol protocol's POST only reads */
	CHECK_INT(admit(&p, "POST", "/pprof/symbol", ok, &tok, msg), 0);
	CHECK_INT(admit(&p, "POST", "/debug/pprof/symbol", ok, &tok, msg), 0);
	CHECK(!qp_http_mutating("GET", "/api/targets"));
	CHECK(!qp_http_mutating("HEAD", "/api/targets"));
	CHECK(qp_http_mutating("POST", "/api/targets"));
	CHECK(qp_http_mutating("DELETE", "/api/targets/1"));
	CHECK(qp_http_mutating("POST", "/pprof/symbol/x"));
}

static void test_tcp_token(void)
{
	struct qp_http_policy p;
	struct qp_http_headers ok = { .host = "127.0.0.2:7000", .content_type = "application/json",
				      .authorization = "Bearer " TOKEN };
	struct qp_http_headers h;
	char msg[512];
	bool tok = false;

	CHECK_INT(qp_http_policy_tcp(&p, "127.0.0.2:7000", TOKEN), 0);
	CHECK_INT(p.nhosts, 4);	/* the listen address too */
	CHECK_INT(admit(&p, "POST", "/api/targets", ok, &tok, msg), 0);
	CHECK(tok);
	CHECK_INT(admit(&p, "DELETE", "/api/targets/5", ok, &tok, msg), 0);
	h = ok;
	h.host = "localhost:7000";
	CHECK_INT(admit(&p, "POST", "/api/targets", h, &tok, msg), 0);
	h.authorization = "bearer   " TOKEN "  ";	/* scheme in any case, blanks */
	CHECK_INT(admit(&p, "POST", "/api/targets", h, &tok, msg), 0);
	h.authorization = NULL;
	CHECK_INT(admit(&p, "POST", "/api/targets", h, &tok, msg), 401);
	CHECK(!tok);
	CHECK_STR(msg, "no token: send the token of --token-file as 'Authorization: Bearer TOKEN'");
	h.authorization = "Bearer " TOKEN "x";
	CHECK_INT(admit(&p, "POST", "/api/targets", h, &tok, msg), 401);
	CHECK_STR(msg, "wrong token: send the token of --token-file as 'Authorization: Bearer TOKEN'");
	h.authorization = "Bearer s3cret";	/* a prefix is not the token */
	CHECK_INT(admit(&p, "DELETE", "/api/targets/5", h, &tok, msg), 401);
	h.authorization = "Basic " TOKEN;
	CHECK_INT(admit(&p, "DELETE", "/api/targets/5", h, &tok, msg), 401);
	h.authorization = "Bearer" TOKEN;
	CHECK_INT(admit(&p, "DELETE", "/api/targets/5", h, &tok, msg), 401);
	h.authorization = "Bearer ";
	CHECK_INT(admit(&p, "DELETE", "/api/targets/5", h, &tok, msg), 401);
	/* the token does not lift the other checks */
	h = ok;
	h.host = "attacker.example:7000";
	CHECK_INT(admit(&p, "POST", "/api/targets", h, &tok, msg), 403);
	h = ok;
	h.origin = "https://attacker.example";
	CHECK_INT(admit(&p, "POST", "/api/targets", h, &tok, msg), 403);
	/* CSRF: a body a page may send without a preflight */
	h = ok;
	h.content_type = "text/plain";
	CHECK_INT(admit(&p, "POST", "/api/targets", h, &tok, msg), 415);
	CHECK_STR(msg, "POST /api/targets over TCP wants Content-Type: application/json (got 'text/plain')");
	h.content_type = "application/x-www-form-urlencoded";
	CHECK_INT(admit(&p, "POST", "/api/targets", h, &tok, msg), 415);
	h.content_type = NULL;
	CHECK_INT(admit(&p, "POST", "/api/targets", h, &tok, msg), 415);
	h.content_type = "application/jsonp";
	CHECK_INT(admit(&p, "POST", "/api/targets", h, &tok, msg), 415);
	h.content_type = "Application/JSON; charset=utf-8";
	CHECK_INT(admit(&p, "POST", "/api/targets", h, &tok, msg), 0);
	/* DELETE has no body to type */
	h.content_type = NULL;
	CHECK_INT(admit(&p, "DELETE", "/api/targets/5", h, &tok, msg), 0);
	/* malformed listen specs */
	CHECK_INT(qp_http_policy_tcp(&p, "127.0.0.1", NULL), -EINVAL);
	CHECK_INT(qp_http_policy_tcp(&p, "127.0.0.1:", NULL), -EINVAL);
	CHECK_INT(qp_http_policy_tcp(&p, "127.0.0.1:70000", NULL), -EINVAL);
	/* a port written with a leading zero is the port clients send */
	CHECK_INT(qp_http_policy_tcp(&p, "127.0.0.3:06464", NULL), 0);
	CHECK_INT(p.nhosts, 4);
	CHECK_STR(p.hosts[0], "127.0.0.1:6464");
	CHECK_STR(p.hosts[3], "127.0.0.3:6464");
	h = ok;
	h.host = "127.0.0.3:6464";
	CHECK_INT(admit(&p, "GET", "/api/status", h, &tok, msg), 0);
}

static void test_unix(void)
{
	struct qp_http_policy p;
	struct qp_http_headers h = { .origin = "http://evil.example", .sec_fetch_site = "cross-site",
				     .content_type = "text/plain" };
	char msg[512];
	bool tok = true;

	qp_http_policy_unix(&p);
	CHECK_INT(admit(&p, "POST", "/api/targets", h, &tok, msg), 0);
	CHECK_INT(admit(&p, "DELETE", "/api/targets/5", h, &tok, msg), 0);
	CHECK_INT(admit(&p, "GET", "/api/status", (struct qp_http_headers){ 0 }, &tok, msg), 0);
	CHECK(!tok);
}

static void test_const_time(void)
{
	CHECK(qp_const_time_eq("abc", 3, "abc", 3));
	CHECK(!qp_const_time_eq("abc", 3, "abd", 3));
	CHECK(!qp_const_time_eq("abc", 3, "abcd", 4));
	CHECK(!qp_const_time_eq("", 0, "a", 1));
	CHECK(qp_const_time_eq("", 0, "", 0));
}

static void test_token_stat(void)
{
	struct stat st = { .st_mode = S_IFREG | 0600, .st_uid = 0, .st_gid = 0 };
	char err[160];

	CHECK_INT(qp_token_check_stat(&st, (gid_t)-1, err, sizeof(err)), 0);
	st.st_mode = S_IFREG | 0640;
	st.st_gid = 990;
	CHECK_INT(qp_token_check_stat(&st, 990, err, sizeof(err)), 0);
	CHECK_INT(qp_token_check_stat(&st, 991, err, sizeof(err)), -EPERM);
	CHECK_STR(err, "mode 0640 group 990: want 0600, or 0640 with group qprof");
	CHECK_INT(qp_token_check_stat(&st, (gid_t)-1, err, sizeof(err)), -EPERM);
	st.st_mode = S_IFREG | 0644;
	CHECK_INT(qp_token_check_stat(&st, 990, err, sizeof(err)), -EPERM);
	CHECK_STR(err, "mode 0644 group 990: want 0600, or 0640 with group qprof");
	st.st_mode = S_IFREG | 0604;
	CHECK_INT(qp_token_check_stat(&st, 990, err, sizeof(err)), -EPERM);
	st.st_mode = S_IFREG | 04600;
	CHECK_INT(qp_token_check_stat(&st, 990, err, sizeof(err)), -EPERM);
	st.st_mode = S_IFREG | 0600;
	st.st_uid = 1000;
	CHECK_INT(qp_token_check_stat(&st, 990, err, sizeof(err)), -EPERM);
	CHECK_STR(err, "owned by uid 1000, not root");
	st.st_uid = 0;
	st.st_mode = S_IFIFO | 0600;
	CHECK_INT(qp_token_check_stat(&st, 990, err, sizeof(err)), -EPERM);
	CHECK_STR(err, "not a regular file");
}

static void test_hide_kernel(void)
{
	struct qp_cpu_frame fr[4] = {
		{ .name = "main", .module = "app", .addr = 0x401000, .mapping = 1 },
		{ .name = "do_syscall_64", .module = "[kernel]", .addr = 0xffffffff81a00010ull, .kernel = true },
		{ .name = "[kernel]+0xffffffff81234567", .module = "[kernel]", .addr = 0xffffffff81234567ull,
		  .kernel = true },
		{ .name = "[unknown]+0xffffffffc0001000", .module = "[unknown]", .addr = 0xffffffffc0001000ull },
	};
	struct qp_cpu_sample s = { .pid = 1, .comm = "app", .count = 3, .nframes = 4, .frames = fr };
	struct qp_cpu_profile p = { .nsamples = 1, .samples = &s };

	qp_cpu_profile_hide_kernel(&p);
	CHECK_STR(fr[0].name, "main");
	CHECK(fr[0].addr == 0x401000);
	CHECK_STR(fr[1].name, "do_syscall_64");
	CHECK(fr[1].addr == 0);
	CHECK_STR(fr[2].name, "[kernel]");
	CHECK(fr[2].addr == 0);
	CHECK_STR(fr[3].name, "[kernel]");
	CHECK(fr[3].addr == 0);
	CHECK_INT(s.count, 3);
	CHECK(qp_addr_is_kernel(0xffff800000000000ull));
	CHECK(!qp_addr_is_kernel(0x00007fffffffffffull));
}

static void test_seconds_clamped(void)
{
	unsigned int v;
	int64_t asked;

	CHECK_INT(qp_query_seconds_ex("301", &v, &asked, NULL, 0), 0);
	CHECK_INT(v, 300);
	CHECK_INT(asked, 301);
	CHECK_INT(qp_query_seconds_ex("-5", &v, &asked, NULL, 0), 0);
	CHECK_INT(v, 1);
	CHECK_INT(asked, -5);
	CHECK_INT(qp_query_seconds_ex("0", &v, &asked, NULL, 0), 0);
	CHECK_INT(v, 1);
	CHECK_INT(asked, 0);
	CHECK_INT(qp_query_seconds_ex("+7", &v, &asked, NULL, 0), 0);
	CHECK_INT(v, 7);
	CHECK_INT(asked, 7);
	CHECK_INT(qp_query_seconds_ex(NULL, &v, &asked, NULL, 0), 0);
	CHECK_INT(v, 0);
	CHECK_INT(asked, 0);
}

int main(void)
{
	test_tcp_no_token();
	test_tcp_token();
	test_unix();
	test_const_time();
	test_token_stat();
	test_hide_kernel();
	test_seconds_clamped();
	return test_done("test_http_auth");
}
