/* options.c - qprofd's command line (options.h): one table of the options
 * (name, argument, help text, what it sets and its range) from which both
 * --help and the parsing are made, so the man page generated from --help
 * (scripts/gen_man.py) lists what the parser takes. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stddef.h>
#include <sys/stat.h>
#include "options.h"


/* What an option does with its argument. */
enum opt_kind {
	OPT_SET_TRUE,	/* a bool field becomes true */
	OPT_COUNT,	/* an int field counts the option (-v -v) */
	OPT_STRING,	/* a const char * field points at the argument */
	OPT_UINT,	/* an unsigned field of SIZE bytes: the argument in MIN..MAX */
	OPT_CALL,	/* PARSE(o, row, arg): 0, 1 (no memory) or 2 (usage, said) */
	OPT_TEXT,	/* no option: HELP is written as it is (the --otlp-* block) */
};

struct opt_row;
typedef int (*opt_parse_fn)(struct options *o, const struct opt_row *r, const char *arg);

struct opt_row {
	const char *name;	/* --NAME */
	char short_name;	/* -X, 0: none */
	bool short_in_help;	/* --help writes "-X, --NAME" */
	const char *arg;	/* the argument's name in --help, NULL: takes none */
	const char *help;	/* NULL: not in --help; lines after the first are indented */
	enum opt_kind kind;
	size_t off, size;	/* the field of struct options */
	int64_t min, max;	/* OPT_UINT */
	opt_parse_fn parse;	/* OPT_CALL */
};

#define FIELD(f) offsetof(struct options, f), sizeof(((struct options *)0)->f)
#define UINT(f, lo, hi) OPT_UINT, FIELD(f), (lo), (hi), NULL
#define CALL(fn) OPT_CALL, 0, 0, 0, 0, (fn)

static int parse_uint_opt(const char *name, const char *s, int64_t min, int64_t max, int64_t *out);

static int opt_pid(struct options *o, const struct opt_row *r, const char *arg)
{
	int64_t v;

	if (qp_grow(&o->pids, &o->pids_cap, o->npids + 1, sizeof(*o->pids)))
		return 1;
	if (parse_uint_opt("--pid", arg, 1, INT32_MAX, &v))
		return 2;
	o->pids[o->npids++] = (int)v;
	return 0;
}

static int opt_binary(struct options *o, const struct opt_row *r, const char *arg)
{
	if (qp_grow(&o->binaries, &o->binaries_cap, o->nbinaries + 1, sizeof(*o->binaries)))
		return 1;
	o->binaries[o->nbinaries++] = arg;
	return 0;
}

static int opt_collector(struct options *o, const struct opt_row *r, const char *arg)
{
	bool ring = !strcmp(r->name, "ring");

	if (qp_collector_parse(ring ? "ring" : arg, &o->collector)) {
		fprintf(stderr, "qprofd: --collector wants ring or bpf, one of them (--ring "
			"is --collector ring), got '%s'\n", ring ? "--ring" : arg);
		return 2;
	}
	return 0;
}

static int opt_unwind(struct options *o, const struct opt_row *r, const char *arg)
{
	if (qp_cpu_unwind_mode_parse(arg, &o->unwind)) {
		fprintf(stderr, "qprofd: --unwind wants fp, dwarf, dwarf-copy or dwarf-all, got '%s'\n", arg);
		return 2;
	}
	return 0;
}

static int opt_ring_records(struct options *o, const struct opt_row *r, const char *arg)
{
	int64_t v;

	if (parse_uint_opt("--ring-records", arg, 0, QPROF_RING_CFG_MAX, &v))
		return 2;
	if (v && (v < QPROF_RING_CFG_MIN || (v & (v - 1)))) {
		fprintf(stderr, "qprofd: --ring-records wants 0 or a power of two in %u..%u, got '%s'\n",
			QPROF_RING_CFG_MIN, QPROF_RING_CFG_MAX, arg);
		return 2;
	}
	o->ring_records = (unsigned int)v;
	return 0;
}

