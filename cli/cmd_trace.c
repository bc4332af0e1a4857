/* cmd_trace.c - qprof-cli trace -o FILE.json [--pid N] [--seconds S]
 * [--format chrome|speedscope] [--max-mb N]: a timeline from GET
 * /api/trace, written through a temporary file renamed into place. The
 * wait shows a countdown on a terminal (one line otherwise); the summary
 * (on stderr, also when the trace goes to standard output) says how many
 * events the file holds, how many were dropped or lost, and where the size
 * cap cut it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"

static const char trace_help[] =
	"Usage: qprof-cli trace -o FILE.json [--pid N] [--seconds S]\n"
	"                 [--format chrome|speedscope] [--max-mb N]\n"
	"\n"
	"Record a timeline: every scope instance (with its nesting), mark, value, log\n"
	"line and span across threads (async events) of the next S seconds (1..300).\n"
	"\n"
	"  -o FILE       write to FILE (\"-\": standard output)\n"
	"  --pid N       only process N (default: every target)\n"
	"  --seconds S   how long to record. Without it the daemon answers its flight\n"
	"                recorder (ring-collector targets); BPF-collector targets need it\n"
	"  --format F    chrome (default): Chrome Trace Event Format JSON, everything;\n"
	"                open it in Perfetto (ui.perfetto.dev) or chrome://tracing.\n"
	"                speedscope: speedscope's own format, scopes only, one profile\n"
	"                per thread; smaller, and what speedscope opens fastest\n"
	"  --max-mb N    keep the file within N MB (10^6 bytes, 1..4096): the events\n"
	"                from the first that does not fit are left out, and the file\n"
	"                and this command say where it was cut\n"
	"\n"
	"One trace per target at a time (HTTP 409 otherwise). Past the daemon's cap\n"
	"(qprofd --trace-max-events) events are dropped and counted in the file.\n";

struct progress {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int64_t sec;
};

/* A countdown on stderr (a terminal) until the answer comes. */
static void *show_progress(void *arg)
{
	struct progress *p = arg;
	struct timespec until;
	int64_t left = p->sec;

	clock_gettime(CLOCK_REALTIME, &until);
	pthread_mutex_lock(&p->lock);
	while (!p->done) {
		if (left > 0)
			fprintf(stderr, "\rrecording: %lld s left   ", (long long)left);
		else
			fprintf(stderr, "\rrecorded; waiting for the trace...   ");
		fflush(stderr);
		until.tv_sec++;
		while (!p->done && pthread_cond_timedwait(&p->cond, &p->lock, &until) == 0)
			;
		left--;
	}
	pthread_mutex_unlock(&p->lock);
	fprintf(stderr, "\r\033[K");
	return NULL;
}

/* The figures of the answer's trailer (written last by the daemon):
 * otherData of Chrome's format, "qprof" of speedscope's. */
static void summary(const struct http_response *resp, const char *out)
{
	const char *key = memmem(resp->body, resp->body_len < 64 ? resp->body_len : 64, "speedscope", 10)
				  ? "\"qprof\":" : "\"otherData\":";
	uint64_t events = 0, dropped = 0, lost = 0, cut = 0, cut_at = 0, begin = 0, max_bytes = 0;
	uint64_t marks = 0, values = 0, logs = 0, spans = 0;
	bool speedscope = key[1] == 'q';
	const char *p = NULL, *q = resp->body;
	json_error_t jerr;
	json_t *o;

	while (q && (q = memmem(q, resp->body_len - (size_t)(q - resp->body), key, strlen(key)))) {
		p = q;
		q += strlen(key);
	}
	if (!p) {
		fprintf(stderr, "wrote %s (%zu bytes)\n", out, resp->body_len);
		return;
	}
	p += strlen(key);
	o = json_loadb(p, resp->body_len - (size_t)(p - resp->body), JSON_DISABLE_EOF_CHECK, &jerr);
	cli_json_u64(o, speedscope ? "scopes" : "events", &events);
	cli_json_u64(o, "dropped_events", &dropped);
	cli_json_u64(o, "lost_events", &lost);
	cli_json_u64(o, speedscope ? "cut_scopes" : "cut_events", &cut);
	cli_json_u64(o, "cut_at_ns", &cut_at);
	cli_json_u64(o, "begin_ns", &begin);
	cli_json_u64(o, "max_bytes", &max_bytes);
	if (speedscope) {
		json_t *l = o ? json_object_get(o, "left_out") : NULL;

		cli_json_u64(l, "marks", &marks);
		cli_json_u64(l, "values", &values);
		cli_json_u64(l, "logs", &logs);
		cli_json_u64(l, "span_events", &spans);
	}
	json_decref(o);
	fprintf(stderr, "wrote %s: %llu %s (%zu bytes)", out, (unsigned long long)events,
		speedscope ? "scopes" : "events", resp->body_len);
	if (dropped || lost)
		fprintf(stderr, "; %llu dropped past the cap, %llu lost (buffer full)",
			(unsigned long long)dropped, (unsigned long long)lost);
	fputc('\n', stderr);
	if (cut) {
		uint64_t at = cut_at > begin ? cut_at - begin : 0;

		fprintf(stderr, "note: the trace was cut at the %llu MB cap, %llu.%03llu s into the window: "
			"%llu later %s left out\n", (unsigned long long)(max_bytes / 1000000),
			(unsigned long long)(at / 1000000000), (unsigned long long)(at % 1000000000 / 1000000),
			(unsigned long long)cut, speedscope ? "scopes" : "events");
	}
	if (marks || values || logs || spans)
		fprintf(stderr, "note: the speedscope format holds scopes only: %llu marks, %llu values, "
			"%llu log lines and %llu span events are in --format chrome\n",
			(unsigned long long)marks, (unsigned long long)values, (unsigned long long)logs,
			(unsigned long long)spans);
}

