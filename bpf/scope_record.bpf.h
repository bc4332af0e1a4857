/* scope_record.bpf.h - the one way a duration enters the scope aggregates,
 * record(), and the maps it writes: the chunks of (process, site, parent,
 * power of two) (scopes.h) and the ring buffer of the keys hit since the
 * daemon's last poll. Used by the block scopes of scopes.bpf.c and by the
 * spans of spans.bpf.h. */
#ifndef QPROF_SCOPE_RECORD_BPF_H
#define QPROF_SCOPE_RECORD_BPF_H

#include "scope_maps.bpf.h"

/* Aggregates: chunks of (process, site, parent, power of two), see
 * scopes.h, 360 bytes each in the kernel whatever the number of CPUs. They
 * go first into a preallocated map, where making an entry takes an element
 * from a free list and cannot fail for want of memory (a burst of first
 * hits right after attach must lose nothing); chunks past it go to
 * scope_chunks_more, which allocates each one. Both sized by the daemon. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct scope_chunk_key);
	__type(value, struct scope_chunk);
} scope_chunks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 131072);
	__type(key, struct scope_chunk_key);
	__type(value, struct scope_chunk);
} scope_chunks_more SEC(".maps");

/* Keys of the chunks hit since the daemon's last poll (see scopes.h). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 << 10);
} scope_dirty SEC(".maps");

/* The poll generation, raised by the daemon before each poll. */
volatile __u64 qp_gen = 1;	/* chunks are made with gen 0: their first hit queues them */

/* The value a chunk is made with: no hit yet. */
static const struct scope_chunk empty_chunk = { .min_ns = ~0ULL };

/* The chunk of K, made at its first hit: in the preallocated map while it
 * has room, else in scope_chunks_more (*MORE set). NULL when neither can
 * take it. */
static __always_inline struct scope_chunk *chunk_of(struct scope_chunk_key *k, bool *more)
{
	struct scope_chunk *c;

	*more = false;
	c = bpf_map_lookup_elem(&scope_chunks, k);
	if (c)
		return c;
	*more = true;
	c = bpf_map_lookup_elem(&scope_chunks_more, k);
	if (c)
		return c;
	*more = false;
	c = qp_make(&scope_chunks, k, &empty_chunk);
	if (c)
		return c;
	*more = true;
	return qp_make(&scope_chunks_more, k, &empty_chunk);
}

/* The single way a duration enters the aggregates: DUR ns of SITE under
 * PARENT in process TGID. The chunk's figures are written first and its
 * generation read after (the atomic adds are full barriers): a hit that
 * reads the generation of before a poll is whole in that poll's copy; one
 * that reads a newer one finds the chunk older and queues its key.
 * A global function: verified once, not at each unrolled call site. */
__attribute__((noinline)) int record(__u32 tgid, __u64 site, __u64 parent, __u64 dur)
{
	struct scope_chunk_key k = { .tgid = tgid, .site = site, .parent = parent };
	struct scope_chunk *c;
	__u32 idx = qprof_hist_index(dur), sub;
	bool more;
	__u64 gen;

	k.chunk = idx >> QPROF_HIST_SUB_BITS;
	c = chunk_of(&k, &more);
	if (!c) {
		count(QPROF_CNT_DROP_MAP_FULL, 1);
		return 0;
	}
	atomic_min(&c->min_ns, dur);
	atomic_max(&c->max_ns, dur);
	__sync_fetch_and_add(&c->sum_ns, dur);
	sub = idx & (QPROF_HIST_SUB - 1);
	__sync_fetch_and_add(&c->hist[sub], 1);
	gen = qp_gen;
	if (c->gen != gen) {
		c->gen = gen;
		if (more)
			k.chunk |= QPROF_CHUNK_MORE;
		if (bpf_ringbuf_output(&scope_dirty, &k, sizeof(k), BPF_RB_NO_WAKEUP))
			count(QPROF_CNT_DIRTY_LOST, 1);
	}
	return 0;
}
#endif
