/* sampler.bpf.h - what the CPU sampler (profile.bpf.c) and its off-CPU
 * side (offcpu.bpf.h) share, declared once: the target set (cpu_targets),
 * the per-CPU counters and the helpers over them; the threads' open scopes
 * come from open_scope_maps.bpf.h. */
#ifndef QPROF_SAMPLER_BPF_H
#define QPROF_SAMPLER_BPF_H
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "profile.h"
#include "ringreg.h"
#include "scopes.h"
#include "open_scope_maps.bpf.h"

#define EFAULT 14	/* no stack of that kind (a user-mode sample has no kernel stack) */
#define RING_MAGIC 0x474e5251u	/* QPROF_RING_MAGIC */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);	/* QPROF_CPU_* bits */
} cpu_targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, QPROF_PCNT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} pcounters SEC(".maps");

static __always_inline void pcount(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&pcounters, &which);

	if (c)
		*c += 1;
}

#define STACK_BYTES (QPROF_STACK_DEPTH * 8)



/* bytes of a bpf_get_stack result, 0 when there is none; a failure other
 * than "no stack of that kind" is counted */
static __always_inline __u32 stack_len(long n)
{
	if (n < 0) {
		if (n != -EFAULT)
			pcount(QPROF_PCNT_LOST_STACK);
		return 0;
	}
	return n > STACK_BYTES ? STACK_BYTES : (__u32)n & ~7u;
}

/* The innermost open scopes of a thread (ST may be NULL): block scopes
 * first, then QPROF_SCOPE_BEGIN spans while room is left; 0 = none. */
static __always_inline void fill_scopes(__u64 *scopes, struct thread_stack *st)
{
	__u32 d, i, b;

	for (i = 0; i < QPROF_SAMPLE_SCOPES; i++)
		scopes[i] = 0;
	if (!st)
		return;
	d = st->depth;
	if (d > QPROF_MAX_DEPTH)
		d = QPROF_MAX_DEPTH;
	for (i = 0; i < QPROF_SAMPLE_SCOPES; i++) {
		if (i >= d)
			break;
		scopes[i] = st->f[(d - 1 - i) & (QPROF_MAX_DEPTH - 1)].site;
	}
	for (b = 0; b < QPROF_MAX_BEGINS; b++) {
		if (i >= QPROF_SAMPLE_SCOPES)
			break;
		if (st->b[b].key)
			scopes[i++] = st->b[b].site;
	}
}
#endif
