/* trace.bpf.h - the timeline side of the scope programs (scopes.bpf.c,
 * spans.bpf.h): while the daemon records a trace of a process (an entry for
 * its tgid, or QPROF_TRACE_ALL, in trace_pids, and trace_active non-zero),
 * scope exits, marks, values and the steps and ends of spans across threads
 * emit one struct trace_record each into the ring buffer trace_rb. When nothing
 * is being recorded the cost is one load of trace_active. Also the probe
 * cost calibration (calib_ns), subtracted from each measured duration. */
#ifndef QPROF_TRACE_BPF_H
#define QPROF_TRACE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "trace.h"

/* Traces being recorded (set by the daemon through the skeleton's .bss). */
__u32 trace_active = 0;
/* Records lost for want of room in trace_rb, all targets. */
__u64 trace_lost_total = 0;
/* The part of the probes' own cost that falls inside a measured duration
 * (measured by qprofd at start on an empty scope): subtracted from each. */
__u64 calib_ns = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, QPROF_TRACE_MAX_TARGETS);
	__type(key, __u32);
	__type(value, struct trace_target);
} trace_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, QPROF_TRACE_RB_BYTES);
} trace_rb SEC(".maps");

/* DUR minus the calibrated probe cost (never below 0). */
static __always_inline __u64 qp_calibrated(__u64 dur)
{
	__u64 c = calib_ns;

	return dur > c ? dur - c : 0;
}

/* Emit one record for process TGID when a trace of it is being recorded. */
static __always_inline void qp_trace_emit(__u32 tgid, __u16 kind, __u64 site, __u64 ts, __u64 arg,
					  __u32 depth, __u64 arg2)
{
	struct trace_target *t;
	struct trace_record *r;
	__u32 all = QPROF_TRACE_ALL;
	__u64 id;

	if (!trace_active)
		return;
	t = bpf_map_lookup_elem(&trace_pids, &tgid);
	if (!t)
		t = bpf_map_lookup_elem(&trace_pids, &all);
	if (!t)
		return;
	r = bpf_ringbuf_reserve(&trace_rb, sizeof(*r), 0);
	if (!r) {
		__sync_fetch_and_add(&t->lost, 1);
		__sync_fetch_and_add(&trace_lost_total, 1);
		return;
	}
	id = bpf_get_current_pid_tgid();
	r->site = site;
	r->ts_ns = ts;
	r->arg = arg;
	r->pid = tgid;
	r->tid = (__u32)id;
	r->kind = kind;
	r->depth = (__u16)depth;
	r->pad = 0;
	r->arg2 = arg2;
	/* no wakeup: the daemon drains on a short timer while it records */
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}
#endif
