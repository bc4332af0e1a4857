/* cmd_values.c - `values` (QPROF_VALUE sites: count, min, mean, p50, p99,
 * max, last, non-finite counts) and `logs [-f]` (QPROF_LOG messages; -f
 * keeps asking for newer ones until interrupted). */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "table.h"

static const char values_help[] =
	"Usage: qprof-cli values [--pid N] [--json]\n"
	"\n"
	"QPROF_VALUE sites: COUNT, MIN, MEAN, P50, P99, MAX and LAST of the finite\n"
	"values since attach; NaN and infinities are counted apart (NON-FINITE).\n"
	"MIN, MAX, LAST and the counts are exact; MEAN and percentiles are read\n"
	"from a histogram whose buckets are 1/4096 of their value wide: they show\n"
	"with \"~\" and 4 significant digits (\"~2\": the bucket around 2), or exact\n"
	"when every value was the same.\n";

static const char logs_help[] =
	"Usage: qprof-cli logs [--pid N] [--since SEQ] [-f] [--json]\n"
	"\n"
	"QPROF_LOG messages, oldest first: time, pid/tid, file:line, message. A\n"
	"message longer than the limit ends with \"[...]\". Messages lost in the\n"
	"kernel (ring buffer full) or evicted before they were read are reported\n"
	"as \"-- N lost --\" on stderr.\n"
	"\n"
	"  -f, --follow  keep printing new messages until interrupted\n"
	"  --since SEQ   only messages after sequence number SEQ\n"
	"  --json        the daemon's NDJSON lines\n";

static void fmt_num(char *buf, size_t len, const json_t *o, const char *key)
{
	double v;

	if (!cli_json_double(o, key, &v))
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.6g", v);
}

/* A figure read from the histogram: "~" and 4 significant digits, kept
 * within [MIN, MAX] (exact when they are equal); "-" when absent. */
static void fmt_approx(char *buf, size_t len, const json_t *o, const char *key)
{
	double v, lo, hi;

	if (!cli_json_double(o, key, &v)) {
		snprintf(buf, len, "-");
		return;
	}
	if (cli_json_double(o, "min", &lo) && cli_json_double(o, "max", &hi)) {
		if (lo == hi) {
			snprintf(buf, len, "%.6g", lo);
			return;
		}
		v = v < lo ? lo : v > hi ? hi : v;
	}
	snprintf(buf, len, "~%.4g", v);
}

static int print_values(const struct cli_ctx *ctx, const json_t *root)
{
	static const struct table_col cols[] = {
		{ "PID", true }, { "NAME", false }, { "COUNT", true }, { "MIN", true },
		{ "MEAN", true }, { "P50", true }, { "P99", true }, { "MAX", true },
		{ "LAST", true }, { "NON-FINITE", true },
	};
	const json_t *arr = json_object_get(root, "values"), *o;
	struct table t;
	size_t i;
	int rc;

	if (!json_is_array(arr))
		return cli_fail(ctx, "qprofd's answer has no \"values\" array");
	if (!json_array_size(arr)) {
		printf("no values recorded\n");
		return CLI_OK;
	}
	table_init(&t, cols, QP_ARRAY_SIZE(cols));
	json_array_foreach(arr, i, o) {
		char pidb[16], cnt[24], mn[32], mean[32], p50[32], p99[32], mx[32], last[32], nf[24];
		uint64_t u = 0, nan = 0, pi = 0, ni = 0;
		const char *name = cli_json_str(o, "name");

		cli_json_u64(o, "pid", &u);
		snprintf(pidb, sizeof(pidb), "%llu", (unsigned long long)u);
		u = 0;
		cli_json_u64(o, "count", &u);
		qp_fmt_count(cnt, sizeof(cnt), u);
		fmt_num(mn, sizeof(mn), o, "min");
		fmt_approx(mean, sizeof(mean), o, "mean");
		fmt_approx(p50, sizeof(p50), o, "p50");
		fmt_approx(p99, sizeof(p99), o, "p99");
		fmt_num(mx, sizeof(mx), o, "max");
		fmt_num(last, sizeof(last), o, "last");
		cli_json_u64(o, "nan", &nan);
		cli_json_u64(o, "pos_inf", &pi);
		cli_json_u64(o, "neg_inf", &ni);
		snprintf(nf, sizeof(nf), "%llu", (unsigned long long)(nan + pi + ni));
		{
			const char *cells[] = { pidb, name ? name : "?", cnt, mn, mean, p50, p99, mx, last, nf };
			size_t k;

			table_row(&t);
			for (k = 0; k < QP_ARRAY_SIZE(cells); k++)
				table_cell(&t, cells[k]);
		}
	}
	rc = table_print(&t, stdout);
	table_free(&t);
	return rc ? cli_fail(ctx, "out of memory") : CLI_OK;
}

