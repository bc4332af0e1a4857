/* model_trace.h - the trace model: what GET /api/trace?seconds=N answers,
 * as the plain document of trace_events.h. A trace session of the BPF
 * collector (collect_trace.h) records N seconds; its records, the log
 * messages of the same window (logs.h) and the threads' kernel names
 * become named per-instance events, sorted by time, bounded by a cap. */
#ifndef QPROF_MODEL_TRACE_H
#define QPROF_MODEL_TRACE_H
#include <stddef.h>
#include <stdint.h>
#include "collect/collect_trace.h"
#include "trace_events.h"
#include "collect/logs.h"
#include "model_src.h"
#include "targets/target_names.h"

struct qp_arena;

struct qp_trace_model {
	struct qp_trace_doc doc;	/* points into the arena */
	struct qp_arena *arena;
	struct qp_trace_event *ev;	/* malloc'd: may be large */
};

/* The model of one session's result R plus the log messages LOGS (any
 * order; those outside R's window or of other processes are left out),
 * named through NM (processes that are no target are left out), at most
 * MAX_EVENTS events: the rest is counted in doc.dropped with R's own.
 * 0 or -ENOMEM. Pure but for what NM does. */
int qp_trace_model_make(const struct qp_trace_result *r, int pid, const struct qp_log_entry *logs,
			size_t nlogs, const struct qp_namer *nm, size_t max_events,
			struct qp_trace_model *out);
void qp_trace_model_free(struct qp_trace_model *m); /* accepts a zeroed model */
struct qp_trace_query {
	int pid;		/* > 0: this process; 0: every target */
	unsigned int seconds;	/* 1..300; 0: the flight recorder (ring targets) */
	size_t max_events;	/* the cap (qprofd --trace-max-events) */
};

/* Record Q->seconds (through qp_model_wait), then make the model; without
 * seconds, the model of what the ring collector's flight recorders keep.
 * 0, -EBUSY (a trace of that process is being recorded already), -ENOSPC
 * (too many traces at once), -ECANCELED (the daemon stops), -ENOTSUP (no
 * trace recorder), -ENOENT (no seconds and no ring target to answer), -EIO,
 * -ENOMEM. */
int qp_trace_model_build(const struct qp_model_src *src, const struct qp_trace_query *q,
			 struct qp_trace_model *out);

/* model_trace_ring.c: the pids of the ring targets PID names (0: all of
 * them), malloc'd in *PIDS; and their instances numbered from SINCE[i]
 * that ended in [LO, HI], appended to R as trace records with their
 * threads' names (overwritten before they were read: counted in R->lost).
 * *OLDEST: the earliest begin appended (UINT64_MAX: none). */
struct qp_ring;
int qp_trace_ring_pids(const struct qp_model_src *src, int pid, uint32_t **pids, size_t *n);
int qp_trace_ring_append(struct qp_ring *g, const uint32_t *pids, const uint64_t *since, size_t npids,
			 uint64_t lo, uint64_t hi, struct qp_trace_result *r, uint64_t *oldest);
#endif
