/* cmd_targets.c - `qprof-cli attach` and `detach`: add a target (a running
 * process or an executable) with POST /api/targets, its body built by the
 * JSON writer from checked options (--usdt PROV:NAME and --span
 * NAME=PROV:BEGIN,PROV:END are validated here, strictly, so that a typo is
 * reported before anything is attached), and remove one with
 * DELETE /api/targets/PID. */
#include "cli.h"
#include "common/json_writer.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const char attach_help[] =
	"Usage: qprof-cli attach (--pid N | --binary PATH) [--usdt PROV:NAME]...\n"
	"                        [--span NAME=PROV:BEGIN,PROV:END]... [--heap]\n"
	"                        [--collector ring|bpf] [--json]\n"
	"\n"
	"Start profiling process N, or every process (present and future) that runs\n"
	"the executable or maps the library PATH. A relative PATH is made absolute.\n"
	"\n"
	"  --collector ring|bpf  how its scopes are timed (default: qprofd's, the ring:\n"
	"                      0.03-0.2 us a scope here; bpf: a uprobe at each marker,\n"
	"                      ~40x dearer, 2-7 us a scope); markers of ABI 1 and\n"
	"                      other USDT probes are always on bpf\n"
	"  --usdt PROV:NAME    also count the USDT probe PROV:NAME (repeatable)\n"
	"  --heap              also profile its heap (--pid only, a target already or\n"
	"                      not; see qprof-cli heap)\n"
	"  --span NAME=PROV:BEGIN,PROV:END\n"
	"                      measure from probe PROV:BEGIN to probe PROV:END like a\n"
	"                      scope called NAME (repeatable), e.g.\n"
	"                      --span gc=python:gc__start,python:gc__done\n"
	"Providers and probe names are letters, digits and '_'; a span NAME also\n"
	"allows '.' and '-'.\n";

static const char detach_help[] =
	"Usage: qprof-cli detach (--pid N | --binary PATH) [--json]\n"
	"\n"
	"Stop profiling process N and drop its data, or stop profiling every\n"
	"process that runs PATH (a --binary target) and drop theirs. A process\n"
	"attached by --pid that a --binary target also covers stays a target of\n"
	"that binary: detach it a second time to drop it.\n";

#define MAX_PROBES 64

struct span {
	const char *arg;	/* the option value, for messages */
	char name[128], begin[256], end[256];
};

static bool ident_char(char c, bool span_name)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || (span_name && (c == '.' || c == '-'));
}

/* s[0, n) is PROV:NAME with two non-empty identifiers. */
static bool valid_probe(const char *s, size_t n)
{
	size_t i, colon = 0, ncolon = 0;

	for (i = 0; i < n; i++) {
		if (s[i] == ':') {
			colon = i;
			ncolon++;
		} else if (!ident_char(s[i], false)) {
			return false;
		}
	}
	return ncolon == 1 && colon > 0 && colon + 1 < n && n < 256;
}

/* NAME=PROV:BEGIN,PROV:END */
static bool parse_span(const char *arg, struct span *sp)
{
	const char *eq = strchr(arg, '='), *comma, *p;
	size_t n;

	sp->arg = arg;
	if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof(sp->name))
		return false;
	for (p = arg; p < eq; p++)
		if (!ident_char(*p, true))
			return false;
	comma = strchr(eq + 1, ',');
	if (!comma || strchr(comma + 1, ','))
		return false;
	if (!valid_probe(eq + 1, (size_t)(comma - eq - 1)) ||
	    !valid_probe(comma + 1, strlen(comma + 1)))
		return false;
	n = (size_t)(eq - arg);
	memcpy(sp->name, arg, n);
	sp->name[n] = '\0';
	n = (size_t)(comma - eq - 1);
	memcpy(sp->begin, eq + 1, n);
	sp->begin[n] = '\0';
	snprintf(sp->end, sizeof(sp->end), "%s", comma + 1);
	return true;
}

