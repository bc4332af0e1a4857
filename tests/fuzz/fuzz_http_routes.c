/* fuzz_http_routes.c - libFuzzer target for qprofd's HTTP API as a request
 * reaches it: the bytes are a method, a URL with its query string and a
 * body, decoded the way libmicrohttpd hands them to qp_http_route (query
 * split on '&' and '=', %XX and '+' decoded, first value of a repeated key).
 * The daemon state is a real registry with no targets and a report
 * directory in /tmp; no BPF is loaded and no libmicrohttpd runs. The link
 * replaces (-Wl,--wrap) the few functions that would touch the kernel or
 * another process: the BPF map readers answer an empty collector, and an
 * attach request is refused after the router has checked it, so that a
 * fuzzed {"pid": N} never attaches to a process of this machine. A windowed
 * request (seconds=N) does not sleep: qp_stop_wait is wrapped to return at
 * once, as if the window had passed.
 *
 * Input: byte 0 picks the method (bits 0-2: GET, POST, DELETE, PUT, HEAD,
 * ...), whether the peer is privileged (bit 3: root on the unix socket) and
 * whether header lines follow the URL (bit 4: "Name: value" lines up to an
 * empty line); the URL runs to the first '\n', the rest is the body. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/collect_scopes.h"
#include "http/http.h"
#include "http/http_query.h"
#include "http/qprofd.h"
#include "targets/targets.h"

#define MAX_URL 4096
#define MAX_ARGS 64

/* ---- what the link redirects: no kernel, no other process --------------- */

int __wrap_qp_scopes_read(struct qp_scopes *s, int pid, struct qp_scope_snapshot *out)
{
	memset(out, 0, sizeof(*out));
	return 0;
}

int __wrap_qp_marks_read(struct qp_scopes *s, int pid, struct qp_mark_row **rows, size_t *n)
{
	*rows = NULL;
	*n = 0;
	return 0;
}

int __wrap_qp_probe_counts_read(struct qp_scopes *s, int pid, struct qp_probe_row **rows, size_t *n)
{
	*rows = NULL;
	*n = 0;
	return 0;
}

int __wrap_qp_values_read(struct qp_scopes *s, int pid, struct qp_value_row **rows, size_t *n)
{
	*rows = NULL;
	*n = 0;
	return 0;
}

uint64_t __wrap_qp_scopes_counter(struct qp_scopes *s, unsigned int which)
{
	return 0;
}

void __wrap_qp_spans_figures(struct qp_scopes *s, uint64_t *pending, uint64_t *capacity)
{
	*pending = 0;
	*capacity = 0;
}

int __wrap_qp_registry_add_pid(struct qp_registry *r, int pid, const struct qp_attach_extra *extra,
			       struct qp_target_view *out, int *status, char *err, size_t errlen)
{
	*status = 403;
	snprintf(err, errlen, "the fuzzer attaches nothing (pid %d)", pid);
	return -EPERM;
}

int __wrap_qp_registry_add_binary(struct qp_registry *r, const char *path,
				  const struct qp_attach_extra *extra, struct qp_binary_view *out,
				  int *status, char *err, size_t errlen)
{
	*status = 403;
	snprintf(err, errlen, "the fuzzer attaches nothing (%.200s)", path);
	return -EPERM;
}

/* stop.c's, without the wait: a window of N seconds passes at once. */
bool __wrap_qp_stop_wait(struct qp_stop *s, unsigned int seconds);
bool __wrap_qp_stop_wait(struct qp_stop *s, unsigned int seconds)
{
	return true;
}

/* ---- the request, decoded like libmicrohttpd does ------------------------ */

#define MAX_HEADERS 16

struct fuzz_req {
	char url[MAX_URL + 1];
	char *keys[MAX_ARGS], *vals[MAX_ARGS];
	size_t vlens[MAX_ARGS];
	size_t nargs;
	char heads[MAX_URL + 1];
	char *hname[MAX_HEADERS], *hval[MAX_HEADERS];
	size_t nheads;
};

/* Header names compare without case, as in MHD; the first one wins. */
static const char *header_get(void *arg, const char *name)
{
	struct fuzz_req *r = arg;
	size_t i;

	for (i = 0; i < r->nheads; i++)
		if (!strcasecmp(r->hname[i], name))
			return r->hval[i];
	return NULL;
}

/* "Name: value" lines of DATA up to an empty line; returns the bytes used. */
static size_t parse_headers(struct fuzz_req *r, const uint8_t *data, size_t size)
{
	const uint8_t *end;
	size_t used = 0;
	char *line;

	/* the header block ends at "\n\n"; without one there are no headers */
	for (end = data; end + 1 < data + size; end++)
		if (end[0] == '\n' && end[1] == '\n')
			break;
	if (end + 1 >= data + size)
		return 0;
	used = (size_t)(end - data) + 2;
	if ((size_t)(end - data) > MAX_URL)
		return used;
	memcpy(r->heads, data, (size_t)(end - data));
	r->heads[end - data] = '\0';
	for (line = strtok(r->heads, "\n"); line && r->nheads < MAX_HEADERS; line = strtok(NULL, "\n")) {
		char *colon = strchr(line, ':');

		if (!colon || colon == line)
			continue;	/* MHD refuses such a line; it never reaches a handler */
		*colon++ = '\0';
		while (*colon == ' ' || *colon == '\t')
			colon++;
		r->hname[r->nheads] = line;
		r->hval[r->nheads++] = colon;
	}
	return used;
}

/* In place: '+' is a space, then %XX a byte as qprofd's unescape callback
 * does it (qp_http_unescape: a bad escape and %00 stay as they are);
 * returns the decoded length. */
static size_t unescape(char *s)
{
	char *p;

	for (p = s; *p; p++)
		if (*p == '+')
			*p = ' ';
	return qp_http_unescape(s);
}

