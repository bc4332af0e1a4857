/* common.c - the helpers every qprof-cli command uses: one wording for usage
 * errors and failures, getopt_long with the options all commands share,
 * checked parsing of --pid and --seconds, and the daemon call that turns a
 * refused connection, a broken answer or the daemon's {"error": ...} into a
 * message and exit code 1. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *cli_socket(const struct cli_ctx *ctx)
{
	const char *env;

	if (ctx->socket)
		return ctx->socket;
	env = getenv("QPROF_SOCKET");
	return env && *env ? env : CLI_DEFAULT_SOCKET;
}

/* --json: one object {"error": MSG} (and "http_status" for the daemon's
 * errors) on stdout, where a script reads the answer, as bpftool -j does.
 * MSG is escaped by jansson; bytes that are not UTF-8 become '?'. */
static void json_error(const char *msg, int http_status)
{
	json_t *o, *m;
	char *clean = NULL;

	m = json_string(msg);
	if (!m) {
		size_t i, n = strlen(msg);

		clean = malloc(n + 1);
		if (clean) {
			for (i = 0; i < n; i++)
				clean[i] = (unsigned char)msg[i] >= 0x80 ? '?' : msg[i];
			clean[n] = '\0';
			m = json_string(clean);
		}
	}
	o = json_object();
	/* json_object_set_new takes M, also when it fails */
	if (o && m && !json_object_set_new(o, "error", m) &&
	    (!http_status || !json_object_set_new(o, "http_status", json_integer(http_status)))) {
		json_dumpf(o, stdout, JSON_COMPACT);
		fputc('\n', stdout);
	} else {
		if (!o)
			json_decref(m);
		fputs("{\"error\":\"out of memory\"}\n", stdout);
	}
	fflush(stdout);
	json_decref(o);
	free(clean);
}

int cli_usage_error(const struct cli_ctx *ctx, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ctx->json) {
		json_error(msg, 0);
		return CLI_USAGE;
	}
	fprintf(stderr, "%s%s%s: %s", CLI_PROG, ctx->cmd ? " " : "", ctx->cmd ? ctx->cmd : "", msg);
	fprintf(stderr, "\nTry '%s%s%s --help'.\n", CLI_PROG, ctx->cmd ? " " : "",
		ctx->cmd ? ctx->cmd : "");
	return CLI_USAGE;
}

int cli_fail(const struct cli_ctx *ctx, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ctx && ctx->json)
		json_error(msg, 0);
	else
		fprintf(stderr, "%s: %s\n", CLI_PROG, msg);
	return CLI_FAIL;
}

int cli_getopt(int argc, char **argv, const struct option *opts)
{
	/* ':' first: a missing value comes back as ':', not '?' */
	return getopt_long(argc, argv, ":ho:", opts, NULL);
}

static const char *opt_name(const struct option *opts, int val)
{
	for (; opts->name; opts++)
		if (opts->val == val)
			return opts->name;
	return NULL;
}

int cli_common_opt(struct cli_ctx *ctx, int c, char **argv, const struct option *opts,
		   const char *help)
{
	const char *name;

	switch (c) {
	case CLI_OPT_HELP:
		fputs(help, stdout);
		return CLI_OK;
	case CLI_OPT_JSON:
		ctx->json = true;
		return -1;
	case CLI_OPT_SOCKET:
		if (!*optarg)
			return cli_usage_error(ctx, "--socket needs a path");
		ctx->socket = optarg;
		return -1;
	case ':':
		name = opt_name(opts, optopt);
		if (name)
			return cli_usage_error(ctx, "option '--%s' needs a value", name);
		return cli_usage_error(ctx, "option '%s' needs a value", argv[optind - 1]);
	case '?':
		if (optopt && optopt < 0x100)
			return cli_usage_error(ctx, "unknown option '-%c'", optopt);
		return cli_usage_error(ctx, "unknown option '%s'", argv[optind - 1]);
	default:
		return cli_usage_error(ctx, "unexpected option '%s'", argv[optind - 1]);
	}
}

int cli_no_operands(const struct cli_ctx *ctx, int argc, char **argv)
{
	if (optind < argc)
		return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind]);
	return 0;
}

int cli_next_opt(struct cli_ctx *ctx, int argc, char **argv, const struct option *opts, const char *help,
		 int *rc)
{
	int c;

	while ((c = cli_getopt(argc, argv, opts)) != -1) {
		if (c != CLI_OPT_HELP && c != CLI_OPT_JSON && c != CLI_OPT_SOCKET && c != ':' && c != '?')
			return c;
		*rc = cli_common_opt(ctx, c, argv, opts, help);
		if (*rc >= 0)
			return 0;
	}
	*rc = cli_no_operands(ctx, argc, argv);
	if (!*rc)
		*rc = -1;
	return 0;
}

