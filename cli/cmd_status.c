/* cmd_status.c - `qprof-cli status`: GET /api/status and a short human
 * summary (version, uptime, CPU sampling, scope counters, the targets table),
 * or the daemon's JSON as it came with --json. The targets table is shared
 * with `attach`. */
#include "cli.h"
#include "common/counters.h"
#include "table.h"

#include <string.h>
#include <time.h>

static const char status_help[] =
	"Usage: qprof-cli status [--json]\n"
	"\n"
	"Show qprofd's version and uptime, its CPU sampling and scope counters, the\n"
	"--binary files it follows (probe sites, state, processes, new versions seen)\n"
	"and the targets it profiles (PID, COMM, STATE, PROBES, ATTACHED, COLLECTOR:\n"
	"which scope collector times it and why, EXE).\n"
	"--json prints the daemon's answer to GET /api/status unchanged.\n";

static void cell_u64(struct table *t, const json_t *o, const char *key)
{
	uint64_t v;

	if (cli_json_u64(o, key, &v))
		table_cellf(t, "%llu", (unsigned long long)v);
	else
		table_cell(t, NULL);
}

/* attached_ms: how long the target has been attached. A value that looks
 * like a wall-clock time (after 2001) is taken as the moment of attaching. */
static void cell_attached(struct table *t, const json_t *o)
{
	char buf[32];
	uint64_t ms;

	if (!cli_json_u64(o, "attached_ms", &ms)) {
		table_cell(t, NULL);
		return;
	}
	if (ms > 1000000000000ull) {
		struct timespec ts;
		uint64_t now;

		clock_gettime(CLOCK_REALTIME, &ts);
		now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
		ms = now > ms ? now - ms : 0;
	}
	table_cell(t, fmt_age(buf, sizeof(buf), ms));
}

int cli_print_targets(const struct cli_ctx *ctx, const json_t *arr)
{
	static const struct table_col cols[] = {
		{ "PID", true }, { "COMM", false }, { "STATE", false },
		{ "PROBES", true }, { "ATTACHED", true }, { "COLLECTOR", false }, { "EXE", false },
	};
	struct table t;
	const json_t *o;
	size_t i;
	int rc;

	table_init(&t, cols, QP_ARRAY_SIZE(cols));
	json_array_foreach(arr, i, o) {
		table_row(&t);
		cell_u64(&t, o, "pid");
		table_cell(&t, cli_json_str(o, "comm"));
		table_cell(&t, cli_json_str(o, "state"));
		cell_u64(&t, o, "probes");
		cell_attached(&t, o);
		/* which collector and why, e.g. "ring (default)", "bpf: markers of ABI 1" */
		table_cell(&t, cli_json_str(o, "collector_reason") ? cli_json_str(o, "collector_reason")
								   : cli_json_str(o, "collector"));
		table_cell(&t, cli_json_str(o, "exe") ? cli_json_str(o, "exe")
						      : cli_json_str(o, "binary"));
	}
	rc = table_print(&t, stdout);
	table_free(&t);
	return rc ? cli_fail(ctx, "out of memory") : CLI_OK;
}

static const char *num(char *buf, size_t len, const json_t *o, const char *key)
{
	uint64_t v;

	if (!cli_json_u64(o, key, &v))
		return "-";
	return qp_fmt_count(buf, len, v);
}

/* How user stacks were walked: in the kernel by CFI tables (walked, fell
 * back to the stack copy and why, the tables and their kernel memory),
 * copies unwound in qprofd. */
static void print_unwind(const json_t *u)
{
	const json_t *k = json_object_get(u, "kernel"), *t = json_object_get(k, "tables"), *n;
	const json_t *ends = json_object_get(k, "ends");
	const char *mode = cli_json_str(u, "mode"), *e;
	char a[32], b[32], c[32], d[32], f[32];
	uint64_t bytes = 0, max = 0;
	bool first = true;

	if (!json_is_object(u))
		return;
	printf("unwinding: %s", mode ? mode : "?");
	if (json_is_true(json_object_get(k, "running"))) {
		printf(", %s walked in the kernel, %s fell back to a stack copy", num(a, sizeof(a), k, "walked"),
		       num(b, sizeof(b), k, "fallbacks"));
		json_object_foreach((json_t *)ends, e, n) {
			if (!json_is_integer(n) || !json_integer_value(n) || !strcmp(e, "complete") ||
			    !strcmp(e, "depth") || !strcmp(e, "loop"))
				continue;
			printf("%s%lld %s", first ? " (" : ", ", (long long)json_integer_value(n), e);
			first = false;
		}
		printf("%s", first ? "" : ")");
	} else if (cli_json_str(k, "error")) {
		printf(", not in the kernel: %s", cli_json_str(k, "error"));
	}
	printf(", %s copies unwound in qprofd\n", num(a, sizeof(a), u, "copied"));
	if (!json_is_true(json_object_get(k, "running")))
		return;
	cli_json_u64(t, "bytes", &bytes);
	cli_json_u64(t, "bytes_max", &max);
	printf("CFI tables: %s files, %llu KiB of %llu KiB kernel memory, %s compiled, %s refused, %s evicted, "
	       "%s without room\n", num(a, sizeof(a), t, "files"), (unsigned long long)(bytes >> 10),
	       (unsigned long long)(max >> 10), num(b, sizeof(b), t, "builds"), num(c, sizeof(c), t, "refused"),
	       num(d, sizeof(d), t, "evictions"), num(f, sizeof(f), t, "no_room"));
	if (cli_json_u64(t, "rows_without_rule", &bytes) && bytes)	/* say it only when it happens: those rows' samples take the copy */
		printf("CFI tables: %s rows beyond 65,536 distinct rules in a file: they fall back to the copy\n",
		       num(a, sizeof(a), t, "rows_without_rule"));
}

