/* scopes.h - the contract between bpf/scopes.bpf.c and qprofd's scope
 * collector: map keys and values, counters, attach cookies. __u64-style
 * fixed-width types only; included by both sides. */
#ifndef QPROF_SCOPES_H
#define QPROF_SCOPES_H

#include "hist.h"

/* Per-thread stack of open scopes. Deeper nesting is counted, not stored. */
#define QPROF_MAX_DEPTH 32

/* The USDT cookie of an attachment: bit 0 set for a --binary attachment
 * (it hits every process running the file, so it checks the `excluded` map
 * of detached pids); the other bits are the attach epoch, which grows with
 * every attach: a thread stack older than the newest attach that hits it is
 * cleared, so frames left open by an earlier detach never pair with new ones. */
#define QPROF_COOKIE_BINARY 1ULL
#define QPROF_COOKIE_EPOCH(c) (((c) >> 1) & 0x7fffffffULL)
/* Bits 32..63: the id of a counted USDT probe or of a span (POST
 * /api/targets "usdt" and "spans"), 0 for qprof's own probes. */
#define QPROF_COOKIE_ID(c) ((c) >> 32)
#define QPROF_COOKIE(epoch, binary, id) \
	(((__u64)(id) << 32) | (((__u64)(epoch) & 0x7fffffffULL) << 1) | ((binary) ? 1ULL : 0ULL))

/* A span of other USDT probes stands in the scope maps as this pseudo site
 * (no user address has the top bit set). */
#define QPROF_SPAN_SITE(id) ((1ULL << 63) | (__u64)(id))
#define QPROF_IS_SPAN_SITE(site) ((site) >> 63)

struct scope_key {
	__u32 tgid;
	__u32 pad;
	__u64 site;	/* runtime address of the struct qprof_site */
	__u64 parent;	/* site of the enclosing scope on that thread, 0 at top */
};

/* The figures of one (process, site, parent) as the daemon hands them on:
 * count, sum, exact min and max, the whole log-linear histogram. */
struct scope_stats {
	__u64 count;
	__u64 sum_ns;
	__u64 min_ns;
	__u64 max_ns;
	__u64 hist[QPROF_HIST_BUCKETS];
};

/* In the kernel an aggregate is kept as chunks: one per (process, site,
 * parent, power of two of the duration) that was hit, holding the 32
 * histogram buckets of that power (QPROF_HIST_SUB) and the sum, min and max
 * of the durations that fell in it. Chunks live in shared (not per-CPU)
 * hash maps and are updated with atomic instructions, so their memory
 * follows the powers actually hit, not the number of possible CPUs. */
#define QPROF_CHUNKS (QPROF_HIST_BUCKETS / QPROF_HIST_SUB)	/* 33 */

/* Set in the `chunk` of a key queued in `scope_dirty` when the chunk is in
 * scope_chunks_more: a key can be in both maps (made in the second while
 * the first was full, then again in the first once a detach freed room),
 * and the daemon keeps and sums both. */
#define QPROF_CHUNK_MORE (1u << 31)

/* The arguments of the test program `test_record` (scopes.bpf.c): one
 * duration DUR of SITE under PARENT in process TGID, as a scope exit would
 * record it. Tests only. */
struct qp_test_record {
	__u32 tgid;
	__u32 pad;
	__u64 site;
	__u64 parent;
	__u64 dur;
};

struct scope_chunk_key {
	__u32 tgid;
	__u32 chunk;	/* histogram index >> QPROF_HIST_SUB_BITS: 0..QPROF_CHUNKS-1 */
	__u64 site;
	__u64 parent;
};

/* The field order is the read order of a copy (ascending addresses), the
 * reverse of the write order of a hit (min, max, sum, then the bucket): a
 * reader that sees a hit's bucket sees its min, max and sum too. */
struct scope_chunk {
	__u64 hist[QPROF_HIST_SUB];	/* hits of bucket (chunk << 5) + i */
	__u64 sum_ns;
	__u64 min_ns;		/* ~0 until the first hit */
	__u64 max_ns;
	__u64 gen;		/* qp_gen at the last hit that found it older */
};

/* A chunk whose gen is older than the poll generation qp_gen (a global of
 * scopes.bpf.c that the daemon raises at each poll) is written to the
 * ring buffer `scope_dirty` as its key when hit, so that a poll reads only
 * the chunks hit since the last one. A key that finds no room is counted
 * in QPROF_CNT_DIRTY_LOST; the daemon then reads every chunk once. */

struct scope_frame {
	__u64 site;
	__u64 key;	/* site, or the name address for BEGIN/END spans */
	__u64 ts;
	/* the thread's kernel counters (struct thread_stack) at the enter:
	 * an instance's own are their growth until its exit */
	__u32 migrations, page_faults;
	__u64 irq_ns;
};

