/* trace_events.h - the timeline as plain data: per-instance events (a
 * scope instance with its begin, duration and depth; a mark, a log line, a
 * value; the begin, steps and end of a span across threads), the threads and processes with their kernel names, and what was
 * dropped or lost. Any collector fills it (model_trace.c for the BPF
 * collector's trace sessions; a ring drain the same way); export_trace.c
 * writes it as Chrome Trace Event Format JSON. */
#ifndef QPROF_TRACE_EVENTS_H
#define QPROF_TRACE_EVENTS_H
#include <stddef.h>
#include <stdint.h>

enum qp_trace_ev_kind {
	QP_TEV_SCOPE,
	QP_TEV_MARK,
	QP_TEV_LOG,
	QP_TEV_VALUE,
	QP_TEV_ABEGIN,		/* a span across threads began (Chrome "b") ... */
	QP_TEV_ASTEP,		/* ... a step of it ("n") ... */
	QP_TEV_AEND,		/* ... it ended ("e"); the three share name and id */
};

struct qp_trace_event {
	enum qp_trace_ev_kind kind;
	uint32_t pid, tid;
	uint32_t depth;		/* scopes: open scopes around it on its thread */
	uint64_t ts_ns;		/* CLOCK_MONOTONIC; a scope's begin */
	uint64_t dur_ns;	/* scopes */
	double value;		/* values */
	const char *name;	/* scope, mark, value or span name; a log's site (may be NULL) */
	const char *msg;	/* logs; a span's step: the step's name */
	uint64_t id;		/* spans across threads */
};

struct qp_trace_thread {
	uint32_t pid, tid;
	const char *name;	/* the kernel's name (comm); NULL: "TID" */
};

struct qp_trace_process {
	uint32_t pid;
	const char *name;	/* NULL: "PID" */
};

struct qp_trace_doc {
	const struct qp_trace_event *ev;
	size_t n;
	const struct qp_trace_thread *threads;
	size_t nthreads;
	const struct qp_trace_process *procs;
	size_t nprocs;
	const char *collector;		/* "bpf" or "ring" */
	uint64_t begin_ns, end_ns;	/* the window recorded */
	uint64_t dropped;		/* events past the cap */
	uint64_t lost;			/* events the collector's buffer had no room for */
	uint64_t calibration_ns;
};

/* Sort EV by time, then depth (an enclosing scope before the scopes it
 * holds when they begin together), then pid, tid, kind. */
void qp_trace_events_sort(struct qp_trace_event *ev, size_t n);

#endif