int cli_parse_pid(const struct cli_ctx *ctx, const char *opt, const char *s, int64_t *pid)
{
	if (qp_parse_i64(s, 1, CLI_PID_MAX, pid))
		return cli_usage_error(ctx, "invalid %s '%s': a process id is a whole number "
				       "from 1 to %d", opt, s, CLI_PID_MAX);
	return 0;
}

int cli_parse_seconds(const struct cli_ctx *ctx, const char *s, int64_t *sec)
{
	if (qp_parse_i64(s, 1, CLI_SECONDS_MAX, sec))
		return cli_usage_error(ctx, "invalid --seconds '%s': a whole number of seconds "
				       "from 1 to %d", s, CLI_SECONDS_MAX);
	return 0;
}

int cli_query_pid_seconds(const struct cli_ctx *ctx, const char *pid_arg, const char *sec_arg,
			  char *target, size_t len, int64_t *sec)
{
	char num[24];
	int64_t pid = 0, s = 0;
	int rc;

	if (pid_arg && (rc = cli_parse_pid(ctx, "--pid", pid_arg, &pid)))
		return rc;
	if (sec_arg && (rc = cli_parse_seconds(ctx, sec_arg, &s)))
		return rc;
	/* the values are checked numbers; the query is encoded all the same */
	if (pid_arg) {
		snprintf(num, sizeof(num), "%lld", (long long)pid);
		if (http_add_query(target, len, "pid", num))
			return cli_fail(ctx, "request target too long");
	}
	if (sec_arg) {
		snprintf(num, sizeof(num), "%lld", (long long)s);
		if (http_add_query(target, len, "seconds", num))
			return cli_fail(ctx, "request target too long");
	}
	if (sec)
		*sec = s;
	return 0;
}

/* The daemon's text may hold anything: keep control characters off the
 * terminal. */
static void print_clean(FILE *f, const char *s, size_t max)
{
	size_t i;

	for (i = 0; s[i] && i < max; i++)
		fputc((unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i], f);
}

int cli_call_quiet(const char *sock, const char *method, const char *target, const char *body,
		   int timeout_s, struct http_response *resp, struct cli_call_err *e)
{
	char why[256];
	json_t *root = NULL;
	const char *msg = NULL;
	int rc;

	e->status = 0;
	e->daemon_said = false;
	e->text[0] = '\0';
	rc = http_request(sock, method, target, "application/json", body, body ? strlen(body) : 0,
			  timeout_s, resp, why, sizeof(why));
	if (rc == HTTP_ERR_CONNECT) {
		snprintf(e->text, sizeof(e->text), "cannot connect to qprofd at %s: %s (is qprofd running?)",
			 sock, why);
		return CLI_FAIL;
	}
	if (rc) {
		snprintf(e->text, sizeof(e->text), "bad answer from qprofd at %s: %s", sock, why);
		return CLI_FAIL;
	}
	if (resp->status >= 200 && resp->status <= 299)
		return 0;
	e->status = resp->status;
	if (resp->body && resp->body_len)
		root = json_loadb(resp->body, resp->body_len, 0, NULL);
	if (root)
		msg = json_string_value(json_object_get(root, "error"));
	e->daemon_said = msg != NULL;
	if (msg)
		snprintf(e->text, sizeof(e->text), "%.4096s", msg);
	else
		snprintf(e->text, sizeof(e->text), "qprofd answered HTTP %d%s%s", resp->status,
			 resp->reason[0] ? " " : "", resp->reason);
	json_decref(root);
	http_response_free(resp);
	return CLI_FAIL;
}

/* qprofd's answer while its CPU sampler loads (in the second or so after
 * it starts): worth waiting for, with a word on standard error. */
#define CPU_LOADING "the CPU sampler is still loading"
#define CPU_LOADING_WAIT_MS 20000

int cli_api_call(const struct cli_ctx *ctx, const char *method, const char *target,
		 const char *body, int timeout_s, struct http_response *resp)
{
	struct cli_call_err e;
	int waited = 0;

	while (cli_call_quiet(cli_socket(ctx), method, target, body, timeout_s, resp, &e)) {
		if (e.status != 503 || !e.daemon_said || !strstr(e.text, CPU_LOADING) ||
		    waited >= CPU_LOADING_WAIT_MS)
			return cli_call_failed(ctx, &e);
		if (!waited)
			fprintf(stderr, "qprof-cli: qprofd's CPU sampler is still loading: waiting for it...\n");
		usleep(200 * 1000);
		waited += 200;
	}
	return 0;
}