/* --trace-ring-mb, --offcpu-ring-mb: MiB, a power of two 1..1024 */
static int opt_ring_mb(struct options *o, const struct opt_row *r, const char *arg)
{
	bool trace = !strcmp(r->name, "trace-ring-mb");
	int64_t v;

	if (parse_uint_opt(trace ? "--trace-ring-mb" : "--offcpu-ring-mb", arg, 1, 1024, &v))
		return 2;
	if (v & (v - 1)) {
		fprintf(stderr, "qprofd: --%s wants a power of two in 1..1024, got '%s'\n", r->name, arg);
		return 2;
	}
	*(trace ? &o->trace_ring_mb : &o->offcpu_ring_mb) = (unsigned int)v;
	return 0;
}

static int opt_report_dir(struct options *o, const struct opt_row *r, const char *arg)
{
	if (!arg[0]) {
		fprintf(stderr, "qprofd: --report-dir wants a directory\n");
		return 2;
	}
	o->report_dir = arg;
	return 0;
}

static int opt_help(struct options *o, const struct opt_row *r, const char *arg)
{
	qp_options_usage(stdout);
	exit(0);
}

static int opt_version(struct options *o, const struct opt_row *r, const char *arg)
{
	printf("qprofd %s\n", QPROF_VERSION);
	exit(0);
}

