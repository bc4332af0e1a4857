/* spans.bpf.h - pairing of spans that do not follow a block, for the scope
 * programs of scopes.bpf.c (it adds durations only through record()):
 *
 * - QPROF_SCOPE_BEGIN/END: per-thread slots beside the block-scope stack
 *   (struct begin_slot), paired by the name's address on the thread. A begin
 *   never ended takes one slot until the same name begins again on that
 *   thread (or a 9th one opens): it never blocks or re-parents later scopes.
 * - QPROF_SPAN_BEGIN/STEP/END: a preallocated hash of pending begins keyed by
 *   (process, name address, id), on any threads. The daemon sweeps begins
 *   older than its timeout (counted abandoned).
 *
 * Every unpaired event is counted by reason in `counters`; a duration enters
 * the aggregates only through record(). */
#ifndef QPROF_SPANS_BPF_H
#define QPROF_SPANS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "scope_maps.bpf.h"
#include "scope_record.bpf.h"
#include "trace.bpf.h"
#include "usdt_args.bpf.h"

/* Sized by the daemon (--span-pending). Preallocated: a begin takes an
 * element from a free list and never waits for the kernel's atomic pool. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct span_key);
	__type(value, struct span_pending);
} span_pending SEC(".maps");

/* The innermost kept block scope of ST, 0 at top level. */
static __always_inline __u64 block_top(const struct thread_stack *st)
{
	__u32 d = st->depth;

	if (d == 0)
		return 0;
	if (d > QPROF_MAX_DEPTH)
		d = QPROF_MAX_DEPTH;
	return st->f[(d - 1) & (QPROF_MAX_DEPTH - 1)].site;
}

static __always_inline int begin_open(__u64 now, __u64 site, __u64 key, __u64 cookie)
{
	struct thread_stack *st = stack_of(cookie, true);
	__u32 i, slot = QPROF_MAX_BEGINS, oldest = 0;
	__u64 oldest_ts = ~0ULL;
	struct begin_slot *b;

	if (!st) {
		if (!(cookie & QPROF_COOKIE_BINARY))
			count(QPROF_CNT_DROP_NO_STACK, 1);
		return 0;
	}
	for (i = 0; i < QPROF_MAX_BEGINS; i++) {
		b = &st->b[i];
		if (b->key == key) {	/* begun again before its END: the older one goes */
			slot = i;
			count(QPROF_CNT_BEGIN_UNENDED, 1);
			goto fill;
		}
		if (!b->key) {
			if (slot == QPROF_MAX_BEGINS)
				slot = i;
		} else if (b->ts < oldest_ts) {
			oldest_ts = b->ts;
			oldest = i;
		}
	}
	if (slot == QPROF_MAX_BEGINS) {	/* all taken: the oldest goes */
		slot = oldest;
		count(QPROF_CNT_BEGIN_UNENDED, 1);
	}
fill:
	b = &st->b[slot & (QPROF_MAX_BEGINS - 1)];
	b->key = key;
	b->site = site;
	b->parent = block_top(st);
	b->ts = now;
	return 0;
}

static __always_inline int begin_close(__u64 now, __u64 key, __u64 cookie)
{
	struct thread_stack *st = stack_of(cookie, false);
	struct begin_slot *b;
	__u32 i, tgid;

	for (i = 0; st && i < QPROF_MAX_BEGINS; i++) {
		b = &st->b[i];
		if (b->key != key)
			continue;
		record(st->tgid, b->site, b->parent, now - b->ts);
		b->key = 0;
		return 0;
	}
	tgid = bpf_get_current_pid_tgid() >> 32;
	if (st || !(cookie & QPROF_COOKIE_BINARY) || !bpf_map_lookup_elem(&excluded, &tgid))
		count(QPROF_CNT_DROP_NO_ENTER, 1);
	return 0;
}

/* Open BEGIN spans of ST (the thread exits or a newer attach clears it). */
static __always_inline __u32 begins_open(const struct thread_stack *st)
{
	__u32 i, n = 0;

	for (i = 0; i < QPROF_MAX_BEGINS; i++)
		n += st->b[i].key != 0;
	return n;
}

static __always_inline void begins_clear(struct thread_stack *st)
{
	__u32 i;

	for (i = 0; i < QPROF_MAX_BEGINS; i++)
		st->b[i].key = 0;
}

/* span_begin/span_step/span_end(site, id, name): the key of the hit and
 * the attachment's cookie, false when it is not ours (unreadable, or an
 * excluded pid of a --binary). */
