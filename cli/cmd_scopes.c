/* cmd_scopes.c - `qprof-cli scopes`: GET /api/scopes (optionally for one pid
 * and the next S seconds) and print the scopes as a call tree. Each scope row
 * names its enclosing scope (`parent`); rows are grouped by pid, children are
 * indented under the first row of their parent's name and siblings are sorted
 * by total time, largest first. Every row is printed exactly once, even for
 * recursion or a parent that is missing from the answer. */
#include "cli.h"
#include "table.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char scopes_help[] =
	"Usage: qprof-cli scopes [--pid N] [--seconds S] [--json]\n"
	"\n"
	"Latency of the scopes marked with QPROF_FUNC/QPROF_SCOPE (and spans, marks\n"
	"and counted probes) as a call tree per process: COUNT, MEAN, P50, P90, P99,\n"
	"P99.9, MAX and TOTAL time; marks and probes have counts only (\"-\").\n"
	"\n"
	"The BPF collector takes its probes' own cost (measured at start) off every\n"
	"duration: an instance shorter than that reads 0, and a figure of 0 shows as\n"
	"\"<N ns\" (less than N, how much less unknown). Its MAX also holds any time the\n"
	"thread was preempted inside a probe, which the program's own clock does not\n"
	"see: a one-off MAX may exceed it by milliseconds on a busy machine. The ring\n"
	"collector (qprofd --ring) reads the program's own clock: neither applies.\n"
	"\n"
	"  --pid N      only process N\n"
	"  --seconds S  collect the next S seconds (1..300) instead of everything\n"
	"               since attach\n"
	"  --json       the daemon's answer to GET /api/scopes unchanged\n";

enum { D_MEAN, D_P50, D_P90, D_P99, D_P999, D_MAX, D_TOTAL, D_N };
static const char *const dur_keys[D_N] = {
	"mean_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns", "total_ns",
};

struct scope_row {
	uint64_t pid, count;
	bool has_count;
	const char *kind, *name, *parent;	/* owned by the JSON document */
	double dur[D_N];
	bool has_dur[D_N];
	uint64_t calibration_ns;	/* taken off each duration (BPF collector) */
	bool visited;
	bool expands;	/* the first row of its name: children go under it */
};

struct frame {
	size_t row, scan;
	int depth;
};

static int cmp_rows(const void *pa, const void *pb)
{
	const struct scope_row *a = pa, *b = pb;
	double ta = a->has_dur[D_TOTAL] ? a->dur[D_TOTAL] : -1;
	double tb = b->has_dur[D_TOTAL] ? b->dur[D_TOTAL] : -1;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (ta != tb)
		return ta > tb ? -1 : 1;
	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return strcmp(a->name, b->name);
}

static void add_row(struct table *t, const struct scope_row *r, int depth)
{
	char buf[64];
	int i;

	table_row(t);
	table_cellf(t, "%llu", (unsigned long long)r->pid);
	table_cell(t, r->kind);
	if (depth > 32)
		depth = 32;
	table_cellf(t, "%*s%s", 2 * depth, "", r->name);
	table_cell(t, r->has_count ? qp_fmt_count(buf, sizeof(buf), r->count) : NULL);
	for (i = 0; i < D_N; i++) {
		if (r->has_dur[i] && r->dur[i] < 0.5 && r->calibration_ns && r->count)
			/* measured at or below the probes' cost: a bound, not 0 */
			table_cellf(t, "<%llu ns", (unsigned long long)r->calibration_ns);
		else
			table_cell(t, qp_fmt_duration(buf, sizeof(buf), r->dur[i], r->has_dur[i]));
	}
}

static bool is_child(const struct scope_row *parent, const struct scope_row *r)
{
	return r->parent && strcmp(r->parent, parent->name) == 0;
}

/* A row expands (gets the children naming it as parent) when it is the
 * first row of its name to be printed: a name entered under several parents
 * has its subtree shown once. */
static void visit(struct table *t, struct scope_row *rows, size_t lo, size_t hi, size_t r,
		  int depth)
{
	size_t k;

	rows[r].visited = true;
	rows[r].expands = true;
	for (k = lo; k < hi; k++)
		if (k != r && rows[k].visited && rows[k].expands &&
		    strcmp(rows[k].name, rows[r].name) == 0) {
			rows[r].expands = false;
			break;
		}
	add_row(t, &rows[r], depth);
}

/* Print ROW and, depth first, every row under it in rows[lo, hi). */
static void emit_tree(struct table *t, struct scope_row *rows, size_t lo, size_t hi, size_t root,
		     struct frame *stack)
{
	size_t sp = 0, j;

	visit(t, rows, lo, hi, root, 0);
	stack[sp++] = (struct frame){ .row = root, .scan = lo, .depth = 0 };
	while (sp) {
		struct frame *f = &stack[sp - 1];
		struct scope_row *p = &rows[f->row];

		for (j = f->scan; j < hi; j++)
			if (!rows[j].visited && p->expands && is_child(p, &rows[j]))
				break;
		f->scan = j + 1;
		if (j >= hi) {
			sp--;
			continue;
		}
		visit(t, rows, lo, hi, j, f->depth + 1);
		stack[sp++] = (struct frame){ .row = j, .scan = lo, .depth = f->depth + 1 };
	}
}