/* The options, in the order of --help. */
static const struct opt_row opts[] = {
	{ "pid", 'p', false, "PID", "attach to a running process (repeatable)", CALL(opt_pid) },
	{ "binary", 'b', false, "PATH",
	  "attach to every process, present and future, that runs\n"
	  "this executable or maps this library (repeatable)", CALL(opt_binary) },
	{ "socket", 's', false, "PATH", "unix socket to serve on (default " DEFAULT_SOCKET ")", OPT_STRING,
	  FIELD(socket), 0, 0, NULL },
	{ "listen", 'l', false, "ADDR:PORT",
	  "also serve on a loopback TCP address, e.g. 127.0.0.1:6464:\n"
	  "GET routes only, unless --token-file is given", OPT_STRING, FIELD(listen), 0, 0, NULL },
	{ "token-file", 0, false, "PATH",
	  "the bearer token that POST/DELETE need over --listen\n"
	  "(a root-owned file, mode 0600, or 0640 group qprof)", OPT_STRING, FIELD(token_file), 0, 0, NULL },
	{ "frequency", 'F', false, "HZ", "CPU sampling frequency per CPU, 1..10000 (default 99)",
	  UINT(frequency, 1, 10000) },
	{ "all", 'a', false, NULL, "sample every process, not only the targets", OPT_SET_TRUE, FIELD(all), 0, 0,
	  NULL },
	{ "unwind", 0, false, "MODE",
	  "user stacks: fp (frame pointers only), dwarf (default:\n"
	  "targets' stacks walked in the kernel by CFI tables\n"
	  "compiled from their files; a frame the tables lack\n"
	  "sends the sample's 16 KiB stack copy to qprofd's\n"
	  "unwinder), dwarf-copy (always the copy), dwarf-all\n"
	  "(--all's processes' samples carry copies too)", CALL(opt_unwind) },
	{ "cfi-memory", 0, false, "MB",
	  "kernel memory for the CFI tables, 0..1024 (default 16;\n"
	  "0: no walk in the kernel, every sample copied)", UINT(cfi_memory_mb, 0, 1024) },
	{ "max-sites", 0, false, "N", "(process, scope, parent) aggregates (default 4096)",
	  UINT(max_sites, 16, 1 << 18) },
	{ "span-pending", 0, false, "N",
	  "QPROF_SPAN_BEGIN spans pending at once, all processes\n"
	  "(default 65536; a begin past it is counted table_full)", UINT(spans.pending, 16, 1 << 22) },
	{ "span-timeout-ms", 0, false, "MS",
	  "a span pending longer is dropped and counted\n"
	  "abandoned (default 10000)", UINT(spans.timeout_ms, 10, 3600 * 1000) },
	{ "max-exited", 0, false, "N",
	  "exited targets kept with their data (default 1000;\n"
	  "the oldest are dropped, and counted, beyond)", UINT(max_exited, 0, 1 << 20) },
	{ "report-dir", 0, false, "DIR",
	  "where a target's report is written when it exits\n"
	  "(default " QPROF_REPORT_DIR ")", CALL(opt_report_dir) },
	{ "trace-max-events", 0, false, "N",
	  "events a trace keeps, 1..100000000 (default 1000000;\n"
	  "the rest are counted as dropped in the trace)", UINT(trace_max_events, 1, 100000000) },
	{ "trace-ring-mb", 0, false, "N",
	  "the BPF collector's trace ring buffer, MiB, a power of\n"
	  "two 1..1024 (default " QP_STR(QP_TRACE_RING_MB_DEFAULT) "; records it cannot take are\n"
	  "counted lost in the trace)", CALL(opt_ring_mb) },
	{ "offcpu-ring-mb", 0, false, "N",
	  "the off-CPU intervals' ring buffer, MiB, a power of two\n"
	  "1..1024 (default " QP_STR(QP_OFFCPU_RING_MB_DEFAULT) "; intervals it cannot take are\n"
	  "counted lost)", CALL(opt_ring_mb) },
	{ "no-calibrate", 0, false, NULL,
	  "do not measure the BPF probes' own cost (when a target\n"
	  "first needs the BPF collector), nor subtract it", OPT_SET_TRUE, FIELD(no_calibrate), 0, 0, NULL },
	{ "metrics-pid-label", 0, false, NULL,
	  "give /metrics series a pid label (default: exe, scope,\n"
	  "parent, kind only, which survive restarts)", OPT_SET_TRUE, FIELD(metrics.pid_label), 0, 0, NULL },
	{ "metrics-max-sets", 0, false, "N",
	  "label sets per per-site family of /metrics, 1..1000000\n"
	  "(default 1000; the rest are counted as omitted)", UINT(metrics.max_sets, 1, QP_METRICS_MAX_SETS_LIMIT) },
	{ "collector", 0, false, "ring|bpf",
	  "scope collector of new targets (also --ring): ring, the\n"
	  "default (ABI-2 markers: 0.03-0.2 us a scope here), or bpf\n"
	  "(uprobes, ~40x dearer: 2-7 us a scope; ABI 1, USDT probes)", CALL(opt_collector) },
	{ "ring", 0, false, NULL, NULL, CALL(opt_collector) },
	{ "ring-records", 0, false, "N",
	  "records (16 bytes each) a ring target's new thread rings\n"
	  "get, a power of two 1024..16777216 (default " QP_STR(QP_RING_RECORDS_DEFAULT) "; 0: the\n"
	  "markers' own QPROF_RING_RECORDS)", CALL(opt_ring_records) },
	{ "flight-events", 0, false, "N",
	  "events kept per ring target for GET /api/trace without\n"
	  "seconds= (0..16777216, default 1048576, 48 bytes each)", UINT(flight_events, 0, 1 << 24) },
	{ "heap", 0, false, NULL,
	  "profile the heap of every target (else per target:\n"
	  "POST /api/targets {\"pid\": N, \"heap\": true})", OPT_SET_TRUE, FIELD(heap), 0, 0, NULL },
	{ "heap-interval", 0, false, "B",
	  "mean bytes allocated between two heap samples,\n"
	  "1..1073741824 (default 524288)", UINT(heap_opts.interval, 1, 1 << 30) },
	{ "heap-live", 0, false, "N",
	  "sampled allocations live at once, all processes\n"
	  "(default 65536; beyond, counted live_full)", UINT(heap_opts.max_live, 1, 1 << 24) },
	{ "heap-stacks", 0, false, "N",
	  "distinct allocation stacks, all processes (default\n"
	  "16384; beyond, counted stacks_full)", UINT(heap_opts.max_stacks, 1, 1 << 22) },
	{ "dl-hold-ms", 0, false, "MS",
	  "at most this long a target that loads a library waits,\n"
	  "stopped, until its markers are probed (0..1000,\n"
	  "default 100; 0: no wait, its first calls may be missed)", UINT(dl_hold_ms, 0, QP_DL_HOLD_MAX_MS) },
	{ "no-uprobe-multi", 0, false, NULL,
	  "attach with one perf-event uprobe per site, as on\n"
	  "kernels before 6.6 (slower; for comparison and tests)", OPT_SET_TRUE, FIELD(no_multi), 0, 0, NULL },
	{ NULL, 0, false, NULL, QP_FLEET_USAGE, OPT_TEXT, 0, 0, 0, 0, NULL },	/* --otlp-*: otlp_push.h */
	{ "verbose", 'v', true, NULL, "-vv: debug logging too (default: errors, warnings, info)", OPT_COUNT,
	  FIELD(verbose), 0, 0, NULL },
	{ "help", 'h', true, NULL, "this text", CALL(opt_help) },
	{ "version", 0, false, NULL, "print the version", CALL(opt_version) },
};

