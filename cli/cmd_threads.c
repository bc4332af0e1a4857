/* cmd_threads.c - `qprof-cli threads`: every thread of a target with its
 * name, state, CPU time and current stack, read by qprofd without stopping
 * the process (GET /api/thread/stacks; --json: GET /api/threads). */
#include "cli.h"

#include <stdio.h>

static const char threads_help[] =
	"Usage: qprof-cli threads [--pid N] [--json]\n"
	"\n"
	"Every thread of a target: its name (as ps shows it), state, CPU time\n"
	"and its stack, kernel frames then user frames, innermost first. qprofd\n"
	"reads them from the kernel without stopping or signalling the process.\n"
	"A thread that was running when read shows the user stack of its last\n"
	"entry into the kernel (an interrupt or a system call).\n"
	"\n"
	"  --pid N   the target (may be left out when there is only one)\n"
	"  --json    the JSON of GET /api/threads\n";

int cmd_threads(struct cli_ctx *ctx, int argc, char **argv)
{
	const char *pid_arg;
	struct http_response resp;
	char target[256];
	int rc;

	rc = cli_pid_only_opts(ctx, argc, argv, threads_help, &pid_arg);
	if (rc >= 0)
		return rc;
	snprintf(target, sizeof(target), "%s", ctx->json ? "/api/threads" : "/api/thread/stacks");
	rc = cli_query_pid_seconds(ctx, pid_arg, NULL, target, sizeof(target), NULL);
	if (rc)
		return rc;
	rc = cli_api_call(ctx, "GET", target, NULL, CLI_HTTP_TIMEOUT_S, &resp);
	if (rc)
		return rc;
	cli_print_body(&resp);
	http_response_free(&resp);
	if (fflush(stdout))
		return cli_fail(ctx, "cannot write to standard output");
	return CLI_OK;
}