static char *attach_body(int64_t pid, const char *binary, const char *const *usdt, size_t nusdt,
			 const struct span *spans, size_t nspans, bool heap, const char *collector)
{
	struct qp_json j;
	size_t i;

	qp_json_init(&j);
	qp_json_obj_begin(&j);
	if (binary)
		qp_json_kv_str(&j, "binary", binary);
	else
		qp_json_kv_i64(&j, "pid", pid);
	if (heap)
		qp_json_kv_bool(&j, "heap", true);
	if (collector)
		qp_json_kv_str(&j, "collector", collector);
	if (nusdt) {
		qp_json_key(&j, "usdt");
		qp_json_arr_begin(&j);
		for (i = 0; i < nusdt; i++)
			qp_json_str(&j, usdt[i]);
		qp_json_arr_end(&j);
	}
	if (nspans) {
		qp_json_key(&j, "spans");
		qp_json_arr_begin(&j);
		for (i = 0; i < nspans; i++) {
			qp_json_obj_begin(&j);
			qp_json_kv_str(&j, "name", spans[i].name);
			qp_json_kv_str(&j, "begin", spans[i].begin);
			qp_json_kv_str(&j, "end", spans[i].end);
			qp_json_obj_end(&j);
		}
		qp_json_arr_end(&j);
	}
	qp_json_obj_end(&j);
	return qp_json_finish(&j, NULL);
}

static int print_target(const struct cli_ctx *ctx, const struct http_response *resp)
{
	json_t *root = cli_api_json(ctx, resp), *arr;
	int rc;

	if (!root)
		return CLI_FAIL;
	/* the answer is the target; accept {"target": {...}} as well */
	if (json_is_object(json_object_get(root, "target")))
		arr = json_pack("[O]", json_object_get(root, "target"));
	else
		arr = json_pack("[O]", root);
	rc = arr ? cli_print_targets(ctx, arr) : cli_fail(ctx, "out of memory");
	json_decref(arr);
	json_decref(root);
	return rc;
}

int cmd_attach(struct cli_ctx *ctx, int argc, char **argv)
{
	enum { OPT_PID = CLI_OPT_CMD_BASE, OPT_BINARY, OPT_USDT, OPT_SPAN, OPT_HEAP, OPT_COLLECTOR };
	static const struct option opts[] = {
		CLI_COMMON_OPTS,
		{ "pid", required_argument, NULL, OPT_PID },
		{ "binary", required_argument, NULL, OPT_BINARY },
		{ "heap", no_argument, NULL, OPT_HEAP },
		{ "collector", required_argument, NULL, OPT_COLLECTOR },
		{ "usdt", required_argument, NULL, OPT_USDT },
		{ "span", required_argument, NULL, OPT_SPAN },
		{ 0 },
	};
	const char *usdt[MAX_PROBES];
	struct span *spans = NULL;
	size_t nusdt = 0, nspans = 0;
	const char *binary = NULL, *collector = NULL;
	char *abs = NULL, *body = NULL;
	struct http_response resp;
	int64_t pid = 0;
	bool have_pid = false, heap = false;
	int c, rc = -1;

	while (rc < 0 && (c = cli_getopt(argc, argv, opts)) != -1) {
		switch (c) {
		case OPT_PID:
			if (have_pid) {
				rc = cli_usage_error(ctx, "--pid given twice");
				break;
			}
			have_pid = true;
			if (cli_parse_pid(ctx, "--pid", optarg, &pid))
				rc = CLI_USAGE;
			break;
		case OPT_BINARY:
			if (binary) {
				rc = cli_usage_error(ctx, "--binary given twice");
				break;
			}
			binary = optarg;
			if (!*binary)
				rc = cli_usage_error(ctx, "--binary needs a path");
			break;
		case OPT_HEAP:
			heap = true;
			break;
		case OPT_COLLECTOR:
			if (strcmp(optarg, "ring") && strcmp(optarg, "bpf"))
				rc = cli_usage_error(ctx, "--collector wants ring or bpf, got '%s'", optarg);
			else
				collector = optarg;
			break;
		case OPT_USDT:
			if (!valid_probe(optarg, strlen(optarg)))
				rc = cli_usage_error(ctx, "invalid --usdt '%s': expected PROVIDER:NAME",
						     optarg);
			else if (nusdt == MAX_PROBES)
				rc = cli_usage_error(ctx, "at most %d --usdt", MAX_PROBES);
			else
				usdt[nusdt++] = optarg;
			break;
		case OPT_SPAN: {
			struct span *ns;

			if (nspans == MAX_PROBES) {
				rc = cli_usage_error(ctx, "at most %d --span", MAX_PROBES);
				break;
			}
			ns = realloc(spans, (nspans + 1) * sizeof(*spans));
			if (!ns) {
				rc = cli_fail(ctx, "out of memory");
				break;
			}
			spans = ns;
			if (!parse_span(optarg, &spans[nspans]))
				rc = cli_usage_error(ctx, "invalid --span '%s': expected "
						     "NAME=PROV:BEGIN,PROV:END", optarg);
			else
				nspans++;
			break;
		}
		default:
			rc = cli_common_opt(ctx, c, argv, opts, attach_help);
		}
	}
	if (rc >= 0)
		goto out;
	rc = cli_no_operands(ctx, argc, argv);
	if (rc)
		goto out;
	if (have_pid == !!binary) {
		rc = cli_usage_error(ctx, have_pid ? "give --pid or --binary, not both"
						   : "missing --pid N or --binary PATH");
		goto out;
	}
	if (binary && binary[0] != '/') {
		/* the daemon has another working directory */
		abs = realpath(binary, NULL);
		if (!abs) {
			rc = cli_fail(ctx, "cannot resolve %s: %s", binary, strerror(errno));
			goto out;
		}
		binary = abs;
	}
	body = attach_body(pid, binary, usdt, nusdt, spans, nspans, heap, collector);
	if (!body) {
		rc = cli_fail(ctx, "out of memory");
		goto out;
	}
	rc = cli_api_call(ctx, "POST", "/api/targets", body, CLI_HTTP_TIMEOUT_S, &resp);
	if (rc)
		goto out;
	if (ctx->json)
		cli_print_body(&resp);
	else
		rc = print_target(ctx, &resp);
	http_response_free(&resp);
out:
	free(body);
	free(abs);
	free(spans);
	return rc;
}

