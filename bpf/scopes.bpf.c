// SPDX-License-Identifier: GPL-2.0
/* scopes.bpf.c - scope latency collector.
 *
 * scope_enter/scope_exit USDT probes of qprof.h push and pop a per-thread
 * stack (task-local storage); an exit that matches the top (or, failing
 * that, a frame further down) measures the scope and adds it to a shared
 * aggregate keyed by (process, site, parent site): count, sum, min, max and a
 * log-linear histogram, kept as chunks (scopes.h). No per-event record
 * leaves the kernel: only the key of a chunk, once per poll that finds it hit. Everything
 * that cannot be measured cleanly is counted in `counters` instead of
 * corrupting a figure. Hot path: one array lookup for the USDT spec, one
 * task-storage get, one hash lookup and four atomic instructions on exit.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#define BPF_USDT_MAX_SPEC_CNT 1024
#include <bpf/usdt.bpf.h>
#include "scopes.h"
#include "usdt_args.bpf.h"
#include "trace.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define EEXIST 17

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_stack);
} thread_stacks SEC(".maps");

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

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, QPROF_CNT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Processes detached from a --binary attachment (which fires for all). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} excluded SEC(".maps");

/* Marks, values and counted probes: shared by all CPUs like the scope
 * chunks (atomic adds, compare-and-swap for extremes), so that their
 * memory does not grow with the number of possible CPUs. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct mark_key);
	__type(value, struct mark_stats);
} mark_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct mark_key);
	__type(value, struct value_stats);
} value_stats SEC(".maps");

/* Value histogram buckets, polled like the scope chunks: a bucket whose
 * generation is older than qp_gen writes its key to value_dirty when hit. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct value_bucket_key);
	__type(value, struct value_bucket);
} value_hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 << 10);
} value_dirty SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct probe_key);
	__type(value, __u64);
} probe_counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} logs SEC(".maps");

static __always_inline void count(__u32 which, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += n;
}

/* The thread's stack, made on first use; cleared when an attach newer than
 * its frames hits it. NULL when the hit is not ours to count. */
static __always_inline struct thread_stack *stack_of(__u64 cookie, bool create)
{
	struct thread_stack *st;
	__u32 tgid;

	if (cookie & QPROF_COOKIE_BINARY) {
		tgid = bpf_get_current_pid_tgid() >> 32;
		if (bpf_map_lookup_elem(&excluded, &tgid))
			return NULL;
	}
	st = bpf_task_storage_get(&thread_stacks, bpf_get_current_task_btf(), 0,
				  create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	if (!st)
		return NULL;
	if (st->epoch < QPROF_COOKIE_EPOCH(cookie)) {
		st->epoch = QPROF_COOKIE_EPOCH(cookie);
		st->depth = 0;
		st->tgid = bpf_get_current_pid_tgid() >> 32;
		for (int i = 0; i < QPROF_MAX_BEGINS; i++)
			st->b[i].key = 0;
		st->span_site = 0;
	}
	return st;
}

static __always_inline int do_enter(__u64 now, __u64 site, __u64 key, __u64 cookie)
{
	struct thread_stack *st;
	__u32 d;

	st = stack_of(cookie, true);
	if (!st) {
		if (!(cookie & QPROF_COOKIE_BINARY))
			count(QPROF_CNT_DROP_NO_STACK, 1);
		return 0;
	}
	d = st->depth;
	if (d >= QPROF_MAX_DEPTH) {
		if (d < 0x7fffffff)
			st->depth = d + 1;
		count(QPROF_CNT_DROP_TOO_DEEP, 1);
		return 0;
	}
	st->f[d].site = site;
	st->f[d].key = key ? key : site;
	st->f[d].ts = now;
	st->f[d].migrations = st->migrations;
	st->f[d].page_faults = st->page_faults;
	st->f[d].irq_ns = st->irq_ns;
	st->depth = d + 1;
	return 0;
}


/* Making an entry can fail with room to spare. Since 6.15 a hash map's
 * bucket locks and its free-list locks are rqspinlocks: an update whose
 * lock would deadlock or spins too long returns -EDEADLK or -ETIMEDOUT
 * instead, and a free list whose lock refused reads as empty (-E2BIG). And
 * another CPU may make the same key between our lookup and our update. So
 * a failed update is followed by a lookup and retried up to QP_MAKE_TRIES
 * times, except after -ETIMEDOUT (the lock already spun 1/4 s: the target
 * must not wait again). Only a first hit of a key pays this. */
#define QP_MAKE_TRIES 3
#define ETIMEDOUT 110

/* KEY's value in MAP, made from INIT if missing; NULL when it cannot be */
#define qp_make(map, key, init) ({					\
	void *__v = NULL;						\
	long __e;							\
	int __i;							\
	for (__i = 0; __i < QP_MAKE_TRIES; __i++) {			\
		__e = bpf_map_update_elem(map, key, init, BPF_NOEXIST);	\
		__v = bpf_map_lookup_elem(map, key);			\
		if (__v || __e == -ETIMEDOUT)				\
			break;						\
	}								\
	__v; })

