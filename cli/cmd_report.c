/* cmd_report.c - `qprof-cli report`: the report qprofd wrote when a target
 * exited. With --pid N: GET /api/report?pid=N, the summary as text (with
 * --json: report.json, through format=json). Without --pid: the list of
 * reports the daemon knows, as a table (or its JSON). */
#include "cli.h"
#include "table.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char report_help[] =
	"Usage: qprof-cli report [--pid N] [--json]\n"
	"\n"
	"When a target exits, qprofd writes a report into a directory of its own\n"
	"under its report directory (qprofd --report-dir, default\n"
	"/var/lib/qprof/reports): summary.txt, report.json, scopes.json,\n"
	"cpu.folded and cpu.svg. The summary has the scopes by total time, by p99\n"
	"and by count, and the top functions by self and by total samples.\n"
	"\n"
	"  --pid N   print the summary of process N's report\n"
	"  --json    with --pid: report.json; without: the list as JSON\n"
	"\n"
	"Without --pid: the reports qprofd has written (pid, name, exit time,\n"
	"directory).\n";

static void fmt_ms(char *buf, size_t len, uint64_t ms)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;

	if (!ms || !localtime_r(&s, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, len, "-");
}

static int print_list(const struct cli_ctx *ctx, const struct http_response *resp)
{
	json_t *root = cli_api_json(ctx, resp), *arr;
	static const struct table_col cols[] = {
		{ "PID", true }, { "COMM", false }, { "EXITED", false }, { "DIRECTORY", false },
	};
	struct table t;
	size_t i;
	int rc;
	char when[64];

	if (!root)
		return CLI_FAIL;
	arr = json_object_get(root, "reports");
	if (!json_is_array(arr)) {
		json_decref(root);
		return cli_fail(ctx, "qprofd's answer has no reports array");
	}
	if (!json_array_size(arr)) {
		printf("no reports yet (one is written when a target exits)\n");
		json_decref(root);
		return CLI_OK;
	}
	table_init(&t, cols, QP_ARRAY_SIZE(cols));
	for (i = 0; i < json_array_size(arr); i++) {
		const json_t *r = json_array_get(arr, i);
		uint64_t pid = 0, ms = 0;

		cli_json_u64(r, "pid", &pid);
		cli_json_u64(r, "exited_ms", &ms);
		fmt_ms(when, sizeof(when), ms);
		table_row(&t);
		table_cellf(&t, "%llu", (unsigned long long)pid);
		table_cell(&t, cli_json_str(r, "comm"));
		table_cell(&t, when);
		table_cell(&t, cli_json_str(r, "dir"));
	}
	rc = table_print(&t, stdout) ? cli_fail(ctx, "out of memory") : CLI_OK;
	table_free(&t);
	json_decref(root);
	return rc;
}

int cmd_report(struct cli_ctx *ctx, int argc, char **argv)
{
	const char *pid_arg;
	struct http_response resp;
	char target[256];
	int rc;

	rc = cli_pid_only_opts(ctx, argc, argv, report_help, &pid_arg);
	if (rc >= 0)
		return rc;
	snprintf(target, sizeof(target), "/api/report");
	rc = cli_query_pid_seconds(ctx, pid_arg, NULL, target, sizeof(target), NULL);
	if (rc)
		return rc;
	if (pid_arg && ctx->json && http_add_query(target, sizeof(target), "format", "json"))
		return cli_fail(ctx, "request target too long");
	rc = cli_api_call(ctx, "GET", target, NULL, CLI_HTTP_TIMEOUT_S, &resp);
	if (rc)
		return rc;
	if (pid_arg || ctx->json) {
		cli_print_body(&resp);
		rc = CLI_OK;
	} else {
		rc = print_list(ctx, &resp);
	}
	http_response_free(&resp);
	if (!rc && fflush(stdout))
		rc = cli_fail(ctx, "cannot write to standard output");
	return rc;
}