static bool name_present(const struct scope_row *rows, size_t lo, size_t hi, const char *name)
{
	size_t i;

	for (i = lo; i < hi; i++)
		if (strcmp(rows[i].name, name) == 0)
			return true;
	return false;
}

static void print_group(struct table *t, struct scope_row *rows, size_t lo, size_t hi,
			struct frame *stack)
{
	size_t i;

	/* top level, then rows whose parent is not in the answer, then cycles */
	for (i = lo; i < hi; i++)
		if (!rows[i].visited && !rows[i].parent)
			emit_tree(t, rows, lo, hi, i, stack);
	for (i = lo; i < hi; i++)
		if (!rows[i].visited && !name_present(rows, lo, hi, rows[i].parent))
			emit_tree(t, rows, lo, hi, i, stack);
	for (i = lo; i < hi; i++)
		if (!rows[i].visited)
			emit_tree(t, rows, lo, hi, i, stack);
}

static int print_scopes(const struct cli_ctx *ctx, const json_t *root)
{
	static const struct table_col cols[] = {
		{ "PID", true }, { "KIND", false }, { "NAME", false }, { "COUNT", true },
		{ "MEAN", true }, { "P50", true }, { "P90", true }, { "P99", true },
		{ "P99.9", true }, { "MAX", true }, { "TOTAL", true },
	};
	const json_t *arr = json_object_get(root, "scopes"), *o;
	struct scope_row *rows;
	struct frame *stack;
	struct table t;
	size_t n, i, lo;
	int rc, k;

	if (!json_is_array(arr))
		return cli_fail(ctx, "qprofd's answer has no \"scopes\" array");
	n = json_array_size(arr);
	if (!n) {
		printf("no scopes recorded\n");
		cli_ring_loss_footer(ctx, 0);
		return CLI_OK;
	}
	rows = calloc(n, sizeof(*rows));
	stack = calloc(n, sizeof(*stack));
	if (!rows || !stack) {
		free(rows);
		free(stack);
		return cli_fail(ctx, "out of memory");
	}
	json_array_foreach(arr, i, o) {
		struct scope_row *r = &rows[i];

		cli_json_u64(o, "pid", &r->pid);
		r->has_count = cli_json_u64(o, "count", &r->count);
		r->kind = cli_json_str(o, "kind");
		r->name = cli_json_str(o, "name");
		if (!r->name)
			r->name = "?";
		r->parent = cli_json_str(o, "parent");
		cli_json_u64(o, "calibration_ns", &r->calibration_ns);
		for (k = 0; k < D_N; k++)
			r->has_dur[k] = cli_json_double(o, dur_keys[k], &r->dur[k]);
	}
	qsort(rows, n, sizeof(*rows), cmp_rows);

	table_init(&t, cols, QP_ARRAY_SIZE(cols));
	for (lo = 0; lo < n; lo = i) {
		for (i = lo; i < n && rows[i].pid == rows[lo].pid; i++)
			;
		print_group(&t, rows, lo, i, stack);
	}
	rc = table_print(&t, stdout);
	table_free(&t);
	{
		/* one pid shown: its losses only */
		uint64_t only = n && rows[0].pid == rows[n - 1].pid ? rows[0].pid : 0;

		free(rows);
		free(stack);
		if (!rc)
			cli_ring_loss_footer(ctx, only);
	}
	return rc ? cli_fail(ctx, "out of memory") : CLI_OK;
}

int cmd_scopes(struct cli_ctx *ctx, int argc, char **argv)
{
	enum { OPT_PID = CLI_OPT_CMD_BASE, OPT_SECONDS };
	static const struct option opts[] = {
		CLI_COMMON_OPTS,
		{ "pid", required_argument, NULL, OPT_PID },
		{ "seconds", required_argument, NULL, OPT_SECONDS },
		{ 0 },
	};
	const char *pid_arg = NULL, *sec_arg = NULL;
	char target[128] = "/api/scopes";
	int64_t sec = 0;
	int c, rc;

	while ((c = cli_next_opt(ctx, argc, argv, opts, scopes_help, &rc)) > 0) {
		if (c == OPT_PID || c == OPT_SECONDS) {
			const char **slot = c == OPT_PID ? &pid_arg : &sec_arg;

			if (*slot)
				return cli_usage_error(ctx, "--%s given twice",
						       c == OPT_PID ? "pid" : "seconds");
			*slot = optarg;
			continue;
		}
	}
	if (rc >= 0)
		return rc;
	rc = cli_query_pid_seconds(ctx, pid_arg, sec_arg, target, sizeof(target), &sec);
	if (rc)
		return rc;

	cli_say_collecting(sec);
	return cli_get_and_print(ctx, target, (int)sec + CLI_HTTP_TIMEOUT_S, print_scopes);
}
