// SPDX-License-Identifier: GPL-2.0
/* scopes.bpf.c - scope latency collector.
 *
 * scope_enter/scope_exit USDT probes of qprof.h push and pop a per-thread
 * stack; an exit that matches the top (or, failing that, a frame further
 * down) measures the scope and adds it to a per-CPU aggregate keyed by
 * (process, site, parent site): count, sum, min, max and a log-linear
 * histogram. No per-event record leaves the kernel. Everything that cannot
 * be measured cleanly is counted in `counters` instead of corrupting a figure.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#define BPF_USDT_MAX_SPEC_CNT 1024
#include <bpf/usdt.bpf.h>
#include "scopes.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);	/* threads; resized by the daemon */
	__type(key, __u32);
	__type(value, struct thread_stack);
} thread_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 4096);	/* (process, site, parent); resized by the daemon */
	__type(key, struct scope_key);
	__type(value, struct scope_stats);
} scope_stats SEC(".maps");

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

/* All-zero values to insert from: too large for the BPF stack. Never written. */
struct zero_values {
	struct thread_stack stack;
	struct scope_stats stats;
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct zero_values);
} zero SEC(".maps");

static __always_inline void count(__u32 which, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += n;
}

static __always_inline bool wanted(struct pt_regs *ctx, __u32 tgid)
{
	if (bpf_usdt_cookie(ctx) != QPROF_COOKIE_BINARY)
		return true;	/* pid attachments are filtered by the kernel */
	return !bpf_map_lookup_elem(&excluded, &tgid);
}

static __always_inline struct zero_values *zeros(void)
{
	__u32 k = 0;

	return bpf_map_lookup_elem(&zero, &k);
}

SEC("usdt")
int BPF_USDT(scope_enter, __u64 site, __u64 key)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, tgid = id >> 32;
	struct thread_stack *st;
	__u32 d;

	if (!wanted(ctx, tgid))
		return 0;
	st = bpf_map_lookup_elem(&thread_stacks, &tid);
	if (!st) {
		struct zero_values *z = zeros();

		if (!z)
			return 0;
		if (bpf_map_update_elem(&thread_stacks, &tid, &z->stack, BPF_NOEXIST) &&
		    !bpf_map_lookup_elem(&thread_stacks, &tid)) {
			count(QPROF_CNT_DROP_MAP_FULL, 1);
			return 0;
		}
		st = bpf_map_lookup_elem(&thread_stacks, &tid);
		if (!st)
			return 0;
		st->tgid = tgid;
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
	st->depth = d + 1;
	return 0;
}

static __always_inline void record(__u32 tgid, __u64 site, __u64 parent, __u64 dur)
{
	struct scope_key k = { .tgid = tgid, .site = site, .parent = parent };
	struct scope_stats *s = bpf_map_lookup_elem(&scope_stats, &k);
	__u32 idx;

	if (!s) {
		struct zero_values *z = zeros();

		if (!z)
			return;
		bpf_map_update_elem(&scope_stats, &k, &z->stats, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&scope_stats, &k);
		if (!s) {
			count(QPROF_CNT_DROP_MAP_FULL, 1);
			return;
		}
	}
	if (s->count == 0 || dur < s->min_ns)
		s->min_ns = dur;
	if (dur > s->max_ns)
		s->max_ns = dur;
	s->count++;
	s->sum_ns += dur;
	idx = qprof_hist_index(dur);
	/* one register for the check and the access, or the verifier loses the bound */
	asm volatile("" : "+r"(idx));
	if (idx < QPROF_HIST_BUCKETS)
		s->hist[idx]++;
	count(QPROF_CNT_EVENTS, 1);
}

SEC("usdt")
int BPF_USDT(scope_exit, __u64 site, __u64 key)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, tgid = id >> 32;
	struct thread_stack *st;
	__u32 d, i, top;
	__u64 want = key ? key : site;

	if (!wanted(ctx, tgid))
		return 0;
	st = bpf_map_lookup_elem(&thread_stacks, &tid);
	if (!st || st->depth == 0) {
		count(QPROF_CNT_DROP_NO_ENTER, 1);
		return 0;
	}
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
		record(tgid, st->f[j].site, j ? st->f[(j - 1) & (QPROF_MAX_DEPTH - 1)].site : 0,
		       now - st->f[j].ts);
		if (i)
			count(QPROF_CNT_DROP_OUT_OF_ORDER, i);
		st->depth = j;
		return 0;
	}
	count(QPROF_CNT_DROP_NO_ENTER, 1);
	return 0;
}

/* A thread that exits with scopes open: count them and free its stack.
 * tp_btf needs no tracefs mount; the exiting task is the current one. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(thread_exit)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct thread_stack *st = bpf_map_lookup_elem(&thread_stacks, &tid);

	if (!st)
		return 0;
	if (st->depth)
		count(QPROF_CNT_DROP_THREAD_EXIT,
		      st->depth > QPROF_MAX_DEPTH ? QPROF_MAX_DEPTH : st->depth);
	bpf_map_delete_elem(&thread_stacks, &tid);
	return 0;
}
