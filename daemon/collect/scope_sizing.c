/* scope_sizing.c - see scope_sizing.h: the scope collector's map sizes and
 * their kernel memory for a given number of possible CPUs. */
#include <errno.h>
#include <linux/types.h>
#include "scope_sizing.h"
#include "bpf/scopes.h"

#define R8(x) (((uint64_t)(x) + 7) & ~(uint64_t)7)
/* Entries of the maps scopes.bpf.c declares with a fixed size. */
#define MARK_ENTRIES QPROF_MARK_ENTRIES
#define VALUE_ENTRIES QPROF_VALUE_ENTRIES
#define PROBE_ENTRIES QPROF_PROBE_ENTRIES
#define VALUE_BUCKETS QPROF_VALUE_BUCKETS
#define VALUE_DIRTY_BYTES (256u << 10)

uint64_t qp_htab_bytes(uint64_t entries, unsigned int key, unsigned int value, int percpu,
		       unsigned int ncpus)
{
	if (percpu)
		return entries * (QP_HTAB_ELEM_HDR + R8(key) + 8 + R8(value) * ncpus);
	return entries * (QP_HTAB_ELEM_HDR + R8(key) + R8(value));
}

static uint64_t pow2_at_least(uint64_t v, uint64_t p)
{
	while (p < v && p < (1ULL << 40))
		p <<= 1;
	return p;
}

uint64_t qp_htab_buckets_bytes(uint64_t max_entries)
{
	return pow2_at_least(max_entries, 1) * QP_HTAB_BUCKET;
}

int qp_scope_sizing(unsigned int ncpus, unsigned int max_sites, unsigned int prealloc,
		    struct qp_scope_sizing *out)
{
	uint64_t pre, all;

	if (!ncpus || !max_sites)
		return -EINVAL;
	if (!prealloc || prealloc > max_sites)
		prealloc = max_sites;
	out->ncpus = ncpus;
	out->max_sites = max_sites;
	/* every chunk a pair can have may exist; only the preallocated part
	 * takes memory up front */
	all = (uint64_t)max_sites * QP_CHUNKS_PER_PAIR_MAX;
	pre = (uint64_t)prealloc * QP_CHUNKS_PER_PAIR_PRE;
	if (pre > all)
		pre = all;
	out->chunks_pre = (unsigned int)pre;
	out->chunks_more = (unsigned int)(all > pre ? all - pre : 1);
	/* keys (24 bytes and an 8-byte record header) of half the preallocated
	 * chunks per poll; past that the poll reads every chunk once instead */
	out->dirty_bytes = (unsigned int)pow2_at_least(pre * (sizeof(struct scope_chunk_key) + 8) / 2, 64 << 10);
	out->chunk_bytes = qp_htab_bytes(1, sizeof(struct scope_chunk_key), sizeof(struct scope_chunk), 0, 1);
	out->reserved_bytes = out->chunk_bytes * pre + qp_htab_buckets_bytes(out->chunks_pre) +
			      qp_htab_buckets_bytes(out->chunks_more) + out->dirty_bytes;
	/* marks, values and probes are shared too; the counters alone are per CPU */
	out->other_bytes = qp_htab_bytes(MARK_ENTRIES, sizeof(struct mark_key), sizeof(struct mark_stats), 0, 1) +
			   qp_htab_bytes(VALUE_ENTRIES, sizeof(struct mark_key), sizeof(struct value_stats), 0, 1) +
			   qp_htab_bytes(VALUE_BUCKETS, sizeof(struct value_bucket_key), sizeof(struct value_bucket), 0, 1) +
			   VALUE_DIRTY_BYTES +
			   qp_htab_bytes(PROBE_ENTRIES, sizeof(struct probe_key), sizeof(uint64_t), 0, 1) +
			   (uint64_t)QPROF_CNT__MAX * 8 * ncpus;
	return 0;
}

uint64_t qp_scope_pairs_bytes(const struct qp_scope_sizing *sz, uint64_t pairs, unsigned int chunks)
{
	return pairs * chunks * sz->chunk_bytes;
}

uint64_t qp_scope_pairs_bytes_percpu(const struct qp_scope_sizing *sz, uint64_t pairs)
{
	return qp_htab_bytes(pairs, sizeof(struct scope_key), sizeof(struct scope_stats), 1, sz->ncpus);
}
