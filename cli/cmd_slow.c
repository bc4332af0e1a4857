/* cmd_slow.c - `slow NAME [--pid N] [-n N] [--seconds S]`: the slowest
 * instances of a scope (GET /api/scopes/slowest), each with its time split
 * into on-CPU, runnable-waiting, blocked and irq, the waits with where the
 * thread left the CPU, and the CPU samples taken inside it. Without --pid
 * the daemon's only target is taken. */
#include <stdlib.h>
#include <string.h>
#include "cli.h"

static const char slow_help[] =
	"Usage: qprof-cli slow NAME [--pid N] [-n N] [--seconds S] [--json]\n"
	"\n"
	"The N (default 10, at most 32) slowest instances of scope NAME since\n"
	"attach (with --seconds: of those ending in the next S seconds, kept in a\n"
	"window of their own), slowest first: thread, duration split into\n"
	"on-CPU, runnable (waiting for a CPU), blocked and irq time, migrations\n"
	"and page faults, each wait off the CPU with its reason and the stack\n"
	"where the thread left the CPU, and the CPU samples taken inside\n"
	"(folded, root first).\n"
	"Without --pid: the daemon's only target.\n";

static void ms(char *buf, size_t len, uint64_t ns)
{
	snprintf(buf, len, "%.3f ms", (double)ns / 1e6);
}

