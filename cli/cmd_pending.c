/* cmd_pending.c - the commands DESIGN.md promises that this version does not
 * have yet (values, logs, top): a clear message and
 * exit code 2, so that scripts can tell them from a failure of the daemon. */
#include "cli.h"

int cmd_pending(struct cli_ctx *ctx, int argc, char **argv)
{
	fprintf(stderr, "%s: '%s' is not available yet in this version\n", CLI_PROG, ctx->cmd);
	return CLI_USAGE;
}
