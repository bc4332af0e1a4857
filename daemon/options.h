/* options.h - qprofd's command line: the options it takes, their defaults,
 * their parsing and the --help text (options.c). */
#ifndef QP_OPTIONS_H
#define QP_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "collect/collect_cpu.h"
#include "collect/collect_heap.h"
#include "collect/collect_scopes.h"
#include "collect/collect_threads.h"
#include "symbolize/symbolize.h"
#include "http/http.h"
#include "http/http_auth.h"
#include "targets/lifecycle.h"
#include "common/log.h"
#include "collect/logs.h"
#include "collect/collect_trace.h"
#include "collect/collect_calibrate.h"
#include "http/qprofd.h"
#include "export/report.h"
#include "collect/ring_collect.h"
#include "http/otlp_push.h"
#include "common/util.h"

#define DEFAULT_SOCKET "/run/qprof/qprofd.sock"
/* New rings' records by default (--ring-records): 4 MiB a thread, what
 * kept a 3-thread program at 1 M scopes/s per thread exact on a loaded
 * 2-core VM (docs/guide/ring.md) */
#define QP_RING_RECORDS_DEFAULT 262144
/* The BPF ring buffers sized by flags, MiB (each is mapped twice: RSS twice
 * that). A trace of 1 M scopes/s writes 240 KB between two drains (5 ms);
 * off-CPU intervals, up to 2 KB each, are drained every 50 ms */
#define QP_TRACE_RING_MB_DEFAULT 2
#define QP_OFFCPU_RING_MB_DEFAULT 4
#define QP_XSTR(x) #x
#define QP_STR(x) QP_XSTR(x)

struct options {
	const char *socket;
	const char *listen;
	const char *token_file;
	const char *report_dir;
	int *pids;
	size_t npids, pids_cap;
	const char **binaries;
	size_t nbinaries, binaries_cap;
	unsigned int frequency;
	unsigned int max_sites;
	unsigned int max_exited;
	struct qp_span_opts spans;
	unsigned int dl_hold_ms;
	bool all;
	enum qp_cpu_unwind_mode unwind;
	unsigned int cfi_memory_mb;	/* --cfi-memory: the kernel's CFI tables */
	bool no_multi;
	bool no_calibrate;
	unsigned int trace_max_events;
	unsigned int flight_events;
	unsigned int ring_records;	/* --ring-records: new rings' size asked of the markers */
	unsigned int trace_ring_mb;	/* --trace-ring-mb: the BPF collector's trace ring buffer */
	unsigned int offcpu_ring_mb;	/* --offcpu-ring-mb: the off-CPU intervals' ring buffer */
	enum qp_collector collector;	/* QP_COLLECTOR_DEFAULT: no flag (the ring) */
	struct qp_metrics_opts metrics;
	bool heap;
	struct qp_heap_opts heap_opts;
	int verbose;
};

/* The --help text, to F. */
void qp_options_usage(FILE *f);
/* Parse ARGV into O (its defaults set by the caller); 0, 1 when --help or
 * --version was answered, 2 on a usage error (said on stderr). The targets
 * it names are checked to exist before anything is loaded. */
int qp_options_parse(int argc, char **argv, struct options *o);

#endif
