/* cmd_heap.c - qprof-cli heap: the heap profile of a target whose heap is
 * profiled, in the form the output file's name asks for: FILE.svg the
 * flame graph, FILE.pb.gz (or .pb) pprof, anything else (and standard
 * output) folded stacks weighed in bytes. One GET of the daemon; a window
 * with no allocation, a process without a traced allocator and the like
 * are the daemon's words on stderr and exit status 1. */
#include <string.h>
#include "cli.h"

static const char heap_help[] =
	"Usage: qprof-cli heap [-o FILE] [--pid N] [--seconds S] [--kind inuse|alloc|growth]\n"
	"\n"
	"The heap of process N (attached with qprof-cli attach --pid N --heap, or a\n"
	"daemon run with --heap), estimated from allocations sampled by bytes:\n"
	"  inuse   live now (default); with --seconds: made in the next S s, live at their end\n"
	"  alloc   allocated since attach (or in the next S seconds)\n"
	"  growth  what grew the heap: brk and anonymous mmap calls, in bytes\n"
	"\n"
	"  -o FILE.svg     a flame graph\n"
	"  -o FILE.pb.gz   pprof: go tool pprof -sample_index=inuse_space -top FILE.pb.gz\n"
	"                  (alloc_objects, alloc_space, inuse_objects, inuse_space;\n"
	"                  --kind growth: calls, space)\n"
	"  -o FILE, none   folded stacks, \"comm;root;...;caller bytes\" per line\n"
	"  --pid N         the process (default: the daemon's only target)\n"
	"  --seconds S     a window of the next S seconds (1..300)\n";

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

int cmd_heap(struct cli_ctx *ctx, int argc, char **argv)
{
	enum { OPT_PID = CLI_OPT_CMD_BASE, OPT_SECONDS, OPT_KIND };
	static const struct option opts[] = {
		CLI_COMMON_OPTS,
		{ "pid", required_argument, NULL, OPT_PID },
		{ "seconds", required_argument, NULL, OPT_SECONDS },
		{ "kind", required_argument, NULL, OPT_KIND },
		{ "output", required_argument, NULL, 'o' },
		{ 0 },
	};
	const char *pid_arg = NULL, *sec_arg = NULL, *kind = "inuse", *out = NULL;
	struct http_response resp;
	char target[1024], pidbuf[24];
	bool pprof, svg;
	int64_t sec = 0;
	int c, rc;

	while ((c = cli_next_opt(ctx, argc, argv, opts, heap_help, &rc)) > 0) {
		switch (c) {
		case OPT_PID:
			pid_arg = optarg;
			continue;
		case OPT_SECONDS:
			sec_arg = optarg;
			continue;
		case OPT_KIND:
			kind = optarg;
			continue;
		case 'o':
			out = optarg;
			continue;
		}
	}
	if (rc >= 0)
		return rc;
	if (strcmp(kind, "inuse") && strcmp(kind, "alloc") && strcmp(kind, "growth"))
		return cli_usage_error(ctx, "--kind must be inuse, alloc or growth");
	if (out && !out[0])
		return cli_usage_error(ctx, "-o wants a file name");
	if (!pid_arg) {
		/* the daemon's only target, when it has one */
		int64_t pid;

		rc = cli_only_target(ctx, &pid);
		if (rc)
			return rc;
		snprintf(pidbuf, sizeof(pidbuf), "%lld", (long long)pid);
		pid_arg = pidbuf;
	}
	pprof = out && (ends_with(out, ".pb.gz") || ends_with(out, ".pb"));
	svg = out && ends_with(out, ".svg");
	if (pprof)
		snprintf(target, sizeof(target), "%s", strcmp(kind, "growth") ? "/pprof/heap" : "/pprof/growth");
	else
		snprintf(target, sizeof(target), "/api/heap/flamegraph");
	rc = cli_query_pid_seconds(ctx, pid_arg, sec_arg, target, sizeof(target), &sec);
	if (rc)
		return rc;
	if (!pprof && (http_add_query(target, sizeof(target), "kind", kind) ||
		       (!svg && http_add_query(target, sizeof(target), "renderer", "folded"))))
		return cli_fail(ctx, "request target too long");
	cli_say_collecting(sec);
	rc = cli_api_call(ctx, "GET", target, NULL, (int)sec + 2 * CLI_HTTP_TIMEOUT_S, &resp);
	if (rc)
		return rc;
	if (resp.note[0]) {
		/* the daemon's words (an exited process, losses): the profile
		 * is written all the same */
		cli_clean_text(resp.note);
		fprintf(stderr, "note: %s\n", resp.note);
	}
	rc = cli_write_body(ctx, out, &resp, NULL);
	http_response_free(&resp);
	return rc;
}