#define HELP_COL 22	/* where the help text starts */

/* "  --name ARG" padded to HELP_COL (or two spaces past it), then the help,
 * each line after the first indented to HELP_COL. */
static void usage_row(FILE *f, const struct opt_row *r)
{
	char label[64];
	const char *p, *nl;
	int n;

	if (r->short_in_help)
		n = snprintf(label, sizeof(label), "-%c, --%s", r->short_name, r->name);
	else
		n = snprintf(label, sizeof(label), "--%s", r->name);
	if (r->arg)
		n += snprintf(label + n, sizeof(label) - (size_t)n, " %s", r->arg);
	fprintf(f, "  %-*s", n <= HELP_COL - 4 ? HELP_COL - 2 : n + 2, label);
	for (p = r->help; (nl = strchr(p, '\n')); p = nl + 1)
		fprintf(f, "%.*s\n%*s", (int)(nl - p), p, HELP_COL, "");
	fprintf(f, "%s\n", p);
}

void qp_options_usage(FILE *f)
{
	size_t i;

	fputs("Usage: qprofd [OPTIONS]\n"
	      "qprof's daemon: attaches BPF to the qprof markers of target processes and\n"
	      "serves what it measures over a unix socket (see qprof-cli).\n"
	      "\n",
	      f);
	for (i = 0; i < QP_ARRAY_SIZE(opts); i++) {
		if (opts[i].kind == OPT_TEXT)
			fputs(opts[i].help, f);
		else if (opts[i].help)
			usage_row(f, &opts[i]);
	}
	fputs("\n"
	      "Exit status: 0 clean shutdown, 1 error, 2 bad usage (a --pid of no process, a\n"
	      "--binary of no file among them: checked before anything is loaded), 3 BPF\n"
	      "unavailable.\n",
	      f);
}

static int parse_uint_opt(const char *name, const char *s, int64_t min, int64_t max, int64_t *out)
{
	if (qp_parse_i64(s, min, max, out)) {
		fprintf(stderr, "qprofd: %s wants an integer in %lld..%lld, got '%s'\n", name,
			(long long)min, (long long)max, s);
		return -1;
	}
	return 0;
}

/* The targets named on the command line exist, before anything is loaded
 * (a BPF load and a calibration take a second): a --pid of no process, or
 * a --binary of no regular file, is a usage error. Whether a process can
 * be attached is known only when it is (its markers, its permissions). */
