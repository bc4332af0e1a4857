/* ringreg.h - the contract between bpf/ringreg.bpf.c and qprofd's ring collector
 * (daemon/collect/ring_collect.c): one record per qprof:ring_register hit,
 * the announcement of a thread's ring (include/qprof/ring.h). __u64-style
 * fixed-width types only; included by both sides. */
#ifndef QPROF_RINGREG_H
#define QPROF_RINGREG_H

enum ring_ann_kind {
	QPROF_RING_ANN_RING = 0,	/* a ring_register hit */
	QPROF_RING_ANN_EXIT = 1,	/* the thread that announced ADDR last is exiting */
};

struct ring_announce {
	__u32 pid;	/* tgid of the announcing thread, from the kernel */
	__u32 tid;	/* its thread id, from the kernel */
	__u64 addr;	/* arg 1 (rdi): the ring's address in the process: unchecked */
	__u64 size;	/* arg 2 (rsi): its size in bytes: unchecked (0 for an exit) */
	__u64 head;	/* the ring's head read by the program then (unchecked; 0: unreadable) */
	__u32 kind;	/* enum ring_ann_kind */
	__u32 head_ok;	/* 1: head was read */
};

/* Map `ring_tids`: thread id (the kernel's) -> the ring it announced last,
 * with the ring's generation then, so that the CPU sampler (profile.bpf.c,
 * which shares the map) reads the open scopes of a ring only while the
 * thread still owns it. */
struct ring_tid {
	__u64 addr;
	__u64 generation;
};
#define QPROF_RING_TIDS 65536

/* The ring header as the sampler reads it (include/qprof/ring_layout.h,
 * version 2; ring_collect.c checks that the offsets agree). */
#define QPROF_SAMPLE_OPEN 32	/* QPROF_RING_OPEN */
struct ring_hdr {
	__u32 magic;
	__u16 version;
	__u16 rec_size;
	__u32 nrec;
	__u32 flags;
	__u64 head;
	__u64 generation;
	__u32 tid;
	__u32 depth;
	__u64 next;
	__u64 span_site;	/* the owner's open span: its QPROF_SPAN_BEGIN site (0 = none) */
	__u64 span_id;		/* ... and its id */
	__u64 open[QPROF_SAMPLE_OPEN];
};

/* Counters (array map `ring_counters`). */
enum ring_counter {
	QPROF_RING_CNT_LOST = 0,	/* announcements the ring buffer had no room for */
	QPROF_RING_CNT_EXITS = 1,	/* thread exits of ring threads seen (with a ring in ring_tids) */
	QPROF_RING_CNT_EXITS_LOST = 2,	/* ... the ring buffer had no room for */
	QPROF_RING_CNT__MAX,
};

#endif