/* --binary targets: path, probes, state, processes, deploys seen. */
static void print_binaries(const json_t *arr)
{
	const json_t *b;
	size_t i;

	if (!json_array_size(arr))
		return;
	printf("binaries (every process that runs them):\n");
	json_array_foreach(arr, i, b) {
		const char *path = cli_json_str(b, "binary"), *state = cli_json_str(b, "state");
		uint64_t probes = 0, replaced = 0;

		cli_json_u64(b, "probes", &probes);
		cli_json_u64(b, "versions_replaced", &replaced);
		const char *why = cli_json_str(b, "collector_reason");

		printf("  %s: %llu probe sites, %s, %zu process(es)", path ? path : "?",
		       (unsigned long long)probes, state ? state : "?",
		       json_array_size(json_object_get(b, "pids")));
		if (why)
			printf(", collector %s", why);
		if (replaced)
			printf(", %llu new version(s) since attach", (unsigned long long)replaced);
		putchar('\n');
	}
	putchar('\n');
}

/* The files each target has probed, libraries loaded after attach
 * included (and those it could not probe), when qprofd lists them. */
static int print_modules(const struct cli_ctx *ctx, const json_t *targets)
{
	static const struct table_col cols[] = {
		{ "PID", true }, { "STATE", false }, { "PROBES", true }, { "LOADS", true },
		{ "ATTACHED", true }, { "MODULE", false },
	};
	const json_t *tg, *m;
	struct table t;
	size_t i, k, rows = 0;
	int rc;

	table_init(&t, cols, QP_ARRAY_SIZE(cols));
	json_array_foreach(targets, i, tg) {
		json_array_foreach(json_object_get(tg, "modules"), k, m) {
			table_row(&t);
			cell_u64(&t, tg, "pid");
			table_cell(&t, cli_json_str(m, "state"));
			cell_u64(&t, m, "probes");
			cell_u64(&t, m, "loads");
			cell_attached(&t, m);
			table_cell(&t, cli_json_str(m, "path"));
			rows++;
		}
	}
	rc = 0;
	if (rows) {
		printf("\nmodules (files probed, and libraries loaded later that were not):\n");
		rc = table_print(&t, stdout);
	}
	table_free(&t);
	return rc ? cli_fail(ctx, "out of memory") : CLI_OK;
}

void cli_ring_loss_footer(const struct cli_ctx *ctx, uint64_t pid)
{
	struct http_response resp;
	json_t *root;

	if (cli_api_call(ctx, "GET", "/api/status", NULL, CLI_HTTP_TIMEOUT_S, &resp))
		return;
	root = cli_api_json(ctx, &resp);
	http_response_free(&resp);
	if (!root)
		return;
	cli_print_ring_losses(json_object_get(root, "targets"), pid);
	json_decref(root);
}

/* The ring's losses as counters.h's QP_RING_LOSSES words them. */
#define CLI_LOSS_ROW(a, key, from, help, text, in_report) { key, text },
static const struct {
	const char *key, *text;
} ring_losses[] = { QP_RING_LOSSES(CLI_LOSS_ROW, _, _) };

void cli_print_ring_losses(const json_t *targets, uint64_t pid)
{
	const json_t *tg;
	size_t i, k;

	json_array_foreach(targets, i, tg) {
		const json_t *r = json_object_get(tg, "ring");
		uint64_t p = 0, recs = 0, exitl = 0;
		bool est = json_is_true(json_object_get(r, "lost_estimated"));
		const char *tilde = est ? "~" : "";
		char a[32], b[32];

		cli_json_u64(tg, "pid", &p);
		if (!json_is_object(r) || (pid && p != pid) || !cli_json_u64(r, "lost", &recs) || !recs)
			continue;
		cli_json_u64(r, "lost_at_exit", &exitl);
		printf("pid %llu: ", (unsigned long long)p);
		/* the first figure always, the others when not 0 */
		for (k = 0; k < QP_ARRAY_SIZE(ring_losses); k++) {
			uint64_t n = 0;

			if (!ring_losses[k].text)
				continue;
			cli_json_u64(r, ring_losses[k].key, &n);
			if (k && !n)
				continue;
			printf("%s%s%s %s", k ? ", " : "", tilde, qp_fmt_count(a, sizeof(a), n), ring_losses[k].text);
		}
		printf(" (%s records overwritten before they were read", qp_fmt_count(b, sizeof(b), recs));
		if (exitl)
			printf(", %s of them left unread when the process ended", qp_fmt_count(a, sizeof(a), exitl));
		printf("%s): counts may be short by that\n",
		       est ? "; ~ a share of the mix read, an estimate" : "; exact");
	}
}

