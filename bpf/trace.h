/* trace.h - the contract between bpf/trace.bpf.h and qprofd's trace
 * recorder (daemon/collect/collect_trace.c): the per-instance record a
 * scope exit, a mark, a value or a span across threads emits into the ring buffer `trace_rb` while
 * a trace of its process is being recorded, and the per-target state the
 * daemon keeps in `trace_pids`. Fixed-width types only; both sides include it. */
#ifndef QPROF_TRACE_H
#define QPROF_TRACE_H

enum trace_kind {
	QPROF_TR_SCOPE = 1,	/* ts_ns = begin, arg = duration (calibrated) */
	QPROF_TR_MARK = 2,	/* ts_ns = the hit, arg = 0 */
	QPROF_TR_VALUE = 3,	/* ts_ns = the hit, arg = the double's IEEE-754 bits */
	QPROF_TR_ASPAN = 4,	/* a span across threads ended: site = its begin's, ts_ns = the
				 * begin, arg = duration, arg2 = the id; tid the ending thread */
	QPROF_TR_ASTEP = 5,	/* a step of one: site = the step's, ts_ns = the hit, arg = the
				 * id, arg2 = the begin's site */
};

struct trace_record {
	__u64 site;		/* runtime address of the struct qprof_site (or span pseudo site) */
	__u64 ts_ns;		/* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u64 arg;
	__u32 pid, tid;
	__u16 kind;		/* enum trace_kind */
	__u16 depth;		/* scopes: open scopes around it on its thread (0: top level) */
	__u32 pad;
	__u64 arg2;		/* spans across threads (above); else 0 */
};

/* Key 0 of trace_pids: every process the programs fire for. */
#define QPROF_TRACE_ALL 0

/* Value of trace_pids: records the ring buffer had no room for. */
struct trace_target {
	__u64 lost;
};

/* Size of trace_rb (bytes): about 300 000 records waiting to be drained. */
#define QPROF_TRACE_RB_BYTES (16u << 20)
#define QPROF_TRACE_MAX_TARGETS 256

#endif