int cmd_trace(struct cli_ctx *ctx, int argc, char **argv)
{
	enum { OPT_PID = CLI_OPT_CMD_BASE, OPT_SECONDS, OPT_FORMAT, OPT_MAX_MB };
	static const struct option opts[] = {
		CLI_COMMON_OPTS,
		{ "pid", required_argument, NULL, OPT_PID },
		{ "seconds", required_argument, NULL, OPT_SECONDS },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "max-mb", required_argument, NULL, OPT_MAX_MB },
		{ 0 },
	};
	const char *pid_arg = NULL, *sec_arg = NULL, *out = NULL, *format = NULL, *mb_arg = NULL;
	struct progress pg = { .done = false };
	struct http_response resp;
	struct cli_call_err e;
	char target[256] = "/api/trace";
	pthread_t th;
	bool shown = false;
	int64_t sec = 0, mb;
	int c, rc;

	while ((c = cli_next_opt(ctx, argc, argv, opts, trace_help, &rc)) > 0) {
		switch (c) {
		case OPT_PID:
			pid_arg = optarg;
			continue;
		case OPT_SECONDS:
			sec_arg = optarg;
			continue;
		case 'o':
			out = optarg;
			continue;
		case OPT_FORMAT:
			format = optarg;
			continue;
		case OPT_MAX_MB:
			mb_arg = optarg;
			continue;
		}
	}
	if (rc >= 0)
		return rc;
	if (!out)
		return cli_usage_error(ctx, "-o FILE.json is required");
	if (!out[0])
		return cli_usage_error(ctx, "-o wants a file name");
	if (format && strcmp(format, "chrome") && strcmp(format, "speedscope"))
		return cli_usage_error(ctx, "--format must be chrome or speedscope");
	if (mb_arg) {
		char num[24];

		if (qp_parse_i64(mb_arg, 1, 4096, &mb))
			return cli_usage_error(ctx, "--max-mb must be an integer in 1..4096 (MB of 10^6 bytes)");
		snprintf(num, sizeof(num), "%lld", (long long)mb);
		if (http_add_query(target, sizeof(target), "max_mb", num))
			return cli_fail(ctx, "request target too long");
	}
	if (format && http_add_query(target, sizeof(target), "format", format))
		return cli_fail(ctx, "request target too long");
	rc = cli_query_pid_seconds(ctx, pid_arg, sec_arg, target, sizeof(target), &sec);
	if (rc)
		return rc;
	if (sec > CLI_SECONDS_MAX)
		sec = CLI_SECONDS_MAX;	/* what the daemon will do: the countdown says so */
	if (sec && isatty(STDERR_FILENO)) {
		pthread_mutex_init(&pg.lock, NULL);
		pthread_cond_init(&pg.cond, NULL);
		pg.sec = sec;
		shown = !pthread_create(&th, NULL, show_progress, &pg);
	} else if (sec) {
		fprintf(stderr, "recording a %lld s trace...\n", (long long)sec);
	}
	rc = cli_call_quiet(cli_socket(ctx), "GET", target, NULL, (int)sec + 2 * CLI_HTTP_TIMEOUT_S, &resp, &e);
	if (shown) {
		pthread_mutex_lock(&pg.lock);
		pg.done = true;
		pthread_cond_signal(&pg.cond);
		pthread_mutex_unlock(&pg.lock);
		pthread_join(th, NULL);
	}
	if (rc)
		return cli_call_failed(ctx, &e);
	rc = cli_write_body(ctx, out, &resp, summary);
	if (rc == CLI_OK && !strcmp(out, "-"))
		summary(&resp, "standard output");
	http_response_free(&resp);
	return rc;
}
