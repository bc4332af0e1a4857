/* cfi_walk.h - a stack walk over compiled CFI tables (cfi_table.h),
 * written the way a BPF program has to be: a fixed number of frames
 * (QP_CFI_WALK_FRAMES), every search a bounded number of halvings, no
 * allocation, no call into libdw, every word of the stack read through a
 * callback that may fail. It is the user-space twin of the in-kernel walker
 * to come, and is checked against libdwfl frame for frame (unit_cfi_walk).
 * Its steps mirror unwind_fast.c's (libdwfl's frame_unwind.c): the same pc
 * looked up (the return address - 1, except at the first frame and after a
 * signal frame), the same end when the CFA or the return address cannot be
 * read (the walk is complete), the same loop check (sp must rise). A frame
 * whose rule is FALLBACK or NONE, or a pc in no mapping, ends the walk with
 * FALLBACK: the frames so far are good, the rest is libdwfl's to find. */
#ifndef QPROF_CFI_WALK_H
#define QPROF_CFI_WALK_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cfi_table.h"

#define QP_CFI_WALK_FRAMES 127	/* return addresses at most (the copy path's limit) */
#define QP_CFI_MAPS_MAX 1024	/* executable mappings of one process */
#define QP_CFI_MAP_STEPS 11	/* log2(QP_CFI_MAPS_MAX) + 1 */

/* One executable mapping: [start, end) holds the file of table T at BIAS. */
struct qp_cfi_map {
	uint64_t start, end, bias;
	const struct qp_cfi_table *t;	/* NULL: no table (refused): fall back */
};

/* A process's mappings, sorted by start, not overlapping. */
struct qp_cfi_space {
	uint32_t n;
	struct qp_cfi_map map[QP_CFI_MAPS_MAX];
};

enum qp_cfi_end {
	QP_CFI_END_COMPLETE,	/* the outermost frame reached (or its caller unreadable) */
	QP_CFI_END_FALLBACK,	/* a frame needs a rule the tables do not hold */
	QP_CFI_END_NOMAP,	/* a pc in no mapping of the space */
	QP_CFI_END_BAD,		/* a pc of 0 */
	QP_CFI_END_DEPTH,	/* MAX frames emitted */
	QP_CFI_END_LOOP,	/* sp did not rise */
};

/* reads the 8 bytes at ADDR of the target's stack; false if it cannot */
typedef bool (*qp_cfi_read_fn)(void *ctx, uint64_t addr, uint64_t *out);

struct qp_cfi_regs {
	uint64_t pc, sp, bp;
	bool sp_known, bp_known;
};

/* Walks from REGS; up to MAX (<= QP_CFI_WALK_FRAMES) return addresses,
 * leaf first, into IPS, *N set. On FALLBACK, *WHY (may be NULL) gets the
 * rule kind that stopped it. */
enum qp_cfi_end qp_cfi_walk(const struct qp_cfi_space *s, const struct qp_cfi_regs *regs, qp_cfi_read_fn read,
			    void *ctx, uint64_t *ips, size_t max, size_t *n, uint8_t *why);

/* The mapping holding ADDR, or NULL; at most QP_CFI_MAP_STEPS halvings. */
const struct qp_cfi_map *qp_cfi_space_find(const struct qp_cfi_space *s, uint64_t addr);
#endif
