/* scope_sizing.h - how many entries the scope collector's kernel maps get
 * and how much kernel memory that takes, as a function of the number of
 * possible CPUs and --max-sites: the one place those numbers are made, so
 * that a big host can be simulated in unit tests. Pure arithmetic. */
#ifndef QPROF_SCOPE_SIZING_H
#define QPROF_SCOPE_SIZING_H
#include <stdint.h>

/* Chunks preallocated per (process, site, parent) aggregate: a burst of
 * first hits of new pairs takes its chunks from there and cannot fail for
 * want of memory; a pair's other powers of two come from the allocating map. */
#define QP_CHUNKS_PER_PAIR_PRE 1u
/* Chunks a pair may have on average (a shared pool: a pair whose times
 * span many powers of two takes from the others'); past it, map_full. */
#define QP_CHUNKS_PER_PAIR_MAX 4u
/* Bytes of the kernel's hash element header (struct htab_elem, x86-64) and
 * of a bucket (list head and lock), one per power of two >= max_entries. */
#define QP_HTAB_ELEM_HDR 48u
#define QP_HTAB_BUCKET 16u

struct qp_scope_sizing {
	unsigned int ncpus, max_sites;
	unsigned int chunks_pre;	/* scope_chunks (preallocated) */
	unsigned int chunks_more;	/* scope_chunks_more (allocated per chunk) */
	unsigned int dirty_bytes;	/* scope_dirty ring buffer */
	uint64_t chunk_bytes;		/* kernel memory of one chunk */
	uint64_t reserved_bytes;	/* chunk maps (elements preallocated, buckets of
					 * both) and ring reserved at load */
	uint64_t other_bytes;		/* the other aggregate maps of scopes.bpf.c at
					 * load: marks, values and their buckets and
					 * ring, probes (shared), counters (per CPU) */
};

/* Kernel memory of ENTRIES elements of a hash map (KEY, VALUE bytes),
 * per-CPU values on NCPUS CPUs when PERCPU: the formula of the kernel's
 * htab_map_mem_usage for the elements (all of them preallocated, or those
 * in use); qp_htab_buckets_bytes adds the bucket array of MAX_ENTRIES. */
uint64_t qp_htab_bytes(uint64_t entries, unsigned int key, unsigned int value, int percpu,
		       unsigned int ncpus);

/* The sizes for NCPUS possible CPUs and MAX_SITES aggregates, PREALLOC
 * pairs' worth of preallocated chunks (0: every pair). 0, or -EINVAL for
 * NCPUS 0 or MAX_SITES 0. */
uint64_t qp_htab_buckets_bytes(uint64_t max_entries);

int qp_scope_sizing(unsigned int ncpus, unsigned int max_sites, unsigned int prealloc,
		    struct qp_scope_sizing *out);

/* Kernel memory of N pairs of CHUNKS chunks each with this layout, and
 * with the per-CPU layout it replaced (8480 bytes per pair per CPU). */
uint64_t qp_scope_pairs_bytes(const struct qp_scope_sizing *sz, uint64_t pairs, unsigned int chunks);
uint64_t qp_scope_pairs_bytes_percpu(const struct qp_scope_sizing *sz, uint64_t pairs);
#endif