int cli_call_failed(const struct cli_ctx *ctx, const struct cli_call_err *e0)
{
	struct cli_call_err e = *e0;

	if (!e.status)
		return cli_fail(ctx, "%s", e.text);
	if (ctx->json) {
		json_error(e.text, e.status);
	} else {
		fprintf(stderr, "%s: ", CLI_PROG);
		print_clean(stderr, e.text, sizeof(e.text));
		if (e.daemon_said)
			fprintf(stderr, " (HTTP %d)", e.status);
		fputc('\n', stderr);
	}
	return CLI_FAIL;
}

json_t *cli_api_json(const struct cli_ctx *ctx, const struct http_response *resp)
{
	json_error_t jerr;
	json_t *root;

	root = json_loadb(resp->body, resp->body_len, 0, &jerr);
	if (!root) {
		cli_fail(ctx, "qprofd sent invalid JSON: %s (line %d)", jerr.text, jerr.line);
		return NULL;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		cli_fail(ctx, "qprofd sent JSON that is not an object");
		return NULL;
	}
	return root;
}

void cli_print_body(const struct http_response *resp)
{
	fwrite(resp->body, 1, resp->body_len, stdout);
	if (!resp->body_len || resp->body[resp->body_len - 1] != '\n')
		fputc('\n', stdout);
}

int cli_pid_only_opts(struct cli_ctx *ctx, int argc, char **argv, const char *help,
		      const char **pid_arg)
{
	enum { OPT_PID = CLI_OPT_CMD_BASE };
	static const struct option opts[] = {
		CLI_COMMON_OPTS,
		{ "pid", required_argument, NULL, OPT_PID },
		{ 0 },
	};
	int c, rc;

	*pid_arg = NULL;
	while ((c = cli_next_opt(ctx, argc, argv, opts, help, &rc)) > 0)
		if (c == OPT_PID)
			*pid_arg = optarg;
	return rc;
}

int cli_get_and_print(const struct cli_ctx *ctx, const char *target, int timeout_s,
		      int (*print)(const struct cli_ctx *ctx, const json_t *root))
{
	struct http_response resp;
	json_t *root;
	int rc;

	rc = cli_api_call(ctx, "GET", target, NULL, timeout_s, &resp);
	if (rc)
		return rc;
	if (ctx->json) {
		cli_print_body(&resp);
		http_response_free(&resp);
		return CLI_OK;
	}
	root = cli_api_json(ctx, &resp);
	http_response_free(&resp);
	if (!root)
		return CLI_FAIL;
	rc = print(ctx, root);
	json_decref(root);
	return rc;
}

bool cli_json_double(const json_t *obj, const char *key, double *out)
{
	const json_t *v = json_object_get(obj, key);

	if (!json_is_number(v))
		return false;
	*out = json_number_value(v);
	return true;
}

bool cli_json_u64(const json_t *obj, const char *key, uint64_t *out)
{
	const json_t *v = json_object_get(obj, key);

	/* jansson integers are signed 64-bit: larger ones arrive as reals */
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
		return true;
	}
	if (json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) < 1.8446744073709552e19) {
		*out = (uint64_t)json_real_value(v);
		return true;
	}
	return false;
}

const char *cli_json_str(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* See cli.h. */
int cli_only_target(struct cli_ctx *ctx, int64_t *pid)
{
	struct http_response resp;
	const json_t *arr, *t;
	json_t *root;
	uint64_t v = 0;
	size_t n;
	int rc;

	rc = cli_api_call(ctx, "GET", "/api/status", NULL, CLI_HTTP_TIMEOUT_S, &resp);
	if (rc)
		return rc;
	root = cli_api_json(ctx, &resp);
	http_response_free(&resp);
	if (!root)
		return CLI_FAIL;
	arr = json_object_get(root, "targets");
	n = json_is_array(arr) ? json_array_size(arr) : 0;
	t = n == 1 ? json_array_get(arr, 0) : NULL;
	if (!t || !cli_json_u64(t, "pid", &v) || !v) {
		json_decref(root);
		return cli_fail(ctx, "qprofd has %zu targets: say which with --pid N", n);
	}
	json_decref(root);
	*pid = (int64_t)v;
	return 0;
}
