/* heap.h - the contract between bpf/heap.bpf.c and qprofd's heap collector
 * (daemon/collect/collect_heap.c): the live sampled allocations, the stacks
 * with their cumulative figures, the counters, and the sampling rule that
 * both sides compute the same way. __u64-style fixed-width types only. */
#ifndef QPROF_HEAP_H
#define QPROF_HEAP_H

#define QPROF_HEAP_DEPTH 64	/* frames kept per allocation stack (leaf first) */
#define QPROF_HEAP_SCOPES 4	/* innermost open qprof scopes kept per stack */

/* The allocator entry points probed; the attach cookie of a link. */
enum heap_fn {
	HEAP_MALLOC = 0,	/* (size) -> ptr; valloc too */
	HEAP_CALLOC,		/* (n, size) -> ptr */
	HEAP_REALLOC,		/* (ptr, size) -> ptr: a free of ptr and an allocation */
	HEAP_MEMALIGN,		/* (align, size) -> ptr: memalign, aligned_alloc */
	HEAP_POSIX_MEMALIGN,	/* (void **out, align, size) -> 0 or errno */
	HEAP_FREE,		/* (ptr) */
	HEAP_FN__MAX,
};

/* A sampled allocation still live, by (process, address). */
struct heap_live_key {
	__u32 tgid;
	__u32 pad;
	__u64 addr;
};

struct heap_live {
	__u64 size;	/* bytes asked for */
	__u64 stack;	/* key in heap_stacks, 0: the stack could not be kept */
	__u64 ts_ns;	/* CLOCK_MONOTONIC when it returned */
};

/* One distinct stack of one thread, keyed by a 64-bit hash of (tgid, tid,
 * the open scopes, frames), with what was sampled under it since it was
 * first seen. The estimates are sums of 1/p over the samples (see
 * heap_weight_*). TID, COMM, SCOPES and SPAN_SITE are the labels of its pprof
 * samples, as a CPU sample's. */
struct heap_stack {
	__u32 tgid;
	__u32 nips;
	__u32 tid;		/* the thread that allocated; 0 in the stack of no frames */
	__u32 nscopes;
	__u64 scopes[QPROF_HEAP_SCOPES];	/* site addresses of the open scopes, innermost first */
	__u64 span_site;	/* the span open on the thread (its QPROF_SPAN_BEGIN site), 0 = none;
				 * not its id: a stack per id would fill the table */
	char comm[16];		/* the thread's name when the stack was first seen */
	__u64 samples;		/* sampled allocations */
	__u64 est_objects_x16;	/* estimated allocations, fixed point: << 16 */
	__u64 est_bytes;	/* estimated bytes allocated */
	__u64 growth_bytes;	/* brk/mmap growth of the heap under this stack */
	__u64 growth_calls;
	__u64 ips[QPROF_HEAP_DEPTH];	/* leaf first: the allocator's entry, its caller, ... */
};

/* Per-CPU counters (heap_counters). */
enum heap_counter {
	HEAP_CNT_CALLS = 0,	/* allocating calls seen (outermost) */
	HEAP_CNT_SAMPLED,	/* of them, sampled (and returned a block) */
	HEAP_CNT_FREES,		/* frees (and reallocs) that removed a sampled allocation */
	HEAP_CNT_LIVE_FULL,	/* a sampled allocation not kept live (heap_live full): in-use is short */
	HEAP_CNT_STACK_FULL,	/* a stack not kept: heap_stacks full (kept under stack 0) */
	HEAP_CNT_MISSED_RETURN,	/* a call whose return was never seen (longjmp, lost uretprobe) */
	HEAP_CNT_NO_THREAD,	/* no per-thread state could be made: the call is not seen */
	HEAP_CNT_NESTED,	/* allocator calls inside another one (realloc -> malloc): not counted twice */
	HEAP_CNT_GROWTH,	/* brk/mmap growth events recorded */
	HEAP_CNT_GROWTH_LOST,	/* growth events whose stack could not be kept */
	HEAP_CNT__MAX,
};

/* The key of a stack: a hash of the pid and the frames, never 0. The
 * stack of no frames (heap_lost_key) is made by the daemon at attach: the
 * allocations whose stack could not be kept (heap_stacks full) count
 * there. */
static inline __u64 heap_mix(__u64 h, __u64 v)
{
	h ^= v;
	h *= 0x100000001b3ULL;
	return h ^ (h >> 29);
}

static inline __u64 heap_hash_start(__u32 tgid)
{
	return heap_mix(0xcbf29ce484222325ULL, tgid);
}

static inline __u64 heap_lost_key(__u32 tgid)
{
	__u64 h = heap_hash_start(tgid);

	return h ? h : 1;
}

/* The sampling rule, computed alike in BPF and in the daemon. An
 * allocation of SIZE bytes is sampled with probability p = min(1, SIZE /
 * INTERVAL), as a threshold on a uniform 32-bit random number (sampled iff
 * rand < threshold; a threshold of 1 << 32 always samples). p is
 * proportional to the size below the interval: one sample per INTERVAL
 * bytes allocated on average, as tcmalloc's sampler (whose p = 1 -
 * exp(-SIZE/INTERVAL) is this to the first order). Every sample counts
 * 1/p allocations and SIZE/p bytes (Horvitz-Thompson: unbiased, since p is
 * exactly the probability used). INTERVAL must be 1 .. 1 << 30. */
static inline __u64 heap_threshold(__u64 size, __u64 interval)
{
	if (size >= interval)
		return 1ULL << 32;
	return (size << 32) / interval;	/* size < interval <= 2^30: no overflow */
}

/* 1/p in 16-bit fixed point, and SIZE/p; THRESH > 0. */
static inline __u64 heap_weight_objects_x16(__u64 thresh)
{
	return (1ULL << 48) / thresh;
}

static inline __u64 heap_weight_bytes(__u64 size, __u64 thresh)
{
	if (thresh >= (1ULL << 32))
		return size;
	return (size << 32) / thresh;
}
#endif
