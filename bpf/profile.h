/* profile.h - the contract between bpf/profile.bpf.c and qprofd's CPU
 * collector: the sample record of the ring buffer, the keys the daemon
 * aggregates them under, counters. */
#ifndef QPROF_PROFILE_H
#define QPROF_PROFILE_H

#define QPROF_STACK_DEPTH 127	/* frames kept per stack (perf's default) */
#define QPROF_SAMPLE_SCOPES 4	/* innermost open qprof scopes kept per sample */
#define QPROF_SAMPLE_OPEN_MAX 32 /* open scopes read from a thread ring (QPROF_RING_OPEN) */
#define QPROF_USTACK_BYTES 16384 /* user stack copied from sp for the daemon's CFI unwinder */
#define QPROF_UREGS 17		/* x86-64 DWARF registers 0..16: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip */

/* cpu_targets values: bits */
#define QPROF_CPU_TARGET 1	/* sample it */
#define QPROF_CPU_COPY 2	/* and copy its user stack and registers (CFI unwinding) */
#define QPROF_CPU_WALK 4	/* walk its user stack in the kernel by CFI tables (cfiwalk.bpf.h) first */

/* One sample in the ring buffer: the header, then kern_len bytes of kernel
 * stack and user_len bytes of user stack (instruction pointers, leaf first,
 * the user one walked by frame pointers), then open_len bytes of the
 * thread's open scopes read from its ring (ring collector; site addresses,
 * outermost first), then copy_len bytes of the user stack from regs[7]
 * (sp) up, for the daemon to unwind by CFI. Only the bytes used are sent.
 * A target walked in the kernel (QPROF_CPU_WALK) whose walk ended well
 * carries the walked stack as its user stack, and no copy. */
struct cpu_sample {
	__u32 tgid;
	__u32 kern_len;		/* bytes, a multiple of 8; 0 = none */
	__u32 user_len;
	__u32 open_len;
	__u32 copy_len;		/* bytes of stack copied; 0 = none (regs unset) */
	__u64 scopes[QPROF_SAMPLE_SCOPES]; /* innermost first, 0 = none */
	char comm[16];
	__u32 tid;
	__u32 copy_fail;	/* 1: a copy was wanted but no read of the stack succeeded */
	__u32 walk;		/* enum cfi_walk_end (cfiwalk.h): kept ends: user_len holds the walked stack */
	__u32 walk_pad;
	__u64 ts;		/* bpf_ktime_get_ns(): joins a sample to a scope instance */
	__u64 span_site;	/* the QPROF_SPAN_BEGIN site of the span open on the thread, 0 = none */
	__u64 span_id;		/* ... and its id */
	__u64 regs[QPROF_UREGS];	/* user registers, DWARF numbering */
	__u64 ips[2 * QPROF_STACK_DEPTH + 2 + QPROF_SAMPLE_OPEN_MAX];
	__u8 stack[QPROF_USTACK_BYTES];	/* room: the copy follows the used ips and open scopes */
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
	__u32 tid;		/* the thread: its name (comm) and labels go with it */
	__u64 span_site;	/* the span open on the thread (its QPROF_SPAN_BEGIN site), 0 = none */
	__u64 span_id;		/* its id (0 when span_site is) */
};

enum profile_counter {
	QPROF_PCNT_SAMPLES = 0,	/* samples sent to the ring buffer */
	QPROF_PCNT_LOST_RING,	/* ring buffer full: the sample is lost */
	QPROF_PCNT_LOST_STACK,	/* a stack could not be read: that half is missing */
	QPROF_PCNT_COPY_FAIL,	/* no copy of the user stack (frame pointers only) */
	QPROF_PCNT_COPY_SHORT,	/* copied less than QPROF_USTACK_BYTES (the stack ends nearer) */
	/* the off-CPU side (offcpu.bpf.h) */
	QPROF_PCNT_OFF_RECORDS,	/* off-CPU intervals sent to off_ring */
	QPROF_PCNT_OFF_LOST_RING,	/* off_ring full: the interval is lost */
	QPROF_PCNT_OFF_NO_STATE,	/* a thread's off-CPU state could not be made */
	QPROF_PCNT_KSTATS_FULL,	/* a scope's kernel figures found no room (QPROF_KSTATS_MAX) */
	QPROF_PCNT_KEV_LOST,	/* kev_ring full: a ring thread's fault or irq run is lost */
	QPROF_PCNT__MAX,
};
#endif