/* The fetches of debug files, and why the latest file that has none has none. */
static void print_debuginfod(const json_t *dg)
{
	char a[32], b[32], c[32], e[32], f[32], g[32];
	const json_t *o;
	size_t i;

	if (!json_is_true(json_object_get(dg, "enabled")))
		return;
	printf("debuginfod: %s fetched (%s bytes), %s missing, %s failed, %s refused, %s pending\n",
	       num(a, sizeof(a), dg, "fetched"), num(b, sizeof(b), dg, "fetched_bytes"),
	       num(c, sizeof(c), dg, "missing"), num(e, sizeof(e), dg, "failed"),
	       num(f, sizeof(f), dg, "refused"), num(g, sizeof(g), dg, "pending"));
	json_array_foreach(json_object_get(dg, "recent"), i, o) {
		const char *res = cli_json_str(o, "result"), *file = cli_json_str(o, "file");
		const char *why = cli_json_str(o, "reason");

		if (res && strcmp(res, "fetched")) {
			printf("  no debug file for %s (%s): %s\n", file && *file ? file : "?", res,
			       why ? why : "?");
			break;
		}
	}
}

/* The reasons of scopes.dropped_by_reason, in the table's order. */
#define CLI_DROP_ROW(kind, key, from, unit, metric, label, help) key,
static const char *const drop_reasons[] = { QP_CTR_SCOPE_DROPS(CLI_DROP_ROW) };

static int print_status(const struct cli_ctx *ctx, const json_t *root)
{
	const json_t *cpu = json_object_get(root, "cpu");
	const json_t *sc = json_object_get(root, "scopes");
	const json_t *targets = json_object_get(root, "targets");
	char a[32], b[32], c[32];
	uint64_t v;
	const char *ver = cli_json_str(root, "version");
	int rc;

	printf("qprofd %s", ver ? ver : "(unknown version)");
	if (cli_json_u64(root, "uptime_ms", &v))
		printf(", up %s", fmt_age(a, sizeof(a), v));
	putchar('\n');
	if (json_is_object(cpu)) {
		const json_t *running = json_object_get(cpu, "running");
		const char *state = json_is_true(running)			      ? "running"
				    : json_is_true(json_object_get(cpu, "starting")) ? "starting (its BPF programs are loading)"
										      : "stopped";

		printf("cpu sampling: %s", state);
		if (cli_json_u64(cpu, "frequency_hz", &v))
			printf(" at %llu Hz", (unsigned long long)v);
		printf(", %s samples, %s lost\n", num(a, sizeof(a), cpu, "samples"),
		       num(b, sizeof(b), cpu, "lost"));
		print_unwind(json_object_get(cpu, "unwind"));
	}
	if (json_is_object(sc)) {
		const json_t *why = json_object_get(sc, "dropped_by_reason");
		bool first = true;
		size_t k;

		printf("scopes: %s sites, %s events, %s dropped", num(a, sizeof(a), sc, "sites"),
		       num(b, sizeof(b), sc, "events"), num(c, sizeof(c), sc, "dropped"));
		/* the reasons of counters.h that happened, e.g. (3 exit_without_enter, 1 thread_exit) */
		for (k = 0; k < QP_ARRAY_SIZE(drop_reasons); k++) {
			uint64_t n;

			if (!cli_json_u64(why, drop_reasons[k], &n) || !n)
				continue;
			printf("%s%llu %s", first ? " (" : ", ", (unsigned long long)n, drop_reasons[k]);
			first = false;
		}
		printf("%s\n", first ? "" : ")");
	}
	{
		const json_t *logs = json_object_get(root, "logs");

		if (json_is_object(logs))
			printf("logs: %s received, %s lost\n", num(a, sizeof(a), logs, "received"),
			       num(b, sizeof(b), logs, "lost"));
	}
	print_debuginfod(json_object_get(root, "debuginfod"));
	putchar('\n');
	print_binaries(json_object_get(root, "binaries"));
	if (!json_array_size(targets)) {
		printf("no targets (add one with: %s attach --pid N)\n", CLI_PROG);
		return CLI_OK;
	}
	rc = cli_print_targets(ctx, targets);
	if (!rc) {
		/* a figure that may be short says so */
		cli_print_ring_losses(targets, 0);
		rc = print_modules(ctx, targets);
	}
	return rc;
}

int cmd_status(struct cli_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = { CLI_COMMON_OPTS, { 0 } };
	int rc;

	cli_next_opt(ctx, argc, argv, opts, status_help, &rc);
	if (rc >= 0)
		return rc;
	return cli_get_and_print(ctx, "/api/status", CLI_HTTP_TIMEOUT_S, print_status);
}
