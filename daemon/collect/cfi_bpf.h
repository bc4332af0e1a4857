/* cfi_bpf.h - the compiled CFI tables (cfi_table.h) in the kernel, for the
 * BPF walker (bpf/cfiwalk.bpf.h): each file a target maps executable is
 * compiled once, however many processes map it, its rows written into one
 * array map shared by every table (mapped by qprofd: rows are copied in
 * place), then its entry in the file map; each target's executable
 * mappings (address range -> file id + bias), sorted, go into a hash map
 * keyed by its pid, replaced whole. All of it is done by one worker thread
 * of ours, off the sampling path and off every collector lock: a target's
 * mappings are read when it is added, again when a sample finds them
 * missing or stale (a dlopen, an exec: at most once a second), and every
 * few seconds. The rows' memory is bounded (the array's size): a table
 * that does not fit evicts the least recently used tables no process maps
 * (counted), and is refused (counted: "no room") when even that is not
 * enough; its samples then fall back to the stack copy. Documented in
 * docs/internals/cfi-tables.md. */
#ifndef QPROF_CFI_BPF_H
#define QPROF_CFI_BPF_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "bpf/cfiwalk.h"

struct bpf_map;
struct qp_cfi_bpf;

struct qp_cfi_bpf_stats {
	uint64_t files, rows, bytes;	/* tables loaded now, their rows and kernel bytes */
	uint64_t rows_cap, bytes_cap;	/* the rows array: its room */
	uint64_t builds, hits, refused;	/* tables compiled; a file found loaded; files whose CFI was refused */
	uint64_t evictions, no_room;	/* tables dropped to make room; tables that found none */
	uint64_t rows_no_rule;	/* rows loaded without their rule (a table over 65,536 distinct rules): they fall back */
	uint64_t build_ns, build_cpu_ns;	/* compile time, wall clock and CPU */
	uint64_t procs, scans, scan_errors, too_many;	/* processes loaded; mappings read; failed; over QPROF_CFI_MAPS */
};

/* ROWS, FILES, PROCS: the loaded object's cfi_rows (BPF_F_MMAPABLE),
 * cfi_files and cfi_procs; NCPUS for the per-CPU COUNTS (cfi_counts, may
 * be NULL). NULL with ERR set. */
struct qp_cfi_bpf *qp_cfi_bpf_new(struct bpf_map *rows, struct bpf_map *files, struct bpf_map *procs,
				  struct bpf_map *counts, int ncpus, char *err, size_t errlen);
void qp_cfi_bpf_free(struct qp_cfi_bpf *b);	/* accepts NULL */

/* PID's mappings are read by the worker soon (add), again when a sample
 * found them missing or stale (rescan: at most once a second), and not any
 * more (remove: its map entry deleted, its tables unreferenced). Never
 * block: they take only the worker's queue lock. */
void qp_cfi_bpf_add(struct qp_cfi_bpf *b, uint32_t pid);
void qp_cfi_bpf_rescan(struct qp_cfi_bpf *b, uint32_t pid);
void qp_cfi_bpf_remove(struct qp_cfi_bpf *b, uint32_t pid);

void qp_cfi_bpf_stats(struct qp_cfi_bpf *b, struct qp_cfi_bpf_stats *out);
/* The kernel's counts of walks by USER (0 CPU, 1 off-CPU, ...): ENDS[e]
 * walks that ended e (enum cfi_walk_end), *FRAMES the frames of kept ones. */
void qp_cfi_bpf_counts(struct qp_cfi_bpf *b, unsigned int user, uint64_t ends[QPROF_WALK__MAX],
		       uint64_t *frames);
/* Wait until PID's mappings have been read once (tests, bench); false
 * after TIMEOUT_MS. */
bool qp_cfi_bpf_wait(struct qp_cfi_bpf *b, uint32_t pid, unsigned int timeout_ms);
#endif
