/* profile.h - the contract between bpf/profile.bpf.c and qprofd's CPU
 * collector: the sample record of the ring buffer, the keys the daemon
 * aggregates them under, counters. */
#ifndef QPROF_PROFILE_H
#define QPROF_PROFILE_H

#define QPROF_STACK_DEPTH 127	/* frames kept per stack (perf's default) */
#define QPROF_SAMPLE_SCOPES 4	/* innermost open qprof scopes kept per sample */
#define QPROF_SAMPLE_OPEN_MAX 32 /* open scopes read from a thread ring (QPROF_RING_OPEN) */

/* One sample in the ring buffer: the header, then kern_len bytes of kernel
 * stack and user_len bytes of user stack (instruction pointers, leaf first),
 * then open_len bytes of the thread's open scopes read from its ring (ring
 * collector; site addresses, outermost first). Only the bytes used are sent. */
struct cpu_sample {
	__u32 tgid;
	__u32 kern_len;		/* bytes, a multiple of 8; 0 = none */
	__u32 user_len;
	__u32 open_len;
	__u64 scopes[QPROF_SAMPLE_SCOPES]; /* innermost first, 0 = none */
	char comm[16];
	__u64 ips[2 * QPROF_STACK_DEPTH + 2 + QPROF_SAMPLE_OPEN_MAX];
};

/* What the daemon aggregates samples under: stacks are ids of its own table
 * of distinct stacks (collect_cpu.c), < 0 when there is none. */
struct sample_key {
	__u32 tgid;
	__s32 user_stack;
	__s32 kern_stack;
	__u32 pad;
	__u64 scopes[QPROF_SAMPLE_SCOPES]; /* innermost first, 0 = none */
	__s32 open_stack;	/* the ring's open scopes (outermost first) as a stack id, < 0: none */
	__u32 pad2;
};

enum profile_counter {
	QPROF_PCNT_SAMPLES = 0,	/* samples sent to the ring buffer */
	QPROF_PCNT_LOST_RING,	/* ring buffer full: the sample is lost */
	QPROF_PCNT_LOST_STACK,	/* a stack could not be read: that half is missing */
	QPROF_PCNT__MAX,
};
#endif
