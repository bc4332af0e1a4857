/* offcpu.h - the contract between bpf/offcpu.bpf.h (part of the profile
 * object) and qprofd's off-CPU collector: the record of one off-CPU
 * interval of a target thread, the per-scope kernel figures, and the
 * reasons. Fixed-width types only; both sides include it. */
#ifndef QPROF_OFFCPU_H
#define QPROF_OFFCPU_H
#include "profile.h"

enum offcpu_reason {
	QPROF_OFF_PREEMPTED = 1,	/* switched out runnable: preempted or yielded */
	QPROF_OFF_BLOCKED = 2,		/* switched out asleep (voluntary switch) */
};

/* One interval off the CPU, sent when the thread is switched back in:
 * the header, then kern_len bytes of kernel stack and user_len bytes of
 * user stack taken at the switch-out (leaf first), then open_len bytes of
 * the open scopes its ring header listed (a ring target's thread,
 * outermost first, as in a CPU sample), only the bytes used. */
struct offcpu_record {
	__u32 tgid, tid;
	__u32 kern_len;		/* bytes, a multiple of 8 */
	__u32 user_len;
	__u64 ts_out;		/* bpf_ktime_get_ns() at the switch-out */
	__u64 ts_wake;		/* at the wakeup (blocked only; 0: none seen) */
	__u64 ts_in;		/* at the switch-in */
	__u32 reason;		/* enum offcpu_reason */
	__u32 open_len;		/* bytes of a ring thread's open scopes after the stacks */
	__u32 migrations;	/* CPU changes while off (a task moves only then) */
	__u32 walk;		/* enum cfi_walk_end (cfiwalk.h): kept ends: the user stack is the CFI walk's */
	__u64 scopes[QPROF_SAMPLE_SCOPES];	/* innermost first at the switch-out, 0 = none */
	char comm[16];
	__u64 span_site;	/* the span open on the thread at the switch-out (its QPROF_SPAN_BEGIN site), 0 = none */
	__u64 span_id;		/* ... and its id (0 when span_site is) */
	__u64 ips[2 * QPROF_STACK_DEPTH + 2 + QPROF_SAMPLE_OPEN_MAX];
};

/* Kernel figures per (process, innermost open scope, its parent): the
 * key is struct scope_key of scopes.h, so they join the scope rows. */
struct scope_kstats {
	__u64 off_cpu_ns;
	__u64 voluntary;	/* switches out asleep */
	__u64 involuntary;	/* switches out runnable */
	__u64 migrations;
	__u64 page_faults;
	__u64 irq_ns;		/* device irq handlers and softirqs run on its time */
};

/* A user page fault, or one run of an irq handler or softirq, of a ring
 * target's thread while a scope of its ring header is open (kev_ring):
 * the daemon counts them inside the ring collector's slow instances, whose
 * enters and exits the kernel never sees. */
enum kev_kind {
	QPROF_KEV_FAULT = 1,
	QPROF_KEV_IRQ = 2,
};

struct kev_record {
	__u64 ts;		/* bpf_ktime_get_ns() at the fault, or at the irq's end */
	__u32 tgid, tid;
	__u32 kind;		/* enum kev_kind */
	__u32 ns;		/* the irq's run time (saturated); 0 for a fault */
};

#define QPROF_KEV_RING_BYTES (1u << 20)
#define QPROF_KSTATS_MAX 16384	/* (process, scope, parent) with kernel figures */
#define QPROF_OFF_RING_BYTES (8u << 20)

#endif