/* the frame name without control characters */
static void put_clean(const char *s)
{
	for (; s && *s; s++)
		putchar((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
}

static bool kernel_frame(const char *f)
{
	size_t n = f ? strlen(f) : 0;

	return n >= 4 && !strcmp(f + n - 4, "_[k]");
}

/* up to MAX frames of ST (leaf first) that are (not) kernel frames */
static void print_frames(const json_t *st, bool kernel, size_t max)
{
	const json_t *f;
	size_t i, n = 0;

	json_array_foreach(st, i, f) {
		const char *s = json_string_value(f);

		if (kernel_frame(s) != kernel)
			continue;
		/* the tracepoint's own frames (where the stack was taken) */
		if (kernel && (!strncmp(s, "bpf_", 4) || !strncmp(s, "__bpf_", 6) ||
			       !strncmp(s, "__traceiter_", 12) || !strncmp(s, "__probestub", 11)))
			continue;
		if (n == max) {
			printf(" <- ...");
			break;
		}
		printf("%s", n++ ? " <- " : "");
		put_clean(s);
	}
	if (!n)
		printf("?");
}

/* one wait: where the thread left its code (user frames, leaf first),
 * then the kernel's innermost frames */
static void print_wait(const json_t *w)
{
	const json_t *st = json_object_get(w, "stack");
	uint64_t ns = 0, rq = 0;
	char a[32], b[32];

	cli_json_u64(w, "ns", &ns);
	cli_json_u64(w, "runnable_ns", &rq);
	ms(a, sizeof(a), ns);
	ms(b, sizeof(b), rq);
	printf("    off-CPU %s, %s (runnable %s) at ", a,
	       cli_json_str(w, "reason") ? cli_json_str(w, "reason") : "?", b);
	print_frames(st, false, 6);
	printf("\n      kernel: ");
	print_frames(st, true, 4);
	putchar('\n');
}

static int print_slow(const struct cli_ctx *ctx, const json_t *root)
{
	const json_t *arr = json_object_get(root, "instances"), *o;
	uint64_t kept = 0, pid = 0;
	size_t i;

	if (!json_is_array(arr))
		return cli_fail(ctx, "qprofd's answer has no \"instances\" array");
	cli_json_u64(root, "kept", &kept);
	cli_json_u64(root, "pid", &pid);
	printf("scope ");
	put_clean(cli_json_str(root, "name"));
	printf(" in pid %llu: the %zu slowest of %llu kept%s\n", (unsigned long long)pid, json_array_size(arr),
	       (unsigned long long)kept,
	       json_is_true(json_object_get(root, "complete")) ? "" : " (not every instance was recorded)");
	json_array_foreach(arr, i, o) {
		uint64_t tid = 0, dur = 0, on = 0, rq = 0, bl = 0, irq = 0, mig = 0, pf = 0, nsamp = 0, more = 0;
		const json_t *ws = json_object_get(o, "off_cpu"), *w, *ss = json_object_get(o, "samples"), *s;
		char d[32], a[32], b[32], c[32], e[32];
		size_t k;

		cli_json_u64(o, "tid", &tid);
		cli_json_u64(o, "dur_ns", &dur);
		cli_json_u64(o, "on_cpu_ns", &on);
		cli_json_u64(o, "runnable_ns", &rq);
		cli_json_u64(o, "blocked_ns", &bl);
		cli_json_u64(o, "irq_ns", &irq);
		cli_json_u64(o, "migrations", &mig);
		cli_json_u64(o, "page_faults", &pf);
		cli_json_u64(o, "sample_count", &nsamp);
		cli_json_u64(o, "off_cpu_more", &more);
		ms(d, sizeof(d), dur);
		ms(a, sizeof(a), on);
		ms(b, sizeof(b), rq);
		ms(c, sizeof(c), bl);
		ms(e, sizeof(e), irq);
		printf("#%zu  %s  tid %llu (", i + 1, d, (unsigned long long)tid);
		put_clean(cli_json_str(o, "thread"));
		printf(")%s\n    on-CPU %s | runnable %s | blocked %s | irq %s | %llu migrations, "
		       "%llu page faults\n",
		       json_is_true(json_object_get(o, "partial")) ? " [history too short: partial]" : "", a, b, c,
		       e, (unsigned long long)mig, (unsigned long long)pf);
		json_array_foreach(ws, k, w)
			print_wait(w);
		if (more)
			printf("    (%llu shorter waits not listed)\n", (unsigned long long)more);
		printf("    %llu CPU samples inside%s\n", (unsigned long long)nsamp, nsamp ? ":" : "");
		json_array_foreach(ss, k, s) {
			uint64_t n = 0;

			cli_json_u64(s, "count", &n);
			printf("      %llu  ", (unsigned long long)n);
			put_clean(cli_json_str(s, "stack"));
			putchar('\n');
		}
	}
	return CLI_OK;
}

int cmd_slow(struct cli_ctx *ctx, int argc, char **argv)
{
	enum { OPT_PID = CLI_OPT_CMD_BASE, OPT_SECONDS };
	static const struct option opts[] = {
		CLI_COMMON_OPTS,
		{ "pid", required_argument, NULL, OPT_PID },
		{ "seconds", required_argument, NULL, OPT_SECONDS },
		{ 0 },
	};
	const char *pid_arg = NULL, *sec_arg = NULL, *n_arg = NULL, *name;
	char target[1024] = "/api/scopes/slowest", pidb[24];
	int64_t n = 10, pid = 0, sec = 0;
	int c, rc;

	/* 0, not 1: glibc starts over (main's scan stopped at the command),
	 * permuting again, so NAME may come before the options */
	optind = 0;
	while ((c = getopt_long(argc, argv, ":hn:", opts, NULL)) != -1) {
		if (c == OPT_PID) {
			pid_arg = optarg;
			continue;
		}
		if (c == OPT_SECONDS) {
			sec_arg = optarg;
			continue;
		}
		if (c == 'n') {
			n_arg = optarg;
			continue;
		}
		rc = cli_common_opt(ctx, c, argv, opts, slow_help);
		if (rc >= 0)
			return rc;
	}
	if (optind >= argc)
		return cli_usage_error(ctx, "slow wants a scope NAME");
	name = argv[optind++];
	rc = cli_no_operands(ctx, argc, argv);
	if (rc)
		return rc;
	if (!name[0] || strlen(name) > 256)
		return cli_usage_error(ctx, "NAME must be a scope name of 1..256 bytes");
	if (n_arg && qp_parse_i64(n_arg, 1, 32, &n))
		return cli_usage_error(ctx, "invalid -n '%s': a whole number from 1 to 32", n_arg);
	if (pid_arg && cli_parse_pid(ctx, "--pid", pid_arg, &pid))
		return CLI_USAGE;
	if (sec_arg && cli_parse_seconds(ctx, sec_arg, &sec))
		return CLI_USAGE;
	if (!pid_arg) {
		rc = cli_only_target(ctx, &pid);
		if (rc)
			return rc;
	}
	snprintf(pidb, sizeof(pidb), "%lld", (long long)pid);
	if (http_add_query(target, sizeof(target), "pid", pidb) ||
	    http_add_query(target, sizeof(target), "name", name))
		return cli_fail(ctx, "request target too long");
	snprintf(pidb, sizeof(pidb), "%lld", (long long)n);
	if (http_add_query(target, sizeof(target), "n", pidb))
		return cli_fail(ctx, "request target too long");
	if (sec) {
		snprintf(pidb, sizeof(pidb), "%lld", (long long)sec);
		if (http_add_query(target, sizeof(target), "seconds", pidb))
			return cli_fail(ctx, "request target too long");
	}
	return cli_get_and_print(ctx, target, (int)sec + CLI_HTTP_TIMEOUT_S, print_slow);
}
