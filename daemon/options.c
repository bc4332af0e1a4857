/* options.c - qprofd's command line: --help and the parsing of the options
 * (options.h). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "options.h"

void qp_options_usage(FILE *f)
{
	fprintf(f,
		"Usage: qprofd [OPTIONS]\n"
		"qprof's daemon: attaches BPF to the qprof markers of target processes and\n"
		"serves what it measures over a unix socket (see qprof-cli).\n"
		"\n"
		"  --pid PID           attach to a running process (repeatable)\n"
		"  --binary PATH       attach to every process, present and future, that runs\n"
		"                      this executable or maps this library (repeatable)\n"
		"  --socket PATH       unix socket to serve on (default " DEFAULT_SOCKET ")\n"
		"  --listen ADDR:PORT  also serve on a loopback TCP address, e.g. 127.0.0.1:6464:\n"
		"                      GET routes only, unless --token-file is given\n"
		"  --token-file PATH   the bearer token that POST/DELETE need over --listen\n"
		"                      (a root-owned file, mode 0600, or 0640 group qprof)\n"
		"  --frequency HZ      CPU sampling frequency per CPU, 1..10000 (default 99)\n"
		"  --all               sample every process, not only the targets\n"
		"  --unwind MODE       user stacks: fp (frame pointers only), dwarf (default:\n"
		"                      targets' samples also carry 16 KiB of stack, unwound\n"
		"                      by CFI in qprofd), dwarf-all (so do --all's processes)\n"
		"  --max-sites N       (process, scope, parent) aggregates (default 4096)\n"
		"  --span-pending N    QPROF_SPAN_BEGIN spans pending at once, all processes\n"
		"                      (default 65536; a begin past it is counted table_full)\n"
		"  --span-timeout-ms MS  a span pending longer is dropped and counted\n"
		"                      abandoned (default 10000)\n"
		"  --max-exited N      exited targets kept with their data (default 1000;\n"
		"                      the oldest are dropped, and counted, beyond)\n"
		"  --report-dir DIR    where a target's report is written when it exits\n"
		"                      (default " QPROF_REPORT_DIR ")\n"
		"  --trace-max-events N  events a trace keeps, 1..100000000 (default 1000000;\n"
		"                      the rest are counted as dropped in the trace)\n"
		"  --no-calibrate      do not measure the probes' own cost at start, nor\n"
		"                      subtract it from durations\n"
		"  --metrics-pid-label  give /metrics series a pid label (default: exe, scope,\n"
		"                      parent, kind only, which survive restarts)\n"
		"  --metrics-max-sets N  label sets per per-site family of /metrics, 1..1000000\n"
		"                      (default 1000; the rest are counted as omitted)\n"
		"  --collector ring|bpf  scope collector of new targets (also --ring): ring, the\n"
		"                      default (ABI-2 markers: 0.03-0.2 us a scope here), or bpf\n"
		"                      (uprobes, ~40x dearer: 2-7 us a scope; ABI 1, USDT probes)\n"
		"  --ring-records N    records (16 bytes each) a ring target's new thread rings\n"
		"                      get, a power of two 1024..16777216 (default "
		QP_STR(QP_RING_RECORDS_DEFAULT) "; 0: the\n"
		"                      markers' own QPROF_RING_RECORDS)\n"
		"  --flight-events N   events kept per ring target for GET /api/trace without\n"
		"                      seconds= (0..16777216, default 1048576, 48 bytes each)\n"
		"  --heap              profile the heap of every target (else per target:\n"
		"                      POST /api/targets {\"pid\": N, \"heap\": true})\n"
		"  --heap-interval B   mean bytes allocated between two heap samples,\n"
		"                      1..1073741824 (default 524288)\n"
		"  --heap-live N       sampled allocations live at once, all processes\n"
		"                      (default 65536; beyond, counted live_full)\n"
		"  --heap-stacks N     distinct allocation stacks, all processes (default\n"
		"                      16384; beyond, counted stacks_full)\n"
		"  --dl-hold-ms MS     at most this long a target that loads a library waits,\n"
		"                      stopped, until its markers are probed (0..1000,\n"
		"                      default 100; 0: no wait, its first calls may be missed)\n"
		"  --no-uprobe-multi   attach with one perf-event uprobe per site, as on\n"
		"                      kernels before 6.6 (slower; for comparison and tests)\n"
		QP_FLEET_USAGE	/* --otlp-*: otlp_push.h */
		"  -v, --verbose       -vv: debug logging too (default: errors, warnings, info)\n"
		"  -h, --help          this text\n"
		"  --version           print the version\n"
		"\n"
		"Exit status: 0 clean shutdown, 1 error, 2 bad usage (a --pid of no process, a\n"
		"--binary of no file among them: checked before anything is loaded), 3 BPF\n"
		"unavailable.\n");
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

