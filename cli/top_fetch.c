/* top_fetch.c - `qprof-cli top` talking to the daemon: one round is
 * GET /api/status, then GET /api/cpu/folded and GET /api/scopes of the next
 * interval at the same time (two threads); errors go into the round, not to
 * stderr, so that the live view can show them. */
#include "cli.h"
#include "top.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A GET whose failure is a message in ERR (control characters as '?'), so
 * that it can be shown in the live view or printed by the main thread. */
static int fetch(const char *sock, const char *target, int timeout_s, struct http_response *resp,
		 char *err, size_t errlen)
{
	struct cli_call_err e;
	size_t i, l;

	if (!cli_call_quiet(sock, "GET", target, NULL, timeout_s, resp, &e))
		return 0;
	l = strlen(e.text);	/* at most 4096 + the suffix: it fits */
	if (e.daemon_said)
		snprintf(e.text + l, sizeof(e.text) - l, " (HTTP %d)", e.status);
	for (i = 0; i + 1 < errlen && e.text[i]; i++)
		err[i] = (unsigned char)e.text[i] < 0x20 || e.text[i] == 0x7f ? '?' : e.text[i];
	if (errlen)
		err[i] = '\0';
	return CLI_FAIL;
}

static json_t *parse_object(const struct http_response *resp, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root = json_loadb(resp->body, resp->body_len, 0, &jerr);

	if (!root) {
		snprintf(err, errlen, "qprofd sent invalid JSON: %s (line %d)", jerr.text, jerr.line);
		return NULL;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		snprintf(err, errlen, "qprofd sent JSON that is not an object");
		return NULL;
	}
	return root;
}

struct get_job {
	const char *sock;
	char target[128];
	int timeout_s;
	struct http_response resp;
	char err[512];
	int rc;
};

static void *get_thread(void *arg)
{
	struct get_job *j = arg;

	j->rc = fetch(j->sock, j->target, j->timeout_s, &j->resp, j->err, sizeof(j->err));
	return NULL;
}

static void set_query(struct get_job *j, const char *route, int64_t pid, int interval)
{
	char num[24];

	snprintf(j->target, sizeof(j->target), "%s", route);
	if (pid) {
		snprintf(num, sizeof(num), "%lld", (long long)pid);
		http_add_query(j->target, sizeof(j->target), "pid", num);
	}
	snprintf(num, sizeof(num), "%d", interval);
	http_add_query(j->target, sizeof(j->target), "seconds", num);
}

struct round *top_collect(const char *sock, int64_t pid, int interval)
{
	struct round *r = calloc(1, sizeof(*r));
	struct get_job fj = { .sock = sock }, sj = { .sock = sock };
	struct http_response resp;
	pthread_t th;
	bool threaded;
	json_t *root;

	if (!r)
		return NULL;
	r->pid = pid;
	r->interval = interval;
	if (fetch(sock, "/api/status", CLI_HTTP_TIMEOUT_S, &resp, r->err, sizeof(r->err)))
		return r;
	root = parse_object(&resp, r->err, sizeof(r->err));
	http_response_free(&resp);
	if (!root)
		return r;
	if (top_take_status(r, root))
		snprintf(r->err, sizeof(r->err), "out of memory");
	json_decref(root);
	if (r->err[0])
		return r;

	fj.timeout_s = sj.timeout_s = interval + CLI_HTTP_TIMEOUT_S;
	set_query(&fj, "/api/cpu/folded", pid, interval);
	set_query(&sj, "/api/scopes", pid, interval);
	threaded = pthread_create(&th, NULL, get_thread, &fj) == 0;
	get_thread(&sj);
	if (threaded)
		pthread_join(th, NULL);
	else
		get_thread(&fj);	/* one after the other: still about one interval */

	if (fj.rc || sj.rc) {
		snprintf(r->err, sizeof(r->err), "%s", fj.rc ? fj.err : sj.err);
	} else if (top_take_folded(r, fj.resp.body, fj.resp.body_len)) {
		snprintf(r->err, sizeof(r->err), "out of memory");
	} else if ((root = parse_object(&sj.resp, r->err, sizeof(r->err)))) {
		int rc = top_take_scopes(r, root);

		if (rc == -EPROTO)
			snprintf(r->err, sizeof(r->err), "qprofd's answer has no \"scopes\" array");
		else if (rc)
			snprintf(r->err, sizeof(r->err), "out of memory");
		json_decref(root);
	}
	r->filled = !r->err[0];
	if (!fj.rc)
		http_response_free(&fj.resp);
	if (!sj.rc)
		http_response_free(&sj.resp);
	return r;
}