/* Make KEY in MAP with INIT, which already counts this hit: 0 when made,
 * else KEY's value (made by another CPU meanwhile) for the caller to add
 * the hit to, or NULL when it cannot be made */
#define qp_make_counted(map, key, init, made) ({			\
	void *__v = NULL;						\
	long __e;							\
	int __i;							\
	*(made) = false;						\
	for (__i = 0; __i < QP_MAKE_TRIES; __i++) {			\
		__e = bpf_map_update_elem(map, key, init, BPF_NOEXIST);	\
		if (!__e) {						\
			*(made) = true;					\
			break;						\
		}							\
		__v = bpf_map_lookup_elem(map, key);			\
		if (__v || __e == -ETIMEDOUT)				\
			break;						\
	}								\
	__v; })

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

/* Lost races of a min/max update before it is given up (and counted):
 * each loss means another CPU stored a new extreme meanwhile. */
#define QPROF_CAS_TRIES 64

static __always_inline void atomic_min(__u64 *p, __u64 v)
{
	__u64 old = *(volatile __u64 *)p, seen;
	int i;

	for (i = 0; i < QPROF_CAS_TRIES && v < old; i++) {
		seen = __sync_val_compare_and_swap(p, old, v);
		if (seen == old)
			return;
		old = seen;
	}
	if (v < old)
		count(QPROF_CNT_MINMAX_LOST, 1);
}