/* QPROF_SCOPE_BEGIN spans open on a thread: beside the block-scope stack,
 * not on it, so one never ended can neither fill the stack nor become the
 * parent of later scopes. Paired by key (the name's address) on the thread.
 * A slot is free when its key is 0. */
#define QPROF_MAX_BEGINS 8

struct begin_slot {
	__u64 key;
	__u64 site;
	__u64 parent;	/* the block scope open when it began, 0 at top level */
	__u64 ts;
};

struct thread_stack {
	__u32 depth;	/* may exceed QPROF_MAX_DEPTH: frames past it are not kept */
	__u32 tgid;
	__u64 epoch;
	/* kernel counters of the thread, raised by bpf/offcpu.bpf.h (which
	 * shares this storage) while its kernel events are traced */
	__u32 migrations, page_faults;
	__u64 irq_ns;
	struct scope_frame f[QPROF_MAX_DEPTH];
	struct begin_slot b[QPROF_MAX_BEGINS];
	/* the span the thread last began (QPROF_SPAN_BEGIN) and has not ended
	 * on it (QPROF_SPAN_END of the same name and id): read by the CPU
	 * sampler (profile.bpf.c). span_site 0 = none. */
	__u64 span_site, span_name, span_id;
};

/* Spans across threads (QPROF_SPAN_BEGIN/STEP/END): pending begins keyed by
 * (process, name address, id), in a preallocated hash map the daemon sizes
 * (--span-pending) and sweeps of begins older than --span-timeout-ms. */
struct span_key {
	__u32 tgid;
	__u32 pad;
	__u64 name;	/* address of the span's name literal (arg 3) */
	__u64 id;	/* the program's 64-bit id (arg 2) */
};

struct span_pending {
	__u64 ts;	/* bpf_ktime_get_ns() at the begin */
	__u64 site;	/* the QPROF_SPAN_BEGIN descriptor: the span's row */
};

/* Entries of the mark, value, value-bucket and counted-probe tables, all
 * targets together: the BPF maps' sizes, and the ring collector's bounds. */
#define QPROF_MARK_ENTRIES 4096
#define QPROF_VALUE_ENTRIES 4096
#define QPROF_VALUE_BUCKETS 65536
#define QPROF_PROBE_ENTRIES 4096

/* Marks: count per (process, site). */
struct mark_key {
	__u32 tgid;
	__u32 pad;
	__u64 site;
};

struct mark_stats {
	__u64 count;
	__u64 last_ns;	/* bpf_ktime_get_ns() of the last hit */
};

/* Counted USDT probes: hits per (process, probe id). */
struct probe_key {
	__u32 tgid;
	__u32 id;
};

/* Values: a double's IEEE-754 bits mapped to an unsigned key whose order is
 * the order of the doubles (sign bit flipped for positives, all bits for
 * negatives). The kernel keeps what that order allows: count, min, max,
 * last, and a sparse histogram of the key's top QPROF_VALUE_BUCKET_BITS bits
 * (sign, exponent, 12 mantissa bits: buckets 1/4096 of their value wide).
 * NaN and infinities are counted apart and never enter min/max/histogram. */
#define QPROF_VALUE_BUCKET_SHIFT 40

struct value_stats {
	__u64 count;		/* finite values */
	__u64 min_key, max_key;	/* order keys (min_key ~0 until a finite value) */
	__u64 last_bits;	/* raw bits of the last value, finite or not */
	__u64 last_ns;		/* when it came (picks the last one across CPUs) */
	__u64 nan, pos_inf, neg_inf;
};

struct value_bucket_key {
	__u32 tgid;
	__u32 pad;
	__u64 site;
	__u64 bucket;		/* order key >> QPROF_VALUE_BUCKET_SHIFT */
};

/* A bucket's count and poll generation: its key goes to the ring buffer
 * `value_dirty` when a hit finds gen older than qp_gen (as scope chunks). */
struct value_bucket {
	__u64 count;
	__u64 gen;
};

/* Logs: one ring-buffer record per QPROF_LOG. */
#define QPROF_LOG_MSG 256	/* QPROF_LOG_MAX of qprof.h */

struct log_record {
	__u64 ts_ns;		/* bpf_ktime_get_ns() */
	__u64 site;
	__u32 pid, tid;
	__s32 len;		/* length the message had; >= QPROF_LOG_MSG: cut */
	__u32 pad;
	char msg[QPROF_LOG_MSG];
};

/* Slow instances: a scope exit whose duration reaches the threshold of
 * its (process, site) in `slow_min` (no entry: 0) sends one record to the
 * ring buffer `slow_rb` while `slow_active` is set. The daemon keeps the
 * slowest per scope and raises the threshold to the least of them, so
 * records become rare once its reservoirs are full. */
