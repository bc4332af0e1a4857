/* profile.h - the contract between bpf/profile.bpf.c and qprofd's CPU
 * collector: sample keys and values, counters. */
#ifndef QPROF_PROFILE_H
#define QPROF_PROFILE_H

#define QPROF_STACK_DEPTH 127	/* frames kept per stack (perf's default) */
#define QPROF_SAMPLE_SCOPES 4	/* innermost open qprof scopes kept per sample */

struct sample_key {
	__u32 tgid;
	__s32 user_stack;	/* stack map id, < 0 when none */
	__s32 kern_stack;
	__u32 pad;
	__u64 scopes[QPROF_SAMPLE_SCOPES]; /* innermost first, 0 = none */
};

struct sample_value {
	__u64 count;
	char comm[16];		/* thread group leader's name at first sample */
};

enum profile_counter {
	QPROF_PCNT_SAMPLES = 0,	/* samples kept */
	QPROF_PCNT_LOST_MAP,	/* no room in the sample map */
	QPROF_PCNT_LOST_STACK,	/* no room in the stack map (stack collision or full) */
	QPROF_PCNT__MAX,
};
#endif
