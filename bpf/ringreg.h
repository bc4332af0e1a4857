/* ringreg.h - the contract between bpf/ringreg.bpf.c and qprofd's ring collector
 * (daemon/collect/ring_collect.c): one record per qprof:ring_register hit,
 * the announcement of a thread's ring (include/qprof/ring.h). __u64-style
 * fixed-width types only; included by both sides. */
#ifndef QPROF_RINGREG_H
#define QPROF_RINGREG_H

struct ring_announce {
	__u32 pid;	/* tgid of the announcing thread, from the kernel */
	__u32 tid;	/* its thread id, from the kernel */
	__u64 addr;	/* arg 1 (rdi): the ring's address in the process: unchecked */
	__u64 size;	/* arg 2 (rsi): its size in bytes: unchecked */
};

/* Counters (array map `ring_counters`). */
enum ring_counter {
	QPROF_RING_CNT_LOST = 0,	/* announcements the ring buffer had no room for */
	QPROF_RING_CNT__MAX,
};

#endif
