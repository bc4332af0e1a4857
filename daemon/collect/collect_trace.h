/* collect_trace.h - the trace recorder of the BPF collector: a session asks
 * bpf/trace.bpf.h to emit a record per scope instance, mark and value of one
 * process (or of every one), a thread drains the ring buffer into the
 * sessions (each bounded: past its cap it counts what it drops), and the
 * end of a session hands back its records, the kernel's losses for it and
 * the names its threads had. Also the probe cost calibration's setting.
 * Thread-safe. */
#ifndef QPROF_COLLECT_TRACE_H
#define QPROF_COLLECT_TRACE_H
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "bpf/trace.h"

struct qp_scopes;
struct qp_tracer;
struct qp_trace_session;

/* Start the drain thread over S's ring buffer. -errno (err says why). */
int qp_tracer_open(struct qp_tracer **out, struct qp_scopes *s, char *err, size_t errlen);
void qp_tracer_close(struct qp_tracer *t); /* accepts NULL; ends every session */

/* Record PID (QPROF_TRACE_ALL: every process) from now on, keeping at most
 * CAP records. -EBUSY when a session already covers PID (or PID is ALL and
 * any session exists, or an ALL session exists), -ENOSPC past
 * QPROF_TRACE_MAX_TARGETS sessions, -ENOMEM, -EIO (the map refused). */
int qp_trace_begin(struct qp_tracer *t, uint32_t pid, size_t cap, struct qp_trace_session **out);

struct qp_trace_thread_name {
	uint32_t pid, tid;
	char name[64];		/* /proc/PID/task/TID/comm when first seen; "" if gone */
};

struct qp_trace_result {
	struct trace_record *recs;	/* in arrival order (not sorted) */
	size_t n;
	uint64_t dropped;		/* records past the cap */
	uint64_t lost;			/* records the kernel's ring buffer had no room for */
	uint64_t begin_ns, end_ns;	/* CLOCK_MONOTONIC */
	struct qp_trace_thread_name *threads;	/* every (pid, tid) seen, in that order */
	size_t nthreads;
};

/* Stop recording, drain what the kernel holds, free the session and give
 * its records. 0 or -ENOMEM (the session is freed either way). */
int qp_trace_end(struct qp_tracer *t, struct qp_trace_session *ss, struct qp_trace_result *out);
void qp_trace_result_free(struct qp_trace_result *r); /* accepts a zeroed one */

struct qp_tracer_stats {
	unsigned int active;		/* sessions now */
	uint64_t sessions;		/* sessions begun since start */
	uint64_t records;		/* records received */
	uint64_t dropped;		/* past a session's cap */
	uint64_t lost;			/* no room in the kernel's ring buffer */
};
void qp_tracer_stats(struct qp_tracer *t, struct qp_tracer_stats *out);

/* The probe cost subtracted from every measured duration (ns), in the BPF
 * programs' .bss; 0 turns the correction off. */
void qp_scopes_set_calibration(struct qp_scopes *s, uint64_t ns);
uint64_t qp_scopes_calibration(struct qp_scopes *s);
#endif
