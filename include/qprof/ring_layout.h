/* SPDX-License-Identifier: MIT */
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
/* Version 2: the 64-byte header of version 1 is followed by the owner's
 * open scopes (open[], QPROF_RING_OPEN sites), read by the CPU sampler;
 * the records start at QPROF_RING_HDR_SIZE. qprofd reads both versions. */
#define QPROF_RING_VERSION 2
#define QPROF_RING_HDR_SIZE 320
#define QPROF_RING_HDR_SIZE_V1 64
#define QPROF_RING_OPEN 32 /* open scopes kept in the header, outermost first */
/* Records per thread ring (16 bytes each) when no qprofd asks otherwise
 * (qprof_ring_cfg below): 1 MiB. */
#ifndef QPROF_RING_RECORDS
#define QPROF_RING_RECORDS 65536
#endif
/* A ring announces itself again every this many records, so that a qprofd
 * started after the ring was made finds it. */
#define QPROF_RING_ANNOUNCE 4096
#define QPROF_RING_F_MONO 1u /* ts is CLOCK_MONOTONIC ns, not TSC */

/* The size qprofd asks new rings to have (qprofd --ring-records): one per
 * module, found by qprofd through the note qprof:ring_config, whose
 * semaphore field is its address (the note's site is a nop that nothing
 * probes). qprofd checks magic before it writes records, a power of two in
 * [QPROF_RING_CFG_MIN, QPROF_RING_CFG_MAX]; 0 (no qprofd asked) means
 * QPROF_RING_RECORDS. A thread's first ring, when the free list has none,
 * is mapped with what records says then; rings already made keep theirs
 * (each ring's header says its own nrec). */
#define QPROF_RING_CFG_MAGIC 0x47464351u /* "QCFG" little-endian */
#define QPROF_RING_CFG_MIN 1024u
#define QPROF_RING_CFG_MAX (1u << 24)
struct qprof_ring_cfg {
	uint32_t magic;		/* QPROF_RING_CFG_MAGIC */
	uint32_t records;	/* records a new ring gets (0: QPROF_RING_RECORDS) */
};

/* The record scheme (one for all markers). A record is {ts, word}; the
 * word's low 3 bits are its kind, all 8 taken, so a group of records is
 * told by the records after its first. A group is published by one head
 * store (never seen in part, unless lapped). "A" is a plain argument
 * record, {argument, QPROF_REC_ARG}: its word is exactly QPROF_REC_ARG.
 *
 *   ENTER | EXIT                     QPROF_FUNC, QPROF_SCOPE         1 record
 *   BEGIN | END, A(name)             QPROF_SCOPE_BEGIN/END           2
 *   BEGIN | END, A(name), A(id)      QPROF_SPAN_BEGIN/END            3
 *   MARK                             QPROF_MARK                      1
 *   MARK, A(name), A(id)             QPROF_SPAN_STEP                 3
 *   VALUE, A(IEEE-754 bits)          QPROF_VALUE                     2
 *   log head, text x n (below)       QPROF_LOG                       1 + n
 *   THREAD                           a new owner of the ring         1
 *
 * (name: the name literal's address; the word of BEGIN/END/MARK/VALUE/
 * ENTER/EXIT is site | kind, the site 8-aligned.) A second A after BEGIN,
 * END or MARK makes a span across threads. A log head has kind ARG but a
 * word other than QPROF_REC_ARG (it carries its 16-aligned site); a text
 * record's low byte is QPROF_REC_LOG_TEXT, which no other record's is. No
 * group starts with a plain A, so a reader tells every group by its words;
 * what fits none (a lone A, a MARK with one A, a stray text record, a log
 * head whose text is not all there) is garbage. */
enum qprof_rec_kind {
	QPROF_REC_ENTER = 1,	/* QPROF_FUNC/QPROF_SCOPE began */
	QPROF_REC_EXIT = 2,	/* ... ended */
	QPROF_REC_BEGIN = 3,	/* QPROF_SCOPE_BEGIN: + A(name); QPROF_SPAN_BEGIN: + A(name), A(id) */
	QPROF_REC_END = 4,	/* QPROF_SCOPE_END, QPROF_SPAN_END: as QPROF_REC_BEGIN */
	QPROF_REC_MARK = 5,	/* QPROF_MARK alone; QPROF_SPAN_STEP: + A(name), A(id) */
	QPROF_REC_VALUE = 6,	/* QPROF_VALUE: + A(IEEE-754 bits) */
	QPROF_REC_ARG = 7,	/* a plain argument (word exactly 7), or a log head (below) */
	QPROF_REC_THREAD = 0,	/* a new owner: generation << 32 | tid << 3 */
};
#define QPROF_REC_KIND_MASK 7u

/* QPROF_LOG (ring version 2): a record of kind ARG whose word also holds
 * the log site (16-aligned, so that bit 3 is 0) and two lengths, then the
 * text in TEXT records, 15 bytes each, all published by one head store:
 *   head  {ts, site | QPROF_REC_ARG | stored << 47 | min(len, 511) << 55}
 *   text  {bytes 0..7, bytes 8..14 << 8 | QPROF_REC_LOG_TEXT} x ceil(stored / 15)
 * stored: bytes of text (<= 255, no NUL); len: the length the formatted
 * message had (snprintf's return, clamped): len > stored means it was cut.
 * A plain ARG record's word is exactly QPROF_REC_ARG; a text record's low
 * byte is QPROF_REC_LOG_TEXT, a head's never is (bit 3). */
#define QPROF_REC_LOG_TEXT 0x0fu
#define QPROF_RING_LOG_CHUNK 15
#define QPROF_RING_LOG_STORED 255
#define QPROF_RING_LOG_LEN_MAX 511
#define QPROF_REC_LOG_SITE(w) ((w) & 0x00007ffffffffff8ull)
#define QPROF_REC_LOG_STORED(w) ((unsigned int)(((w) >> 47) & 0xff))
#define QPROF_REC_LOG_LEN(w) ((unsigned int)((w) >> 55))

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
	/* the span the owner last began (QPROF_SPAN_BEGIN) and has not ended
	 * on this thread (QPROF_SPAN_END of the same name and id), read by the
	 * CPU sampler: its site, 0 = none, and its id. The writer stores the
	 * site 0 first and the site last (zero in rings of older markers). */
	uint64_t span_site;
	uint64_t span_id;
	/* version 2: the sites of the owner's open scopes, outermost first:
	 * open[i] for i < min(depth, QPROF_RING_OPEN) (written before depth
	 * grows; depth never goes below 0) */
	uint64_t open[QPROF_RING_OPEN];
};

#ifdef __cplusplus
static_assert(sizeof(struct qprof_ring) == QPROF_RING_HDR_SIZE, "ring header layout");
static_assert(sizeof(struct qprof_ring_rec) == 16, "ring record layout");
#else
_Static_assert(sizeof(struct qprof_ring) == QPROF_RING_HDR_SIZE, "ring header layout");
_Static_assert(sizeof(struct qprof_ring_rec) == 16, "ring record layout");
#endif

#endif /* QPROF_RING_LAYOUT_H */