static void parse_query(struct fuzz_req *r, char *q)
{
	while (q && *q && r->nargs < MAX_ARGS) {
		char *amp = strchr(q, '&'), *eq;

		if (amp)
			*amp = '\0';
		eq = strchr(q, '=');
		if (eq)
			*eq = '\0';
		unescape(q);
		r->keys[r->nargs] = q;
		r->vals[r->nargs] = eq ? eq + 1 : NULL;
		r->vlens[r->nargs] = eq ? unescape(eq + 1) : 0;
		/* MHD: "?a" is key a with no value; an empty key is skipped */
		if (*q)
			r->nargs++;
		q = amp ? amp + 1 : NULL;
	}
}

static const char *query_get(void *arg, const char *name)
{
	struct fuzz_req *r = arg;
	size_t i;

	for (i = 0; i < r->nargs; i++)
		if (!strcmp(r->keys[i], name))
			return r->vals[i];
	return NULL;
}

static void query_keys(void *arg, void (*fn)(void *, const char *, const char *, size_t), void *arg2)
{
	struct fuzz_req *r = arg;
	size_t i;

	for (i = 0; i < r->nargs; i++)
		fn(arg2, r->keys[i], r->vals[i], r->vlens[i]);
}

/* ---- the daemon ---------------------------------------------------------- */

static struct qprofd daemon_state;
static char report_dir[64];
static char report_sub[160];

/* One exit report on disk, for process 77, so that GET /api/report?pid=77
 * reads files the way it does in the daemon. */
static void write_report(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", report_sub, name);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f)) {
		perror(path);
		abort();
	}
}

static void daemon_init(void)
{
	static char *fmt = "/tmp/qprof-fuzz-http.XXXXXX";

	snprintf(report_dir, sizeof(report_dir), "%s", fmt);
	if (!mkdtemp(report_dir)) {
		perror("mkdtemp");
		abort();
	}
	snprintf(report_sub, sizeof(report_sub), "%s/77-strategy-20261130T120000", report_dir);
	if (mkdir(report_sub, 0700)) {
		perror("mkdir");
		abort();
	}
	write_report("report.json", "{\"pid\": 77}\n");
	write_report("summary.txt", "process 77 (strategy)\n");
	qp_registry_init(&daemon_state.reg, NULL);
	daemon_state.report_dir = report_dir;
	daemon_state.frequency_hz = 99;
	daemon_state.start_ns = 1;
	snprintf(daemon_state.cpu_error, sizeof(daemon_state.cpu_error), "not in the fuzzer");
	qp_stop_init(&daemon_state.stop);
	/* a log stream ends when it has nothing more instead of waiting */
	qp_stop_set(&daemon_state.stop);
}

static void cleanup(void)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/report.json", report_sub);
	unlink(path);
	snprintf(path, sizeof(path), "%s/summary.txt", report_sub);
	unlink(path);
	rmdir(report_sub);
	rmdir(report_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	daemon_init();
	atexit(cleanup);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const methods[] = { "GET", "POST", "DELETE", "PUT", "HEAD", "OPTIONS", "get", "" };
	struct qp_request req = { 0 };
	struct qp_response resp;
	struct fuzz_req *r;
	const uint8_t *nl;
	size_t ulen;
	bool with_headers;
	char *body = NULL, *q;

	if (size < 1)
		return 0;
	r = calloc(1, sizeof(*r));
	if (!r)
		return 0;
	req.method = methods[data[0] & 7];
	req.privileged = data[0] & 8;
	with_headers = data[0] & 16;
	data++;
	size--;
	nl = memchr(data, '\n', size);
	ulen = nl ? (size_t)(nl - data) : size;
	if (ulen > MAX_URL)
		ulen = MAX_URL;
	memcpy(r->url, data, ulen);
	r->url[ulen] = '\0';	/* a NUL inside ends the URL, as in MHD */
	if (nl && with_headers) {
		size_t rest = size - (size_t)(nl + 1 - data);
		size_t used = parse_headers(r, nl + 1, rest);

		if (used) {
			/* the body follows the empty line: make NL point before it */
			nl += used;
		}
		req.header = header_get;
	}
	if (nl) {
		size_t blen = size - (size_t)(nl + 1 - data);

		/* the server hands over at most QP_HTTP_MAX_BODY bytes, flagged */
		req.body_too_large = blen > QP_HTTP_MAX_BODY;
		if (blen > QP_HTTP_MAX_BODY)
			blen = QP_HTTP_MAX_BODY;
		body = malloc(blen + 1);
		if (!body) {
			free(r);
			return 0;
		}
		memcpy(body, nl + 1, blen);
		body[blen] = '\0';
		req.body = body;
		req.body_len = blen;
	}
	q = strchr(r->url, '?');
	if (q)
		*q++ = '\0';
	/* MHD unescapes the path as well */
	unescape(r->url);
	parse_query(r, q);
	req.url = r->url;
	req.query = query_get;
	req.query_keys = query_keys;
	req.arg = r;

	qp_http_route(&daemon_state, &req, &resp);
	if (resp.status < 100 || resp.status > 599)
		abort();	/* every answer carries a real HTTP status */
	if (resp.read) {
		char buf[4096];
		int i;

		/* drain a stream the way MHD does, a bounded number of calls */
		for (i = 0; i < 1000; i++) {
			ssize_t n = resp.read(resp.state, buf, sizeof(buf));

			if (n == QP_STREAM_END || n == QP_STREAM_ERROR || n == 0)
				break;
			if (n < 0 || (size_t)n > sizeof(buf))
				abort();
		}
	}
	if (resp.done)
		resp.done(resp.state);
	free(resp.body);
	free(body);
	free(r);
	return 0;
}
