/* lib_ranges.h - the mappings of one library in a snapshot of a target's
 * /proc/PID/maps, and whether they hold the whole library. */
#ifndef QPROF_LIB_RANGES_H
#define QPROF_LIB_RANGES_H
#include <stdbool.h>
#include <stdint.h>
#include "common/elf_probes.h"
#include "common/procfs.h"

/* Copy into OUT the mappings of MAPS that are of inode INO at PATH, in
 * address order. 0, or -ENOMEM. */
int qp_lib_ranges(const struct qp_maps *maps, uint64_t ino, const char *path, struct qp_maps *out);

/* 0 when MAPS holds ELF whole: every byte of the file that a PT_LOAD
 * segment maps lies in a mapping of inode INO at PATH, at the one load bias
 * of those mappings, with the file offset the segment gives it. A snapshot
 * read while the target runs can catch a dlopen half done (the first
 * mmap spans the library from file offset 0 until the segments are mapped
 * over it) or a dlclose half done (some segments unmapped): -ENOENT then.
 * *BIAS (may be NULL) is the load bias found. -EINVAL without segments. */
int qp_lib_whole(const struct qp_elf_probes *elf, const struct qp_maps *maps, uint64_t ino,
		 const char *path, uint64_t *bias);

/* Does every mapping of inode INO at PATH in PART lie inside the span of
 * WHOLE (from its first mapping's start to its last one's end)? False when
 * PART has none. */
bool qp_lib_within(const struct qp_maps *part, const struct qp_maps *whole, uint64_t ino,
		   const char *path);

/* Keep in *WHOLE (freed first) the mappings of the library in NOW when NOW
 * holds it whole and they changed. 0 (kept or nothing to do), -ENOMEM. */
int qp_lib_note_whole(const struct qp_elf_probes *elf, const struct qp_maps *now, uint64_t ino,
		      const char *path, struct qp_maps *whole);

/* The mappings an unloaded library keeps (its data stays named), into
 * *GONE: its mappings in OLD (the last snapshot in which it was seen)
 * when OLD holds it whole; else its mappings when last seen whole (*WHOLE,
 * moved into *GONE and emptied) when OLD has none of it or OLD's lie
 * within them (the same load); else what OLD has of it.
 * ELF may be NULL (no segments known: OLD's). 0, or -ENOMEM. */
int qp_lib_gone(const struct qp_elf_probes *elf, const struct qp_maps *old, uint64_t ino,
		const char *path, struct qp_maps *whole, struct qp_maps *gone);
#endif
