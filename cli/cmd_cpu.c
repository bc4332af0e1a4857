/* cmd_cpu.c - the CPU profile commands: folded (stdout or -o), flamegraph
 * -o FILE.svg (--callgraph for the call graph), pprof -o FILE.pb.gz; "-o -"
 * is standard output. offcpu: the off-CPU profile, its format chosen by the
 * file name (.svg a flame graph, .pb.gz pprof, else folded). Each is one GET of the daemon; files are written
 * beside their target and renamed into place, so a failed run never leaves
 * half a file. An empty profile (the daemon's X-Qprof-Note: no samples, or
 * none inside --scope) is a failure: the note on stderr, nothing written,
 * exit 1. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"

enum cpu_kind { CPU_FOLDED, CPU_FLAME, CPU_PPROF, CPU_OFF };

static const char folded_help[] =
	"Usage: qprof-cli folded [--pid N] [--seconds S] [--scope NAME] [-o FILE]\n"
	"\n"
	"Folded stacks of the CPU samples (\"comm;root;...;leaf count\" per line), for\n"
	"flamegraph.pl, speedscope, inferno and the like. Without --seconds: every\n"
	"sample since attach; with it: the next S seconds (1..300).\n"
	"\n"
	"  --pid N       only process N\n"
	"  --seconds S   collect the next S seconds\n"
	"  --scope NAME  only the samples taken inside qprof scope NAME\n"
	"  -o FILE       write to FILE instead of standard output (\"-\": standard output)\n"
	"\n"
	"No samples (none yet, or none inside --scope NAME, for instance an unknown\n"
	"scope): the daemon's reason on stderr, nothing written, exit status 1.\n";
static const char flame_help[] =
	"Usage: qprof-cli flamegraph [-o FILE.svg] [--pid N] [--seconds S] [--scope NAME]\n"
	"                            [--callgraph]\n"
	"\n"
	"A self-contained SVG flame graph of the CPU samples: open it in a browser,\n"
	"hover for names and shares, click to zoom, Ctrl-F to search. --callgraph\n"
	"draws a call graph instead (needs graphviz's dot on the daemon's machine).\n"
	"-o - (or no -o, standard output not a terminal) writes the SVG to standard\n"
	"output. No samples: exit status 1, nothing written (see folded --help).\n";
static const char offcpu_help[] =
	"Usage: qprof-cli offcpu [-o FILE] [--pid N] [--seconds S] [--scope NAME]\n"
	"\n"
	"Where the target threads waited off the CPU, weighted by nanoseconds, at the\n"
	"stack where each left the CPU (blocked or preempted). FILE ending in .svg: a\n"
	"flame graph; in .pb.gz: pprof (sample type off_cpu/nanoseconds); else (and\n"
	"without -o: standard output) folded stacks whose counts are nanoseconds.\n"
	"\n"
	"  --pid N       only process N\n"
	"  --seconds S   collect the next S seconds (1..300); default: since attach\n"
	"  --scope NAME  only the waits that began inside qprof scope NAME\n"
	"\n"
	"No interval (none yet, or none inside --scope NAME): the daemon's reason on\n"
	"stderr, nothing written, exit status 1.\n";
static const char pprof_help[] =
	"Usage: qprof-cli pprof [-o FILE.pb.gz] [--pid N] [--seconds S] [--scope NAME]\n"
	"\n"
	"The CPU samples as a gzipped pprof profile: go tool pprof -top FILE.pb.gz\n"
	"-o - (or no -o, standard output not a terminal) writes it to standard output.\n"
	"No samples: exit status 1, nothing written (see folded --help).\n";

static int cpu_cmd(struct cli_ctx *ctx, int argc, char **argv, enum cpu_kind kind)
{
	enum { OPT_PID = CLI_OPT_CMD_BASE, OPT_SECONDS, OPT_SCOPE, OPT_CALLGRAPH };
	static const struct option opts[] = {
		CLI_COMMON_OPTS,
		{ "pid", required_argument, NULL, OPT_PID },
		{ "seconds", required_argument, NULL, OPT_SECONDS },
		{ "scope", required_argument, NULL, OPT_SCOPE },
		{ "callgraph", no_argument, NULL, OPT_CALLGRAPH },
		{ "output", required_argument, NULL, 'o' },
		{ 0 },
	};
	static const char *const routes[] = { "/api/cpu/folded", "/api/cpu/flamegraph", "/pprof/profile",
					      "/api/offcpu/folded" };
	const char *help = kind == CPU_FOLDED ? folded_help : kind == CPU_FLAME ? flame_help
			 : kind == CPU_OFF ? offcpu_help : pprof_help;
	const char *pid_arg = NULL, *sec_arg = NULL, *scope = NULL, *out = NULL;
	bool callgraph = false;
	struct http_response resp;
	char target[1024];
	int64_t sec = 0;
	int c, rc;

	snprintf(target, sizeof(target), "%s", routes[kind]);
	while ((c = cli_next_opt(ctx, argc, argv, opts, help, &rc)) > 0) {
		switch (c) {
		case OPT_PID:
			pid_arg = optarg;
			continue;
		case OPT_SECONDS:
			sec_arg = optarg;
			continue;
		case OPT_SCOPE:
			scope = optarg;
			continue;
		case OPT_CALLGRAPH:
			if (kind != CPU_FLAME)
				return cli_usage_error(ctx, "--callgraph is an option of flamegraph");
			callgraph = true;
			continue;
		case 'o':
			out = optarg;
			continue;
		}
	}
	if (rc >= 0)
		return rc;
	if (kind == CPU_OFF) {
		size_t n = out ? strlen(out) : 0;

		snprintf(target, sizeof(target), "%s",
			 n > 4 && !strcmp(out + n - 4, ".svg") ? "/api/offcpu/flamegraph"
			 : n > 6 && !strcmp(out + n - 6, ".pb.gz") ? "/pprof/offcpu" : "/api/offcpu/folded");
	} else if (kind != CPU_FOLDED && !out) {
		/* a pipe or a file takes the profile as it is; a terminal would
		 * show gzip bytes or a page of SVG */
		if (isatty(STDOUT_FILENO))
			return cli_usage_error(ctx, "%s: give -o FILE%s, or send standard output to a file or a "
					       "pipe (qprof-cli %s > FILE%s)", kind == CPU_PPROF ? "pprof writes a gzipped protobuf"
					       : "flamegraph writes SVG", kind == CPU_PPROF ? ".pb.gz" : ".svg",
					       kind == CPU_PPROF ? "pprof" : "flamegraph", kind == CPU_PPROF ? ".pb.gz" : ".svg");
		out = "-";
	}
	if (out && !out[0])
		return cli_usage_error(ctx, "-o wants a file name");
	if (scope && (!scope[0] || strlen(scope) > 256))
		return cli_usage_error(ctx, "--scope wants a scope name of 1..256 bytes");
	rc = cli_query_pid_seconds(ctx, pid_arg, sec_arg, target, sizeof(target), &sec);
	if (rc)
		return rc;
	if (scope && http_add_query(target, sizeof(target), "scope", scope))
		return cli_fail(ctx, "request target too long");
	if (callgraph && http_add_query(target, sizeof(target), "renderer", "callgraph"))
		return cli_fail(ctx, "request target too long");
	cli_say_collecting(sec);
	rc = cli_api_call(ctx, "GET", target, NULL, (int)sec + 2 * CLI_HTTP_TIMEOUT_S, &resp);
	if (rc)
		return rc;
	if (resp.note[0]) {
		cli_clean_text(resp.note);	/* the daemon's words */
		rc = cli_fail(ctx, "empty profile: %s", resp.note);
	} else {
		rc = cli_write_body(ctx, out, &resp, NULL);
	}
	http_response_free(&resp);
	return rc;
}

int cmd_folded(struct cli_ctx *ctx, int argc, char **argv) { return cpu_cmd(ctx, argc, argv, CPU_FOLDED); }
int cmd_flamegraph(struct cli_ctx *ctx, int argc, char **argv) { return cpu_cmd(ctx, argc, argv, CPU_FLAME); }
int cmd_pprof(struct cli_ctx *ctx, int argc, char **argv) { return cpu_cmd(ctx, argc, argv, CPU_PPROF); }
int cmd_offcpu(struct cli_ctx *ctx, int argc, char **argv) { return cpu_cmd(ctx, argc, argv, CPU_OFF); }
