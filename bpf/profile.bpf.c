// SPDX-License-Identifier: GPL-2.0
/* profile.bpf.c - CPU sampler. A software cpu-clock perf event per CPU runs
 * this at --frequency; samples of target processes (or of all with --all)
 * are counted per (process, user stack, kernel stack, innermost qprof
 * scopes). The scopes come from the thread stacks of scopes.bpf.c, whose map
 * the daemon shares with this object, so a profile can be limited to the time
 * spent inside one scope. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "profile.h"
#include "scopes.h"

char LICENSE[] SEC("license") = "GPL";

#define EFAULT 14	/* no stack of that kind (a user-mode sample has no kernel stack) */

const volatile bool sample_all = false;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} cpu_targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, QPROF_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct sample_key);
	__type(value, struct sample_value);
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, QPROF_PCNT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} pcounters SEC(".maps");

/* Reused from scopes.bpf.c by the daemon (bpf_map__reuse_fd). */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_stack);
} thread_stacks SEC(".maps");

static __always_inline void pcount(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&pcounters, &which);

	if (c)
		*c += 1;
}

SEC("perf_event")
int do_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sample_key key = { .tgid = id >> 32 };
	struct sample_value *v, init = { .count = 1 };
	struct thread_stack *st;
	__u32 d, i;

	if (!key.tgid)
		return 0;	/* idle */
	if (!sample_all && !bpf_map_lookup_elem(&cpu_targets, &key.tgid))
		return 0;
	key.user_stack = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	key.kern_stack = bpf_get_stackid(ctx, &stacks, 0);
	/* -EEXIST (bucket taken by another stack), -ENOMEM: the stack is lost,
	 * the sample is still counted (with that half of its stack missing) */
	if ((key.user_stack < 0 && key.user_stack != -EFAULT) ||
	    (key.kern_stack < 0 && key.kern_stack != -EFAULT))
		pcount(QPROF_PCNT_LOST_STACK);
	st = bpf_task_storage_get(&thread_stacks, bpf_get_current_task_btf(), 0, 0);
	if (st) {
		d = st->depth;
		if (d > QPROF_MAX_DEPTH)
			d = QPROF_MAX_DEPTH;
		for (i = 0; i < QPROF_SAMPLE_SCOPES; i++) {
			if (i >= d)
				break;
			key.scopes[i] = st->f[(d - 1 - i) & (QPROF_MAX_DEPTH - 1)].site;
		}
	}
	v = bpf_map_lookup_elem(&samples, &key);
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
	} else {
		bpf_get_current_comm(init.comm, sizeof(init.comm));
		if (bpf_map_update_elem(&samples, &key, &init, BPF_NOEXIST)) {
			v = bpf_map_lookup_elem(&samples, &key);
			if (!v) {
				pcount(QPROF_PCNT_LOST_MAP);
				return 0;
			}
			__sync_fetch_and_add(&v->count, 1);
		}
	}
	pcount(QPROF_PCNT_SAMPLES);
	return 0;
}
