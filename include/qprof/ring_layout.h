/* ring_layout.h - the memory layout of a qprof thread ring (marker ABI 2):
 * the contract between the markers (ring.h, which writes) and qprofd's ring
 * collector (daemon/collect/ring_*.c, which reads with process_vm_readv).
 * Types and constants only: qprofd includes it without the markers. See
 * ring.h for the protocol (head, lapping, argument records). */
#ifndef QPROF_RING_LAYOUT_H
#define QPROF_RING_LAYOUT_H

#ifdef __cplusplus
#include <cstdint>
#else
#include <stdint.h>
#endif

#define QPROF_RING_MAGIC 0x474e5251u /* "QRNG" little-endian */
#define QPROF_RING_VERSION 1
#define QPROF_RING_HDR_SIZE 64
/* Records per thread ring (16 bytes each): 1 MiB by default. */
#ifndef QPROF_RING_RECORDS
#define QPROF_RING_RECORDS 65536
#endif
/* A ring announces itself again every this many records, so that a qprofd
 * started after the ring was made finds it. */
#define QPROF_RING_ANNOUNCE 4096
#define QPROF_RING_F_MONO 1u /* ts is CLOCK_MONOTONIC ns, not TSC */

enum qprof_rec_kind {
	QPROF_REC_ENTER = 1,	/* QPROF_FUNC/QPROF_SCOPE began */
	QPROF_REC_EXIT = 2,	/* ... ended */
	QPROF_REC_BEGIN = 3,	/* QPROF_SCOPE_BEGIN; an ARG record follows (name address);
				 * QPROF_SPAN_BEGIN: two ARG records follow (name address, id) */
	QPROF_REC_END = 4,	/* QPROF_SCOPE_END, QPROF_SPAN_END: as QPROF_REC_BEGIN */
	QPROF_REC_MARK = 5,	/* QPROF_MARK; QPROF_SPAN_STEP when two ARG records follow */
	QPROF_REC_VALUE = 6,	/* QPROF_VALUE; an ARG record follows (IEEE-754 bits) */
	QPROF_REC_ARG = 7,	/* the argument of the record before it */
	QPROF_REC_THREAD = 0,	/* a new owner: generation << 32 | tid << 3 */
};
#define QPROF_REC_KIND_MASK 7u

struct qprof_ring_rec {
	uint64_t ts;
	uint64_t word;
};

struct qprof_ring {
	uint32_t magic;		/* QPROF_RING_MAGIC */
	uint16_t version;	/* QPROF_RING_VERSION */
	uint16_t rec_size;	/* sizeof(struct qprof_ring_rec): 16 */
	uint32_t nrec;		/* records, a power of two */
	uint32_t flags;		/* QPROF_RING_F_* */
	uint64_t head;		/* records written ever; release-stored after each */
	uint64_t generation;	/* owners so far (1 for the first thread) */
	uint32_t tid;		/* the owner (0 while on the free list) */
	uint32_t depth;		/* scopes the owner has open (enters - exits) */
	struct qprof_ring *next; /* free-list link (the writer's, not the reader's) */
	uint64_t reserved[2];
};

#ifdef __cplusplus
static_assert(sizeof(struct qprof_ring) == QPROF_RING_HDR_SIZE, "ring header layout");
static_assert(sizeof(struct qprof_ring_rec) == 16, "ring record layout");
#else
_Static_assert(sizeof(struct qprof_ring) == QPROF_RING_HDR_SIZE, "ring header layout");
_Static_assert(sizeof(struct qprof_ring_rec) == 16, "ring record layout");
#endif

#endif /* QPROF_RING_LAYOUT_H */