int qp_options_parse(int argc, char **argv, struct options *o)
{
	enum { OPT_VERSION = 256, OPT_MAXS, OPT_NO_MULTI, OPT_REPORT_DIR, OPT_MAX_EXITED, OPT_TOKEN,
	       OPT_SPAN_PENDING, OPT_SPAN_TIMEOUT, OPT_TRACE_MAX, OPT_NO_CALIB, OPT_RING,
	       OPT_METRICS_PID, OPT_METRICS_SETS, OPT_HEAP, OPT_HEAP_INTERVAL, OPT_HEAP_LIVE, OPT_HEAP_STACKS,
	       OPT_DL_HOLD, OPT_UNWIND, OPT_FLIGHT, OPT_RING_RECORDS, OPT_COLLECTOR };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "binary", required_argument, NULL, 'b' },
		{ "socket", required_argument, NULL, 's' },
		{ "listen", required_argument, NULL, 'l' },
		{ "frequency", required_argument, NULL, 'F' },
		{ "all", no_argument, NULL, 'a' },
		{ "unwind", required_argument, NULL, OPT_UNWIND },
		{ "max-sites", required_argument, NULL, OPT_MAXS },
		{ "no-uprobe-multi", no_argument, NULL, OPT_NO_MULTI },
		{ "ring", no_argument, NULL, OPT_RING },
		{ "ring-records", required_argument, NULL, OPT_RING_RECORDS },
		{ "collector", required_argument, NULL, OPT_COLLECTOR },
		{ "heap", no_argument, NULL, OPT_HEAP },
		{ "heap-interval", required_argument, NULL, OPT_HEAP_INTERVAL },
		{ "heap-live", required_argument, NULL, OPT_HEAP_LIVE },
		{ "heap-stacks", required_argument, NULL, OPT_HEAP_STACKS },
		{ "report-dir", required_argument, NULL, OPT_REPORT_DIR },
		{ "max-exited", required_argument, NULL, OPT_MAX_EXITED },
		{ "span-pending", required_argument, NULL, OPT_SPAN_PENDING },
		{ "span-timeout-ms", required_argument, NULL, OPT_SPAN_TIMEOUT },
		{ "dl-hold-ms", required_argument, NULL, OPT_DL_HOLD },
		{ "token-file", required_argument, NULL, OPT_TOKEN },
		{ "trace-max-events", required_argument, NULL, OPT_TRACE_MAX },
		{ "flight-events", required_argument, NULL, OPT_FLIGHT },
		{ "no-calibrate", no_argument, NULL, OPT_NO_CALIB },
		{ "metrics-pid-label", no_argument, NULL, OPT_METRICS_PID },
		{ "metrics-max-sets", required_argument, NULL, OPT_METRICS_SETS },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ 0 },
	};
	int64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "p:b:s:l:F:avh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p': {
			int *np = realloc(o->pids, (o->npids + 1) * sizeof(*np));

			if (!np)
				return 1;
			o->pids = np;
			if (parse_uint_opt("--pid", optarg, 1, INT32_MAX, &v))
				return 2;
			o->pids[o->npids++] = (int)v;
			break;
		}
		case 'b': {
			const char **nb = realloc(o->binaries, (o->nbinaries + 1) * sizeof(*nb));

			if (!nb)
				return 1;
			o->binaries = nb;
			o->binaries[o->nbinaries++] = optarg;
			break;
		}
		case 's':
			o->socket = optarg;
			break;
		case 'l':
			o->listen = optarg;
			break;
		case 'F':
			if (parse_uint_opt("--frequency", optarg, 1, 10000, &v))
				return 2;
			o->frequency = (unsigned int)v;
			break;
		case 'a':
			o->all = true;
			break;
		case OPT_MAXS:
			if (parse_uint_opt("--max-sites", optarg, 16, 1 << 18, &v))
				return 2;
			o->max_sites = (unsigned int)v;
			break;
		case OPT_RING:
		case OPT_COLLECTOR:
			if (qp_collector_parse(c == OPT_RING ? "ring" : optarg, &o->collector)) {
				fprintf(stderr, "qprofd: --collector wants ring or bpf, one of them (--ring "
					"is --collector ring), got '%s'\n", c == OPT_RING ? "--ring" : optarg);
				return 2;
			}
			break;
		case OPT_UNWIND:
			if (qp_cpu_unwind_mode_parse(optarg, &o->unwind)) {
				fprintf(stderr, "qprofd: --unwind wants fp, dwarf or dwarf-all, got '%s'\n",
					optarg);
				return 2;
			}
			break;
		case OPT_NO_MULTI:
			o->no_multi = true;
			break;
		case OPT_HEAP:
			o->heap = true;
			break;
		case OPT_HEAP_INTERVAL:
			if (parse_uint_opt("--heap-interval", optarg, 1, 1 << 30, &v))
				return 2;
			o->heap_opts.interval = (uint64_t)v;
			break;
		case OPT_HEAP_LIVE:
			if (parse_uint_opt("--heap-live", optarg, 1, 1 << 24, &v))
				return 2;
			o->heap_opts.max_live = (uint32_t)v;
			break;
		case OPT_HEAP_STACKS:
			if (parse_uint_opt("--heap-stacks", optarg, 1, 1 << 22, &v))
				return 2;
			o->heap_opts.max_stacks = (uint32_t)v;
			break;
		case OPT_MAX_EXITED:
			if (parse_uint_opt("--max-exited", optarg, 0, 1 << 20, &v))
				return 2;
			o->max_exited = (unsigned int)v;
			break;
		case OPT_SPAN_PENDING:
			if (parse_uint_opt("--span-pending", optarg, 16, 1 << 22, &v))
				return 2;
			o->spans.pending = (unsigned int)v;
			break;
		case OPT_SPAN_TIMEOUT:
			if (parse_uint_opt("--span-timeout-ms", optarg, 10, 3600 * 1000, &v))
				return 2;
			o->spans.timeout_ms = (uint64_t)v;
			break;
		case OPT_TRACE_MAX:
			if (parse_uint_opt("--trace-max-events", optarg, 1, 100000000, &v))
				return 2;
			o->trace_max_events = (unsigned int)v;
			break;
		case OPT_RING_RECORDS:
			if (parse_uint_opt("--ring-records", optarg, 0, QPROF_RING_CFG_MAX, &v))
				return 2;
			if (v && (v < QPROF_RING_CFG_MIN || (v & (v - 1)))) {
				fprintf(stderr, "qprofd: --ring-records wants 0 or a power of two in %u..%u, got '%s'\n",
					QPROF_RING_CFG_MIN, QPROF_RING_CFG_MAX, optarg);
				return 2;
			}
			o->ring_records = (unsigned int)v;
			break;
		case OPT_FLIGHT:
			if (parse_uint_opt("--flight-events", optarg, 0, 1 << 24, &v))
				return 2;
			o->flight_events = (unsigned int)v;
			break;
		case OPT_NO_CALIB:
			o->no_calibrate = true;
			break;
		case OPT_METRICS_PID:
			o->metrics.pid_label = true;
			break;
		case OPT_METRICS_SETS:
			if (parse_uint_opt("--metrics-max-sets", optarg, 1, QP_METRICS_MAX_SETS_LIMIT, &v))
				return 2;
			o->metrics.max_sets = (unsigned int)v;
			break;
		case OPT_TOKEN:
			o->token_file = optarg;
			break;
		case OPT_DL_HOLD:
			if (parse_uint_opt("--dl-hold-ms", optarg, 0, QP_DL_HOLD_MAX_MS, &v))
				return 2;
			o->dl_hold_ms = (unsigned int)v;
			break;
		case OPT_REPORT_DIR:
			if (!optarg[0]) {
				fprintf(stderr, "qprofd: --report-dir wants a directory\n");
				return 2;
			}
			o->report_dir = optarg;
			break;
		case 'v':
			o->verbose++;
			break;
		case 'h':
			qp_options_usage(stdout);
			exit(0);
		case OPT_VERSION:
			printf("qprofd %s\n", QPROF_VERSION);
			exit(0);
		default:
			fprintf(stderr, "Try 'qprofd --help'.\n");
			return 2;
		}
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
