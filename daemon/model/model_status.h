/* model_status.h - the daemon's own figures (those of GET /api/status and
 * the counters of /metrics) as a plain struct: scope events and sites, the
 * BPF drop counters by name and their sum, CPU sampling, logs, values,
 * marks, targets by state. No JSON, no I/O of its own. */
#ifndef QPROF_MODEL_STATUS_H
#define QPROF_MODEL_STATUS_H
#include <stdbool.h>
#include <stdint.h>
#include "collect/collect_calibrate.h"
#include "collect/collect_cpu.h"
#include "collect/collect_scopes.h"
#include "collect/collect_trace.h"
#include "model_src.h"

/* Scope events that could not be measured, by reason (bpf/scopes.h). */
struct qp_scope_drops {
	uint64_t exit_without_enter, out_of_order, too_deep, thread_exit, map_full, stack_unavailable;
	uint64_t begin_unended;		/* QPROF_SCOPE_BEGIN replaced before its END */
	/* spans across threads */
	uint64_t span_end_without_begin, span_step_without_begin, span_id_reused, span_table_full,
		span_abandoned;
	uint64_t ring_lost;		/* scopes whose records a ring lost (ring_pair.h's estimate) */
};

struct qp_status_model {
	uint64_t uptime_ms;
	struct {
		bool running;
		bool starting;		/* not running yet: the sampler is loading */
		unsigned int frequency_hz, cpus;
		uint64_t samples, lost;
		uint64_t aged;		/* samples aged out of the CPU table */
		uint64_t table_bytes;	/* what the CPU table holds now */
		bool all;
		struct qp_cpu_unwind_figures unwind;	/* when running */
		char error[256];	/* why it is not running */
	} cpu;
	struct {
		bool running;		/* kernel events traced (offcpu.bpf.h) */
		uint64_t intervals, lost, no_state, kstats_full;	/* struct qp_off_counters */
		struct qp_slow_counters slow;	/* the slowest instances' store */
		uint64_t slow_lost;		/* records slow_rb had no room for */
		char error[160];	/* why not */
	} offcpu;
	struct {
		uint64_t sites, events, dropped;	/* dropped: the sum of drops */
		struct qp_scope_drops drops;
		uint64_t minmax_inexact;	/* min/max updates given up (bpf/scopes.h) */
		struct qp_scope_poll_stats poll;
		uint64_t spans_pending, span_table;	/* after the last sweep; capacity */
	} scopes;
	struct {
		bool running;
		uint64_t received, lost, oldest_seq;
	} logs;
	uint64_t values_lost, marks_lost;
	struct {
		bool running;
		struct qp_tracer_stats st;
	} trace;
	struct qp_calibration calib;
	unsigned int targets_running, targets_exited;
	struct {
		bool ok;		/* read (procfs.h qp_proc_self_usage) */
		uint64_t rss_bytes, cpu_ns;
	} self;			/* qprofd's own resident memory and CPU time */
	struct {
		bool running;		/* the ring collector started */
		bool is_default;	/* new targets go on the ring (no qprofd --collector bpf) */
		uint64_t announces, not_target, bad, refused, lost, dropped_rings;
		uint64_t exits, exits_lost;	/* thread exits of ring threads reported */
		uint64_t exit_heads_unread;	/* ... without the ring's head (older kernels) */
		bool exit_hook;		/* the do_exit program is attached */
		uint32_t ring_records;	/* records a new ring is asked to have (0: the markers') */
		double ns_per_tick;	/* TSC calibration */
	} ring;
};

/* The named counters of COUNTERS (a snapshot's, indexed by enum
 * scope_counter) and their sum. */
void qp_scope_drops_from(const uint64_t *counters, struct qp_scope_drops *out);
uint64_t qp_scope_drops_total(const struct qp_scope_drops *d);

/* The scope figures of OUT from SNAP (sites, events, drops, log, value and
 * mark losses). */
void qp_status_from_snapshot(const struct qp_scope_snapshot *snap, struct qp_status_model *out);

/* Read every figure (the collectors, the registry under its lock). 0 or
 * -EIO when the scope maps could not be read. */
int qp_status_model_build(const struct qp_model_src *src, struct qp_status_model *out);
#endif