struct slow_record {
	__u32 tgid, tid;
	__u64 site, parent;
	__u64 begin_ns, end_ns;		/* bpf_ktime_get_ns() at the enter and the exit */
	__u64 dur_ns;			/* as aggregated (calibrated) */
	__u32 migrations, page_faults;	/* of the thread during the instance */
	__u64 irq_ns;
	__u32 flags;			/* QPROF_SLOW_NO_KERNEL */
	char comm[16];			/* the thread's ("" when unknown) */
};

/* An instance of the ring collector (made by the daemon): its migrations,
 * page faults and irq time are not known until the join counts them from
 * the kernel events of its thread (daemon/collect/slow_kev.c). */
#define QPROF_SLOW_NO_KERNEL 1u

#define QPROF_SLOW_RB_BYTES (1u << 20)
#define QPROF_SLOW_KEYS 16384

/* The thresholds of most scopes, where an exit reads them without a hash
 * lookup: an mmapped array (`slow_floor`) of slots, a slot per (process,
 * site) at qprof_slow_slot(), owned by the first key the daemon gives a
 * threshold to. An exit whose key owns its slot takes the slot's threshold;
 * any other (a slot owned by another key, being written, or free) looks its
 * threshold up in `slow_min` as before. The daemon, the only writer, makes
 * a slot's seq odd while it writes it (a seqlock); a key owns its slot
 * until its process is forgotten. */
#define QPROF_SLOW_FLOOR_SLOTS 4096
struct slow_floor {
	__u32 seq;	/* odd while the daemon writes the slot */
	__u32 tgid;	/* the owner (0: free) */
	__u64 site;
	__u64 min_ns;	/* its threshold (0: every instance) */
	__u64 pad;
};

static inline __u32 qprof_slow_slot(__u32 tgid, __u64 site)
{
	__u64 h = (site ^ ((__u64)tgid << 32)) * 0x9e3779b97f4a7c15ull;

	return (__u32)(h >> 52) & (QPROF_SLOW_FLOOR_SLOTS - 1);
}

/* Per-CPU counters (array map `counters`), summed by the daemon. */
enum scope_counter {
	QPROF_CNT_EVENTS = 0,		/* unused: events are the sum of the counts */
	QPROF_CNT_DROP_NO_ENTER,	/* exit with no matching enter on the thread */
	QPROF_CNT_DROP_OUT_OF_ORDER,	/* open scopes skipped by an exit further down */
	QPROF_CNT_DROP_TOO_DEEP,	/* enters beyond QPROF_MAX_DEPTH */
	QPROF_CNT_DROP_THREAD_EXIT,	/* scopes still open when their thread exited */
	QPROF_CNT_DROP_MAP_FULL,	/* no aggregate for a site: --max-sites used up, or
					 * no memory past the preallocated ones */
	QPROF_CNT_LOG_LOST,		/* log records the ring buffer had no room for */
	QPROF_CNT_DROP_NO_STACK,	/* a thread's first stack could not be made: task
					 * storage busy on that CPU, or no memory */
	QPROF_CNT_VALUE_LOST,		/* values whose histogram bucket found no room */
	QPROF_CNT_MARK_LOST,		/* marks whose entry found no room */
	QPROF_CNT_DIRTY_LOST,		/* dirty chunk keys the ring buffer had no room
					 * for (not a loss: the next poll reads all) */
	QPROF_CNT_MINMAX_LOST,		/* min or max updates given up after
					 * QPROF_CAS_TRIES lost races (never seen) */
	QPROF_CNT_VALUE_DIRTY_LOST,	/* the same as DIRTY_LOST for value buckets */
	QPROF_CNT_BEGIN_UNENDED,	/* QPROF_SCOPE_BEGIN spans replaced before their END:
					 * begun again on the thread, or 9th open one */
	QPROF_CNT_SPAN_END_NO_BEGIN,	/* QPROF_SPAN_END with no pending begin */
	QPROF_CNT_SPAN_STEP_NO_BEGIN,	/* QPROF_SPAN_STEP with no pending begin */
	QPROF_CNT_SPAN_ID_REUSED,	/* QPROF_SPAN_BEGIN of an id already pending: the
					 * older begin is dropped, the newer kept */
	QPROF_CNT_SPAN_TABLE_FULL,	/* begins the pending table had no room for */
	QPROF_CNT_SPAN_ABANDONED,	/* never incremented by BPF: the daemon's sweep
					 * counts begins older than the timeout here */
	QPROF_CNT_SLOW_LOST,		/* slow-instance records slow_rb had no room for */
	QPROF_CNT_RING_LOST,		/* never incremented by BPF: scopes the ring
					 * collector lost (records overwritten unread) */
	QPROF_CNT__MAX,
};

#endif