static __always_inline void atomic_max(__u64 *p, __u64 v)
{
	__u64 old = *(volatile __u64 *)p, seen;
	int i;

	for (i = 0; i < QPROF_CAS_TRIES && v > old; i++) {
		seen = __sync_val_compare_and_swap(p, old, v);
		if (seen == old)
			return;
		old = seen;
	}
	if (v > old)
		count(QPROF_CNT_MINMAX_LOST, 1);
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

#include "slow.bpf.h"

static __always_inline bool excluded_hit(__u64 cookie, __u32 tgid)
{
	return (cookie & QPROF_COOKIE_BINARY) && bpf_map_lookup_elem(&excluded, &tgid);
}

#include "spans.bpf.h"

/* Block scopes (key $0) push and pop the stack; QPROF_SCOPE_BEGIN/END (key:
 * the name's address) take the thread's begin slots (spans.bpf.h). */
SEC("usdt")
int scope_enter(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 site, key, cookie;

	if (qp_usdt_args2(ctx, &site, &key, &cookie))
		return 0;
	if (key)
		return begin_open(now, site, key, cookie);
	return do_enter(now, site, site, cookie);
}

static __always_inline int do_exit(__u64 now, __u64 site, __u64 key, __u64 cookie)
{
	__u64 want, dur;
	struct thread_stack *st;
	__u32 d, i, top, tgid;

	want = key ? key : site;
	st = stack_of(cookie, false);
	if (!st || st->depth == 0) {
		tgid = bpf_get_current_pid_tgid() >> 32;
		if (st || !(cookie & QPROF_COOKIE_BINARY) || !bpf_map_lookup_elem(&excluded, &tgid))
			count(QPROF_CNT_DROP_NO_ENTER, 1);
		return 0;
	}
	tgid = st->tgid;
	d = st->depth;
	if (d > QPROF_MAX_DEPTH) {
		/* the matching enter was past the stack and already counted */
		st->depth = d - 1;
		return 0;
	}
	top = d - 1;
	/* The innermost frame with this key: normally the top. Frames above it
	 * were never closed (a longjmp, an exception through C code, a missing
	 * END) and are dropped. */
	for (i = 0; i < QPROF_MAX_DEPTH; i++) {
		__u32 j;

		if (i > top)
			break;
		j = (top - i) & (QPROF_MAX_DEPTH - 1);
		if (st->f[j].key != want)
			continue;
		dur = qp_calibrated(now - st->f[j].ts);
		record(tgid, st->f[j].site, j ? st->f[(j - 1) & (QPROF_MAX_DEPTH - 1)].site : 0, dur);
		if (slow_active)
			slow_emit(st, j, tgid, now, dur);
		qp_trace_emit(tgid, QPROF_TR_SCOPE, st->f[j].site, st->f[j].ts, dur, j, 0);
		if (i)
			count(QPROF_CNT_DROP_OUT_OF_ORDER, i);
		st->depth = j;
		return 0;
	}
	count(QPROF_CNT_DROP_NO_ENTER, 1);
	return 0;
}

SEC("usdt")
int scope_exit(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 site, key, cookie;

	if (qp_usdt_args2(ctx, &site, &key, &cookie))
		return 0;
	if (key)
		return begin_close(now, key, cookie);
	return do_exit(now, site, site, cookie);
}

/* Spans of other programs' USDT probes: a begin probe opens the span's
 * pseudo site on the thread stack, an end probe closes it, exactly like a
 * qprof scope (nesting, parents, drops). Their arguments are not read. */
SEC("usdt")
int usdt_span_begin(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns(), cookie, site;

	if (qp_usdt_cookie(ctx, &cookie))
		return 0;
	site = QPROF_SPAN_SITE(QPROF_COOKIE_ID(cookie));
	return do_enter(now, site, site, cookie);
}

SEC("usdt")
int usdt_span_end(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns(), cookie, site;

	if (qp_usdt_cookie(ctx, &cookie))
		return 0;
	site = QPROF_SPAN_SITE(QPROF_COOKIE_ID(cookie));
	return do_exit(now, site, site, cookie);
}

SEC("usdt")
int mark_probe(struct pt_regs *ctx)
{
	__u64 site, unused, cookie;
	struct mark_key k = { .tgid = bpf_get_current_pid_tgid() >> 32 };
	struct mark_stats *m, init = { .count = 1 };
	bool made;

	if (qp_usdt_args2(ctx, &site, &unused, &cookie) || excluded_hit(cookie, k.tgid))
		return 0;
	k.site = site;
	init.last_ns = bpf_ktime_get_ns();
	qp_trace_emit(k.tgid, QPROF_TR_MARK, site, init.last_ns, 0, 0, 0);
	m = bpf_map_lookup_elem(&mark_stats, &k);
	if (!m) {
		m = qp_make_counted(&mark_stats, &k, &init, &made);
		if (!m) {
			if (!made)
				count(QPROF_CNT_MARK_LOST, 1);
			return 0;
		}
	}
	atomic_max(&m->last_ns, init.last_ns);
	__sync_fetch_and_add(&m->count, 1);
	return 0;
}

/* A value's last: the hit with the latest timestamp stores its bits. Two
 * CPUs that store within the same few ns may leave either one's bits. */
static __always_inline void value_last(struct value_stats *v, __u64 bits, __u64 now)
{
	__u64 old = *(volatile __u64 *)&v->last_ns;
	int i;

	for (i = 0; i < QPROF_CAS_TRIES && now > old; i++) {
		__u64 seen = __sync_val_compare_and_swap(&v->last_ns, old, now);

		if (seen == old) {
			*(volatile __u64 *)&v->last_bits = bits;
			return;
		}
		old = seen;
	}
}

SEC("usdt")
int value_probe(struct pt_regs *ctx)
{
	__u64 site, bits, cookie, key, gen;
	struct mark_key k = { .tgid = bpf_get_current_pid_tgid() >> 32 };
	struct value_bucket_key bk = { .tgid = k.tgid };
	struct value_bucket *hb, one = { .count = 1 };
	struct value_stats *v, init = { .min_key = ~0ULL };
	__u64 exp, mant;
	bool made;

	if (qp_usdt_args2(ctx, &site, &bits, &cookie) || excluded_hit(cookie, k.tgid))
		return 0;
	k.site = site;
	v = bpf_map_lookup_elem(&value_stats, &k);
	if (!v) {
		v = qp_make(&value_stats, &k, &init);
		if (!v) {
			count(QPROF_CNT_VALUE_LOST, 1);
			return 0;
		}
	}
	{
		__u64 now = bpf_ktime_get_ns();

		value_last(v, bits, now);
		qp_trace_emit(k.tgid, QPROF_TR_VALUE, site, now, bits, 0, 0);
	}
	exp = (bits >> 52) & 0x7ff;
	mant = bits & ((1ULL << 52) - 1);
	if (exp == 0x7ff) {	/* not finite: counted apart */
		if (mant)
			__sync_fetch_and_add(&v->nan, 1);
		else if (bits >> 63)
			__sync_fetch_and_add(&v->neg_inf, 1);
		else
			__sync_fetch_and_add(&v->pos_inf, 1);
		return 0;
	}
	key = (bits >> 63) ? ~bits : bits | (1ULL << 63);
	/* extremes before the count: a copy that sees the count sees them */
	atomic_min(&v->min_key, key);
	atomic_max(&v->max_key, key);
	__sync_fetch_and_add(&v->count, 1);
	bk.site = site;
	bk.bucket = key >> QPROF_VALUE_BUCKET_SHIFT;
	hb = bpf_map_lookup_elem(&value_hist, &bk);
	if (hb) {
		__sync_fetch_and_add(&hb->count, 1);
	} else {
		hb = qp_make_counted(&value_hist, &bk, &one, &made);
		if (hb)
			__sync_fetch_and_add(&hb->count, 1);
		else if (!made) {
			count(QPROF_CNT_VALUE_LOST, 1);
			return 0;
		}
		if (!hb)
			hb = bpf_map_lookup_elem(&value_hist, &bk);
		if (!hb)
			return 0;	/* deleted meanwhile: nothing to queue */
	}
	/* as record(): the bucket written first, its generation read after */
	gen = qp_gen;
	if (hb->gen != gen) {
		hb->gen = gen;
		if (bpf_ringbuf_output(&value_dirty, &bk, sizeof(bk), BPF_RB_NO_WAKEUP))
			count(QPROF_CNT_VALUE_DIRTY_LOST, 1);
	}
	return 0;
}

/* Any other USDT probe, counted per process. */
SEC("usdt")
int usdt_count(struct pt_regs *ctx)
{
	struct probe_key k = { .tgid = bpf_get_current_pid_tgid() >> 32 };
	__u64 cookie, one = 1, *c;
	bool made = false;

	if (qp_usdt_cookie(ctx, &cookie) || excluded_hit(cookie, k.tgid))
		return 0;
	k.id = (__u32)QPROF_COOKIE_ID(cookie);
	c = bpf_map_lookup_elem(&probe_counts, &k);
	if (!c)
		c = qp_make_counted(&probe_counts, &k, &one, &made);
	if (c)
		__sync_fetch_and_add(c, 1);
	else if (!made)
		count(QPROF_CNT_MARK_LOST, 1);
	return 0;
}

/* log(site, msg, len): the message is copied into a ring-buffer record; a
 * full ring buffer costs the message, counted in QPROF_CNT_LOG_LOST. */
SEC("usdt")
int log_probe(struct pt_regs *ctx)
{
	__u64 site, msg, len64, cookie, id = bpf_get_current_pid_tgid();
	struct log_record *r;
	long len;
	__u32 n;

	if (qp_usdt_args3(ctx, &site, &msg, &len64, &cookie) || excluded_hit(cookie, id >> 32))
		return 0;
	len = (long)(__s64)len64; /* a -4@ argument comes back sign-extended */
	r = bpf_ringbuf_reserve(&logs, sizeof(*r), 0);
	if (!r) {
		count(QPROF_CNT_LOG_LOST, 1);
		return 0;
	}
	r->ts_ns = bpf_ktime_get_ns();
	r->site = site;
	r->pid = id >> 32;
	r->tid = (__u32)id;
	r->len = (__s32)len;
	r->pad = 0;
	n = len < 0 ? 0 : len >= QPROF_LOG_MSG ? QPROF_LOG_MSG - 1 : (__u32)len;
	if (bpf_probe_read_user_str(r->msg, n + 1, (const void *)msg) < 0)
		r->msg[0] = '\0';
	/* Waking the reader costs an interrupt per message (~1.7 us in a VM): the
	 * daemon drains every few ms anyway; wake it only when the buffer fills. */
	bpf_ringbuf_submit(r, bpf_ringbuf_query(&logs, BPF_RB_AVAIL_DATA) > (1 << 20) ?
				      BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	return 0;
}

/* A thread that exits with scopes open: count them. Its storage goes with it.
 * tp_btf needs no tracefs mount; the exiting task is the current one. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(thread_exit)
{
	struct thread_stack *st;
	__u32 n;

	st = bpf_task_storage_get(&thread_stacks, bpf_get_current_task_btf(), 0, 0);
	if (!st)
		return 0;
	n = (st->depth > QPROF_MAX_DEPTH ? QPROF_MAX_DEPTH : st->depth) + begins_open(st);
	if (n)
		count(QPROF_CNT_DROP_THREAD_EXIT, n);
	st->depth = 0;
	begins_clear(st);
	return 0;
}

/* Tests only (unit_scope_poll_race): one call of record() with the given
 * arguments, run by BPF_PROG_TEST_RUN so that a test can place a hit at an
 * exact point between two polls. qprofd does not load it (autoload off
 * unless QPROF_TEST_PROGS=1, collect_scopes.c). */
SEC("syscall")
int test_record(struct qp_test_record *a)
{
	return record(a->tgid, a->site, a->parent, a->dur);
}