int cmd_detach(struct cli_ctx *ctx, int argc, char **argv)
{
	enum { OPT_PID = CLI_OPT_CMD_BASE, OPT_BINARY };
	static const struct option opts[] = {
		CLI_COMMON_OPTS,
		{ "pid", required_argument, NULL, OPT_PID },
		{ "binary", required_argument, NULL, OPT_BINARY },
		{ 0 },
	};
	struct http_response resp;
	const char *pid_arg = NULL, *binary = NULL;
	char target[4200], *abs = NULL;
	const char *state;
	json_t *root;
	int64_t pid = 0;
	int c, rc;

	while ((c = cli_next_opt(ctx, argc, argv, opts, detach_help, &rc)) > 0) {
		if (c == OPT_PID || c == OPT_BINARY) {
			if (pid_arg || binary)
				return cli_usage_error(ctx, "give one --pid or one --binary");
			if (!*optarg)
				return cli_usage_error(ctx, "%s needs a value", c == OPT_PID ? "--pid" : "--binary");
			*(c == OPT_PID ? &pid_arg : &binary) = optarg;
			continue;
		}
	}
	if (rc >= 0)
		return rc;
	if (!pid_arg && !binary)
		return cli_usage_error(ctx, "missing --pid N or --binary PATH");
	if (pid_arg) {
		rc = cli_parse_pid(ctx, "--pid", pid_arg, &pid);
		if (rc)
			return rc;
		snprintf(target, sizeof(target), "/api/targets/%lld", (long long)pid);
	} else {
		if (binary[0] != '/' && (abs = realpath(binary, NULL)))
			binary = abs;
		snprintf(target, sizeof(target), "/api/targets");
		if (http_add_query(target, sizeof(target), "binary", binary)) {
			free(abs);
			return cli_usage_error(ctx, "--binary: path too long");
		}
	}
	rc = cli_api_call(ctx, "DELETE", target, NULL, CLI_HTTP_TIMEOUT_S, &resp);
	if (rc) {
		free(abs);
		return rc;
	}
	if (ctx->json) {
		cli_print_body(&resp);
	} else if (binary) {
		printf("detached binary %s\n", binary);
	} else {
		root = json_loadb(resp.body, resp.body_len, 0, NULL);
		state = root ? cli_json_str(root, "state") : NULL;
		if (state && !strcmp(state, "kept_by_binary"))
			printf("pid %lld: no longer attached by --pid; still a target of its --binary\n",
			       (long long)pid);
		else
			printf("detached pid %lld\n", (long long)pid);
		json_decref(root);
	}
	free(abs);
	http_response_free(&resp);
	return CLI_OK;
}
