/* otlp_push.h - qprofd's push of profiles to an OpenTelemetry receiver
 * (--otlp-endpoint): every interval a thread of its own builds the CPU
 * samples and off-CPU time of that interval and the heap of heap targets
 * (export_otlp.h), and queues the request; a second thread POSTs the queue
 * to ENDPOINT/v1development/profiles through libcurl (https with
 * OpenSSL), retrying with backoff. The queue is bounded: a request that
 * finds it full drops the oldest, and what is dropped is counted, never
 * waited for. Neither thread holds a lock of the collectors across a
 * push; a build takes their snapshots as a request does.
 *
 * Also the command-line options of the fleet features (--otlp-*), taken
 * out of argv before the daemon's own parser sees it. */
#ifndef QPROF_OTLP_PUSH_H
#define QPROF_OTLP_PUSH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct qprofd;
struct qp_json;
struct qp_otlp;

#define QP_OTLP_MAX_HEADERS 32

struct qp_fleet_opts {
	const char *otlp_endpoint;	/* http[s]://HOST[:PORT][/prefix]; NULL: no push */
	const char *otlp_headers[QP_OTLP_MAX_HEADERS];	/* "Key=Value" */
	size_t notlp_headers;
	unsigned int otlp_interval_s;	/* 1..3600, default 10 */
	unsigned int otlp_timeout_ms;	/* one POST, 100..60000, default 5000 */
	unsigned int otlp_queue;	/* requests waiting, 1..1024, default 16 */
	const char *service_name;	/* --otlp-service-name, else OTEL_SERVICE_NAME, ... */
	/* --debuginfod URLS ("off": none, whatever DEBUGINFOD_URLS says);
	 * NULL: $DEBUGINFOD_URLS */
	const char *debuginfod;
	const char *debuginfod_cache;	/* NULL: debuginfod/ beside the report directory */
	unsigned int debuginfod_timeout_s;	/* 1..3600, default 30 */
	unsigned int debuginfod_max_mb;		/* 1..65536, default 1024 */
};

/* Take the fleet options out of ARGV (ARGC updated); "--opt VALUE" and
 * "--opt=VALUE". 0, or 2 (bad usage) with the message printed. */
int qp_fleet_args(int *argc, char **argv, struct qp_fleet_opts *o);
/* Their lines of qprofd --help. */
#define QP_FLEET_USAGE                                                                             \
	"  --otlp-endpoint URL  push profiles (OTLP, protobuf over HTTP) to URL's\n"                \
	"                      /v1development/profiles, e.g. http://127.0.0.1:4318;\n"            \
	"                      https:// checks the server's certificate\n"                        \
	"  --otlp-header K=V   an HTTP header of every push (repeatable)\n"                        \
	"  --otlp-interval S   seconds a push covers, 1..3600 (default 10)\n"                      \
	"  --otlp-timeout-ms MS  one push, 100..60000 (default 5000)\n"                            \
	"  --otlp-queue N      pushes waiting, 1..1024 (default 16; beyond, the\n"                 \
	"                      oldest is dropped and counted)\n"                                   \
	"  --otlp-service-name NAME  service.name (default $OTEL_SERVICE_NAME, then\n"             \
	"                      $OTEL_RESOURCE_ATTRIBUTES' one, then unknown_service:EXE)\n"       \
	"  --debuginfod URLS   fetch the debug files of stripped files by build-id from\n"        \
	"                      these debuginfod servers (space-separated; default\n"               \
	"                      $DEBUGINFOD_URLS; off: none), in the background\n"                 \
	"  --debuginfod-cache DIR  where fetched files are kept (default: debuginfod/\n"          \
	"                      beside the report directory)\n"                                    \
	"  --debuginfod-timeout S  a server silent for S seconds is given up, 1..3600\n"          \
	"                      (default 30; a file takes at most 8 times as long)\n"             \
	"  --debuginfod-max-mb N  a larger debug file is refused, 1..65536 (default 1024)\n"

/* The debuginfod fetcher O asks for (--debuginfod, else $DEBUGINFOD_URLS),
 * its cache beside REPORT_DIR unless named; *OUT NULL when none is asked.
 * 0, or 2 (bad usage: a flag's server or cache refused) with the reason
 * printed; a bad $DEBUGINFOD_URLS is warned of and ignored. */
struct qp_dbgf;
int qp_fleet_debuginfod(const struct qp_fleet_opts *o, const char *report_dir, struct qp_dbgf **out);

/* Start pushing for D (O->otlp_endpoint set); *OUT stays NULL when there
 * is nothing to push. 0, or -errno with the reason printed. */
int qp_otlp_start(struct qprofd *d, const struct qp_fleet_opts *o, struct qp_otlp **out);
/* Stop both threads (an unfinished POST is abandoned) and free; accepts NULL. */
void qp_otlp_stop(struct qp_otlp *p);
/* The "otlp" object of /api/status. */
void qp_otlp_status_json(struct qp_otlp *p, struct qp_json *j);
#endif