int cmd_values(struct cli_ctx *ctx, int argc, char **argv)
{
	const char *pid_arg;
	char target[128] = "/api/values";
	int rc;

	rc = cli_pid_only_opts(ctx, argc, argv, values_help, &pid_arg);
	if (rc >= 0)
		return rc;
	rc = cli_query_pid_seconds(ctx, pid_arg, NULL, target, sizeof(target), NULL);
	if (rc)
		return rc;
	return cli_get_and_print(ctx, target, CLI_HTTP_TIMEOUT_S, print_values);
}

static volatile sig_atomic_t interrupted;
static void on_int(int sig) { interrupted = 1; }

/* Print the lines of one NDJSON answer; returns the highest seq seen. */
static uint64_t print_logs(const struct cli_ctx *ctx, const char *body, uint64_t since)
{
	const char *p = body;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		json_error_t jerr;
		json_t *o = json_loadb(p, n, 0, &jerr);

		if (o) {
			uint64_t seq = 0, lost = 0, ts = 0, pid = 0, tid = 0, line = 0;

			if (cli_json_u64(o, "lost", &lost) && lost) {
				fprintf(stderr, "-- %llu lost --\n", (unsigned long long)lost);
			} else if (cli_json_u64(o, "seq", &seq)) {
				if (seq > since)
					since = seq;
				if (ctx->json) {
					fwrite(p, 1, n, stdout);
					putchar('\n');
				} else {
					const char *file = cli_json_str(o, "file"), *msg = cli_json_str(o, "message");
					const char *base = file ? strrchr(file, '/') : NULL;
					json_t *tr = json_object_get(o, "truncated");
					time_t secs;
					struct tm tm;
					char when[32];

					cli_json_u64(o, "ts_ns", &ts);
					cli_json_u64(o, "pid", &pid);
					cli_json_u64(o, "tid", &tid);
					cli_json_u64(o, "line", &line);
					secs = (time_t)(ts / 1000000000ull);
					localtime_r(&secs, &tm);
					strftime(when, sizeof(when), "%H:%M:%S", &tm);
					printf("%s.%06llu %llu/%llu %s:%llu %s%s\n", when,
					       (unsigned long long)(ts % 1000000000ull / 1000), (unsigned long long)pid,
					       (unsigned long long)tid, base ? base + 1 : file ? file : "?",
					       (unsigned long long)line, msg ? msg : "",
					       json_is_true(tr) ? " [...]" : "");
				}
			}
			json_decref(o);
		}
		p += n;
		if (*p == '\n')
			p++;
	}
	fflush(stdout);
	return since;
}

int cmd_logs(struct cli_ctx *ctx, int argc, char **argv)
{
	enum { OPT_PID = CLI_OPT_CMD_BASE, OPT_SINCE, OPT_FOLLOW };
	static const struct option opts[] = {
		CLI_COMMON_OPTS,
		{ "pid", required_argument, NULL, OPT_PID },
		{ "since", required_argument, NULL, OPT_SINCE },
		{ "follow", no_argument, NULL, 'f' },
		{ 0 },
	};
	const char *pid_arg = NULL, *since_arg = NULL;
	char base[128] = "/api/logs";
	bool follow = false;
	uint64_t since = 0;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":hf", opts, NULL)) != -1) {
		if (c == OPT_PID) {
			pid_arg = optarg;
			continue;
		}
		if (c == OPT_SINCE) {
			since_arg = optarg;
			continue;
		}
		if (c == 'f' || c == OPT_FOLLOW) {
			follow = true;
			continue;
		}
		rc = cli_common_opt(ctx, c, argv, opts, logs_help);
		if (rc >= 0)
			return rc;
	}
	rc = cli_no_operands(ctx, argc, argv);
	if (rc)
		return rc;
	rc = cli_query_pid_seconds(ctx, pid_arg, NULL, base, sizeof(base), NULL);
	if (rc)
		return rc;
	if (since_arg && qp_parse_u64(since_arg, UINT64_MAX, &since))
		return cli_usage_error(ctx, "invalid --since '%s': want a sequence number", since_arg);
	signal(SIGINT, on_int);
	signal(SIGTERM, on_int);
	do {
		char target[sizeof(base)], num[32];
		struct http_response resp;

		memcpy(target, base, sizeof(base));
		snprintf(num, sizeof(num), "%llu", (unsigned long long)since);
		http_add_query(target, sizeof(target), "since", num);
		rc = cli_api_call(ctx, "GET", target, NULL, CLI_HTTP_TIMEOUT_S, &resp);
		if (rc)
			return rc;
		since = print_logs(ctx, resp.body ? resp.body : "", since);
		http_response_free(&resp);
		if (follow && !interrupted)
			usleep(300 * 1000);
	} while (follow && !interrupted);
	return CLI_OK;
}