static int check_targets(const struct options *o)
{
	struct stat st;
	size_t i;

	for (i = 0; i < o->npids; i++) {
		if (kill(o->pids[i], 0) && errno == ESRCH) {
			fprintf(stderr, "qprofd: --pid %d: no such process\n", o->pids[i]);
			return 2;
		}
	}
	for (i = 0; i < o->nbinaries; i++) {
		if (stat(o->binaries[i], &st)) {
			fprintf(stderr, "qprofd: --binary %s: %s\n", o->binaries[i], strerror(errno));
			return 2;
		}
		if (!S_ISREG(st.st_mode)) {
			fprintf(stderr, "qprofd: --binary %s: not a regular file\n", o->binaries[i]);
			return 2;
		}
	}
	return 0;
}


/* Row R's argument ARG into O: 0, 1 (no memory) or 2 (a usage error, said). */
static int apply(struct options *o, const struct opt_row *r, const char *arg)
{
	char *field = (char *)o + r->off;
	int64_t v;

	switch (r->kind) {
	case OPT_SET_TRUE:
		*(bool *)field = true;
		return 0;
	case OPT_COUNT:
		(*(int *)field)++;
		return 0;
	case OPT_STRING:
		*(const char **)field = arg;
		return 0;
	case OPT_UINT: {
		char name[40];

		snprintf(name, sizeof(name), "--%s", r->name);
		if (parse_uint_opt(name, arg, r->min, r->max, &v))
			return 2;
		if (r->size == sizeof(uint64_t)) {
			uint64_t u = (uint64_t)v;

			memcpy(field, &u, sizeof(u));
		} else {
			uint32_t u = (uint32_t)v;

			memcpy(field, &u, sizeof(u));
		}
		return 0;
	}
	case OPT_CALL:
		return r->parse(o, r, arg);
	default:
		return 2;
	}
}

/* getopt_long's tables from OPTS: a row's value is its short name, or
 * 256 + its index. */
static void getopt_tables(struct option *lo, char *shorts)
{
	size_t i, n = 0, k = 0;

	for (i = 0; i < QP_ARRAY_SIZE(opts); i++) {
		const struct opt_row *r = &opts[i];
		int val = r->short_name ? r->short_name : 256 + (int)i;

		if (r->kind == OPT_TEXT)
			continue;
		lo[n++] = (struct option){ r->name, r->arg ? required_argument : no_argument, NULL, val };
		if (r->short_name) {
			shorts[k++] = r->short_name;
			if (r->arg)
				shorts[k++] = ':';
		}
	}
	lo[n] = (struct option){ 0 };
	shorts[k] = '\0';
}

static const struct opt_row *row_of(int val)
{
	size_t i;

	if (val >= 256 && (size_t)(val - 256) < QP_ARRAY_SIZE(opts))
		return &opts[val - 256];
	for (i = 0; i < QP_ARRAY_SIZE(opts); i++)
		if (opts[i].short_name && opts[i].short_name == val)
			return &opts[i];
	return NULL;
}

int qp_options_parse(int argc, char **argv, struct options *o)
{
	struct option lo[QP_ARRAY_SIZE(opts) + 1];
	char shorts[2 * QP_ARRAY_SIZE(opts) + 1];
	const struct opt_row *r;
	int c, ret;

	getopt_tables(lo, shorts);
	while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		if (!(r = row_of(c))) {
			fprintf(stderr, "Try 'qprofd --help'.\n");
			return 2;
		}
		if ((ret = apply(o, r, optarg)))
			return ret;
	}
	if (optind < argc) {
		fprintf(stderr, "qprofd: unexpected argument '%s'\nTry 'qprofd --help'.\n", argv[optind]);
		return 2;
	}
	if (o->token_file && !o->listen) {
		fprintf(stderr, "qprofd: --token-file is for --listen (the unix socket checks the peer itself)\n");
		return 2;
	}
	return check_targets(o);
}
