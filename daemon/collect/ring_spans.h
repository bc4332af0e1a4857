/* ring_spans.h - the spans across threads of the ring collector
 * (QPROF_SPAN_BEGIN/STEP/END records, include/qprof/ring.h): paired by
 * (process, name address, id) on any threads, as bpf/spans.bpf.h pairs
 * them for the BPF collector, with the same drop reasons, table bound and
 * timeout. The rings of a process are read one after the other, so an END
 * read from one thread's ring may come before the BEGIN another thread
 * wrote earlier: events wait in a queue and are paired in time order, up
 * to a watermark the caller gives (a time before which every ring has been
 * read). Pure: no I/O, no lock (the caller's). Unit-tested. */
#ifndef QPROF_RING_SPANS_H
#define QPROF_RING_SPANS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/hashtab.h"
#include "ring_pair.h"

struct qp_ring_span_ev {
	uint64_t ns;		/* CLOCK_MONOTONIC */
	uint64_t site;		/* the marker's descriptor */
	uint64_t name, id;	/* the key, with the process */
	uint32_t pid, tid;
	uint32_t kind;		/* QPROF_REC_BEGIN, QPROF_REC_MARK (a step), QPROF_REC_END */
};

struct qp_ring_spans {
	struct qp_htab pending;	/* struct qp_ring_span_key -> struct qp_ring_span_pend */
	size_t live;		/* pending begins (the rest of the table: ended, kept until rebuilt) */
	size_t max_live;	/* --span-pending */
	uint64_t timeout_ns;	/* --span-timeout-ms */
	struct qp_ring_span_ev *q;	/* waiting for the watermark, sorted when paired */
	size_t nq, qcap, max_q;
	uint64_t swept_ns;	/* the last sweep's watermark */
};

/* What a process's figures are: its counters, its flight recorder (either
 * may be NULL: a process forgotten meanwhile). */
typedef void (*qp_ring_pid_fn)(void *arg, uint32_t pid, struct qp_ring_counts **c,
			       struct qp_ring_flight **fl);

void qp_ring_spans_init(struct qp_ring_spans *sp, size_t max_live, uint64_t timeout_ns, size_t max_q);
void qp_ring_spans_free(struct qp_ring_spans *sp);
/* Queue one event. -ERANGE: stamped more than 2 s after NOW_NS (no record
 * of ours), -ENOSPC: the queue is full. */
int qp_ring_spans_add(struct qp_ring_spans *sp, const struct qp_ring_span_ev *e, uint64_t now_ns);
/* Pair the events stamped before UPTO (all of them when the queue is
 * full), in time order, into A's rows (an END: the begin's site, parent
 * none; a step: its site, parent the begin's site) and the flight
 * recorders; every 250 ms (of UPTO) count the begins older than UPTO -
 * timeout abandoned. */
void qp_ring_spans_pair(struct qp_ring_spans *sp, struct qp_ring_agg *a, uint64_t upto, qp_ring_pid_fn who,
			void *arg);
/* Drop PID's pending begins and queued events, uncounted. */
int qp_ring_spans_forget(struct qp_ring_spans *sp, uint32_t pid);
#endif
