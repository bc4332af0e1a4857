/* scope_maps.bpf.h - the maps that scopes.bpf.c, spans.bpf.h and
 * slow.bpf.h all use, declared once, and the small helpers over them:
 * the per-thread scope stack (task storage), the per-CPU drop counters, the
 * pids detached from a --binary attachment, and the making of a hash entry
 * at a key's first hit. Include it wherever one of them is used; the object
 * gets each map once (an include guard, one translation unit). */
#ifndef QPROF_SCOPE_MAPS_BPF_H
#define QPROF_SCOPE_MAPS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "scopes.h"

#define EEXIST 17
#define ETIMEDOUT 110

/* Open scopes and BEGIN spans of each thread (struct thread_stack); the
 * CPU sampler's object shares it. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_stack);
} thread_stacks SEC(".maps");

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

static __always_inline void count(__u32 which, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += n;
}

/* A hit of a --binary attachment in a process detached from it. */
static __always_inline bool excluded_hit(__u64 cookie, __u32 tgid)
{
	return (cookie & QPROF_COOKIE_BINARY) && bpf_map_lookup_elem(&excluded, &tgid);
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

/* Making an entry can fail with room to spare. Since 6.15 a hash map's
 * bucket locks and its free-list locks are rqspinlocks: an update whose
 * lock would deadlock or spins too long returns -EDEADLK or -ETIMEDOUT
 * instead, and a free list whose lock refused reads as empty (-E2BIG). And
 * another CPU may make the same key between our lookup and our update. So
 * a failed update is followed by a lookup and retried up to QP_MAKE_TRIES
 * times, except after -ETIMEDOUT (the lock already spun 1/4 s: the target
 * must not wait again). Only a first hit of a key pays this. */
#define QP_MAKE_TRIES 3

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
#endif