static __always_inline bool span_hit(struct pt_regs *ctx, struct span_key *k, __u64 *site, __u64 *cookie_out)
{
	__u64 id, name, cookie;

	if (qp_usdt_args3(ctx, site, &id, &name, &cookie))
		return false;
	*cookie_out = cookie;
	k->tgid = bpf_get_current_pid_tgid() >> 32;
	k->pad = 0;
	k->name = name;
	k->id = id;
	return !excluded_hit(cookie, k->tgid);
}

/* The span open on the thread, for its CPU samples (profile.bpf.c): a
 * begin opens its span there, an end of the same span on the thread closes
 * it; a span ended on another thread stays open on the one that began it
 * until that thread begins another. */
static __always_inline void span_open_on_thread(__u64 cookie, __u64 site, const struct span_key *k)
{
	struct thread_stack *st = stack_of(cookie, true);

	if (!st)
		return;
	st->span_name = k->name;
	st->span_id = k->id;
	st->span_site = site;
}

static __always_inline void span_close_on_thread(__u64 cookie, const struct span_key *k)
{
	struct thread_stack *st = stack_of(cookie, false);

	if (st && st->span_site && st->span_name == k->name && st->span_id == k->id)
		st->span_site = 0;
}

SEC("usdt")
int async_begin(struct pt_regs *ctx)
{
	struct span_pending v = { .ts = bpf_ktime_get_ns() }, *p;
	struct span_key k;
	__u64 cookie;
	long err;

	if (!span_hit(ctx, &k, &v.site, &cookie))
		return 0;
	span_open_on_thread(cookie, v.site, &k);
	p = bpf_map_lookup_elem(&span_pending, &k);
	if (p) {	/* the id is pending: the newer begin wins */
		count(QPROF_CNT_SPAN_ID_REUSED, 1);
		p->ts = v.ts;
		p->site = v.site;
		return 0;
	}
	err = bpf_map_update_elem(&span_pending, &k, &v, BPF_NOEXIST);
	if (err == -EEXIST) {	/* made meanwhile by another thread */
		count(QPROF_CNT_SPAN_ID_REUSED, 1);
		err = bpf_map_update_elem(&span_pending, &k, &v, BPF_ANY);
	}
	if (err)
		count(QPROF_CNT_SPAN_TABLE_FULL, 1);
	return 0;
}

/* A step's or an end's hit (K, SITE) and its pending begin's time TS and
 * site BEGIN; false when the hit is not ours, or has no begin: then
 * NO_BEGIN counted. */
static __always_inline bool span_pending_hit(struct pt_regs *ctx, struct span_key *k, __u64 *site,
					     __u64 *ts, __u64 *begin, __u32 no_begin, bool end)
{
	struct span_pending *p;
	__u64 cookie;

	if (!span_hit(ctx, k, site, &cookie))
		return false;
	if (end)
		span_close_on_thread(cookie, k);
	p = bpf_map_lookup_elem(&span_pending, k);
	if (!p) {
		count(no_begin, 1);
		return false;
	}
	*ts = p->ts;
	*begin = p->site;
	return true;
}

SEC("usdt")
int async_step(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns(), site, ts, begin;
	struct span_key k;

	if (!span_pending_hit(ctx, &k, &site, &ts, &begin, QPROF_CNT_SPAN_STEP_NO_BEGIN, false))
		return 0;
	/* a step row stands under its span: parent = the begin's site */
	record(k.tgid, site, begin, now > ts ? now - ts : 0);
	qp_trace_emit(k.tgid, QPROF_TR_ASTEP, site, now, k.id, 0, begin);
	return 0;
}

SEC("usdt")
int async_end(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns(), site, ts, begin;
	struct span_key k;

	if (!span_pending_hit(ctx, &k, &site, &ts, &begin, QPROF_CNT_SPAN_END_NO_BEGIN, true))
		return 0;
	/* whoever deletes the entry owns the span: two ENDs of one id on two
	 * CPUs, or the daemon's sweep, cannot both count it */
	if (bpf_map_delete_elem(&span_pending, &k)) {
		count(QPROF_CNT_SPAN_END_NO_BEGIN, 1);
		return 0;
	}
	record(k.tgid, begin, 0, now > ts ? now - ts : 0);
	qp_trace_emit(k.tgid, QPROF_TR_ASPAN, begin, ts, now > ts ? now - ts : 0, 0, k.id);
	return 0;
}
#endif
