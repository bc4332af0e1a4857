/* main.c - qprof-cli's entry point: the global options (--socket, --json,
 * --help, --version), then dispatch through the command table, bpftool
 * style. Each command parses the rest of argv itself and returns the exit
 * code: 0 done, 1 failed, 2 bad usage. */
#include "cli.h"

#include <string.h>

#ifndef QPROF_VERSION
#define QPROF_VERSION "0.0.0"
#endif

static const struct cli_cmd commands[] = {
	{ "status", cmd_status, "daemon version, uptime, targets and counters" },
	{ "attach", cmd_attach, "start profiling a process or an executable" },
	{ "detach", cmd_detach, "stop profiling a process" },
	{ "scopes", cmd_scopes, "latency of the marked scopes, as a call tree" },
	{ "probes", cmd_probes, "list the probes of a binary (no daemon needed)" },
	{ "folded", cmd_folded, "CPU samples as folded stacks" },
	{ "flamegraph", cmd_flamegraph, "CPU samples as an SVG flame graph (-o FILE.svg)" },
	{ "pprof", cmd_pprof, "CPU samples as a gzipped pprof profile (-o FILE.pb.gz)" },
	{ "report", cmd_report, "the report written when a target exited" },
	{ "values", cmd_values, "QPROF_VALUE statistics per site" },
	{ "logs", cmd_logs, "QPROF_LOG messages (-f to follow)" },
	{ "top", cmd_top, "live view: hottest functions and scopes" },
	{ "heap", cmd_heap, "the heap: in use, allocated or growth, by stack (--pid N)" },
	{ "offcpu", cmd_offcpu, "where threads waited off the CPU, in ns (folded, -o X.svg or X.pb.gz)" },
	{ "slow", cmd_slow, "the slowest instances of a scope and why (off-CPU, samples)" },
	{ "trace", cmd_trace, "a timeline of scope instances, marks, values, logs (-o FILE.json)" },
	{ "threads", cmd_threads, "every thread of a target and its stack, without stopping it" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f,
		"Usage: %s [--socket PATH] [--json] COMMAND [ARGS]\n"
		"       %s COMMAND --help\n"
		"\n"
		"Talks to qprofd, the qprof profiling daemon, over its unix socket.\n"
		"\n"
		"Commands:\n",
		CLI_PROG, CLI_PROG);
	for (i = 0; i < QP_ARRAY_SIZE(commands); i++)
		if (commands[i].summary)
			fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].summary);
	fprintf(f,
		"\n"
		"Options:\n"
		"  --socket PATH  qprofd's socket (default: $QPROF_SOCKET, else %s)\n"
		"  --json         print JSON instead of tables\n"
		"  -h, --help     this help\n"
		"  --version      print the version\n"
		"\n"
		"Exit status: 0 done, 1 failed (daemon unreachable or error, unreadable\n"
		"file), 2 bad usage or a command this version does not have.\n",
		CLI_DEFAULT_SOCKET);
}

int main(int argc, char **argv)
{
	enum { OPT_VERSION = CLI_OPT_CMD_BASE };
	static const struct option opts[] = {
		CLI_COMMON_OPTS,
		{ "version", no_argument, NULL, OPT_VERSION },
		{ 0 },
	};
	struct cli_ctx ctx = { 0 };
	const char *name;
	size_t i;
	int c, rc;

	opterr = 0;
	/* '+': stop at the command name; what follows belongs to the command */
	while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		switch (c) {
		case CLI_OPT_HELP:
			usage(stdout);
			return CLI_OK;
		case OPT_VERSION:
			printf("%s %s\n", CLI_PROG, QPROF_VERSION);
			return CLI_OK;
		default:
			rc = cli_common_opt(&ctx, c, argv, opts, "");
			if (rc >= 0)
				return rc;
		}
	}
	if (optind >= argc)
		return cli_usage_error(&ctx, "no command given");
	name = argv[optind];
	for (i = 0; i < QP_ARRAY_SIZE(commands); i++) {
		if (strcmp(name, commands[i].name) == 0) {
			ctx.cmd = commands[i].name;
			argc -= optind;
			argv += optind;
			optind = 0;	/* glibc: restart getopt for the command */
			return commands[i].func(&ctx, argc, argv);
		}
	}
	return cli_usage_error(&ctx, "unknown command '%s'", name);
}
